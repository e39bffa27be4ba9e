#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: ACP over WebSocket on /acp (ws-upgrade.c, ws.c) with
# t/helper/ws-client: the handshake and its gates, frames and limits, the
# close handshake, slow readers, abrupt disconnects, and the ACP methods
# end to end against the real qwen-acp-child.

load serve_acp_helper

REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
KEY=dGhlIHNhbXBsZSBub25jZQ==

teardown() {
	[ -n "${STOPPED:-}" ] && kill -CONT "$STOPPED" 2>/dev/null
	rteardown
}

# ws NAME [ws-client args...] <SCRIPT: a client on the Unix socket; its
# output in NAME.ws, its exit status in $ws_status.
ws() {
	local name=$1
	shift
	ws_status=0
	ws-client -t "${WS_TIMEOUT:-20}" -u "$SOCK" "$@" \
	    >"$BATS_TEST_TMPDIR/$name.ws" 2>"$BATS_TEST_TMPDIR/$name.err" 3>&- ||
	    ws_status=$?
}

# ws_has NAME JQ-CONDITION: some line of NAME's output satisfies it.
ws_has() {
	jq -e -s "any(.[]; $2)" "$BATS_TEST_TMPDIR/$1.ws" >/dev/null || {
		echo "no line of $1 satisfies $2:" >&2
		cut -c1-400 "$BATS_TEST_TMPDIR/$1.ws" >&2
		return 1
	}
}

# ws_get NAME JQ-FILTER: the first message of NAME with a non-null result.
ws_get() {
	jq -c -s "[.[] | $2 | select(. != null)][0]" "$BATS_TEST_TMPDIR/$1.ws"
}

b64url() {
	printf %s "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='
}

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'

@test "capabilities advertise the acp-ws transport" {
	serve_start
	req GET /capabilities
	expect 200 '.transports | index("acp-ws") != null'
}

@test "handshake: 101 with the right accept, initialize, ping/pong, a clean close" {
	serve_start
	ws a <<EOF
text $init
wait 1
ping are-you-there
waitpong 1
close 1000
EOF
	[ "$ws_status" = 0 ]
	ws_has a '.ws == "open" and (has("protocol") | not)'
	ws_has a '.id == 1 and .result.protocolVersion == 1 and
	    .result.agentCapabilities._meta.qwen.transport == "ws"'
	ws_has a '.ws == "pong" and .data == "are-you-there"'
	ws_has a '.ws == "close" and .code == 1000'
	ws_has a '.ws == "eof"'
	# Only the health request itself is left.
	health_wait '.wsConnections == 0 and .acpConnections == 0 and .connections == 1'
}

@test "handshake: bad requests get 400 before any upgrade" {
	serve_start
	local up=(-H 'Upgrade: websocket' -H 'Connection: Upgrade')
	req GET /acp '' "${up[@]}" -H 'Sec-WebSocket-Version: 13'
	expect 400 '.code == "bad_request" and (.error | test("Sec-WebSocket-Key"))'
	req GET /acp '' "${up[@]}" -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: c2hvcnQ='
	expect 400 '.error | test("Sec-WebSocket-Key")'
	req GET /acp '' "${up[@]}" -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ='"x"
	expect 400
	req GET /acp '' "${up[@]}" -H 'Sec-WebSocket-Version: 8' -H "Sec-WebSocket-Key: $KEY"
	expect 400 '.error | test("Version")'
	[ "$(header Sec-WebSocket-Version)" = 13 ]
	req GET /acp '' -H 'Upgrade: websocket' -H 'Connection: keep-alive' \
	    -H 'Sec-WebSocket-Version: 13' -H "Sec-WebSocket-Key: $KEY"
	expect 400 '.error | test("Connection")'
	# Only /acp upgrades: elsewhere the header is ignored.
	req GET /health '' "${up[@]}" -H 'Sec-WebSocket-Version: 13' -H "Sec-WebSocket-Key: $KEY"
	expect 200 '.status == "ok"'
	ws b -p /health </dev/null
	[ "$ws_status" = 2 ]
	ws_has b '.ws == "http" and .status == 200'
	health_wait '.wsConnections == 0'
}

@test "bearer: 401 before the upgrade; Authorization or the qwen-bearer subprotocol, never echoed" {
	serve_start --token s3cr3t-t0ken
	ws none </dev/null
	[ "$ws_status" = 2 ]
	ws_has none '.ws == "http" and .status == 401 and (.body | fromjson | .code == "unauthorized")'
	ws wrong -H 'Authorization: Bearer nope' </dev/null
	ws_has wrong '.ws == "http" and .status == 401'
	ws wrongsub -P "qwen-bearer.$(b64url nope)" </dev/null
	ws_has wrongsub '.ws == "http" and .status == 401'
	ws badsub -P "qwen-bearer.!!" </dev/null
	ws_has badsub '.ws == "http" and .status == 401'
	ws hdr -H 'Authorization: Bearer s3cr3t-t0ken' <<<"text $init"$'\n'"wait 1"
	[ "$ws_status" = 0 ]
	ws_has hdr '.id == 1 and .result != null'
	ws sub -P "qwen-bearer.$(b64url s3cr3t-t0ken)" <<<"text $init"$'\n'"wait 1"
	[ "$ws_status" = 0 ]
	ws_has sub '.ws == "open" and (has("protocol") | not)'
	ws_has sub '.id == 1 and .result != null'
	ws both -P "qwen-bearer.$(b64url s3cr3t-t0ken), qwen-ws" <<<"text $init"$'\n'"wait 1"
	ws_has both '.ws == "open" and .protocol == "qwen-ws"'
	! grep -q s3cr3t "$BATS_TEST_TMPDIR/err" || false
}

@test "Host and Origin gates run before the upgrade (TCP)" {
	serve_start
	TRANSPORT=tcp req GET /acp '' -H 'Host: evil.example' -H 'Upgrade: websocket' \
	    -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' -H "Sec-WebSocket-Key: $KEY"
	expect 403 '.code == "forbidden_host"'
	ws-client -c "$PORT" -H 'Origin: http://evil.example' </dev/null \
	    >"$BATS_TEST_TMPDIR/o.ws" || true
	ws_has o '.ws == "http" and .status == 403'
	ws-client -c "$PORT" <<<"text $init"$'\n'"wait 1" >"$BATS_TEST_TMPDIR/t.ws"
	ws_has t '.id == 1 and .result != null'
}

@test "frames: binary 1003, invalid UTF-8 1007, over 10 MiB 1009; each connection ends" {
	serve_start
	ws bin <<<$'binary abc\nwaitclose'
	ws_has bin '.ws == "close" and .code == 1003'
	ws_has bin '.ws == "eof"'
	ws utf <<<$'badutf8\nwaitclose'
	ws_has utf '.ws == "close" and .code == 1007'
	ws big <<<$'big 10485761\nwaitclose'
	ws_has big '.ws == "close" and .code == 1009'
	ws_has big '.ws == "eof"'
	health_wait '.wsConnections == 0'
	req GET /health
	expect 200
}

@test "a 10 MiB message is taken, fragments are joined, malformed JSON is an error and the connection stays" {
	serve_start
	ws a <<EOF
big 10485760
wait "big"
text {"jsonrpc":"2.0","id":2,"method":
frag 7 {"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}
wait 3
text [1,2]
text {"jsonrpc":"2.0","id":4,"method":"no/such/method"}
wait 4
EOF
	[ "$ws_status" = 0 ]
	ws_has a '.id == "big" and .error.code != null'
	ws_has a '.id == null and .error.code == -32700'
	ws_has a '.id == 3 and .result.protocolVersion == 1'
	ws_has a '.id == 4 and .error.code == -32601'
	ws_has a '.ws == "close" and .code == 1000'
	health_wait '.wsConnections == 0'
}

@test "a peer that does not read is closed with 1008; the daemon stays healthy" {
	serve_start --compacted-replay-max-bytes 65536
	# 4 x 64 KiB + 1 MiB of pongs is 10k of them: send twice as many.
	ws flood <<<$'flood 20000\nwaitclose'
	ws_has flood '.ws == "close" and .code == 1008 and .reason == "outbound queue full"'
	grep -q 'websocket: peer is not reading' "$BATS_TEST_TMPDIR/err"
	health_wait '.wsConnections == 0'
	ws after <<<"text $init"$'\n'"wait 1"
	ws_has after '.id == 1 and .result != null'
}

@test "empty pings from a peer that does not read are bounded too (1008)" {
	serve_start --compacted-replay-max-bytes 65536
	# Empty pongs have no payload, but each costs the queue its bookkeeping:
	# past the 256 KiB the socket takes, 4 x 64 KiB + 1 MiB at 128 bytes
	# each is about 10k of them.
	ws empty <<<$'flood 400000 0\nwaitclose'
	ws_has empty '.ws == "close" and .code == 1008 and .reason == "outbound queue full"'
	health_wait '.wsConnections == 0'
}

@test "shutdown: open connections get 1001 going away" {
	serve_start
	(ws-client -t 20 -u "$SOCK" >"$BATS_TEST_TMPDIR/bye.ws" 3>&- <<<"text $init"$'\n'"wait 1"$'\n'"waitclose") 3>&- &
	local cpid=$!
	health_wait '.wsConnections == 1'
	wait_for 5 ws_has bye '.id == 1'
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	wait "$cpid"
	ws_has bye '.ws == "close" and .code == 1001'
}

# ---- ACP end to end against the real child ----------------------------------

@test "real child: initialize, new, load with replay, prompt with streamed updates, resume, close" {
	real_child_serve
	local new=33333333-3333-4333-8333-333333333333
	ws e2e <<EOF
text $init
wait 1
text {"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"$WS","mcpServers":[],"_meta":{"qwen-code/sessionId":"$new"}}}
wait 2
text {"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"$SID","cwd":"$WS","mcpServers":[]}}
wait 3
text {"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"$SID","prompt":[{"type":"text","text":"hello over ws"}]}}
wait 4
text {"jsonrpc":"2.0","id":5,"method":"session/resume","params":{"sessionId":"$SID2","cwd":"$WS","mcpServers":[]}}
wait 5
text {"jsonrpc":"2.0","id":6,"method":"session/close","params":{"sessionId":"$SID"}}
wait 6
text {"jsonrpc":"2.0","id":7,"method":"session/close","params":{"sessionId":"$SID2"}}
wait 7
text {"jsonrpc":"2.0","id":8,"method":"session/close","params":{"sessionId":"$new"}}
wait 8
EOF
	[ "$ws_status" = 0 ] || { cat "$BATS_TEST_TMPDIR/e2e.ws" >&2; false; }
	local f=$BATS_TEST_TMPDIR/e2e.ws
	ws_has e2e '.id == 2 and .result.sessionId == "'"$new"'"'
	# The replay arrives as session/update notifications before load's result.
	jq -e -s --arg sid "$SID" '
	    (map(.id == 3) | index(true)) as $r |
	    [.[0:$r][] | select(.method == "session/update" and .params.sessionId == $sid) |
	     .params.update.sessionUpdate] == ["user_message_chunk", "agent_message_chunk"]' "$f" >/dev/null
	ws_has e2e '.id == 3 and .result != null'
	# Streamed agent_message_chunk updates, then the prompt's result.
	jq -e -s --arg sid "$SID" '
	    (map(.id == 4) | index(true)) as $r | (map(.id == 3) | index(true)) as $l |
	    [.[$l:$r][] | select(.method == "session/update" and .params.sessionId == $sid and
	     .params.update.sessionUpdate == "agent_message_chunk") | .params.update.content.text] |
	    length >= 1 and (join("") | test("hello over ws"))' "$f" >/dev/null
	ws_has e2e '.id == 4 and .result.stopReason == "end_turn"'
	ws_has e2e '.id == 5 and .result != null'
	# Resume restores without replay.
	run ! jq -e -s --arg sid "$SID2" 'any(.[]; .method == "session/update" and
	    .params.sessionId == $sid and .params.update.sessionUpdate == "user_message_chunk")' "$f"
	ws_has e2e '.id == 6 and .result != null'
	ws_has e2e '.id == 7 and .result != null'
	ws_has e2e '.id == 8 and .result != null'
	health_wait '.sessions == 0 and .wsConnections == 0'
	# The prompt reached the transcript.
	grep -q 'hello over ws' "$DATA"/projects/*/chats/"$SID".jsonl
}

@test "real child: session/cancel stops a running prompt (stopReason cancelled)" {
	real_child_serve --agent-command 'echo started; exec sleep 30'
	ws c <<EOF
text $init
wait 1
text {"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"$SID","cwd":"$WS","mcpServers":[]}}
wait 2
text {"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"$SID","prompt":[{"type":"text","text":"slow"}]}}
waitfor started
text {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"$SID"}}
wait 3
EOF
	[ "$ws_status" = 0 ] || { cat "$BATS_TEST_TMPDIR/c.ws" >&2; false; }
	ws_has c '.id == 3 and .result.stopReason == "cancelled"'
	health_wait '.sessions == 0 and .activePrompts == 0 and .wsConnections == 0'
}

@test "abrupt disconnects: after a load, mid-prompt and mid-restore nothing is left behind" {
	local gate=$BATS_TEST_TMPDIR/gate
	real_child_serve --agent-command "echo started; while [ ! -e '$gate' ]; do sleep 0.02; done"
	ws idle <<EOF
text $init
wait 1
text {"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"$SID","cwd":"$WS","mcpServers":[]}}
wait 2
drop
EOF
	[ "$ws_status" = 0 ]
	ws_has idle '.id == 2 and .result != null'
	health_wait '.sessions == 0 and .wsConnections == 0'
	ws busy <<EOF
text $init
wait 1
text {"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"$SID","cwd":"$WS","mcpServers":[]}}
wait 2
text {"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"$SID","prompt":[{"type":"text","text":"slow"}]}}
waitfor started
drop
EOF
	[ "$ws_status" = 0 ]
	ws_has busy '.method == "session/update" and
	    (.params.update.content.text // "" | test("started"))'
	# A detach does not cancel: the prompt runs on, and the session goes
	# when it ends.
	health_wait '.wsConnections == 0 and .activePrompts == 1' 10
	touch "$gate"
	health_wait '.sessions == 0 and .activePrompts == 0' 10
	grep -q "session $SID: closed (last_client_detached)" "$BATS_TEST_TMPDIR/err"
	# A load still in flight when the peer vanishes: a REST client keeps
	# the child up with another session, and the child is stopped.
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid)
	kill -STOP "$pid"
	STOPPED=$pid
	ws restoring <<EOF
text $init
wait 1
text {"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"$SID","cwd":"$WS","mcpServers":[]}}
drop
EOF
	health_wait '.wsConnections == 0 and .restoresActive == 1'
	kill -CONT "$pid"
	STOPPED=
	health_wait '.sessions == 1 and .restoresActive == 0 and .restoresUnsettled == 0 and
	    .inFlight == 0 and .wsConnections == 0 and .acpConnections == 0 and .connections == 1' 10
	req GET /session/$SID/status
	expect 404
}

@test "forced restore timeout: REST, ACP over HTTP and the WebSocket give the same error" {
	# A big load held at the child's gate (never released): each of the
	# three loads crosses its deadline because the test holds it.
	gate_open
	real_child_serve --session-restore-timeout-ms 200
	qwen-gen-transcript --mib 20 --seed 7 --session-id "$SID" --data-dir "$DATA" \
	    --workspace "$WS" >/dev/null
	local load="{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"mcpServers\":[]}"
	req POST /session/$SID/load '{}'
	expect 504 '.code == "session_restore_timeout"'
	local rest=$body view=$(rest_error_view)
	health_wait '.restoresUnsettled == 0 and .inFlight == 0' 10
	# ACP over HTTP: a failed load is answered on the connection stream.
	acp_init
	acp_open conn
	acp_call 2 session/load "$load"
	acp_wait_answer conn 2 15
	local http=$answer
	health_wait '.restoresUnsettled == 0 and .inFlight == 0' 10
	ws t <<EOF
text $init
wait 1
text {"jsonrpc":"2.0","id":2,"method":"session/load","params":$load}
wait 2
EOF
	local wsmsg=$(jq -c -s '[.[] | select(.id == 2)][0]' "$BATS_TEST_TMPDIR/t.ws")
	# Byte for byte the same JSON-RPC message on both ACP transports.
	[ "$wsmsg" = "$http" ] || { echo "ws:   $wsmsg" >&2; echo "http: $http" >&2; false; }
	# -32603 whose data is REST's body with httpStatus and retryAfterSeconds.
	[ "$(rpc_error_view "$(jq -c .error <<<"$wsmsg")")" = "$view" ]
	jq -e -n --argjson e "$(jq -c .error <<<"$wsmsg")" --argjson r "$rest" '
	    $e.code == -32603 and $e.message == $r.error and
	    $e.data.errorKind == "restore_timeout" and $e.data.httpStatus == 504 and
	    $e.data.retryable == true and $e.data.action == "load" and
	    $e.data.timeoutMs == 200 and $e.data.sessionId == $r.sessionId' >/dev/null
	health_wait '.restoresUnsettled == 0 and .inFlight == 0 and .sessions == 0' 10
}

@test "the ACP connection cap (both transports) is a 503 before the upgrade" {
	serve_start
	for i in $(seq 64); do acp_init; done
	ws full </dev/null
	[ "$ws_status" = 2 ]
	ws_has full '.ws == "http" and .status == 503 and
	    (.body | fromjson | .code == "acp_connection_limit_exceeded") and
	    (.head | test("Retry-After: 5"))'
	req DELETE /acp '' -H "Acp-Connection-Id: $ACP_CONN"
	expect 202
	ws ok <<<"text $init"$'\n'"wait 1"
	ws_has ok '.id == 1 and .result != null'
	health_wait '.wsConnections == 0'
}

@test "an unmasked client frame is a protocol error: 1002" {
	serve_start
	# FIN + text, unmasked, 1 byte "a".
	ws raw <<<$'raw 810161\nwaitclose'
	ws_has raw '.ws == "close" and .code == 1002'
	health_wait '.wsConnections == 0'
}
