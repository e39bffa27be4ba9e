#!/usr/bin/env bats
# qwen-serve: who may connect over loopback TCP: the kernel's
# word on the peer's uid, or the bearer; where the token comes from.
load serve_helper

teardown() { serve_teardown; }

# as_nobody CURL-ARGS...: curl as uid nobody; prints the HTTP status.
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
	    curl -s -o /dev/null -w '%{http_code}' "$@"
}

need_setpriv() {
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null ||
	    ! id nobody >/dev/null 2>&1; then
		skip "needs root and setpriv to act as another uid"
	fi
}

@test "loopback TCP: another uid gets 401 on every route, stream and upgrade without the token" {
	need_setpriv
	serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	local u=http://127.0.0.1:$PORT
	[ "$(as_nobody "$u/health")" = 401 ]
	[ "$(as_nobody "$u/capabilities")" = 401 ]
	[ "$(as_nobody "$u/workspace/sessions")" = 401 ]
	[ "$(as_nobody -X POST -d '{}' "$u/session")" = 401 ]
	[ "$(as_nobody -X POST -d '{}' "$u/session/$SID/load")" = 401 ]
	[ "$(as_nobody --max-time 5 "$u/session/$SID/events")" = 401 ]
	[ "$(as_nobody -X POST -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}' "$u/acp")" = 401 ]
	[ "$(as_nobody -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
	    -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
	    "$u/acp")" = 401 ]
	[ "$(as_nobody "$u/")" = 401 ]
	# The body is the catalog's.
	[ "$(setpriv --reuid=nobody --regid=nogroup --clear-groups -- curl -s "$u/capabilities")" = \
	    '{"error":"Unauthorized","code":"unauthorized"}' ]
	# With the bearer (nobody cannot read the file; we hand it over).
	local tok
	tok=$(cat "$BATS_TEST_TMPDIR/token")
	[ "$(as_nobody -H "Authorization: Bearer $tok" "$u/workspace/sessions")" = 200 ]
}

@test "loopback TCP: the daemon's own uid needs no token; the generated one is 0600 beside the socket" {
	serve_start
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/token")" = 600 ]
	[ "$(wc -c <"$BATS_TEST_TMPDIR/token")" -gt 20 ]
	grep -q "^qwen-serve: token in $BATS_TEST_TMPDIR/token\$" "$BATS_TEST_TMPDIR/out"
	# The token itself is never printed.
	run grep -c "$(cat "$BATS_TEST_TMPDIR/token")" "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
	[[ "$output" != *":1"* ]]
	TRANSPORT=tcp req GET /workspace/sessions
	expect 200
	TRANSPORT=tcp req POST /session '{}'
	expect 200
	# The Unix socket (peer credentials) needs none either.
	req GET /capabilities
	expect 200
	serve_stop
	[ ! -e "$BATS_TEST_TMPDIR/token" ]
}

@test "--token-file: refused when group or others can read it; 0600 works, for qwen-restore too" {
	local f=$BATS_TEST_TMPDIR/tok
	printf 'file-token-0123456789\n' >"$f"
	chmod 640 "$f"
	run qwen-serve --token-file "$f" --socket "$BATS_TEST_TMPDIR/x.sock" --port 0 3>&-
	[ "$status" -eq 2 ]
	[[ "$output" == *"token file $f: mode 0640 lets group or others read it"* ]]
	chmod 604 "$f"
	run qwen-serve --token-file "$f" --socket "$BATS_TEST_TMPDIR/x.sock" --port 0 3>&-
	[ "$status" -eq 2 ]
	run qwen-serve --token-file "$BATS_TEST_TMPDIR/missing" --socket "$BATS_TEST_TMPDIR/x.sock" 3>&-
	[ "$status" -eq 2 ]
	# 0600, and kept where qwen-restore looks for it: beside the socket.
	install -m 600 "$f" "$BATS_TEST_TMPDIR/token"
	serve_start --token-file "$BATS_TEST_TMPDIR/token"
	req GET /capabilities
	expect 401
	req GET /capabilities '' -H 'Authorization: Bearer file-token-0123456789'
	expect 200
	# A configured token gates the API over TCP for our own uid as well.
	TRANSPORT=tcp req GET /capabilities
	expect 401
	QWEN_SERVE_SOCKET=$SOCK run qwen-restore --url "http://127.0.0.1:$PORT" capabilities
	[ "$status" -eq 0 ]
	# Never sent to another host.
	QWEN_SERVE_SOCKET=$SOCK run qwen-restore --url "http://127.0.0.2:$PORT" capabilities
	[ "$status" -ne 0 ]
}

@test "--token is wiped from the process list with a warning; the credentials directory is read" {
	serve_start --token argv-secret-0123456789
	grep -q 'warning: --token is visible' "$BATS_TEST_TMPDIR/err"
	run grep -c argv-secret "/proc/$SERVE_PID/cmdline"
	[ "$output" = 0 ]
	req GET /capabilities '' -H 'Authorization: Bearer argv-secret-0123456789'
	expect 200
	serve_stop
	mkdir -p "$BATS_TEST_TMPDIR/creds"
	printf 'cred-token-0123456789' >"$BATS_TEST_TMPDIR/creds/qwen-serve-token"
	CREDENTIALS_DIRECTORY=$BATS_TEST_TMPDIR/creds QWEN_SERVER_TOKEN=env-loses \
	    serve_start
	req GET /capabilities '' -H 'Authorization: Bearer env-loses'
	expect 401
	req GET /capabilities '' -H 'Authorization: Bearer cred-token-0123456789'
	expect 200
}

@test "a bearer of another length, or a prefix of the token, is refused" {
	printf 'abcdefghijklmnop' >"$BATS_TEST_TMPDIR/t"
	chmod 600 "$BATS_TEST_TMPDIR/t"
	# A link to the file is fine (mounted secrets are links).
	ln -s t "$BATS_TEST_TMPDIR/t.link"
	serve_start --token-file "$BATS_TEST_TMPDIR/t.link"
	for t in abcdefghijklmno abcdefghijklmnopq '' 'abcdefghijklmnoP'; do
		req GET /capabilities '' -H "Authorization: Bearer $t"
		expect 401
	done
	req GET /capabilities '' -H 'Authorization: Bearer abcdefghijklmnop'
	expect 200
}
