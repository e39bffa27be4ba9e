#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""flood.py: hostile clients for t/2501.

  flood.py sse UNIX-SOCKET PATH MIB   open an SSE stream, then send MIB MiB
                                      into it; prints how much was sent and
                                      holds the stream open until killed
  flood.py half HOST PORT N          open N connections, each sending half
                                      a request head, hold them until killed
  flood.py trickle HOST PORT SECS    send a request head a byte every 0.2 s
                                      for at most SECS; says when it was cut
"""
import socket
import sys
import time


def sse(sock_path, path, mib):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path).encode())
    head = b""
    while b"retry:" not in head:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("stream closed before it started")
        head += chunk
    block = b"x" * (1 << 20)
    sent = 0
    s.settimeout(30)
    try:
        for _ in range(mib):
            s.sendall(block)
            sent += 1
    except OSError as e:
        print("closed after %d MiB: %s" % (sent, e), flush=True)
        return
    print("sent %d MiB" % sent, flush=True)
    time.sleep(3600)


def half(host, port, n):
    held = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(0.5)
        try:
            s.connect((host, port))
            s.send(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        except OSError:
            pass
        held.append(s)
    print("opened %d" % len(held), flush=True)
    time.sleep(3600)


def trickle(host, port, secs):
    s = socket.create_connection((host, port))
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4096
    start = time.monotonic()
    s.settimeout(0.2)
    for i in range(len(head)):
        if time.monotonic() - start > secs:
            print("never cut off")
            return
        try:
            s.send(head[i:i + 1])
            if s.recv(1) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
    print("closed after %.0f s" % (time.monotonic() - start))


if __name__ == "__main__":
    if sys.argv[1] == "sse":
        sse(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "trickle":
        trickle(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        half(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
