#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a restore that crosses its deadline (seed 000) — the 504,
# the empty-channel reap that does not wait for the kill, sibling survival,
# same-id fencing, coalescing, capacity retention.  Budgets are small.

load serve_restore_helper

teardown() {
	rteardown
}

@test "504 session_restore_timeout: exact shape and Retry-After; the daemon lives" {
	rserve "hang=session/load@$SID" --session-restore-timeout-ms 300
	req POST /session '{}'
	expect 200
	local t0=$(now_ms)
	req POST /session/$SID/load '{}'
	local took=$(( $(now_ms) - t0 ))
	expect 504 "
	    .error == \"AcpSessionBridge session/load timed out after 300ms\" and
	    .code == \"session_restore_timeout\" and .errorKind == \"restore_timeout\" and
	    .retryable == true and .sessionId == \"$SID\" and .action == \"load\" and
	    .timeoutMs == 300 and (has(\"httpStatus\") | not)"
	[ "$(header Retry-After)" = 5 ]
	[ "$took" -ge 280 ]
	[ "$took" -lt 20000 ]
	req GET /health
	expect 200
	health_wait '.restoresUnsettled == 1 and .restoresActive == 0'
}

@test "empty channel: marked dying and killed; the 504 does not wait for the kill" {
	rserve "hang=session/load@$SID,ignore-term,linger" --session-restore-timeout-ms 300
	req_stamp /session/$SID/load '{}'
	expect 504 '.code == "session_restore_timeout"'
	local old=$(child_pid)
	# Until the child is gone the abandoned restore holds the id.
	req POST /session/$SID/resume '{}'
	grep -q "child $old exited" "$BATS_TEST_TMPDIR/err" ||
	    expect 409 '.code == "restore_in_progress" and .reason == "awaiting_abandoned_cleanup"'
	# The child ignores TERM; KILL comes after a grace (2 s): the 504 came
	# before it.
	wait_for 10 grep -q "child $old: sending SIGKILL" "$BATS_TEST_TMPDIR/err"
	[ "$stamp" -lt "$(log_ms "child $old: sending SIGKILL")" ]
	grep -q "child $old: sending SIGTERM" "$BATS_TEST_TMPDIR/err"
	wait_for 10 bash -c "! kill -0 $old 2>/dev/null"
	health_wait '.restoresUnsettled == 0 and .inFlight == 0'
	# The daemon keeps running; a fresh child serves the next request.
	req POST /session/$SID2/load '{}'
	expect 200 '.attached == false'
	[ "$(child_pid)" != "$old" ]
}

@test "siblings: the child stays, siblings keep working during and after the timeout" {
	rserve "hold=session/load@$SID,chunks=1" --session-restore-timeout-ms 300
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid)
	sse_open a /session/$SID2/events
	req POST /session/$SID/load '{}'
	expect 504
	# While the hidden restore runs, the sibling answers promptly.
	local t0=$(now_ms)
	req POST /session/$SID2/prompt "$P"
	expect 202
	local p1=$(jq -r .promptId <<<"$body")
	sse_wait a ".type == \"turn_complete\" and .data.promptId == \"$p1\""
	echo "# sibling prompt round trip during the restore: $(( $(now_ms) - t0 )) ms" >&3
	req GET /session/$SID2/status
	expect 200
	# ... before the hidden restore has even answered: the child holds
	# it until the test releases it.
	health_has '.restoresUnsettled == 1'
	[ "$(calls qwen/control/session/close "$SID")" -eq 0 ]
	run ! grep -q "session $SID: late load" "$BATS_TEST_TMPDIR/err"
	[ "$(child_pid)" = "$pid" ]
	kill -0 "$pid"
	# The late success is closed; the sibling and the child survive it.
	kill -USR1 "$pid"
	health_wait '.restoresUnsettled == 0' 20
	[ "$(calls qwen/control/session/close "$SID")" -eq 1 ]
	req POST /session/$SID2/prompt "$P"
	expect 202
	local p2=$(jq -r .promptId <<<"$body")
	sse_wait a ".type == \"turn_complete\" and .data.promptId == \"$p2\""
	[ "$(child_pid)" = "$pid" ]
	! sse_has a '.type == "session_died"' || false
}

@test "same-id fencing: 409 reasons and Retry-After from the budget" {
	rserve "hang=session/load@$SID" --session-restore-timeout-ms 5001
	req POST /session '{}'
	expect 200
	bg_req owner POST /session/$SID/load '{}'
	wait_for 5 calls_are 1 session/load "$SID"
	# Active: another action or shape is restore_in_progress, Retry-After 5.
	req POST /session/$SID/resume '{}'
	expect 409 ".code == \"restore_in_progress\" and .reason == \"restore_in_progress\" and
	    .activeAction == \"load\" and .requestedAction == \"resume\" and .sessionId == \"$SID\" and
	    .retryable == true and .errorKind == \"restore_in_progress\""
	[ "$(header Retry-After)" = 5 ]
	req POST /session/$SID/load '{"historyPageSize":10}'
	expect 409 '.reason == "restore_in_progress" and .requestedAction == "load"'
	req POST /session "{\"sessionId\":\"$SID\"}"
	expect 409 '.code == "restore_in_progress" and .requestedAction == "spawn"'
	bg_wait owner 15
	expect 504 '.timeoutMs == 5001'
	[ "$(header Retry-After)" = 6 ]
	# Abandoned: every same-id registration awaits the cleanup, Retry-After
	# the clamped budget (ceil(5.001) = 6, not the fixed 5).
	local p
	for p in "POST /session/$SID/load {}" "POST /session/$SID/resume {}" \
	    "POST /session {\"sessionId\":\"$SID\"}"; do
		# shellcheck disable=SC2086
		req $p
		expect 409 '.code == "restore_in_progress" and .reason == "awaiting_abandoned_cleanup" and .activeAction == "load"'
		[ "$(header Retry-After)" = 6 ]
	done
	[ "$(calls session/load "$SID")" -eq 1 ]
	[ "$(calls session/resume "$SID")" -eq 0 ]
	[ "$(calls session/new "$SID")" -eq 0 ]
}

@test "coalescing: same action and shape share one ACP call, attached:true" {
	rserve "delay=session/load@$SID:400" --session-restore-timeout-ms 3000
	bg_req a POST /session/$SID/load '{}'
	bg_req b POST /session/$SID/load '{}'
	bg_req c POST /session/$SID/load '{}'
	bg_wait a
	local ca=$code ba=$body
	bg_wait b
	local cb=$code bb=$body
	bg_wait c
	[ "$ca" = 200 ]
	[ "$cb" = 200 ]
	[ "$code" = 200 ]
	jq -n --argjson a "$ba" --argjson b "$bb" --argjson c "$body" --arg s "$SID" -e '
	    [$a, $b, $c] | all(.sessionId == $s) and
	    (map(select(.attached == false)) | length) == 1 and
	    (map(.clientId) | unique | length) == 3' >/dev/null
	[ "$(calls session/load "$SID")" -eq 1 ]
}

# coalesce_probe OWNER-BODY REFUSED-BODY JOINER-BODY: while a load with
# OWNER-BODY is held, one with REFUSED-BODY is 409 restore_in_progress and
# one with JOINER-BODY coalesces onto it (one ACP call, attached:true).
coalesce_probe() {
	rserve "hold=session/load@$SID" --session-restore-timeout-ms 5000 --log-level debug
	bg_req owner POST /session/$SID/load "$1"
	wait_for 5 calls_are 1 session/load "$SID"
	req POST /session/$SID/load "$2"
	expect 409 '.code == "restore_in_progress" and .reason == "restore_in_progress" and .requestedAction == "load"'
	bg_req joiner POST /session/$SID/load "$3"
	# The owner is the first waiter, the joiner the second.
	wait_for 5 cond '[ "$(grep -c "session $SID: load joined" "$BATS_TEST_TMPDIR/err")" -eq 2 ]'
	kill -USR1 "$(child_pid)"
	bg_wait owner
	[ "$code" = 200 ]
	bg_wait joiner
	[ "$code" = 200 ]
	jq -e '.attached == true' <<<"$body" >/dev/null
	[ "$(calls session/load "$SID")" -eq 1 ]
}

@test "coalescing shape: hideInheritedHistory differs, refused; a summary caller joins a full load" {
	coalesce_probe '{}' '{"hideInheritedHistory":true}' '{"compactedReplayMode":"summary"}'
}

@test "coalescing shape: a full caller does not join a summary load; another summary does" {
	coalesce_probe '{"compactedReplayMode":"summary","hideInheritedHistory":true}' \
	    '{"hideInheritedHistory":true}' \
	    '{"compactedReplayMode":"summary","hideInheritedHistory":true}'
}

@test "coalesced waiters all get the owner's 504" {
	rserve "hang=session/load@$SID" --session-restore-timeout-ms 1500
	req POST /session '{}'
	bg_req a POST /session/$SID/load '{}'
	wait_for 5 calls_are 1 session/load "$SID"
	bg_req b POST /session/$SID/load '{}'
	bg_wait a
	local ca=$code
	bg_wait b
	[ "$ca" = 504 ]
	[ "$code" = 504 ]
	expect 504 ".code == \"session_restore_timeout\" and .sessionId == \"$SID\""
	[ "$(calls session/load "$SID")" -eq 1 ]
	# Joining after the deadline is no longer coalescing.
	req POST /session/$SID/load '{}'
	expect 409 '.reason == "awaiting_abandoned_cleanup"'
}

@test "capacity: an abandoned restore keeps its slot until it settles" {
	local S3=33333333-3333-4333-8333-333333333333 S4=44444444-4444-4444-8444-444444444444
	# (a budget long enough that the restore is not overdue yet)
	rserve "hang=session/load@$SID" --session-restore-timeout-ms 5000 --max-sessions 3
	req POST /session '{}'
	expect 200
	local sib=$(jq -r .sessionId <<<"$body")
	req POST /session/$SID/load '{}'
	expect 504
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 200
	req POST /session "{\"sessionId\":\"$S4\"}"
	expect 503 '.code == "session_limit_exceeded" and .limit == 3 and .scope == "workspace"'
	[ "$(header Retry-After)" = 5 ]
	health_has '.restoresUnsettled == 1 and .sessions == 2'
	# Settlement (here: the drained channel is recycled) gives it back.
	req DELETE /session/$sib
	req DELETE /session/$S3
	health_wait '.restoresUnsettled == 0' 10
	req POST /session "{\"sessionId\":\"$S4\"}"
	expect 200
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 200
	req POST /session '{}'
	expect 200
	req POST /session/$SID2/load '{}'
	expect 503 '.code == "session_limit_exceeded"'
}
