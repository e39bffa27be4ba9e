#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The Debian package (slow: a whole build): debian/ builds with
# dpkg-buildpackage -us -uc -b, lintian finds nothing at its default
# level, and the daemon starts from the package unpacked in a scratch
# root (its system user made there by systemd-sysusers).  Skips without
# debhelper or the build dependencies; QWEN_SKIP_SLOW=1 skips it too.

load serve_helper

teardown() {
	serve_teardown
}

@test "debian: the package builds, lintian is clean, the daemon runs from it" {
	[ -z "${QWEN_SKIP_SLOW:-}" ] || skip "QWEN_SKIP_SLOW is set"
	# The package builds its own binaries: once, in the plain run, is enough.
	[ -z "${QWEN_SANITIZED:-}" ] || skip "the sanitizer run: built in the plain run"
	command -v dpkg-buildpackage >/dev/null || skip "dpkg-dev not installed"
	command -v dh >/dev/null || skip "debhelper not installed"
	command -v git >/dev/null && git -C "$QWEN_TOP_SRCDIR" rev-parse 2>/dev/null ||
	    skip "not a git checkout"
	(cd "$QWEN_TOP_SRCDIR" && dpkg-checkbuilddeps) || skip "build dependencies missing"
	local top=$BATS_TEST_TMPDIR src=$BATS_TEST_TMPDIR/src root=$BATS_TEST_TMPDIR/root deb
	mkdir -p "$src"
	# The tracked and new files, not the build tree's outputs.
	(cd "$QWEN_TOP_SRCDIR" && git ls-files -co --exclude-standard -z |
	    tar --null -T - -cf -) | tar -xf - -C "$src"
	(cd "$src" && DEB_BUILD_OPTIONS=parallel=2 dpkg-buildpackage -us -uc -b) \
	    >"$top/build.log" 2>&1 || { tail -30 "$top/build.log" >&2; return 1; }
	deb=$(ls "$top"/qwen-serve_*_*.deb)
	if command -v lintian >/dev/null; then
		lintian "$top"/qwen-serve_*.changes >"$top/lintian.log" 2>&1 || true
		cat "$top/lintian.log"
		run ! grep -E '^[EW]: ' "$top/lintian.log"
	fi
	dpkg-deb -x "$deb" "$root"
	for f in usr/bin/qwen-serve usr/bin/qwen-restore usr/bin/qwen-trace-dump \
	    usr/libexec/qwen-acp-child; do
		[ -x "$root/$f" ]
	done
	for f in man8/qwen-serve.8.gz man8/qwen-acp-child.8.gz man1/qwen-restore.1.gz \
	    man1/qwen-trace-dump.1.gz; do
		[ -f "$root/usr/share/man/$f" ]
	done
	[ -f "$root/usr/share/bash-completion/completions/qwen-serve" ]
	[ -f "$root/usr/share/doc/qwen-serve/examples/systemd/qwen-serve.service" ]
	[ -f "$root/usr/share/doc/qwen-serve/examples/haproxy/qwen-serve.cfg" ]
	grep -q '^u qwen-serve ' "$root/usr/lib/sysusers.d/qwen-serve.conf"
	dpkg-deb -e "$deb" "$top/control"
	grep -q 'systemd-sysusers .*qwen-serve.conf' "$top/control/postinst"
	if command -v systemd-sysusers >/dev/null; then
		mkdir -p "$root/etc"
		systemd-sysusers --root="$root" qwen-serve.conf
		grep -q '^qwen-serve:x:[0-9]*:[0-9]*:qwen-serve daemon:/var/lib/qwen-serve:' \
		    "$root/etc/passwd"
	fi
	# The packaged daemon, with the packaged child, serves a session.
	PATH=$root/usr/bin:$PATH SERVE_CHILD=$root/usr/libexec/qwen-acp-child \
	    serve_start --no-tcp --web-dir "$root/usr/share/qwen-serve/web"
	[ "$(readlink "/proc/$SERVE_PID/exe")" = "$root/usr/bin/qwen-serve" ]
	req GET /health
	expect 200 '.status == "ok"'
	req POST /session '{}'
	expect 200 '.sessionId | length > 0'
}
