#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: listeners, socket safety, auth gates, bounds, signals.

load serve_helper

teardown() {
	serve_teardown
}

@test "default socket under XDG_RUNTIME_DIR: directory 0700, socket 0600" {
	export XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/xdg
	mkdir -p "$XDG_RUNTIME_DIR"
	qwen-serve --no-tcp --child "$FAKE_CHILD_BIN" >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	SERVE_PID=$!
	wait_for 5 grep -q '^qwen-serve: ready' "$BATS_TEST_TMPDIR/out"
	grep -q "listening on unix:$XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock" "$BATS_TEST_TMPDIR/out"
	[ "$(stat -c %a "$XDG_RUNTIME_DIR/qwen-serve")" = 700 ]
	[ "$(stat -c %a "$XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock")" = 600 ]
	run curl -s --unix-socket "$XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock" http://localhost/health
	[ "$output" = '{"status":"ok"}' ]
	! grep -q 'listening on http' "$BATS_TEST_TMPDIR/out" || false
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	[ ! -e "$XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock" ]
}

@test "default socket directory with group/other access or a symlink is refused" {
	export XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/xdg
	mkdir -p "$XDG_RUNTIME_DIR/qwen-serve"
	chmod 0755 "$XDG_RUNTIME_DIR/qwen-serve"
	run qwen-serve --no-tcp 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"has mode 0755, want 0700"* ]]
	rmdir "$XDG_RUNTIME_DIR/qwen-serve"
	mkdir -m 0700 "$BATS_TEST_TMPDIR/elsewhere"
	ln -s "$BATS_TEST_TMPDIR/elsewhere" "$XDG_RUNTIME_DIR/qwen-serve"
	run qwen-serve --no-tcp 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"not a directory (symlinks are refused)"* ]]
	[ -z "$(ls "$BATS_TEST_TMPDIR/elsewhere")" ]
}

@test "a second daemon on a live socket is refused; the first keeps serving" {
	serve_start --no-tcp
	run qwen-serve --socket "$SOCK" --no-tcp 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"another qwen-serve owns this socket"* ]]
	# What ends the daemon is an error, not a warning.
	[[ "$output" == *" error: $SOCK: another qwen-serve owns this socket"* ]]
	req GET /health
	expect 200 '.status == "ok"'
}

@test "a TCP port another daemon holds: an error that says why, exit 1" {
	serve_start
	[ -n "$PORT" ]
	run qwen-serve --socket "$BATS_TEST_TMPDIR/other.sock" --port "$PORT" \
	    --child "$FAKE_CHILD_BIN" --data-dir "$DATA" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *" error: cannot listen on 127.0.0.1 port $PORT: Address already in use"* ]]
	req GET /health
	expect 200 '.status == "ok"'
}

@test "a live socket is detected with connect() even without the lock" {
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
open(sys.argv[1] + ".up", "w").close(); time.sleep(30)' "$BATS_TEST_TMPDIR/l.sock" 3>&- &
	local py=$!
	wait_for 5 test -e "$BATS_TEST_TMPDIR/l.sock.up"
	run qwen-serve --socket "$BATS_TEST_TMPDIR/l.sock" --no-tcp 3>&-
	kill $py
	[ "$status" -eq 1 ]
	[[ "$output" == *"a daemon is already listening there"* ]]
	[ -S "$BATS_TEST_TMPDIR/l.sock" ]
}

@test "a stale socket is replaced; a non-socket file is never removed" {
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$BATS_TEST_TMPDIR/s.sock"
	serve_start --no-tcp
	grep -q 'removing stale socket' "$BATS_TEST_TMPDIR/err"
	req GET /health
	expect 200
	serve_stop
	echo data >"$BATS_TEST_TMPDIR/f.sock"
	run qwen-serve --socket "$BATS_TEST_TMPDIR/f.sock" --no-tcp 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"is not a socket; refusing to remove it"* ]]
	[ "$(cat "$BATS_TEST_TMPDIR/f.sock")" = data ]
}

@test "--port 0 prints the chosen port; both listeners answer" {
	serve_start
	[ -n "$PORT" ]
	[ "$PORT" -gt 0 ]
	for TRANSPORT in unix tcp; do
		req GET /health
		expect 200 '. == {"status":"ok"}'
	done
}

@test "GET /health?deep=1 reports counters" {
	serve_start
	req GET '/health?deep=1'
	expect 200 '.status == "ok" and .sessions == 0 and .activePrompts == 0 and .channelAlive == false'
}

@test "capabilities: features, limits and the restore budget from the first answer" {
	serve_start
	for TRANSPORT in unix tcp; do
		req GET /capabilities
		expect 200 '.v == 1 and .mode == "http-bridge" and .protocolVersions.current == "v1"'
		expect 200 '.limits.sessionRestoreTimeoutMs == 60000 and .limits.maxPendingPromptsPerSession == 5'
		expect 200 '.limits.maxTotalSessions == 800 and .transports[0] == "rest"'
		expect 200 "(.features | index(\"session_load\")) and (.features | index(\"session_transcript\"))"
		expect 200 "(.features | index(\"require_auth\") | not) and .workspaceCwd == \"$WS\""
		expect 200 ".workspaces[0].cwd == \"$WS\" and .workspaces[0].primary"
	done
}

@test "restore budget: explicit flag wins, a larger initialize timeout raises it" {
	serve_start --session-restore-timeout-ms 1234 --initialize-timeout-ms 90000
	req GET /capabilities
	expect 200 '.limits.sessionRestoreTimeoutMs == 1234'
	serve_stop
	serve_start --initialize-timeout-ms 90000
	req GET /capabilities
	expect 200 '.limits.sessionRestoreTimeoutMs == 90000'
	serve_stop
	serve_start --initialize-timeout-ms 500
	req GET /capabilities
	expect 200 '.limits.sessionRestoreTimeoutMs == 60000'
}

@test "bad flag values refuse to start, naming the flag" {
	run qwen-serve --session-restore-timeout-ms 0 3>&-
	[ "$status" -eq 2 ]
	[[ "$output" == *"--session-restore-timeout-ms"* ]]
	run qwen-serve --session-restore-timeout-ms 2147483648 3>&-
	[ "$status" -eq 2 ]
	run qwen-serve --port 70000 3>&-
	[ "$status" -eq 2 ]
	[[ "$output" == *"--port"* ]]
	run qwen-serve --require-auth 3>&-
	[ "$status" -eq 2 ]
	[[ "$output" == *"--require-auth needs --token"* ]]
	run qwen-serve --bogus 3>&-
	[ "$status" -eq 2 ]
}

@test "token: 401 without or with a wrong bearer, on both listeners; /health stays open" {
	serve_start --token s3cret
	for TRANSPORT in unix tcp; do
		req GET /capabilities
		expect 401 '. == {"error":"Unauthorized","code":"unauthorized"}'
		req GET /capabilities '' -H 'Authorization: Bearer s3cre'
		expect 401
		req GET /capabilities '' -H 'Authorization: Bearer s3cretX'
		expect 401
		req GET /capabilities '' -H 'Authorization: Basic s3cret'
		expect 401
		req GET /capabilities '' -H 'Authorization: Bearer s3cret'
		expect 200 '.v == 1'
		req POST /session '{}'
		expect 401
		req GET /health
		expect 200
	done
}

@test "QWEN_SERVER_TOKEN is used (trimmed); --require-auth gates /health" {
	QWEN_SERVER_TOKEN='  tok  ' serve_start --require-auth
	req GET /health
	expect 401
	req GET /health '' -H 'Authorization: Bearer tok'
	expect 200
	req GET /capabilities '' -H 'Authorization: Bearer tok'
	expect 200 '.features | index("require_auth")'
}

@test "Host allowlist on loopback TCP (DNS rebinding): 403 forbidden_host" {
	serve_start
	TRANSPORT=tcp
	req GET /health '' -H 'Host: evil.example'
	expect 403 '. == {"error":"Invalid Host header","code":"forbidden_host"}'
	req GET /health '' -H "Host: evil.example:$PORT"
	expect 403
	req GET /health '' -H 'Host: localhost:1'
	expect 403
	req GET /health '' -H 'Host:'
	expect 403
	for h in "localhost:$PORT" "127.0.0.1:$PORT" "LOCALHOST:$PORT" "[::1]:$PORT" "host.docker.internal:$PORT"; do
		req GET /health '' -H "Host: $h"
		expect 200
	done
	TRANSPORT=unix
	req GET /health '' -H 'Host: evil.example'
	expect 200
}

@test "Origin is refused unless allowed; null always refused" {
	serve_start --allow-origin https://app.example
	for TRANSPORT in unix tcp; do
		req GET /capabilities '' -H 'Origin: https://evil.example'
		expect 403 '.code == "origin_forbidden"'
		req GET /capabilities '' -H 'Origin: null'
		expect 403
		req GET /capabilities '' -H 'Origin: https://app.example'
		expect 200 '.features | index("allow_origin")'
		[ "$(header Access-Control-Allow-Origin)" = https://app.example ]
		req OPTIONS /session '' -H 'Origin: https://app.example'
		expect 204
	done
	TRANSPORT=tcp
	req GET /health '' -H "Origin: http://127.0.0.1:$PORT"
	expect 200
}

@test "bodies: malformed JSON 400, over 10 MiB 413, headers over 64 KiB 400" {
	serve_start
	head -c $((10 * 1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$BATS_TEST_TMPDIR/big"
	for TRANSPORT in unix tcp; do
		for bad in '{' '{"a":}' '{"a":1}x' "{'a':1}" '[1,' 'nul' '{"a":NaN}' '{"a":-Infinity}' '{"a":tru}'; do
			req POST /session "$bad"
			expect 400 '. == {"error":"Invalid JSON in request body","code":"invalid_json"}'
		done
		req POST /session '' --data-binary @"$BATS_TEST_TMPDIR/big" -H 'Content-Type: application/json'
		[ "$code" = 413 ]
		req GET /health '' -H "X-Big: $(head -c 70000 /dev/zero | tr '\0' a)"
		[ "$code" = 400 ]
		printf '\xff\xfe' >"$BATS_TEST_TMPDIR/badutf"
		req POST /session '' --data-binary @"$BATS_TEST_TMPDIR/badutf"
		expect 400 '.code == "invalid_json"'
	done
	# The daemon is still fine.
	req GET /health
	expect 200
}

@test "unknown routes 404, wrong methods 405, with catalog bodies" {
	serve_start
	for TRANSPORT in unix tcp; do
		req GET /nope
		expect 404 '.code == "not_found"'
		req GET /session
		expect 405 '.code == "method_not_allowed"'
		req PUT /session '{}'
		[ "$code" = 405 ] || [ "$code" = 501 ]
		req GET /session/$SID/prompt
		expect 405
	done
}

@test "--max-connections: the connection over the cap gets 503" {
	serve_start --max-connections 1
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	sse_open a /session/$SID/events
	req GET /health
	expect 503 '.code == "connection_limit_exceeded" and .limit == 1'
	[ "$(header Retry-After)" = 1 ]
	sse_stop_all
	wait_for 5 bash -c "curl -s --unix-socket '$SOCK' http://localhost/health | grep -q ok"
}

@test "SIGTERM: clean exit 0, socket removed, child ended" {
	serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	local child
	child=$(sed -n 's/.*started .* (pid \([0-9]*\)).*/\1/p' "$BATS_TEST_TMPDIR/err")
	[ -n "$child" ]
	sse_open a /session/$SID/events
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	[ ! -e "$SOCK" ]
	! kill -0 "$child" 2>/dev/null || false
	grep -q '"reason":"daemon_shutdown"' "$BATS_TEST_TMPDIR/a.sse"
}

@test "SIGINT also exits 0" {
	serve_start
	kill -INT "$SERVE_PID"
	local st=0
	wait "$SERVE_PID" || st=$?
	SERVE_PID=
	[ "$st" = 0 ]
}

@test "SIGHUP reopens the log file" {
	serve_start --log-file "$BATS_TEST_TMPDIR/log"
	wait_for 5 grep -q 'serving' "$BATS_TEST_TMPDIR/log"
	mv "$BATS_TEST_TMPDIR/log" "$BATS_TEST_TMPDIR/log.1"
	kill -HUP "$SERVE_PID"
	wait_for 5 test -e "$BATS_TEST_TMPDIR/log"
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	wait_for 5 grep -q "session $SID: registered" "$BATS_TEST_TMPDIR/log"
	! grep -q "session $SID: registered" "$BATS_TEST_TMPDIR/log.1" || false
}

@test "--trace-file: restore spans without transcript content; SIGHUP reopens the file" {
	serve_start --trace-file "$BATS_TEST_TMPDIR/trace"
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	wait_for 5 grep -q 'qwen-code.daemon.bridge' "$BATS_TEST_TMPDIR/trace"
	jq -e -s '[.[].resourceSpans[].scopeSpans[].spans[] | select(.name == "qwen-code.daemon.bridge")]
	    | length == 1 and (.[0].attributes | any(.key == "qwen-code.daemon.bridge.operation" and .value.stringValue == "session.load"))' \
	    "$BATS_TEST_TMPDIR/trace" >/dev/null
	! grep -q 'Why is loading slow' "$BATS_TEST_TMPDIR/trace" || false
	mv "$BATS_TEST_TMPDIR/trace" "$BATS_TEST_TMPDIR/trace.1"
	kill -HUP "$SERVE_PID"
	wait_for 5 test -e "$BATS_TEST_TMPDIR/trace"
	req POST /session/$SID2/resume '{}'
	expect 404
	wait_for 5 grep -q 'session.resume' "$BATS_TEST_TMPDIR/trace"
	! grep -q 'session.resume' "$BATS_TEST_TMPDIR/trace.1" || false
}

@test "the child's restore span joins the daemon's trace (real qwen-acp-child)" {
	[ -x "$QWEN_TOP_BUILDDIR/bin/qwen-acp-child" ] || skip "qwen-acp-child not built"
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start --trace-file "$BATS_TEST_TMPDIR/trace"
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	wait_for 5 grep -q 'qwen-code.daemon.session_restore' "$BATS_TEST_TMPDIR/trace"
	wait_for 5 grep -q 'qwen-code.daemon.bridge' "$BATS_TEST_TMPDIR/trace"
	jq -e -s '[.[].resourceSpans[].scopeSpans[].spans[]] as $s |
	    ($s | map(select(.name == "qwen-code.daemon.bridge"))[0]) as $d |
	    ($s | map(select(.name == "qwen-code.daemon.session_restore"))[0]) as $c |
	    $d.traceId == $c.traceId and $c.parentSpanId == $d.spanId' "$BATS_TEST_TMPDIR/trace" >/dev/null
}
