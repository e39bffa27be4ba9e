#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: ACP over HTTP (POST/GET/DELETE /acp) against the real
# qwen-acp-child: the methods, the streams, the error mapping shared with
# REST, bad input, and connections that end without leaking anything.

load serve_acp_helper

setup() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	# A prompt "slow" runs until cancelled; others are echoed back.
	AGENT='read -r l; case "$l" in slow) echo started; exec sleep 30;; *) echo "got $l";; esac'
}

teardown() {
	[ -n "${STOPPED:-}" ] && kill -CONT "$STOPPED" 2>/dev/null
	rteardown
}

aserve() {
	SERVE_CHILD=$REAL serve_start --agent-command "$AGENT" "$@"
	make_transcript "$SID"
	make_transcript "$SID2"
}

@test "initialize: inline result, Acp-Connection-Id, capabilities advertise acp-http" {
	aserve
	acp_init
	jq -e --arg c "$ACP_CONN" '.jsonrpc == "2.0" and .id == 0 and
	    .result.agentCapabilities.loadSession == true and
	    .result.agentCapabilities._meta.qwen.connectionId == $c and
	    (.result.agentCapabilities._meta.qwen.methods | index("session/load") != null)' <<<"$body"
	req GET /capabilities
	expect 200 '.transports[0] == "rest" and (.transports | index("acp-http")) != null'
	health_has '.acpConnections == 1'
	# A newer protocol version is answered with ours.
	req POST /acp '{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":7}}'
	expect 200 '.id == "i" and .result.protocolVersion == 1'
	health_has '.acpConnections == 2'
}

@test "new, prompt with streamed updates, cancel, close" {
	aserve
	acp_init
	acp_open conn
	acp_call 1 session/new "{\"cwd\":\"$WS\",\"mcpServers\":[]}"
	acp_wait_answer conn 1
	local sid=$(jq -r .result.sessionId <<<"$answer")
	[ "$(jq -r '.result._meta.qwen.clientId | startswith("client_")' <<<"$answer")" = true ]
	acp_open s1 "$sid"
	acp_call 2 session/prompt "{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"hello\"}]}"
	acp_wait_answer s1 2
	[ "$(jq -r .result.stopReason <<<"$answer")" = end_turn ]
	# The agent's output came first, as session/update notifications.
	acp_msgs s1 | jq -e '
	    ([.[] | select(.method == "session/update") | .params.update.content.text] | join("")) == "got hello\n" and
	    (map(.method == "session/update") | index(true)) < (map(.id == 2) | index(true))' >/dev/null
	acp_msgs s1 | jq -e --arg s "$sid" 'all(.[] | select(.method == "session/update"); .params.sessionId == $s)' >/dev/null
	# A prompt that runs until cancelled: session/cancel is a notification.
	acp_call 3 session/prompt "{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"slow\"}]}"
	acp_wait s1 '.params.update.content.text == "started\n"'
	acp_post "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"$sid\"}}"
	expect 202
	acp_wait_answer s1 3
	[ "$(jq -r .result.stopReason <<<"$answer")" = cancelled ]
	acp_wait s1 '.method == "_qwen/notify" and .params.kind == "prompt_cancelled"'
	# Heartbeat, then close: the session is gone.
	acp_call 4 _qwen/session/heartbeat "{\"sessionId\":\"$sid\"}"
	acp_wait_answer s1 4
	jq -e --arg s "$sid" '.result.sessionId == $s and (.result.lastSeenAt | type) == "number"' <<<"$answer"
	acp_call 5 session/close "{\"sessionId\":\"$sid\"}"
	acp_wait_answer conn 5
	[ "$(jq -c .result <<<"$answer")" = '{}' ]
	req GET /session/$sid/status
	expect 404
	health_has '.sessions == 0'
}

@test "Acp-Session-Id in any case opens the session's one stream" {
	local SID=aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee
	aserve
	acp_init
	acp_call 1 session/load "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"mcpServers\":[]}"
	acp_open s "${SID^^}"
	acp_wait_answer s 1
	acp_msgs s | jq -e '[.[] | select(.method == "session/update")] | length == 2' >/dev/null
}

@test "a session stream opened while its load runs gets the replay and the answer" {
	# The child holds the load until SIGUSR1, so the stream is open first;
	# its 600 updates then arrive in one burst, over the old 256-frame cap.
	FAKE_CHILD="hold=session/load@$SID,replay=600" serve_start
	make_transcript "$SID"
	acp_init
	acp_call 1 session/load "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"mcpServers\":[]}"
	acp_open s "$SID"
	wait_for 10 grep -q 'started .*(pid' "$BATS_TEST_TMPDIR/err"
	kill -USR1 "$(sed -n 's/.*started .* (pid \([0-9]*\)).*/\1/p' "$BATS_TEST_TMPDIR/err" | tail -1)"
	acp_wait_answer s 1
	jq -e --arg s "$SID" '.result.sessionId == $s' <<<"$answer"
	acp_msgs s | jq -e '[.[] | select(.method == "session/update")] | length == 600' >/dev/null
}

@test "load replays the bounded snapshot before its result; resume does not" {
	aserve
	acp_init
	acp_call 1 session/load "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"mcpServers\":[]}"
	acp_open s "$SID"
	acp_wait_answer s 1
	jq -e --arg s "$SID" '.result.sessionId == $s and .result._meta.qwen.attached == false' <<<"$answer"
	acp_msgs s | jq -e '
	    [.[] | select(.method == "session/update") | .params.update] as $u |
	    ($u | length) == 2 and
	    $u[0].sessionUpdate == "user_message_chunk" and $u[0].content.text == "Why is loading slow?" and
	    $u[1].sessionUpdate == "agent_message_chunk" and $u[1].content.text == "Because." and
	    (map(.id == 1) | index(true)) == 2' >/dev/null
	# Last-Event-ID replays the stream; the status shows one client.
	sse_stop_all
	acp_open again "$SID" "$ACP_CONN" -H 'Last-Event-ID: 1'
	acp_wait_answer again 1
	[ "$(acp_msgs again | jq 'length')" -eq 2 ]
	req GET /session/$SID/status
	expect 200 '.clientCount == 1'
	# Resume on a second connection: no replay, the same session attached.
	acp_init two
	acp_call 2 session/resume "{\"sessionId\":\"$SID2\",\"cwd\":\"$WS\",\"mcpServers\":[]}" "$ACP_CONN_two"
	acp_open r "$SID2" "$ACP_CONN_two"
	acp_wait_answer r 2
	jq -e --arg s "$SID2" '.result.sessionId == $s' <<<"$answer"
	[ "$(acp_msgs r | jq '[.[] | select(.method == "session/update")] | length')" -eq 0 ]
	# A prompt needs the session attached to the connection.
	acp_open c2 "" "$ACP_CONN_two"
	acp_call 9 session/prompt "{\"sessionId\":\"$SID\",\"prompt\":[{\"type\":\"text\",\"text\":\"x\"}]}" "$ACP_CONN_two"
	acp_wait_answer c2 9
	jq -e '.error.code == -32602 and (.error.message | test("not attached"))' <<<"$answer"
	# Each connection may only open the streams of sessions it holds.
	req GET /acp '' -H "Acp-Connection-Id: $ACP_CONN_two" -H "Acp-Session-Id: $SID"
	expect 403 '.error.data.code == "acp_stream_forbidden"'
	# Detach: the session nothing else holds is closed.
	acp_call 3 _qwen/session/detach "{\"sessionId\":\"$SID2\"}" "$ACP_CONN_two"
	wait_for 5 bash -c "curl -s -o /dev/null -w '%{http_code}' --unix-socket '$SOCK' http://localhost/session/$SID2/status | grep -q 404"
}

@test "bad input: media type, batches, malformed, connection ids, Accept, unknown methods, oversize" {
	aserve
	local c=(curl -s -o "$BATS_TEST_TMPDIR/b" -w '%{http_code}' --unix-socket "$SOCK")
	[ "$("${c[@]}" -H 'Content-Type: text/plain' -d '{}' http://localhost/acp)" = 415 ]
	jq -e '.error.data.code == "unsupported_media_type" and .id == null' "$BATS_TEST_TMPDIR/b"
	req POST /acp '[{"jsonrpc":"2.0","id":1,"method":"initialize"}]'
	expect 501 '.error.data.httpStatus == 501'
	req POST /acp '{"jsonrpc":"2.0","id":1,"method":'
	expect 400 '.id == null and .error.code == -32600'
	req POST /acp "{'jsonrpc':'2.0'}"
	expect 400 '.id == null and .error.code == -32600'
	req POST /acp '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}'
	expect 400 '.error.data.code == "acp_connection_required"'
	req POST /acp '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}' -H 'Acp-Connection-Id: nope'
	expect 404 '.error.data.code == "acp_connection_not_found"'
	acp_init
	req GET /acp '' -H "Acp-Connection-Id: $ACP_CONN" -H 'Accept: text/html'
	expect 406
	acp_open conn
	acp_call 1 no/such/method '{}'
	acp_wait_answer conn 1
	[ "$(jq .error.code <<<"$answer")" = -32601 ]
	acp_call 2 session/prompt '{"sessionId":"../../etc/passwd","prompt":[]}'
	acp_wait_answer conn 2
	[ "$(jq .error.code <<<"$answer")" = -32602 ]
	acp_call 3 session/load '{"sessionId":"33333333-3333-4333-8333-333333333333"}'
	acp_wait_answer conn 3
	jq -e '.error.code == -32602' <<<"$answer"
	acp_call 4 session/prompt "{\"sessionId\":\"$SID\",\"prompt\":[{\"type\":\"text\",\"text\":\"x\"}]}"
	acp_wait_answer conn 4
	jq -e '.error.code == -32602 and (.error.message | test("No session"))' <<<"$answer"
	head -c $((10 * 1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$BATS_TEST_TMPDIR/big"
	[ "$("${c[@]}" -H 'Content-Type: application/json' -H "Acp-Connection-Id: $ACP_CONN" \
	    --data-binary @"$BATS_TEST_TMPDIR/big" http://localhost/acp)" = 413 ]
	health_has '.acpConnections == 1 and .sessions == 0'
}

@test "bearer token: /acp is gated like the REST API" {
	aserve --token s3cret
	TRANSPORT=tcp
	req POST /acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
	expect 401
	req POST /acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}' -H 'Authorization: Bearer wrong'
	expect 401
	req POST /acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}' -H 'Authorization: Bearer s3cret'
	expect 200
	req POST /acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}' \
	    -H 'Authorization: Bearer s3cret' -H 'Host: evil.example:80'
	expect 403
}

@test "a forced restore timeout is the same error on REST and ACP over HTTP" {
	aserve --session-restore-timeout-ms 2000
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid)
	kill -STOP "$pid"
	STOPPED=$pid
	req POST /session/$SID/load '{}'
	expect 504
	local rest=$(rest_error_view)
	kill -CONT "$pid"
	STOPPED=
	health_wait '.restoresUnsettled == 0' 10
	acp_init
	acp_open conn
	kill -STOP "$pid"
	STOPPED=$pid
	acp_call 7 session/load "{\"sessionId\":\"$SID\"}"
	acp_wait_answer conn 7
	local rpc=$(rpc_error_view "$(jq -c .error <<<"$answer")")
	echo "REST: $rest" >&2
	echo "ACP:  $rpc" >&2
	[ -n "$rest" ]
	[ "$rest" = "$rpc" ]
	jq -e --arg s "$SID" '.code == "session_restore_timeout" and .errorKind == "restore_timeout" and
	    .httpStatus == 504 and .retryable == true and .retryAfterSeconds == 5 and
	    .sessionId == $s and .action == "load" and .timeoutMs == 2000' <<<"$rpc"
	# The retry while it settles: 409 on both, the same too.
	req POST /session/$SID/resume '{}'
	expect 409
	rest=$(rest_error_view)
	acp_call 8 session/resume "{\"sessionId\":\"$SID\"}"
	acp_wait_answer conn 8
	rpc=$(rpc_error_view "$(jq -c .error <<<"$answer")")
	[ "$rest" = "$rpc" ]
	jq -e '.reason == "awaiting_abandoned_cleanup" and .activeAction == "load" and .requestedAction == "resume"' <<<"$rpc"
	kill -CONT "$pid"
	STOPPED=
	health_wait '.restoresUnsettled == 0' 10
}

@test "DELETE /acp: the connection's sessions are detached, its id is gone" {
	aserve
	acp_init
	acp_open conn
	acp_call 1 session/new "{}"
	acp_wait_answer conn 1
	acp_call 2 session/load "{\"sessionId\":\"$SID\"}"
	health_wait '.sessions == 2'
	req DELETE /acp '' -H "Acp-Connection-Id: $ACP_CONN"
	expect 202
	health_wait '.sessions == 0 and .acpConnections == 0'
	acp_post '{"jsonrpc":"2.0","id":3,"method":"session/new","params":{}}'
	expect 404
}

@test "abrupt disconnect: an idle connection is ended, nothing leaks" {
	# Generous: only the end of the stream must start the idle clock.
	QWEN_SERVE_ACP_IDLE_MS=4000 aserve
	acp_init
	acp_open conn
	acp_call 4 session/load "{\"sessionId\":\"$SID2\"}"
	acp_open s2 "$SID2"
	acp_wait_answer s2 4
	health_has '.sessions == 1 and .acpConnections == 1'
	# The client is killed and never comes back.
	sse_stop_all
	health_wait '.sessions == 0 and .acpConnections == 0' 20
	grep -q "acp: http connection $ACP_CONN idle: closed" "$BATS_TEST_TMPDIR/err"
}

@test "a connection that ends while its load runs: the late session is given back" {
	aserve
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid) cid=$(jq -r .clientId <<<"$body")
	kill -STOP "$pid"
	STOPPED=$pid
	acp_init
	acp_call 1 session/load "{\"sessionId\":\"$SID\"}"
	health_wait '.restoresActive == 1'
	req DELETE /acp '' -H "Acp-Connection-Id: $ACP_CONN"
	expect 202
	kill -CONT "$pid"
	STOPPED=
	health_wait '.inFlight == 0 and .acpConnections == 0' 10
	wait_for 5 bash -c "curl -s -o /dev/null -w '%{http_code}' --unix-socket '$SOCK' http://localhost/session/$SID/status | grep -q 404"
	grep -q "late answer for a closed connection: detaching session $SID" "$BATS_TEST_TMPDIR/err"
	req GET /session/$SID2/status
	expect 200 '.clientCount == 1'
}

@test "connection cap: 503 acp_connection_limit_exceeded with Retry-After" {
	aserve
	# 64 initializes from one curl (its options apply to every URL).
	curl -s -D "$BATS_TEST_TMPDIR/h64" -w '%{http_code}\n' --unix-socket "$SOCK" \
	    -H 'Content-Type: application/json' \
	    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}' \
	    $(printf -- '-o /dev/null http://localhost/acp %.0s' $(seq 64)) >"$BATS_TEST_TMPDIR/codes"
	[ "$(grep -c '^200$' "$BATS_TEST_TMPDIR/codes")" -eq 64 ]
	health_has '.acpConnections == 64'
	req POST /acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
	expect 503 '.error.data.code == "acp_connection_limit_exceeded" and .error.data.retryAfterSeconds == 5'
	[ "$(header Retry-After)" = 5 ]
	# One connection ends: there is room for one more.
	local first=$(tr -d '\r' <"$BATS_TEST_TMPDIR/h64" | sed -n 's/^Acp-Connection-Id: //p' | head -1)
	req DELETE /acp '' -H "Acp-Connection-Id: $first"
	expect 202
	acp_init
	health_has '.acpConnections == 64'
}

@test "QWEN_SERVE_ACP_HTTP=0: no /acp, no acp-http transport" {
	QWEN_SERVE_ACP_HTTP=0 aserve
	req POST /acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
	expect 404
	req GET /capabilities
	expect 200 '(.transports | index("acp-http")) == null'
}

@test "a prompt the agent fails: the ACP answer carries the agent's words, code and our classification" {
	FAKE_CHILD="fail=session/prompt:-32603,fail-detail=Context is too large to send safely." serve_start
	acp_init
	acp_open conn
	acp_call 1 session/new "{\"cwd\":\"$WS\",\"mcpServers\":[]}"
	acp_wait_answer conn 1
	local sid=$(jq -r .result.sessionId <<<"$answer")
	acp_open s1 "$sid"
	acp_call 2 session/prompt "{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"hello\"}]}"
	acp_wait_answer s1 2
	jq -e '.error.message == "Context is too large to send safely."' <<<"$answer"
	jq -e '.error.data.turnErrorCode == "-32603" and .error.data.turnErrorKind == "acp_error"' <<<"$answer"
}
