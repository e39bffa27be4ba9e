#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the ACP child channel — spawn, initialize, faults, death,
# respawn, idle policy.

load serve_helper

teardown() {
	serve_teardown
}

P='{"prompt":[{"type":"text","text":"hello"}]}'

@test "the child is started on demand; its stderr goes to the daemon log" {
	serve_start
	req GET '/health?deep=1'
	expect 200 '.channelAlive == false'
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	req GET '/health?deep=1'
	expect 200 '.channelAlive == true and .sessions == 1'
	grep -q "child $(child_pid): fake-child: started" "$BATS_TEST_TMPDIR/err"
}

@test "the private-parent secret is passed and checked" {
	cat >"$BATS_TEST_TMPDIR/wrong-secret" <<EOF
#!/bin/sh
QWEN_ACP_PARENT_CAPABILITY=not-the-secret exec "$FAKE_CHILD_BIN" "\$@"
EOF
	chmod +x "$BATS_TEST_TMPDIR/wrong-secret"
	SERVE_CHILD=$BATS_TEST_TMPDIR/wrong-secret serve_start
	req POST /session '{}'
	expect 503 '.code == "acp_channel_unavailable"'
	serve_stop
	SERVE_CHILD=$FAKE_CHILD_BIN serve_start
	req POST /session '{}'
	expect 200
}

@test "child crash mid-prompt: turn_error, session_died, 404, then a fresh child" {
	FAKE_CHILD=crash-on=session/prompt serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	local old=$(child_pid)
	sse_open a /session/$SID/events
	TRANSPORT=tcp sse_open b /session/$SID/events
	req POST /session/$SID/prompt "$P"
	expect 202
	local pid=$(jq -r .promptId <<<"$body")
	for s in a b; do
		sse_wait $s ".type == \"turn_error\" and .data.promptId == \"$pid\" and .data.code == \"channel_closed\""
		sse_wait $s ".type == \"session_died\" and .data.reason == \"channel_closed\" and .data.signalCode == \"SIGKILL\" and .data.exitCode == null"
	done
	req GET /session/$SID/status
	expect 404
	wait_for 5 bash -c "curl -s --unix-socket '$SOCK' 'http://localhost/health?deep=1' | jq -e '.channelAlive == false' >/dev/null"
	! kill -0 "$old" 2>/dev/null || false
	req POST /session/$SID/load '{}'
	expect 200 '.attached == false'
	[ "$(child_pid)" != "$old" ]
}

@test "child exits during a restore: the caller gets 503, the daemon lives" {
	FAKE_CHILD=crash-on=session/load serve_start
	make_transcript
	for TRANSPORT in unix tcp; do
		req POST /session/$SID/load '{}'
		expect 503 '.code == "acp_channel_unavailable" and .retryable == true'
	done
	req POST /session/$SID/resume '{}'
	expect 200
}

@test "child closes its stdout: sessions die, the child is ended" {
	FAKE_CHILD=close-stdout-after=3 serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	local old=$(child_pid)
	sse_open a /session/$SID/events
	req POST /session/$SID/prompt "$P"
	sse_wait a '.type == "session_died"'
	wait_for 10 bash -c "! kill -0 $old 2>/dev/null"
	req GET /session/$SID/status
	expect 404
}

@test "child exits at once: 503 for every caller, then recovery" {
	FAKE_CHILD=crash-after=1 serve_start
	req POST /session '{}'
	expect 503 '.code == "acp_channel_unavailable"'
	[ "$(header Retry-After)" = 1 ]
	req GET /health
	expect 200
}

@test "initialize timeout: 504 init_timeout (channel.initialize); load gets the reduced shape" {
	FAKE_CHILD=hang=initialize serve_start --initialize-timeout-ms 300
	req POST /session '{}'
	expect 504 '.code == "init_timeout" and .errorKind == "init_timeout" and .phase == "channel.initialize" and .timeoutMs == 300 and .retryable == true and .sideEffectPossible == false'
	[ "$(header Retry-After)" = 5 ]
	make_transcript
	req POST /session/$SID/load '{}'
	expect 504 '.code == "init_timeout" and .phase == "channel.initialize" and (has("retryable") | not)'
	[ -z "$(header Retry-After)" ]
}

@test "session/new timeout: 504 init_timeout with the clamped Retry-After" {
	# (a budget a sanitized child starts well within: the channel's own
	# initialize runs under it too)
	FAKE_CHILD=hang=session/new serve_start --initialize-timeout-ms 1500
	req POST /session '{}'
	expect 504 '.code == "init_timeout" and .timeoutMs == 1500 and (has("phase") | not)'
	[ "$(header Retry-After)" = 5 ]
	req GET '/health?deep=1'
	expect 200 '.sessions == 0'
}

@test "child JSON-RPC errors: catalogued codes keep their shape, others are 500" {
	FAKE_CHILD=fail=session/load:-32603,fail=session/resume:-32020 serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	expect 500 '.code == -32603 and .error == "Injected failure"'
	req POST /session/$SID/resume '{}'
	expect 409 ".code == \"session_writer_conflict\" and .sessionId == \"$SID\""
}

@test "a failing prompt is a turn_error; the session keeps working" {
	FAKE_CHILD=fail=session/prompt:-32603 serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	sse_open a /session/$SID/events
	req POST /session/$SID/prompt "$P"
	local pid=$(jq -r .promptId <<<"$body")
	sse_wait a ".type == \"turn_error\" and .data.promptId == \"$pid\" and .data.message == \"Injected failure\""
	# The JSON-RPC code as upstream gives it, our classification beside it.
	sse_has a '.type == "turn_error" and .data.code == "-32603" and .data.errorKind == "acp_error"'
	req GET /session/$SID/status
	expect 200 '.hasActivePrompt == false'
}

@test "an agent's failed prompt: turn_error carries the agent's own words (data.details) and code" {
	FAKE_CHILD="fail=session/prompt:-32603,fail-detail=Context is too large to send safely after automatic compression." serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	sse_open a /session/$SID/events
	req POST /session/$SID/prompt "$P"
	local pid=$(jq -r .promptId <<<"$body")
	sse_wait a ".type == \"turn_error\" and .data.promptId == \"$pid\""
	sse_has a '.type == "turn_error" and .data.message == "Context is too large to send safely after automatic compression." and .data.code == "-32603" and .data.errorKind == "acp_error"'
}

@test "idle policy: 0 ends the child with its last session; N keeps it N ms" {
	serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	local old=$(child_pid)
	req DELETE /session/$SID
	expect 204
	wait_for 10 bash -c "! kill -0 $old 2>/dev/null"
	serve_stop
	# N = 10 min: the next load, whenever it comes, finds the same child.
	serve_start --channel-idle-timeout-ms 600000
	req POST /session/$SID/load '{}'
	old=$(child_pid)
	req DELETE /session/$SID
	expect 204
	req POST /session/$SID/load '{}'
	expect 200
	[ "$(child_pid)" = "$old" ]
	kill -0 "$old"
	serve_stop
	# N = 1 s: the child ends, and not before N after its last session.
	serve_start --channel-idle-timeout-ms 1000
	req POST /session/$SID/load '{}'
	old=$(child_pid)
	local t0=$(date +%s%3N)
	req DELETE /session/$SID
	expect 204
	wait_for 10 bash -c "! kill -0 $old 2>/dev/null"
	local ended=$(date -d "$(grep -m1 "child $old idle: ending it" "$BATS_TEST_TMPDIR/err" |
	    cut -d' ' -f1)" +%s%3N)
	[ $((ended - t0)) -ge 1000 ]
}

@test "a request while an idle child ends starts a fresh child at once; the old one is reaped apart" {
	# linger, ignore-term: the ended child stays until SIGKILL, two grace
	# periods after its end.
	FAKE_CHILD=linger,ignore-term serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	local old=$(child_pid)
	req DELETE /session/$SID
	expect 204
	wait_for 10 grep -q "child $old idle: ending it" "$BATS_TEST_TMPDIR/err"
	req POST /session/$SID/load '{}'
	expect 200
	# Served by a new child while the old one still lingers.
	[ "$(child_pid)" != "$old" ]
	kill -0 "$old"
	run ! grep -q "child $old exited" "$BATS_TEST_TMPDIR/err"
	# Then TERM and KILL end the old one, reaped and logged; the new one
	# serves on.
	wait_for 10 grep -q "child $old: sending SIGTERM" "$BATS_TEST_TMPDIR/err"
	wait_for 10 grep -q "child $old: sending SIGKILL" "$BATS_TEST_TMPDIR/err"
	wait_for 10 grep -q "child $old exited (signal 9)" "$BATS_TEST_TMPDIR/err"
	run ! kill -0 "$old"
	req GET '/health?deep=1'
	expect 200 '.channelAlive == true and .sessions == 1'
	req GET /metrics
	grep -qx 'qwen_serve_child_exits_total{reason="stopped"} 1' <<<"$body"
}

@test "a late notification for a closed session is dropped" {
	FAKE_CHILD=chunks=3,chunk-delay=1000,hang=session/cancel serve_start --log-level debug
	make_transcript
	req POST /session/$SID/load '{}'
	req POST /session/$SID/prompt "$P"
	req DELETE /session/$SID
	expect 204
	wait_for 10 grep -q "update for closed session $SID dropped" "$BATS_TEST_TMPDIR/err"
}
