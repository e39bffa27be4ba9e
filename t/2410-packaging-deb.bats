#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The Debian package (slow: a whole build): debian/ builds with
# dpkg-buildpackage -us -uc -b, lintian finds nothing at its default
# level, and the daemon starts from the package unpacked in a scratch
# root (its system user made there by systemd-sysusers); then, as root
# on a machine without the package (CI's throwaway Debian), the package
# installed with dpkg -i: its postinst makes the system user, the unit's
# ExecStart binary, run as the unit's User, answers /health on its
# socket, and the package is purged and the user removed again, the
# machine left as found.  Skips without debhelper or the build
# dependencies; QWEN_SKIP_SLOW=1 skips it too.

load serve_helper

teardown() {
	serve_teardown
	deb_uninstall
}

# deb_uninstall: undo what deb_install did (also after a failed step).
deb_uninstall() {
	if [ -n "${DEB_PID:-}" ]; then
		kill -TERM "$DEB_PID" 2>/dev/null || true
		wait "$DEB_PID" 2>/dev/null || true
		DEB_PID=
	fi
	if [ -n "${DEB_INSTALLED:-}" ]; then
		dpkg --purge qwen-serve >"$BATS_TEST_TMPDIR/purge.log" 2>&1 ||
		    { cat "$BATS_TEST_TMPDIR/purge.log" >&2; return 1; }
		DEB_INSTALLED=
	fi
	if [ -n "${DEB_USER_MADE:-}" ]; then
		userdel qwen-serve 2>/dev/null || true
		if getent group qwen-serve >/dev/null; then groupdel qwen-serve; fi
		DEB_USER_MADE=
	fi
	if [ -n "${DEB_RUN:-}" ]; then
		rm -rf "$DEB_RUN"
		DEB_RUN=
	fi
}

# deb_can_install: why dpkg -i must not run here (nothing when it may).
deb_can_install() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return; }
	command -v dpkg >/dev/null || { echo "no dpkg"; return; }
	if dpkg -s qwen-serve >/dev/null 2>&1; then echo "qwen-serve already installed"; return; fi
	if getent passwd qwen-serve >/dev/null; then echo "user qwen-serve already exists"; return; fi
	if getent group qwen-serve >/dev/null; then echo "group qwen-serve already exists"; return; fi
	command -v runuser >/dev/null || { echo "no runuser"; return; }
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
	serve_stop
	[ "$SERVE_STATUS" -eq 0 ]

	# Installed for real (root on a throwaway machine only).
	local why unit bin user dpid
	why=$(deb_can_install)
	[ -z "$why" ] || skip "built and checked; not installed: $why"
	if ! dpkg -i "$deb" >"$top/install.log" 2>&1; then
		cat "$top/install.log" >&2
		# Another dpkg at work: not ours to wait for or break.
		grep -qi 'lock' "$top/install.log" && skip "dpkg is locked"
		dpkg -s qwen-serve >/dev/null 2>&1 && DEB_INSTALLED=1
		getent passwd qwen-serve >/dev/null && DEB_USER_MADE=1
		return 1
	fi
	DEB_INSTALLED=1
	getent passwd qwen-serve >/dev/null && DEB_USER_MADE=1
	dpkg -s qwen-serve | grep -qx 'Status: install ok installed'
	# The postinst's systemd-sysusers made the user of the unit.
	[ -n "${DEB_USER_MADE:-}" ]
	getent passwd qwen-serve | grep -q '^qwen-serve:x:[0-9]*:[0-9]*:qwen-serve daemon:/var/lib/qwen-serve:'
	unit=/usr/share/doc/qwen-serve/examples/systemd/qwen-serve.service
	[ -f "$unit" ]
	user=$(sed -n 's/^User=//p' "$unit")
	[ "$user" = qwen-serve ]
	bin=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
	[ "$bin" = /usr/bin/qwen-serve ]
	[ "$(dpkg -S "$bin")" = "qwen-serve: $bin" ]
	# Its own data dir and socket, in a directory the user owns (the
	# unit's /var/lib is systemd's StateDirectory, not made here).
	DEB_RUN=$(mktemp -d /tmp/qwen-deb.XXXXXX)
	mkdir -p -m 700 "$DEB_RUN/data" "$DEB_RUN/ws"
	chown -R "$user:$user" "$DEB_RUN"
	chmod 700 "$DEB_RUN"
	(cd "$DEB_RUN/ws" && exec runuser -u "$user" -- env -i HOME="$DEB_RUN" \
	    PATH=/usr/bin:/bin "$bin" --no-tcp --socket "$DEB_RUN/s.sock" \
	    --data-dir "$DEB_RUN/data" --workspace "$DEB_RUN/ws" \
	    >"$top/deb.out" 2>"$top/deb.err") &
	DEB_PID=$!
	has_sock() { [ -S "$DEB_RUN/s.sock" ]; }
	wait_for 10 has_sock || { cat "$top/deb.err" >&2; false; }
	[ "$(stat -c %U "$DEB_RUN/s.sock")" = "$user" ]
	run -0 curl -s --unix-socket "$DEB_RUN/s.sock" http://localhost/health
	jq -e '.status == "ok"' <<<"$output" >/dev/null
	# The daemon itself runs as the unit's user (runuser is its parent).
	dpid=$(pgrep -u "$user" -x qwen-serve)
	[ "$(stat -c %U "/proc/$dpid")" = "$user" ]
	[ "$(readlink "/proc/$dpid/exe")" = "$bin" ]
	kill -TERM "$dpid"
	wait "$DEB_PID"
	DEB_PID=
	# Purged, and the user gone: the machine as it was.
	deb_uninstall
	run ! dpkg -s qwen-serve
	[ ! -e /usr/bin/qwen-serve ]
	[ ! -e /usr/libexec/qwen-acp-child ]
	run ! getent passwd qwen-serve
}
