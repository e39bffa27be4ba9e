#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve writes a load's big answer a slice per loop turn: the body is
# encoded without its compactedReplay, sent with its exact Content-Length,
# and the replay's envelopes follow a slice at a time
# (QWEN_SERVE_TEST_REPLY_SLICE makes the slices tiny, so a 1 MiB transcript
# takes hundreds of turns).  The bytes are the one-shot reply's: the same
# as the json-c path's (QWEN_SERVE_REPLAY_REENCODE=1, never sliced), to a
# client that reads at once, one that reads nothing until every slice was
# written, and after a client that left in the middle.
load serve_acp_helper

setup() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	command -v jq >/dev/null || skip "jq not installed"
	command -v python3 >/dev/null || skip "python3 not installed"
}

teardown() {
	rteardown
}

make_transcript() {
	qwen-gen-transcript --mib 2 --seed 5 --session-id "$SID" \
	    --data-dir "$DATA" --workspace "$WS" >/dev/null
}

# reference [qwen-serve args...]: the one-shot reply of the json-c path,
# masked, in $BATS_TEST_TMPDIR/jsonc.
reference() {
	QWEN_SERVE_REPLAY_REENCODE=1 SERVE_CHILD=$REAL serve_start --log-level debug "$@"
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	masked <"$BATS_TEST_TMPDIR/body" >"$BATS_TEST_TMPDIR/jsonc"
	serve_stop
	run ! grep -q 'written in [0-9]* slices' "$BATS_TEST_TMPDIR/err"
}

# slices: how many slices the last sliced reply took (0: none).
slices() {
	sed -n 's/.*a reply of [0-9]* elements written in \([0-9]*\) slices.*/\1/p' \
	    "$BATS_TEST_TMPDIR/err" | tail -1 | grep . || echo 0
}

sliced_n() {
	[ "$(slices)" -ge "$1" ]
}

# held_load OUT FIFO: POST the load on a raw connection, read nothing until
# a line comes on FIFO, then read the whole answer; its body into OUT.
held_load() {
	python3 - "$SOCK" "/session/$SID/load" "$1" "$2" <<'EOF'
import socket, sys
sock, path, out, fifo = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sock)
s.sendall(f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
          "Content-Length: 2\r\n\r\n{}".encode())
open(fifo).readline()
f = s.makefile("rb")
status = f.readline()
n = None
while True:
    h = f.readline()
    if h in (b"\r\n", b""):
        break
    k, v = h.decode().split(":", 1)
    if k.lower() == "content-length":
        n = int(v)
body = f.read(n)
assert status.split()[1] == b"200", status
assert len(body) == n, (len(body), n)
open(out, "wb").write(body)
EOF
}

@test "a replay written a slice per loop turn is the one-shot reply, Content-Length and all" {
	reference
	QWEN_SERVE_TEST_REPLY_SLICE=700 SERVE_CHILD=$REAL serve_start --log-level debug
	req POST /session/$SID/load '{}'
	expect 200
	[ "$(jq '.compactedReplay | length' <<<"$body")" -gt 100 ]
	sliced_n 100
	[ "$(header Content-Length)" = "$(stat -c %s "$BATS_TEST_TMPDIR/body")" ]
	masked <"$BATS_TEST_TMPDIR/body" >"$BATS_TEST_TMPDIR/sliced"
	cmp "$BATS_TEST_TMPDIR/jsonc" "$BATS_TEST_TMPDIR/sliced"
	# The same with the default slice (a 2 MiB transcript's replay is
	# several of them).
	serve_stop
	SERVE_CHILD=$REAL serve_start --log-level debug
	req POST /session/$SID/load '{}'
	expect 200
	sliced_n 2
	masked <"$BATS_TEST_TMPDIR/body" >"$BATS_TEST_TMPDIR/sliced"
	cmp "$BATS_TEST_TMPDIR/jsonc" "$BATS_TEST_TMPDIR/sliced"
}

@test "cut to --compacted-replay-max-bytes, the history_truncated marker leads the slices" {
	reference --compacted-replay-max-bytes 300000
	QWEN_SERVE_TEST_REPLY_SLICE=700 SERVE_CHILD=$REAL serve_start --log-level debug \
	    --compacted-replay-max-bytes 300000
	req POST /session/$SID/load '{}'
	expect 200 '.compactedReplay[0].type == "history_truncated"'
	[ "$(jq '.compactedReplay | length' <<<"$body")" -gt 10 ]
	sliced_n 10
	[ "$(header Content-Length)" = "$(stat -c %s "$BATS_TEST_TMPDIR/body")" ]
	masked <"$BATS_TEST_TMPDIR/body" >"$BATS_TEST_TMPDIR/sliced"
	cmp "$BATS_TEST_TMPDIR/jsonc" "$BATS_TEST_TMPDIR/sliced"
}

@test "a client that reads nothing until every slice was written gets the same bytes" {
	reference
	QWEN_SERVE_TEST_REPLY_SLICE=700 SERVE_CHILD=$REAL serve_start --log-level debug
	mkfifo "$BATS_TEST_TMPDIR/go"
	held_load "$BATS_TEST_TMPDIR/held" "$BATS_TEST_TMPDIR/go" 3>&- &
	pid=$!
	wait_for 60 sliced_n 100
	# Meanwhile the daemon answers others.
	req GET /health
	expect 200
	echo go >"$BATS_TEST_TMPDIR/go"
	wait "$pid"
	masked <"$BATS_TEST_TMPDIR/held" >"$BATS_TEST_TMPDIR/sliced"
	cmp "$BATS_TEST_TMPDIR/jsonc" "$BATS_TEST_TMPDIR/sliced"
}

@test "a client that leaves in the middle of a sliced reply harms nothing" {
	reference
	QWEN_SERVE_TEST_REPLY_SLICE=64 SERVE_CHILD=$REAL serve_start --log-level debug
	python3 - "$SOCK" "/session/$SID/load" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(f"POST {sys.argv[2]} HTTP/1.1\r\nHost: localhost\r\n"
          "Content-Length: 2\r\n\r\n{}".encode())
s.recv(100)
s.close()
EOF
	wait_for 60 grep -q -e 'written in [0-9]* slices' -e 'client is gone after' \
	    "$BATS_TEST_TMPDIR/err"
	req DELETE /session/$SID
	req POST /session/$SID/load '{}'
	expect 200
	masked <"$BATS_TEST_TMPDIR/body" >"$BATS_TEST_TMPDIR/sliced"
	cmp "$BATS_TEST_TMPDIR/jsonc" "$BATS_TEST_TMPDIR/sliced"
}
