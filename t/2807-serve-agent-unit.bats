#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The example drop-in that makes the user qwen-serve.service serve the
# real qwen-code agent: systemd accepts it, and its command line is one
# qwen-serve accepts (checked with --check-config).

load test_helper

setup() {
	B=$QWEN_TOP_BUILDDIR
	DROPIN=$B/contrib/systemd/user/qwen-serve.service.d/agent.conf
	[ -f "$DROPIN" ] || skip "units not generated (make)"
}

@test "agent drop-in: no @bindir@ left, --child-command from the agent's env file" {
	run grep -c '@bindir@' "$DROPIN"
	[ "$output" = 0 ]
	grep -qx 'ExecStart=' "$DROPIN"
	grep -q -- '--child-command "${QWEN_AGENT_COMMAND}"' "$DROPIN"
	grep -qx 'EnvironmentFile=%h/.config/qwen-serve-agent.env' "$DROPIN"
}

@test "agent drop-in: its command line passes qwen-serve --check-config" {
	local h=$BATS_TEST_TMPDIR/home line
	mkdir -p "$h/.qwen"
	line=$(sed -n 's/^ExecStart=\(.\)/\1/p' "$DROPIN" | sed "s|%h|$h|g; s|^[^ ]*/qwen-serve |qwen-serve |")
	[[ "$line" == "qwen-serve "* ]]
	export QWEN_AGENT_COMMAND="/bin/sh -c 'exec cat'" QWEN_SERVE_OPTS=
	run eval "$line --check-config --no-tcp --socket $BATS_TEST_TMPDIR/s.sock"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"child command: /bin/sh -c 'exec cat'"* ]]
}

@test "agent drop-in: systemd-analyze verify accepts the user unit with it" {
	command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed"
	local d=$BATS_TEST_TMPDIR/units
	mkdir -p "$d/qwen-serve.service.d" -m 700 "$BATS_TEST_TMPDIR/rt"
	for u in qwen-serve.service qwen-serve.socket qwen-serve.service.d/agent.conf; do
		sed "s|^ExecStart=[^ ]*/qwen-serve |ExecStart=$B/bin/qwen-serve |" \
		    "$B/contrib/systemd/user/$u" >"$d/$u"
	done
	(cd "$d" && XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/rt systemd-analyze verify \
	    --man=no --user qwen-serve.service qwen-serve.socket) >"$BATS_TEST_TMPDIR/verify" 2>&1 || {
		cat "$BATS_TEST_TMPDIR/verify"
		grep -q 'Failed to initialize manager\|Failed to setup working directory' \
		    "$BATS_TEST_TMPDIR/verify" && skip "systemd-analyze cannot run here"
		return 1
	}
	[ ! -s "$BATS_TEST_TMPDIR/verify" ] || { cat "$BATS_TEST_TMPDIR/verify"; return 1; }
	# The drop-in is read: a misspelt key in it is reported.
	echo 'ExecStartz=/bin/true' >>"$d/qwen-serve.service.d/agent.conf"
	(cd "$d" && XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/rt systemd-analyze verify \
	    --man=no --user qwen-serve.service) >"$BATS_TEST_TMPDIR/verify" 2>&1 || true
	grep -q "Unknown key 'ExecStartz'" "$BATS_TEST_TMPDIR/verify"
}
