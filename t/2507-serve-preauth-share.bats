#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: TCP connections that have not authenticated hold at most a
# quarter of the connection cap, so idle connects (any local user can
# make them) cannot lock out a client until their head deadlines.
load serve_helper

teardown() {
	[ -z "${FLOOD_PID:-}" ] || kill "$FLOOD_PID" 2>/dev/null || true
	serve_teardown
}

# flood N: N TCP connections holding half a request head each.
flood() {
	flood.py half 127.0.0.1 "$PORT" "$1" >"$BATS_TEST_TMPDIR/flood" 3>&- &
	FLOOD_PID=$!
	wait_for 30 grep -q opened "$BATS_TEST_TMPDIR/flood"
}

@test "40 idle TCP connects against a cap of 8: TCP and Unix clients still get in, at once" {
	serve_start --max-connections 8
	flood 40
	# No retry: the newcomer takes the oldest idle connection's place.
	TRANSPORT=tcp req GET /capabilities
	expect 200
	req GET /capabilities
	expect 200
	# With the token, from anywhere (what another uid would present).
	TRANSPORT=tcp req GET /capabilities '' \
	    -H "Authorization: Bearer $(cat "$BATS_TEST_TMPDIR/token")"
	expect 200
}

# keepalive_through_flood PORT N: one kept-alive connection asks for
# /capabilities, N idle connects follow, then it asks again; prints both
# status lines.
keepalive_through_flood() {
	python3 - "$1" "$2" <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
req = ("GET /capabilities HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port).encode()

def ask(s):
    s.sendall(req)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return "closed"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
              if l.lower().startswith(b"content-length:")][0]
    while len(body) < length:
        body += s.recv(65536)
    return head.split(b"\r\n")[0].decode()

s = socket.create_connection(("127.0.0.1", port), timeout=30)
print(ask(s))
held = []
for _ in range(n):
    h = socket.create_connection(("127.0.0.1", port), timeout=30)
    h.sendall(b"GET /health HTTP/1.1\r\n")
    held.append(h)
print(ask(s))
PY
}

@test "an authenticated keep-alive connection keeps its slot through a flood" {
	serve_start --max-connections 8
	run keepalive_through_flood "$PORT" 40
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "HTTP/1.1 200 OK" ]
	[ "${lines[1]}" = "HTTP/1.1 200 OK" ]
}
