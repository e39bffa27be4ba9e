#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: who may connect over loopback TCP: the kernel's
# word on the peer's uid, or the bearer; where the token comes from.
load serve_helper

teardown() {
	# A test that stopped the daemon must not leave teardown waiting on it.
	[ -z "${SERVE_PID:-}" ] || kill -CONT "$SERVE_PID" 2>/dev/null || true
	serve_teardown
}

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

# closed_to PORT: a client socket to PORT that its process has let go of:
# the kernel keeps it as a time-wait socket (FIN_WAIT2 or TIME_WAIT, no
# inode), which sock_diag reports with uid 0.
closed_to() {
	awk -v p="$(printf ':%04X' "$1")" '
	    NR > 1 && substr($3, length($3) - 4) == p &&
	    ($4 == "05" || $4 == "06") && $10 == 0 { f = 1 }
	    END { exit !f }' /proc/net/tcp
}

@test "loopback TCP: a request whose sender closed before it was read is not trusted (a closed socket reports uid 0)" {
	need_setpriv
	local odd=33333333-3333-4333-8333-333333333333
	serve_start
	kill -STOP "$SERVE_PID"
	# As nobody: write a whole request and close at once.
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- bash -c '
	    exec 3<>/dev/tcp/127.0.0.1/'"$PORT"'
	    printf "POST /session HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\nContent-Length: 52\r\n\r\n{\"sessionId\":\"%s\"}" '"$PORT $odd"' >&3
	    exec 3>&-'
	# The sender's socket is gone before the daemon reads a byte.
	wait_for 20 closed_to "$PORT"
	kill -CONT "$SERVE_PID"
	# A trusted request accepted after it; once it is done, the stale one
	# was read (the listener accepts in order) and refused.
	TRANSPORT=tcp req POST /session "{\"sessionId\":\"$SID2\"}"
	expect 200
	TRANSPORT=tcp req GET /session/$odd/status
	expect 404
	run ! grep -q "$odd" "$BATS_TEST_TMPDIR/err"
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
