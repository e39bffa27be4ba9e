#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# sse-stall.py SOCKET PATH OUT: an SSE subscriber that stops reading once
# the stream has started (a NAT ghost, a frozen client): it writes
# "OUT.ready", reads nothing more until "OUT.go" exists, then reads the
# rest of the stream to its end and writes all it got to OUT.
import os
import socket
import sys
import time

sock_path, path, out = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sock_path)
s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n"
           "Accept: text/event-stream\r\n\r\n" % path).encode())
got = b""
while b"retry: 3000" not in got:
    d = s.recv(4096)
    if not d:
        break
    got += d
open(out + ".ready", "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(out + ".go"):
    if time.monotonic() > deadline:
        sys.exit(3)
    time.sleep(0.02)
s.settimeout(30)
# The end of a chunked body: the zero-length chunk.
while not got.endswith(b"\r\n0\r\n\r\n"):
    d = s.recv(65536)
    if not d:
        break
    got += d
open(out, "wb").write(got)
