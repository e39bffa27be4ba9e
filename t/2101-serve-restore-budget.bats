#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the restore budget (seed 000) — resolution from the flags,
# refusal of bad values at start, publication in capabilities before any
# child exists.

load serve_restore_helper

teardown() {
	rteardown
}

budget_is() {
	req GET /capabilities
	expect 200 ".limits.sessionRestoreTimeoutMs == $1"
}

@test "the budget resolves: restore flag wins, a larger initialize raises, never lowers" {
	local -a cases=(
		"60000|"
		"90000|--initialize-timeout-ms 90000"
		"60000|--initialize-timeout-ms 20000"
		"60000|--initialize-timeout-ms 60000"
		"300|--session-restore-timeout-ms 300"
		"1000|--session-restore-timeout-ms 1000 --initialize-timeout-ms 90000"
		"120000|--session-restore-timeout-ms 120000"
		"2147483647|--session-restore-timeout-ms 2147483647"
		"2147483647|--initialize-timeout-ms 2147483647"
	)
	local c want args
	for c in "${cases[@]}"; do
		want=${c%%|*}
		args=${c#*|}
		# shellcheck disable=SC2086
		serve_start $args
		budget_is "$want"
		serve_stop
	done
}

@test "the budget is published before any child exists, and stays" {
	FAKE_CHILD=log=$CLOG serve_start --session-restore-timeout-ms 700
	req GET '/health?deep=1'
	expect 200 '.channelAlive == false'
	budget_is 700
	[ ! -e "$CLOG" ]
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	req GET '/health?deep=1'
	expect 200 '.channelAlive == true'
	budget_is 700
	grep -q 'restore budget 700 ms' "$BATS_TEST_TMPDIR/err"
}

@test "bad budgets refuse to start, naming the flag" {
	local flag v
	for flag in --session-restore-timeout-ms --initialize-timeout-ms; do
		for v in 0 -1 1.5 1e3 2147483648 abc '' ' 5' 0x10 007; do
			run qwen-serve --no-tcp --socket "$BATS_TEST_TMPDIR/s.sock" \
			    --child "$FAKE_CHILD_BIN" "$flag" "$v"
			[ "$status" -eq 2 ]
			[[ "$output" == *"$flag: must be a positive integer of milliseconds no greater than 2147483647"* ]]
			[ ! -S "$BATS_TEST_TMPDIR/s.sock" ]
		done
	done
}
