#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: seed 000's channel rules, end to end through the daemon's
# real channel view.  Every late answer here is held by the fake child
# (hold=) and released by the test (SIGUSR1): nothing depends on speed.

load serve_restore_helper

teardown() {
	rteardown
}

# log_count TEXT: lines of the daemon log containing TEXT.
log_count() {
	grep -cF -- "$1" "$BATS_TEST_TMPDIR/err" || true
}

# log_has N TEXT: exactly N lines of the daemon log contain TEXT (for
# wait_for, which runs it again each time).
log_has() {
	[ "$(log_count "$2")" -eq "$1" ]
}

# abandon_beside_sibling: a live sibling ($sib) on a child ($pid) kept 10 min
# when idle, and a load of SID held past its 300 ms deadline: 504, fenced.
abandon_beside_sibling() {
	rserve "hold=session/load@$SID" --session-restore-timeout-ms 300 \
	    --channel-idle-timeout-ms 600000
	req POST /session '{}'
	expect 200
	sib=$(jq -r .sessionId <<<"$body")
	pid=$(child_pid)
	req POST /session/$SID/load '{}'
	expect 504 '.code == "session_restore_timeout"'
	health_has '.restoresUnsettled == 1 and .restoresFenced == 1'
}

@test "derived condemnation: a settled abandoned restore returns its channel to the idle policy" {
	abandon_beside_sibling
	# The late success, released now: one close, and the restore settles.
	kill -USR1 "$pid"
	health_wait '.restoresUnsettled == 0' 10
	grep -q "session $SID: abandoned load settled" "$BATS_TEST_TMPDIR/err"
	# The fence outlives the settlement while its channel lives.
	health_has '.restoresFenced == 1'
	# Visible work drains: nothing is unsettled, so the channel is not
	# condemned; the 10 min idle policy keeps the child.
	req DELETE /session/$sib
	expect 204
	req POST /session '{}'
	expect 200
	[ "$(child_pid)" = "$pid" ]
	kill -0 "$pid"
	[ "$(log_count 'drained with an unsettled restore')" -eq 0 ]
}

@test "derived condemnation: drained while unsettled, the child is recycled and the fence lifted" {
	abandon_beside_sibling
	# The sibling kept the child; without it the unsettled restore
	# condemns the channel despite the 10 min idle policy.
	req DELETE /session/$sib
	expect 204
	wait_for 10 grep -q "child $pid drained with an unsettled restore: recycling it" \
	    "$BATS_TEST_TMPDIR/err"
	wait_for 10 bash -c "! kill -0 $pid 2>/dev/null"
	# The channel exited: its restore settled and its fence went with it.
	health_wait '.restoresUnsettled == 0 and .restoresFenced == 0' 10
	req POST /session '{}'
	expect 200
	[ "$(child_pid)" != "$pid" ]
}

@test "a pending spawn keeps an abandoned restore from killing its channel" {
	rserve "hold=session/new,hold=session/load@$SID" --session-restore-timeout-ms 300
	bg_req spawn POST /session '{}'
	wait_for 10 calls_are 1 session/new
	local pid=$(child_pid)
	req POST /session/$SID/load '{}'
	expect 504 '.code == "session_restore_timeout"'
	# Answered after the abandonment's decision (one loop, in order).
	health_has '.restoresUnsettled == 1'
	[ "$(log_count "session $SID: abandoned on an empty channel")" -eq 0 ]
	kill -0 "$pid"
	# Release both: the spawn succeeds on the same child.
	kill -USR1 "$pid"
	bg_wait spawn
	[ "$code" = 200 ]
	health_wait '.restoresUnsettled == 0 and .sessions == 1' 10
	[ "$(child_pid)" = "$pid" ]
}

# hold_control OP METHOD PATH [BODY]: a held load of SID, then the control
# operation OP (METHOD PATH) on the otherwise empty channel, held too; the
# load times out first (both have the restore budget; the load went first).
hold_control() {
	local op=$1 m=$2 p=$3 b=${4-}
	# A budget long enough for the operation to go out before the deadline.
	rserve "hold=$op,hold=session/load@$SID" --session-restore-timeout-ms 3000
	bg_req load POST /session/$SID/load '{}'
	wait_for 10 calls_are 1 session/load "$SID"
	bg_req ctl "$m" "$p" "$b"
	wait_for 10 calls_are 1 "$op"
	PID=$(child_pid)
	bg_wait load
	[ "$code" = 504 ]
}

@test "a pending transcript read keeps an abandoned restore from killing its channel" {
	hold_control qwen/status/session/transcript GET "/session/$SID2/transcript?limit=5"
	# The abandonment saw the operation: the child was not killed under it.
	[ "$(log_count "session $SID: abandoned on an empty channel")" -eq 0 ]
	kill -USR1 "$PID" 2>/dev/null || true
	# Answered by that child (or by its own read timeout, after which the
	# drained child may be recycled), never 503 channel_closed.
	bg_wait ctl
	[ "$code" != 503 ]
}

@test "a pending branch keeps an abandoned restore from killing its channel" {
	hold_control qwen/control/session/branch POST "/session/$SID2/branch" '{}'
	[ "$(log_count "session $SID: abandoned on an empty channel")" -eq 0 ]
	kill -USR1 "$PID" 2>/dev/null || true
	bg_wait ctl
	[ "$code" != 503 ]
}

@test "another restore on the channel keeps the first abandoned one from killing it" {
	rserve "hold=initialize,hold=session/load" --session-restore-timeout-ms 300
	# Both restores wait for the held initialize, so both are dispatched
	# in one go: each is active when the other's deadline comes.
	bg_req a POST /session/$SID/load '{}'
	bg_req b POST /session/$SID2/load '{}'
	wait_for 10 grep -q "session $SID: load requested" "$BATS_TEST_TMPDIR/err"
	wait_for 10 grep -q "session $SID2: load requested" "$BATS_TEST_TMPDIR/err"
	wait_for 10 calls_are 1 initialize
	local pid=$(child_pid)
	kill -USR1 "$pid"
	bg_wait a
	[ "$code" = 504 ]
	bg_wait b
	[ "$code" = 504 ]
	health_wait '.restoresUnsettled == 0' 10
	# The first abandonment saw the other restore and kept the child; the
	# second found nothing visible and ended it: exactly one kill.
	[ "$(log_count 'abandoned on an empty channel')" -eq 1 ]
	local last=$(grep -o 'session [0-9a-f-]*: load timed out' "$BATS_TEST_TMPDIR/err" |
	    tail -1 | cut -d' ' -f2 | tr -d :)
	grep -q "session $last: abandoned on an empty channel" "$BATS_TEST_TMPDIR/err"
	wait_for 10 bash -c "! kill -0 $pid 2>/dev/null"
}

@test "the closed-session tombstone lasts 60 s (injected clock)" {
	export QWEN_SERVE_TEST_CLOCK_FILE=$BATS_TEST_TMPDIR/clock
	echo 1000 >"$QWEN_SERVE_TEST_CLOCK_FILE"
	rserve "poke=$SID" --channel-idle-timeout-ms 600000 --log-level debug
	req POST /session/$SID/resume '{}'
	expect 200
	local cid=$(jq -r .clientId <<<"$body") pid=$(child_pid)
	req DELETE /session/$SID '' -H "X-Qwen-Client-Id: $cid"
	expect 204
	# A late notification after the close: dropped as closed...
	kill -USR1 "$pid"
	wait_for 5 log_has 1 "update for closed session $SID dropped"
	# ...still 1 ms before the 60 s are up...
	echo 60999 >"$QWEN_SERVE_TEST_CLOCK_FILE"
	kill -USR1 "$pid"
	wait_for 5 log_has 2 "update for closed session $SID dropped"
	# ...and the tombstone is gone at 60 s: the id is unknown again.
	echo 61000 >"$QWEN_SERVE_TEST_CLOCK_FILE"
	kill -USR1 "$pid"
	wait_for 5 grep -q "update for unknown session $SID dropped" "$BATS_TEST_TMPDIR/err"
	[ "$(log_count "update for closed session $SID dropped")" -eq 2 ]
}

@test "without --trace-file the child still gets a traceparent in _meta" {
	rserve ""
	req POST /session '{}'
	expect 200
	req POST /session/$SID/load '{}'
	expect 200
	req POST /session/$SID2/resume '{}'
	expect 200
	local m tp
	for m in session/new session/load session/resume; do
		tp=$(awk -v m="$m" '$2 == m { print $4 }' "$CLOG" | head -1)
		echo "$m: $tp"
		[[ "$tp" =~ ^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$ ]]
	done
	# Each request is its own trace.
	[ "$(awk '{ print $4 }' "$CLOG" | grep -c '^00-')" -eq 3 ]
	[ "$(awk '{ split($4, p, "-"); print p[2] }' "$CLOG" | grep . | sort -u | wc -l)" -eq 3 ]
}
