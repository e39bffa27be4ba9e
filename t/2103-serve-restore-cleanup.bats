#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the settlement of an abandoned restore (seed 000) — exactly
# one close, quarantine, overdue, transport close during cleanup, recovery,
# shutdown with a hung request, the restore span and its propagation.

load serve_acp_helper

teardown() {
	rteardown
}

S3=33333333-3333-4333-8333-333333333333

@test "late success: exactly one close, then settled; the restore span" {
	TRACE=$BATS_TEST_TMPDIR/trace.jsonl
	rserve "hold=session/load@$SID" --session-restore-timeout-ms 300 \
	    --trace-file "$TRACE" --log-level debug
	req POST /session '{}'
	req POST /session/$SID/load '{}'
	expect 504
	kill -USR1 "$(child_pid)"	# the held load answers now, late
	health_wait '.restoresUnsettled == 0' 10
	[ "$(calls qwen/control/session/close "$SID")" -eq 1 ]
	grep -q "session $SID: late load success" "$BATS_TEST_TMPDIR/err"
	grep -q "session $SID: cleanup close: close_ok" "$BATS_TEST_TMPDIR/err"
	# Settled: the id is free again (the fence gives way to a new owner).
	req POST /session/$SID/resume '{}'
	expect 200 '.attached == false'
	[ "$(calls qwen/control/session/close "$SID")" -eq 1 ]
	# The restore span: attributes, events, and its context in the load.
	wait_for 5 cond '[ "$(restore_spans | jq length)" -ge 2 ]'
	local span=$(restore_spans | jq -c '.[0]')
	jq -e --arg s "$SID" '
	    .attrs["qwen-code.daemon.bridge.operation"] == "session.load" and
	    .attrs["session.id"] == $s and
	    .attrs["qwen-code.daemon.session_restore.timeout_ms"] == "300" and
	    (.attrs["qwen-code.daemon.channel.id"] | tonumber) >= 1 and
	    # (settlement_overdue may come between, timing decides)
	    [.events[] | select(.name != "session.restore.settlement_overdue")] as $e |
	    ([$e[].name] == ["session.restore.public_result",
	      "session.restore.late_result", "session.restore.cleanup"]) and
	    $e[0].attrs.result == "timeout" and
	    $e[1].attrs.result == "success" and
	    $e[2].attrs.cleanup_result == "closed"' <<<"$span" >/dev/null
	local tp=$(awk -v id="$SID" '$2 == "session/load" && $3 == id {print $4}' "$CLOG")
	[[ "$tp" == "00-$(jq -r .traceId <<<"$span")-$(jq -r .spanId <<<"$span")-"?? ]]
	! grep -q 'Why is loading slow' "$TRACE" || false
}

@test "ACP end to end: fresh work on a quarantined channel is 503 acp_channel_unavailable, as on REST" {
	rserve "hold=session/load@$SID,fail=qwen/control/session/close@$SID:-32603,chunks=1" \
	    --session-restore-timeout-ms 300
	req POST /session '{}'
	expect 200
	req POST /session/$SID/load '{}'
	expect 504
	kill -USR1 "$(child_pid)"	# the held load answers now, late
	health_wait '.restoresQuarantined == 1' 10
	req POST /session/$SID2/load '{}'
	expect 503
	local rest=$(rest_error_view)
	acp_init
	acp_open conn
	acp_call 7 session/load "{\"sessionId\":\"$SID2\"}"
	acp_wait_answer conn 7
	local rpc=$(rpc_error_view "$(jq -c .error <<<"$answer")")
	echo "REST: $rest" >&2
	echo "ACP:  $rpc" >&2
	[ -n "$rest" ]
	[ "$rest" = "$rpc" ]
	jq -e '.code == "acp_channel_unavailable" and .errorKind == "acp_channel_unavailable" and
	    .httpStatus == 503 and .retryable == true and .retryAfterSeconds == 5 and
	    .reason == "restore_cleanup_failed"' <<<"$rpc"
	# A caller-named session/new is fresh work too.
	acp_call 8 session/new "{\"cwd\":\"$WS\",\"mcpServers\":[],\"_meta\":{\"qwen-code/sessionId\":\"$S3\"}}"
	acp_wait_answer conn 8
	rpc_error_view "$(jq -c .error <<<"$answer")" |
	    jq -e '.code == "acp_channel_unavailable" and .httpStatus == 503 and .reason == "restore_cleanup_failed"'
	[ "$(calls session/load "$SID2")" -eq 0 ]
	[ "$(calls session/new "$S3")" -eq 0 ]
}

@test "late failure: exactly one close; not found counts as clean" {
	TRACE=$BATS_TEST_TMPDIR/trace.jsonl
	rserve "hold=session/load@$SID,fail=session/load@$SID:-32603" \
	    --session-restore-timeout-ms 300 --trace-file "$TRACE"
	req POST /session '{}'
	req POST /session/$SID/load '{}'
	expect 504
	kill -USR1 "$(child_pid)"	# the held load answers now, late
	health_wait '.restoresUnsettled == 0' 10
	[ "$(calls qwen/control/session/close "$SID")" -eq 1 ]
	grep -q "cleanup close: close_not_found" "$BATS_TEST_TMPDIR/err"
	wait_for 5 cond '[ "$(restore_spans | jq length)" -ge 1 ]'
	restore_spans | jq -e '.[0] |
	    [.events[] | select(.name != "session.restore.settlement_overdue")] as $e |
	    $e[1].attrs.result == "failure" and $e[2].attrs.cleanup_result == "not_found"' >/dev/null
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 200
}

@test "quarantine: 503 restore_cleanup_failed before capacity; siblings work; drain recycles" {
	rserve "hold=session/load@$SID,fail=qwen/control/session/close@$SID:-32603,chunks=1" \
	    --session-restore-timeout-ms 300 --max-sessions 2
	req POST /session '{}'
	expect 200
	local sib=$(jq -r .sessionId <<<"$body") old=$(child_pid)
	req POST /session/$SID/load '{}'
	expect 504
	kill -USR1 "$(child_pid)"	# the held load answers now, late
	health_wait '.restoresQuarantined == 1' 10
	[ "$(calls qwen/control/session/close "$SID")" -eq 1 ]
	# Fresh work: the channel's state, not the (also full) capacity.
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 503 '.code == "acp_channel_unavailable" and .errorKind == "acp_channel_unavailable" and
	    .reason == "restore_cleanup_failed" and .retryable == true and .retryAfterSeconds == 5'
	[ "$(header Retry-After)" = 5 ]
	req POST /session/$SID2/load '{}'
	expect 503 '.reason == "restore_cleanup_failed"'
	# A branch is fresh work too: refused before it reaches the child.
	req POST /session/$SID2/branch '{}'
	expect 503 '.code == "acp_channel_unavailable" and .reason == "restore_cleanup_failed"'
	[ "$(calls qwen/control/session/branch)" -eq 0 ]
	req POST /session/$SID/load '{}'
	expect 409 '.reason == "awaiting_abandoned_cleanup"'
	# Existing sessions keep working; attach too.
	sibling_works "$sib"
	req POST /session '{}'
	expect 200 ".attached == true and .sessionId == \"$sib\""
	[ "$(child_pid)" = "$old" ]
	# Drain: the child is recycled, the quarantine settles, work resumes.
	drain_recycles "$sib" "$old"
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 200
	[ "$(child_pid)" != "$old" ]
	[ "$(calls qwen/control/session/close "$SID")" -eq 1 ]
}

@test "a hung close is uncertain: quarantined after the initialize budget" {
	rserve "hold=session/load@$SID,hang=qwen/control/session/close@$SID" \
	    --session-restore-timeout-ms 300 --initialize-timeout-ms 1000
	req POST /session '{}'
	req POST /session/$SID/load '{}'
	expect 504
	kill -USR1 "$(child_pid)"	# the held load answers now, late
	health_wait '.restoresQuarantined == 1' 10
	grep -q "cleanup close: close_timeout" "$BATS_TEST_TMPDIR/err"
	req POST /session/$SID2/resume '{}'
	expect 503 '.reason == "restore_cleanup_failed"'
}

@test "a close answered closed:false is uncertain: quarantined" {
	rserve "hold=session/load@$SID,close-held=$SID" --session-restore-timeout-ms 300
	req POST /session '{}'
	expect 200
	req POST /session/$SID/load '{}'
	expect 504
	kill -USR1 "$(child_pid)"	# the held load answers now, late
	health_wait '.restoresQuarantined == 1' 10
	grep -q "cleanup close: close_failed" "$BATS_TEST_TMPDIR/err"
	[ "$(calls qwen/control/session/close "$SID")" -eq 1 ]
	req POST /session/$SID2/resume '{}'
	expect 503 '.code == "acp_channel_unavailable" and .reason == "restore_cleanup_failed"'
}

@test "overdue: one further budget, fresh work 503 restore_settlement_overdue; drain recovers" {
	TRACE=$BATS_TEST_TMPDIR/trace.jsonl
	rserve "hang=session/load@$SID,chunks=1" --session-restore-timeout-ms 300 \
	    --trace-file "$TRACE"
	req POST /session '{}'
	local sib=$(jq -r .sessionId <<<"$body") old=$(child_pid)
	req POST /session/$SID/load '{}'
	expect 504
	health_wait '.restoresOverdue == 1'
	for p in "/session/$SID2/load" "/session/$SID2/resume"; do
		req POST "$p" '{}'
		expect 503 '.code == "acp_channel_unavailable" and .reason == "restore_settlement_overdue" and .retryAfterSeconds == 5'
		[ "$(header Retry-After)" = 5 ]
	done
	req POST /session "{\"sessionId\":\"$S3\"}"
	expect 503 '.reason == "restore_settlement_overdue"'
	req POST /session/$SID2/branch '{}'
	expect 503 '.code == "acp_channel_unavailable" and .reason == "restore_settlement_overdue"'
	[ "$(calls qwen/control/session/branch)" -eq 0 ]
	# Existing sessions keep working.
	sibling_works "$sib"
	# Draining closes the transport: the only lever on a hung request.
	drain_recycles "$sib" "$old"
	req POST /session/$SID2/load '{}'
	expect 200
	[ "$(calls qwen/control/session/close "$SID")" -eq 0 ]
	wait_for 5 cond '[ "$(restore_spans | jq length)" -ge 1 ]'
	restore_spans | jq -e '.[0] | [.events[].name] == ["session.restore.public_result",
	    "session.restore.settlement_overdue", "session.restore.cleanup"] and
	    .events[2].attrs.cleanup_result == "transport_closed"' >/dev/null
}

@test "transport closes during cleanup: settled as transport_closed" {
	local knob
	for knob in crash-on close-stdout-on; do
		rserve "hold=session/load@$SID,$knob=qwen/control/session/close@$SID" \
		    --session-restore-timeout-ms 300
		req POST /session '{}'
		local old=$(child_pid)
		req POST /session/$SID/load '{}'
		expect 504
		kill -USR1 "$(child_pid)"	# the held load answers now, late
		wait_for 10 calls_are 1 qwen/control/session/close "$SID"
		wait_for 10 bash -c "! kill -0 $old 2>/dev/null"
		health_wait '.restoresUnsettled == 0 and .inFlight == 0'
		req POST /session/$SID2/load '{}'
		expect 200
		[ "$(child_pid)" != "$old" ]
		serve_stop
		rm -f "$CLOG"
	done
}

@test "shutdown with a hung request: the daemon exits, the caller is answered" {
	rserve "hang=session/load@$SID"
	bg_req hung POST /session/$SID/load '{}'
	wait_for 5 calls_are 1 session/load "$SID"
	local old=$(child_pid) t0=$(now_ms)
	serve_stop
	[ "$SERVE_STATUS" -eq 0 ]
	[ $(( $(now_ms) - t0 )) -lt 8000 ]
	bg_wait hung 20
	expect 503 '.code == "acp_channel_unavailable"'
	! kill -0 "$old" 2>/dev/null || false
}

@test "shutdown with an abandoned hung restore: waits for its settlement" {
	rserve "hang=session/load@$SID,ignore-term" --session-restore-timeout-ms 300
	req POST /session '{}'
	local old=$(child_pid)
	req POST /session/$SID/load '{}'
	expect 504
	serve_stop
	[ "$SERVE_STATUS" -eq 0 ]
	! kill -0 "$old" 2>/dev/null || false
	grep -q "session $SID: abandoned load settled" "$BATS_TEST_TMPDIR/err"
}

@test "early notifications buffer for the new owner and reach its bus" {
	rserve "early-update,delay=session/resume@$SID:300" --session-restore-timeout-ms 3000
	req POST /session/$SID/resume '{}'
	expect 200
	sse_open a /session/$SID/events -H 'Last-Event-ID: 0'
	sse_wait a ".type == \"session_update\" and .data.sessionId == \"$SID\" and .data.update.content.text == \"early\""
}

# fenced_drops N: the daemon dropped N updates for SID as fenced.
fenced_drops() {
	[ "$(grep -c "update for fenced session $SID dropped" "$BATS_TEST_TMPDIR/err")" -eq "$1" ]
}

@test "late notifications of an abandoned restore are fenced, also after settlement" {
	# Each SIGUSR1 releases the held load and sends an update for SID.
	rserve "hold=session/load@$SID,poke=$SID" --session-restore-timeout-ms 300 \
	    --log-level debug
	req POST /session '{}'
	local pid=$(child_pid)
	req POST /session/$SID/load '{}'
	expect 504
	kill -USR1 "$pid"
	health_wait '.restoresUnsettled == 0' 10
	wait_for 5 grep -q "update for fenced session $SID dropped" "$BATS_TEST_TMPDIR/err"
	# Settled: a late update is still fenced.
	kill -USR1 "$pid"
	wait_for 5 fenced_drops 2
	# A new registration takes ownership: its own updates flow again.
	req POST /session/$SID/resume '{}'
	expect 200
	sse_open a /session/$SID/events -H 'Last-Event-ID: 0'
	kill -USR1 "$pid"
	sse_wait a ".type == \"session_update\" and .data.update.content.text == \"poke\""
}

@test "fence hand-over: the new owner lifts the fence, so after it closes the id is closed, not fenced" {
	# While the new owner's session lives, its updates route to it before
	# any fence is consulted; only once it has gone does the fence (or its
	# absence) decide: the hand-over removed it, the tombstone answers.
	rserve "hold=session/load@$SID,poke=$SID" --session-restore-timeout-ms 300 \
	    --log-level debug
	req POST /session '{}'
	local pid=$(child_pid)
	req POST /session/$SID/load '{}'
	expect 504
	kill -USR1 "$pid"
	health_wait '.restoresUnsettled == 0' 10
	wait_for 5 fenced_drops 1
	health_has '.restoresFenced == 1'
	req POST /session/$SID/resume '{}'
	expect 200
	health_has '.restoresFenced == 0'
	req DELETE /session/$SID
	expect 204
	kill -USR1 "$pid"
	wait_for 5 grep -q "update for closed session $SID dropped" "$BATS_TEST_TMPDIR/err"
	fenced_drops 1
}

@test "a failed attempt purges its early events and restores the tombstone" {
	rserve "early-update,late-update=200,delay=session/resume@$SID:200,fail=session/resume@$SID:-32603" \
	    --log-level debug
	req POST /session/$SID/resume '{}'
	expect 500
	wait_for 5 grep -q "update for closed session $SID dropped" "$BATS_TEST_TMPDIR/err"
	! grep -q "update for fenced session $SID" "$BATS_TEST_TMPDIR/err" || false
	req GET /session/$SID/status
	expect 404
}
