#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The example systemd units (issue 17): the watchdog in both services, the
# user unit on its Unix socket only with flags under %E, a token credential
# for the system unit's TCP listener, a tighter SystemCallFilter whose
# refusals are EPERM.  systemd-analyze verify runs in t/2403.

load test_helper

setup() {
	U=$QWEN_TOP_BUILDDIR/contrib/systemd
	[ -f "$U/qwen-serve.service" ] || skip "units not generated"
}

@test "both services: WatchdogSec=, SystemCallFilter without @privileged, EPERM" {
	for s in "$U/qwen-serve.service" "$U/user/qwen-serve.service"; do
		grep -qx 'Type=notify' "$s"
		grep -qx 'WatchdogSec=30s' "$s"
		grep -qx 'SystemCallFilter=@system-service' "$s"
		grep -qx 'SystemCallFilter=~@privileged' "$s"
		grep -qx 'SystemCallErrorNumber=EPERM' "$s"
	done
}

@test "the user unit: Unix socket only, flags under %E, TCP only as a commented opt-in with a token" {
	grep -qx 'ListenStream=%t/qwen-serve/qwen-serve.sock' "$U/user/qwen-serve.socket"
	[ "$(grep -c '^ListenStream=' "$U/user/qwen-serve.socket")" -eq 1 ]
	grep -qx 'EnvironmentFile=-%E/qwen-serve.env' "$U/user/qwen-serve.service"
	run grep -c '%h/\.config' "$U/user/qwen-serve.service"
	[ "$output" -eq 0 ]
	grep -q '^#   ListenStream=127.0.0.1:' "$U/user/qwen-serve.service"
	grep -q '^#   LoadCredential=qwen-serve-token:' "$U/user/qwen-serve.service"
}

@test "the system unit: its TCP listener comes with a token credential" {
	grep -qx 'ListenStream=127.0.0.1:4170' "$U/qwen-serve.socket"
	grep -qx 'LoadCredential=qwen-serve-token:/etc/qwen-serve/token' "$U/qwen-serve.service"
	# No token in the environment file's example, nor on a command line.
	run grep -c 'QWEN_SERVER_TOKEN=\|--token' "$U/qwen-serve.service"
	[ "$output" -eq 0 ]
	# The user and the system socket never bind the same port.
	run grep -c '^ListenStream=127.0.0.1:4170' "$U/user/qwen-serve.socket"
	[ "$output" -eq 0 ]
}
