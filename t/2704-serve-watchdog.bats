#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve and the systemd watchdog (issue 17): with WATCHDOG_USEC the
# event loop sends WATCHDOG=1 every half period after READY=1;
# WATCHDOG_PID of another process means no pings;
# the children never see the variables.  notify-recv stands in for
# systemd's NOTIFY_SOCKET end.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	[ -z "${NOTIFY_PID:-}" ] || kill "$NOTIFY_PID" 2>/dev/null || true
	serve_teardown
}

# notify_start: a NOTIFY_SOCKET receiver; datagrams one a line in $NOTES.
notify_start() {
	NOTES=$BATS_TEST_TMPDIR/notes
	notify-recv "$BATS_TEST_TMPDIR/notify.sock" "$NOTES" 3>&- &
	NOTIFY_PID=$!
	wait_for 5 test -e "$NOTES"
	export NOTIFY_SOCKET=$BATS_TEST_TMPDIR/notify.sock
}

pings() {
	grep -c '^WATCHDOG=1$' "$NOTES" || true
}

@test "WATCHDOG_USEC: WATCHDOG=1 from the event loop, after READY=1" {
	notify_start
	WATCHDOG_USEC=200000 serve_start
	wait_for 10 grep -q '^READY=1' "$NOTES"
	wait_for 10 bash -c '[ "$(grep -c "^WATCHDOG=1$" "$1")" -ge 3 ]' sh "$NOTES"
	# READY=1 comes before the first ping.
	[ "$(grep -n '^READY=1' "$NOTES" | cut -d: -f1)" -lt "$(grep -n '^WATCHDOG=1$' "$NOTES" | head -1 | cut -d: -f1)" ]
	grep -q 'systemd watchdog: WATCHDOG=1 every 100 ms' "$BATS_TEST_TMPDIR/err"
}

@test "WATCHDOG_PID of another process: no pings; the child sees neither variable" {
	notify_start
	WATCHDOG_USEC=100000 WATCHDOG_PID=1 serve_start
	wait_for 10 grep -q '^READY=1' "$NOTES"
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	child=$(grep -l "^PPid:[[:space:]]*$SERVE_PID\$" /proc/[0-9]*/status | head -1 | cut -d/ -f3)
	[ -n "$child" ]
	run ! grep -qE '^WATCHDOG_(USEC|PID)=' < <(tr '\0' '\n' <"/proc/$child/environ")
	# The load's round trip took longer than a period would have.
	[ "$(pings)" -eq 0 ]
	run ! grep -q 'systemd watchdog' "$BATS_TEST_TMPDIR/err"
}

@test "a bad WATCHDOG_USEC is a warning, not a failure" {
	notify_start
	WATCHDOG_USEC=soon serve_start
	wait_for 10 grep -q '^READY=1' "$NOTES"
	grep -q 'WATCHDOG_USEC=soon: invalid; no watchdog' "$BATS_TEST_TMPDIR/err"
}
