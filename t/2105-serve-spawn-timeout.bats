#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a session/new that outlives the initialize budget runs under
# the restore lifecycle (seed 000, protocol §6 "timed-out session/new
# mirrors this"): 504 init_timeout, exactly one close of the late-created
# id, quarantine (new_session_cleanup_failed), overdue
# (new_session_settlement_overdue), recovery after drain.

load serve_restore_helper

teardown() {
	rteardown
}

S3=33333333-3333-4333-8333-333333333333
S4=44444444-4444-4444-8444-444444444444

# Spans of session/new, as restore_spans does for restores.
spawn_spans() {
	jq -c '.resourceSpans[].scopeSpans[].spans[]
	    | select(.name == "qwen-code.daemon.bridge")
	    | {attrs: (reduce .attributes[] as $a ({}; .[$a.key] = ($a.value | .stringValue // .intValue))),
	       events: [(.events // [])[] | {name, attrs: (reduce (.attributes // [])[] as $a ({}; .[$a.key] = $a.value.stringValue))}]}
	    | select(.attrs["qwen-code.daemon.operation"] == "session.new")' \
	    "$TRACE" 2>/dev/null | jq -c -s .
}

@test "active spawn: same-id create is pending, load/resume restore_in_progress; 504 on the deadline" {
	rserve "hang=session/new@$S3" --initialize-timeout-ms 3000
	req POST /session '{}'
	expect 200
	local t0=$(now_ms)
	bg_req owner POST /session "{\"sessionId\":\"$S3\"}"
	wait_for 5 calls_are 1 session/new "$S3"
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 409 ".code == \"session_id_conflict\" and .conflict == \"pending\""
	req POST /session/$S3/load '{}'
	expect 409 ".code == \"restore_in_progress\" and .reason == \"restore_in_progress\" and
	    .activeAction == \"spawn\" and .requestedAction == \"load\""
	bg_wait owner 15
	local took=$(( $(now_ms) - t0 ))
	expect 504 '.code == "init_timeout" and .errorKind == "init_timeout" and
	    .retryable == true and .timeoutMs == 3000 and
	    .error == "AcpSessionBridge session/new timed out after 3000ms" and
	    (has("phase") | not) and (has("sessionId") | not)'
	[ "$(header Retry-After)" = 5 ]
	[ "$took" -ge 2900 ]
	[ "$(calls session/new "$S3")" -eq 1 ]
}

@test "late success: exactly one close of the created id, then settled; the spawn span" {
	TRACE=$BATS_TEST_TMPDIR/trace.jsonl
	rserve "hold=session/new@$S3,chunks=1" --initialize-timeout-ms 1000 \
	    --trace-file "$TRACE"
	req POST /session '{}'
	expect 200
	local sib=$(jq -r .sessionId <<<"$body") pid=$(child_pid)
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 504 '.code == "init_timeout" and .timeoutMs == 1000'
	kill -USR1 "$(child_pid)"	# the held spawn answers now, late
	[ "$(header Retry-After)" = 5 ]
	wait_for 20 calls_are 1 qwen/control/session/close "$S3"
	health_wait '.restoresUnsettled == 0 and .inFlight == 0' 10
	grep -q "session $S3: late spawn success" "$BATS_TEST_TMPDIR/err"
	grep -q "session $S3: cleanup close: close_ok" "$BATS_TEST_TMPDIR/err"
	# The late session never registers; the sibling and its child stay.
	req GET /session/$S3/status
	expect 404
	[ "$(child_pid)" = "$pid" ]
	sibling_works "$sib"
	[ "$(calls qwen/control/session/close "$S3")" -eq 1 ]
	# Settled cleanly: fresh work is admitted.
	req POST /session "{\"sessionId\":\"$S4\"}"
	expect 200
	wait_for 5 cond '[ "$(spawn_spans | jq length)" -ge 3 ]'
	spawn_spans | jq -e --arg s "$S3" '[.[] | select(.attrs["session.id"] == $s)][0] |
	    .attrs["qwen-code.daemon.session_new.timeout_ms"] == "1000" and
	    .attrs["qwen-code.daemon.session_restore.final_state"] == "settled" and
	    [.events[] | select(.name != "session.restore.settlement_overdue")] as $e |
	    ([$e[].name] == ["session.restore.public_result",
	      "session.restore.late_result", "session.restore.cleanup"]) and
	    $e[0].attrs.result == "timeout" and $e[1].attrs.result == "success" and
	    $e[2].attrs.cleanup_result == "closed"' >/dev/null
}

@test "an id-less spawn answered late: the id the child created is closed once" {
	rserve "hold=session/new" --initialize-timeout-ms 1000
	req POST /session/$SID/load '{}'
	expect 200
	req POST /session '{}'
	expect 504 '.code == "init_timeout"'
	kill -USR1 "$(child_pid)"	# the held spawn answers now, late
	wait_for 20 calls_are 1 qwen/control/session/close
	health_wait '.restoresUnsettled == 0 and .inFlight == 0' 10
	local closed=$(awk '$2 == "qwen/control/session/close" {print $3}' "$CLOG")
	[[ "$closed" =~ ^[0-9a-f-]{36}$ ]]
	[ "$closed" != "$SID" ]
	grep -q "session $closed: late spawn success" "$BATS_TEST_TMPDIR/err"
	req GET "/health?deep=1"
	expect 200 '.sessions == 1'
	req GET /session/$SID/status
	expect 200
	[ "$(calls qwen/control/session/close)" -eq 1 ]
}

@test "quarantine: 503 new_session_cleanup_failed before capacity; siblings work; drain recycles" {
	rserve "hold=session/new@$S3,fail=qwen/control/session/close@$S3:-32603,chunks=1" \
	    --initialize-timeout-ms 1000 --max-sessions 2
	req POST /session '{}'
	expect 200
	local sib=$(jq -r .sessionId <<<"$body") old=$(child_pid)
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 504
	kill -USR1 "$(child_pid)"	# the held spawn answers now, late
	health_wait '.restoresQuarantined == 1' 10
	[ "$(calls qwen/control/session/close "$S3")" -eq 1 ]
	grep -q "session $S3: cleanup close: close_failed" "$BATS_TEST_TMPDIR/err"
	# Fresh work: the channel's state, not the (also full) capacity.
	req POST /session "{\"sessionId\":\"$S4\"}"
	expect 503 '.code == "acp_channel_unavailable" and .errorKind == "acp_channel_unavailable" and
	    .reason == "new_session_cleanup_failed" and .retryable == true and .retryAfterSeconds == 5'
	[ "$(header Retry-After)" = 5 ]
	req POST /session/$SID2/load '{}'
	expect 503 '.reason == "new_session_cleanup_failed"'
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 409 '.reason == "awaiting_abandoned_cleanup" and .activeAction == "spawn"'
	[ "$(header Retry-After)" = 5 ]
	# Existing sessions keep working; attach too.
	sibling_works "$sib"
	req POST /session '{}'
	expect 200 ".attached == true and .sessionId == \"$sib\""
	[ "$(child_pid)" = "$old" ]
	# Drain: the child is recycled, the quarantine settles, work resumes.
	drain_recycles "$sib" "$old"
	req POST /session "{\"sessionId\":\"$S4\"}"
	expect 200
	[ "$(child_pid)" != "$old" ]
	[ "$(calls qwen/control/session/close "$S3")" -eq 1 ]
}

@test "overdue: nothing answers; 503 new_session_settlement_overdue; drain recovers" {
	rserve "hang=session/new@$S3,chunks=1" --initialize-timeout-ms 1000
	req POST /session '{}'
	local sib=$(jq -r .sessionId <<<"$body") old=$(child_pid)
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 504 '.code == "init_timeout"'
	# Abandoned: same-id registrations await the cleanup.
	req POST /session/$S3/load '{}'
	expect 409 '.code == "restore_in_progress" and .reason == "awaiting_abandoned_cleanup" and
	    .activeAction == "spawn" and .requestedAction == "load"'
	[ "$(header Retry-After)" = 5 ]
	health_wait '.restoresOverdue == 1'
	req POST /session "{\"sessionId\":\"$S4\"}"
	expect 503 '.code == "acp_channel_unavailable" and .reason == "new_session_settlement_overdue" and .retryAfterSeconds == 5'
	[ "$(header Retry-After)" = 5 ]
	req POST /session/$SID2/resume '{}'
	expect 503 '.reason == "new_session_settlement_overdue"'
	# Existing sessions keep working.
	sibling_works "$sib"
	[ "$(child_pid)" = "$old" ]
	# Draining closes the transport: the only lever on a hung request.
	drain_recycles "$sib" "$old"
	req POST /session "{\"sessionId\":\"$S4\"}"
	expect 200
	[ "$(calls qwen/control/session/close "$S3")" -eq 0 ]
}

@test "empty channel: a timed-out spawn ends the child; the 504 does not wait for the kill" {
	rserve "hang=session/new@$S3,ignore-term,linger" --initialize-timeout-ms 1000
	req_stamp /session "{\"sessionId\":\"$S3\"}"
	expect 504 '.code == "init_timeout"'
	local old=$(child_pid)
	# It ignores TERM; KILL comes after a grace (2 s): the 504 came before.
	wait_for 10 grep -q "child $old: sending SIGKILL" "$BATS_TEST_TMPDIR/err"
	[ "$stamp" -lt "$(log_ms "child $old: sending SIGKILL")" ]
	grep -q "child $old: sending SIGTERM" "$BATS_TEST_TMPDIR/err"
	wait_for 10 bash -c "! kill -0 $old 2>/dev/null"
	health_wait '.restoresUnsettled == 0 and .inFlight == 0'
	req POST /session '{}'
	expect 200 '.attached == false'
	[ "$(child_pid)" != "$old" ]
}
