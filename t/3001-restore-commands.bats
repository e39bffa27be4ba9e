#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore: each command's request and output, the address and token
# options, and the SSE reader, against the scripted fake daemon.

load restore_helper

CREATED='{"sessionId":"s-new","workspaceCwd":"/w","attached":false,"clientId":"client-new","createdAt":1}'

@test "new: POST /session with the cwd, prints the id, stores the clientId" {
	fake_start <<<"POST /session 200 $CREATED"
	run qwen-restore new
	[ "$status" -eq 0 ]
	[ "$output" = s-new ]
	[ "$(requests POST /session | jq -r '.body | fromjson | .cwd')" = "$WS" ]
	[ "$(requests POST /session | jq -r .clientId)" = null ]
	[ "$(stored_client s-new)" = client-new ]
}

@test "--cwd is made absolute" {
	fake_start <<<"POST /session 200 $CREATED"
	mkdir -p "$WS/sub/dir"
	qwen-restore --cwd sub/./dir/.. new
	[ "$(requests POST /session | jq -r '.body | fromjson | .cwd')" = "$WS/sub" ]
}

@test "load sends the stored clientId and stores the returned one" {
	store_client s-1 c1
	fake_start <<<'POST /session/s-1/load 200 {"sessionId":"s-1","attached":true,"clientId":"c7"}'
	qwen-restore load s-1
	[ "$(requests POST /session/s-1/load | jq -r .clientId)" = c1 ]
	[ "$(stored_client s-1)" = c7 ]
}

@test "list: GET /workspace/sessions with the workspace" {
	fake_start <<<'GET /workspace/sessions 200 {"sessions":[{"sessionId":"s-1"}]}'
	run qwen-restore list --json
	[ "$status" -eq 0 ]
	[ "$(jq -r '.sessions[0].sessionId' <<<"$output")" = s-1 ]
	[ "$(requests GET /workspace/sessions | jq -r .query)" = "cwd=$(jq -rn --arg c "$WS" '$c | @uri')&limit=100" ]
}

@test "heartbeat, cancel and status send the stored clientId" {
	store_client s-1 c1
	fake_start <<'EOF'
POST /session/s-1/heartbeat 200 {"sessionId":"s-1","clientId":"c1","lastSeenAt":5}
POST /session/s-1/cancel 204
GET /session/s-1/status 200 {"sessionId":"s-1","hasActivePrompt":false}
EOF
	run qwen-restore --json heartbeat s-1
	[ "$status" -eq 0 ]
	[ "$(jq -r .lastSeenAt <<<"$output")" = 5 ]
	run qwen-restore cancel s-1
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run qwen-restore --json status s-1
	[ "$(jq -r .hasActivePrompt <<<"$output")" = false ]
	[ "$(jq -r .clientId "$FAKE_LOG" | sort -u)" = c1 ]
	[ "$(requests POST /session/s-1/cancel | jq -r .body)" = "{}" ]
}

@test "detach: sends the id and forgets it; no stored id: no request at all" {
	store_client s-1 c1
	fake_start <<<'POST /session/s-1/detach 204'
	run qwen-restore detach s-1
	[ "$status" -eq 0 ]
	[ "$(requests POST /session/s-1/detach | jq -r .clientId)" = c1 ]
	[ -z "$(stored_client s-1)" ]
	run qwen-restore detach s-1
	[ "$status" -eq 0 ]
	[ "$(count POST /session/s-1/detach)" -eq 1 ]
}

@test "close: DELETE with the id; 204 and 404 both finish it" {
	store_client s-1 c1
	fake_start <<EOF
DELETE /session/s-1 204
DELETE /session/s-1 404 $NOT_FOUND
EOF
	run qwen-restore close s-1
	[ "$status" -eq 0 ]
	[ "$(requests DELETE /session/s-1 | jq -r .clientId)" = c1 ]
	[ -z "$(stored_client s-1)" ]
	run qwen-restore close s-1
	[ "$status" -eq 0 ]
	[ "$(count DELETE /session/s-1)" -eq 2 ]
}

@test "events: one envelope per line, Last-Event-ID sent, ends at session_closed" {
	store_client s-1 c1
	fake_start <<'EOF'
GET /session/s-1/events 200 sse hold
> {"id":4,"v":1,"type":"session_update","data":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}
> {"v":1,"type":"replay_complete","data":{"replayedCount":1}}
> {"id":5,"v":1,"type":"session_closed","data":{"sessionId":"s-1","reason":"client_close"}}
EOF
	run qwen-restore --json events s-1 --last-event-id 3
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(jq -r .type <<<"${lines[1]}")" = replay_complete ]
	[ "$(requests GET /session/s-1/events | jq -r .lastEventId)" = 3 ]
	[ "$(requests GET /session/s-1/events | jq -r .clientId)" = c1 ]
}

@test "events: the SSE reader handles CRLF, comments, split frames and bad frames" {
	fake_start <<'EOF'
GET /session/s-1/events 200 sse
>raw : heartbeat\r\n\r\nid: 1\r\nevent: session_update\r\ndata: {"id":1,"v":1,"type":"a","data":{}}\r\n\r\n
>raw data: {"id":2,"v":1,
>sleep 150
>raw "type":"b","data":{}}\n\n
>raw data: {"v":2,"type":"wrong_version"}\n\ndata: not json\n\ndata: {"id":3,"v":1,"type":"c",\ndata: "data":{}}\n\n
EOF
	run qwen-restore -v --json events s-1
	[ "$status" -eq 0 ]
	[ "$(grep -v '^qwen-restore' <<<"$output" | jq -r .type | tr '\n' ' ')" = "a b c " ]
	[[ "$output" == *"last event id 3, 1 comments"* ]]
	# No cursor given: no Last-Event-ID.
	[ "$(requests GET /session/s-1/events | jq -r .lastEventId)" = null ]
}

@test "events: an error answer or a non-stream 200 is reported" {
	fake_start <<EOF
GET /session/s-1/events 404 $NOT_FOUND
GET /session/s-1/events 200 {"not":"a stream"}
EOF
	run qwen-restore events s-1
	[ "$status" -eq 3 ]
	run qwen-restore events s-1
	[ "$status" -eq 1 ]
	[[ "$output" == *"not an event stream"* ]]
}

@test "prompt: text from stdin, body shape" {
	store_client s-1 c1
	fake_start <<'EOF'
POST /session/s-1/prompt 202 {"promptId":"p-1","lastEventId":1}
EOF
	run qwen-restore prompt --no-wait s-1 - <<<"multi word prompt"
	[ "$status" -eq 0 ]
	[ "$output" = p-1 ]
	[ "$(requests POST /session/s-1/prompt | jq -c '.body | fromjson')" = '{"prompt":[{"type":"text","text":"multi word prompt"}]}' ]
	run qwen-restore prompt --no-wait s-1 </dev/null
	[ "$status" -eq 2 ]
}

@test "--token and QWEN_SERVER_TOKEN: Authorization: Bearer" {
	fake_start <<<'GET /session/s-1/status 200 {"sessionId":"s-1"}'
	qwen-restore --token secret1 status s-1 >/dev/null
	QWEN_SERVER_TOKEN='  secret2  ' qwen-restore status s-1 >/dev/null
	QWEN_SERVER_TOKEN= qwen-restore status s-1 >/dev/null
	[ "$(jq -r .auth "$FAKE_LOG" | tr '\n' '|')" = "Bearer secret1|Bearer secret2|null|" ]
}

@test "--url over loopback TCP, QWEN_SERVE_URL, and QWEN_SERVE_SOCKET" {
	fake_start --port-file "$BATS_TEST_TMPDIR/port" <<<'GET /session/s-1/status 200 {"sessionId":"s-1"}'
	wait_for 5 test -s "$BATS_TEST_TMPDIR/port"
	port=$(cat "$BATS_TEST_TMPDIR/port")
	unset QWEN_SERVE_SOCKET
	run qwen-restore --url "http://127.0.0.1:$port/" status s-1
	[ "$status" -eq 0 ]
	QWEN_SERVE_URL="http://127.0.0.1:$port" run qwen-restore status s-1
	[ "$status" -eq 0 ]
	QWEN_SERVE_SOCKET="$FAKE_SOCK" run qwen-restore status s-1
	[ "$status" -eq 0 ]
	[ "$(count GET /session/s-1/status)" -eq 3 ]
}

@test "default socket: XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock" {
	unset QWEN_SERVE_SOCKET
	mkdir -p "$BATS_TEST_TMPDIR/run/qwen-serve"
	FAKE_SOCK="$BATS_TEST_TMPDIR/run/qwen-serve/qwen-serve.sock"
	fake_start <<<'GET /session/s-1/status 200 {"sessionId":"s-1"}'
	XDG_RUNTIME_DIR="$BATS_TEST_TMPDIR/run" run qwen-restore status s-1
	[ "$status" -eq 0 ]
	XDG_RUNTIME_DIR= run qwen-restore -v status s-1
	[ "$status" -eq 69 ]
	[[ "$output" == *"cannot reach the daemon"* ]]
}

@test "session ids are path-escaped" {
	fake_start <<<'GET /session/a%3Ab/status 200 {"sessionId":"a:b"}'
	run qwen-restore status a:b
	[ "$status" -eq 0 ]
	[ "$(jq -r .path "$FAKE_LOG")" = "/session/a%3Ab/status" ]
}

@test "bad input: a garbage answer is a classified error, never a crash" {
	fake_start <<'EOF'
POST /session/s-1/load 200 ctype=text/plain [not json
POST /session/s-1/resume 502 ctype=text/html [html>
GET /capabilities 200 [1,2,3]
EOF
	run qwen-restore load s-1
	[ "$status" -eq 1 ]
	[ "$output" = "qwen-restore: load s-1: the answer is not a JSON object" ]
	run qwen-restore resume s-1
	[ "$status" -eq 1 ]
	[ "$output" = "qwen-restore: resume s-1: HTTP 502" ]
	run qwen-restore capabilities
	[ "$status" -eq 1 ]
	[[ "$output" == *"not a JSON object"* ]]
}

@test "events: a stream cut by the daemon is an error" {
	fake_start <<'EOF2'
GET /session/s-1/events 200 sse hold
> {"id":1,"v":1,"type":"session_update","data":{}}
EOF2
	qwen-restore --json events s-1 >"$BATS_TEST_TMPDIR/ev.out" 2>"$BATS_TEST_TMPDIR/ev.err" 3>&- &
	pid=$!
	got_one() { [ -s "$BATS_TEST_TMPDIR/ev.out" ]; }
	wait_for 10 got_one
	fake_stop
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 1 ]
	# --json: the error is a JSON line after the envelopes.
	tail -1 "$BATS_TEST_TMPDIR/ev.out" | jq -e '.code == "protocol_error" and (.error | startswith("event stream broken"))' >/dev/null
}
