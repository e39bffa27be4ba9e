#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve's drain (SIGTERM with --drain-grace-ms): /health fails, new
# sessions and turns are refused, running turns finish, then it exits;
# --trusted-proxy's X-Forwarded-For; a non-loopback --hostname needs a
# token and --allow-host.

load serve_helper

teardown() {
	exec 4>&-
	[ -z "${WSPID:-}" ] || kill "$WSPID" 2>/dev/null || true
	serve_teardown
}

child_pid() {
	pgrep -P "$SERVE_PID" -x fake-child | head -1
}

@test "drain: health fails, new work refused, the running turn finishes, then exit 0" {
	FAKE_CHILD=hold=session/prompt serve_loaded --drain-grace-ms 600000
	sse_open ev /session/$SID/events
	prompt_post $SID
	wait_for 5 cond '[ "$(req GET /health?deep=1; jq .activePrompts <<<"$body")" = 1 ]'
	kill -TERM "$SERVE_PID"
	wait_for 5 cond 'req GET /health; [ "$code" = 503 ]'
	expect 503 '.status == "draining"'
	req POST /session '{}'
	expect 503 '.code == "workspace_draining"'
	req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"more"}]}'
	expect 503 '.code == "workspace_draining"'
	# Reads and the session's stream go on.
	req GET /session/$SID/status
	expect 200
	kill -0 "$SERVE_PID"
	# The turn ends: its events reach the client, then the daemon exits.
	kill -USR1 "$(child_pid)"
	sse_wait ev '.type == "turn_complete"'
	SERVE_STATUS=0
	wait "$SERVE_PID" || SERVE_STATUS=$?
	SERVE_PID=
	[ "$SERVE_STATUS" = 0 ]
	grep -q 'drain: every turn ended' "$BATS_TEST_TMPDIR/err"
}

@test "drain: ACP over an open WebSocket refuses session/new, load and prompt (workspace_draining), the connection stays" {
	FAKE_CHILD=hold=session/prompt serve_loaded --drain-grace-ms 600000
	local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
	# The client's script through a FIFO: it talks before and during the drain.
	mkfifo "$BATS_TEST_TMPDIR/ws.in"
	ws-client -t 20 -u "$SOCK" <"$BATS_TEST_TMPDIR/ws.in" >"$BATS_TEST_TMPDIR/ws.out" \
	    2>"$BATS_TEST_TMPDIR/ws.err" 3>&- &
	WSPID=$!
	exec 4>"$BATS_TEST_TMPDIR/ws.in"
	printf 'text %s\nwait 1\n' "$init" >&4
	answered() { jq -e -s --argjson i "$1" 'any(.[]; .id == $i)' "$BATS_TEST_TMPDIR/ws.out" >/dev/null; }
	wait_for 10 answered 1
	prompt_post $SID
	wait_for 5 cond '[ "$(req GET /health?deep=1; jq .activePrompts <<<"$body")" = 1 ]'
	kill -TERM "$SERVE_PID"
	wait_for 5 cond 'req GET /health; [ "$code" = 503 ]'
	printf 'text {"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"%s","mcpServers":[]}}\nwait 2\n' "$WS" >&4
	printf 'text {"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"%s","cwd":"%s","mcpServers":[]}}\nwait 3\n' "$SID" "$WS" >&4
	printf 'text {"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"%s","prompt":[{"type":"text","text":"x"}]}}\nwait 4\n' "$SID" >&4
	wait_for 10 answered 4
	for i in 2 3 4; do
		jq -e -s --argjson i "$i" 'any(.[]; .id == $i and .error.code == -32603 and
		    .error.data.code == "workspace_draining" and .error.data.httpStatus == 503)' \
		    "$BATS_TEST_TMPDIR/ws.out" >/dev/null
	done
	run ! jq -e -s 'any(.[]; .ws == "close" or .ws == "eof")' "$BATS_TEST_TMPDIR/ws.out"
	# The held turn ends, the daemon exits, and the connection with it.
	kill -USR1 "$(child_pid)"
	SERVE_STATUS=0
	wait "$SERVE_PID" || SERVE_STATUS=$?
	SERVE_PID=
	[ "$SERVE_STATUS" = 0 ]
	exec 4>&-
	wait "$WSPID" || true
	jq -e -s 'any(.[]; .ws == "close" or .ws == "eof")' "$BATS_TEST_TMPDIR/ws.out" >/dev/null
}

@test "drain: the grace ends a turn that does not finish; a second SIGTERM ends it at once" {
	FAKE_CHILD=hang=session/prompt serve_loaded --drain-grace-ms 200
	prompt_post $SID
	kill -TERM "$SERVE_PID"
	SERVE_STATUS=0
	wait "$SERVE_PID" || SERVE_STATUS=$?
	SERVE_PID=
	[ "$SERVE_STATUS" = 0 ]
	grep -q 'drain: grace over with 1 turns left' "$BATS_TEST_TMPDIR/err"

	FAKE_CHILD=hang=session/prompt serve_loaded --drain-grace-ms 600000
	prompt_post $SID
	kill -TERM "$SERVE_PID"
	wait_for 5 cond 'req GET /health; [ "$code" = 503 ]'
	kill -TERM "$SERVE_PID"
	SERVE_STATUS=0
	wait "$SERVE_PID" || SERVE_STATUS=$?
	SERVE_PID=
	[ "$SERVE_STATUS" = 0 ]
	grep -q 'drain: second signal' "$BATS_TEST_TMPDIR/err"
}

@test "drain: with no turn running SIGTERM exits at once; without the flag there is no drain" {
	serve_start --drain-grace-ms 600000
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	grep -q 'drain: every turn ended' "$BATS_TEST_TMPDIR/err"
	FAKE_CHILD=hang=session/prompt serve_loaded
	prompt_post $SID
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	run ! grep -q 'drain:' "$BATS_TEST_TMPDIR/err"
}

@test "--trusted-proxy: X-Forwarded-For is the client in the audit log, only from the proxy" {
	serve_start --audit-log "$BATS_TEST_TMPDIR/audit" --trusted-proxy 127.0.0.2
	TRANSPORT=tcp req POST /session '{}' -H 'X-Forwarded-For: 192.0.2.9, 198.51.100.7' \
	    --interface 127.0.0.2
	expect 200
	TRANSPORT=tcp req POST /session '{}' -H 'X-Forwarded-For: 198.51.100.8'
	expect 200
	TRANSPORT=tcp req POST /session '{}' -H 'X-Forwarded-For: not-an-address' \
	    --interface 127.0.0.2
	req POST /session '{}'
	jq -e -s '[.[].client] == ["198.51.100.7", "127.0.0.1", "127.0.0.2", "unix"]' \
	    "$BATS_TEST_TMPDIR/audit"
}

@test "--trusted-proxy: the rate limiter counts the forwarded client" {
	serve_start --trusted-proxy 127.0.0.2 --rate-limit-read 1
	TRANSPORT=tcp req GET /capabilities '' -H 'X-Forwarded-For: 198.51.100.7' --interface 127.0.0.2
	expect 200
	TRANSPORT=tcp req GET /capabilities '' -H 'X-Forwarded-For: 198.51.100.8' --interface 127.0.0.2
	expect 200
	TRANSPORT=tcp req GET /capabilities '' -H 'X-Forwarded-For: 198.51.100.7' --interface 127.0.0.2
	expect 429
}

@test "a non-loopback --hostname needs a configured token and --allow-host" {
	run qwen-serve --hostname 0.0.0.0 --port 0 --no-web --socket "$BATS_TEST_TMPDIR/s.sock" \
	    --data-dir "$BATS_TEST_TMPDIR"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--hostname 0.0.0.0 is not loopback: it needs a token"* ]]
	printf 'sekrit-token-0123456789\n' >"$BATS_TEST_TMPDIR/token"
	chmod 600 "$BATS_TEST_TMPDIR/token"
	run qwen-serve --hostname 0.0.0.0 --port 0 --token-file "$BATS_TEST_TMPDIR/token" \
	    --socket "$BATS_TEST_TMPDIR/s.sock" --data-dir "$BATS_TEST_TMPDIR"
	[ "$status" -eq 2 ]
	[[ "$output" == *"name the Host its clients use with --allow-host"* ]]
	run qwen-serve --hostname 0.0.0.0 --check-config --socket "$BATS_TEST_TMPDIR/s.sock"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no --allow-host"* ]]
	# With both, only the allowed Host is let in, and only with the token.
	serve_start --hostname 0.0.0.0 --token-file "$BATS_TEST_TMPDIR/token" \
	    --allow-host qwen.example
	PORT=$(sed -n 's|^qwen-serve: listening on http://0.0.0.0:\([0-9]*\).*|\1|p' "$BATS_TEST_TMPDIR/out")
	[ -n "$PORT" ]
	TRANSPORT=tcp req GET /capabilities '' -H 'Authorization: Bearer sekrit-token-0123456789'
	expect 403
	TRANSPORT=tcp req GET /capabilities '' -H "Host: qwen.example:$PORT"
	expect 401
	TRANSPORT=tcp req GET /capabilities '' -H "Host: qwen.example:$PORT" \
	    -H 'Authorization: Bearer sekrit-token-0123456789'
	expect 200
	TRANSPORT=tcp req GET /capabilities '' -H "Host: qwen.example" \
	    -H 'Authorization: Bearer sekrit-token-0123456789'
	expect 200
}
