#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: connections from their accept on:
# the cap at accept, descriptors running out, deadlines, bytes sent into
# a stream, the 413 body and the CORS preflight.
load serve_helper

teardown() {
	flood_stop
	serve_teardown
}

# flood_stop: end the flood.py client, if one runs.
flood_stop() {
	[ -n "${FLOOD_PID:-}" ] || return 0
	kill "$FLOOD_PID" 2>/dev/null || true
	wait "$FLOOD_PID" 2>/dev/null || true
	FLOOD_PID=
}

# rss_kb PID: resident set size in KiB.
rss_kb() {
	sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"
}

# cpu_ticks PID: user + system clock ticks so far.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

@test "413 is the catalog's JSON, with or without a Content-Length, on both listeners" {
	serve_start
	head -c $((10 * 1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$BATS_TEST_TMPDIR/big"
	for TRANSPORT in unix tcp; do
		req POST /session '' --data-binary @"$BATS_TEST_TMPDIR/big" -H 'Content-Type: application/json'
		expect 413 '.code == "payload_too_large"'
		[ "$(header Content-Type)" = application/json ]
		req POST /session '' --data-binary @"$BATS_TEST_TMPDIR/big" \
		    -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked'
		expect 413 '.code == "payload_too_large"'
	done
	req POST /session '{}'
	expect 200
}

@test "CORS preflight from an allowed origin is answered without the bearer" {
	serve_start --token s3cret-0123456789 --allow-origin http://app.example
	for TRANSPORT in unix tcp; do
		req OPTIONS /session '' -H 'Origin: http://app.example' \
		    -H 'Access-Control-Request-Method: POST' \
		    -H 'Access-Control-Request-Headers: authorization, content-type'
		[ "$code" = 204 ]
		[ "$(header Access-Control-Allow-Origin)" = http://app.example ]
		[[ "$(header Access-Control-Allow-Headers)" == *Authorization* ]]
		# Another origin gets nothing from it.
		req OPTIONS /session '' -H 'Origin: http://evil.example' \
		    -H 'Access-Control-Request-Method: POST'
		expect 403 '.code == "origin_forbidden"'
		# The real request still needs the bearer.
		req POST /session '{}' -H 'Origin: http://app.example'
		expect 401
	done
}

@test "a connection over the cap gets 503 at accept, before it sends a byte" {
	serve_start --max-connections 1
	# One silent connection holds the only slot.
	flood.py half 127.0.0.1 "$PORT" 1 >"$BATS_TEST_TMPDIR/flood" 3>&- &
	FLOOD_PID=$!
	wait_for 5 grep -q opened "$BATS_TEST_TMPDIR/flood"
	wait_for 5 bash -c "curl -s --unix-socket '$SOCK' http://localhost/health | grep -q connection_limit_exceeded"
	req GET /health
	expect 503 '.code == "connection_limit_exceeded" and .limit == 1'
	[ "$(header Retry-After)" = 1 ]
	flood_stop
	wait_for 5 bash -c "curl -s --unix-socket '$SOCK' http://localhost/health | grep -q ok"
}

@test "200 MiB sent into an SSE stream: RSS grows by less than 32 MiB, the daemon serves on" {
	# Under ASan freed memory waits in a 256 MiB quarantine and counts in
	# RSS; a small one keeps the figure about what the daemon holds.
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=1" serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	local before after
	before=$(rss_kb "$SERVE_PID")
	flood.py sse "$SOCK" "/session/$SID/events" 200 >"$BATS_TEST_TMPDIR/flood" 3>&- &
	FLOOD_PID=$!
	# Measured while the stream is still open.
	wait_for 120 grep -q "sent 200 MiB" "$BATS_TEST_TMPDIR/flood"
	after=$(rss_kb "$SERVE_PID")
	echo "RSS $before -> $after KiB" >&2
	[ $((after - before)) -lt $((32 * 1024)) ]
	req GET /health
	expect 200
}

@test "ulimit -n 64 and 200 half-sent requests: the Unix socket answers, the CPU stays idle" {
	command -v prlimit >/dev/null || skip "needs prlimit (util-linux)"
	SERVE_WRAP="prlimit --nofile=64:64" serve_start
	# The cap leaves room for the children, logs and traces.
	req GET '/health?deep=1'
	expect 200 '.maxConnections == 16'
	flood.py half 127.0.0.1 "$PORT" 200 >"$BATS_TEST_TMPDIR/flood" 3>&- &
	FLOOD_PID=$!
	wait_for 60 grep -q opened "$BATS_TEST_TMPDIR/flood"
	local t0 t1 w0 w1
	t0=$(cpu_ticks "$SERVE_PID")
	w0=$(date +%s%N)
	# The Unix socket is the operator's way in: it answers meanwhile, at
	# the first try.  (It was once closed at accept: the TCP flood and its
	# lingering refusals counted against the Unix socket's cap; now the
	# flood holds a quarter of the cap and refusals do not count.)
	req GET /health '' --max-time 30
	expect 200
	sleep 2		# a window to measure the daemon's CPU time over
	t1=$(cpu_ticks "$SERVE_PID")
	w1=$(date +%s%N)
	local ticks=$((t1 - t0)) wall_ticks=$(((w1 - w0) / 10000000))
	echo "CPU $ticks ticks over $wall_ticks ticks of wall time" >&2
	# A spinning accept loop burns all of it; an idle daemon almost none.
	[ "$ticks" -lt $((wall_ticks / 4)) ]
	# "Error from accept" never floods the log.
	[ "$(grep -c 'accept' "$BATS_TEST_TMPDIR/err")" -lt 5 ]
	flood_stop
	wait_for 30 bash -c "curl -s http://127.0.0.1:$PORT/health | grep -q ok"
}

@test "a request head that trickles in is cut off at its deadline" {
	serve_start
	run flood.py trickle 127.0.0.1 "$PORT" 40
	[ "$status" -eq 0 ]
	echo "$output" >&2
	[[ "$output" == "closed after "* ]]
	req GET /health
	expect 200
}

@test "the event ring is bounded in bytes: 24 MiB of agent output keeps the newest 16 MiB" {
	local real=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	SERVE_CHILD=$real serve_start --agent-command 'head -c 25165824 /dev/zero | tr "\0" x'
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"go"}]}'
	expect 202
	# The turn is over when the child has appended the answer.
	local tx
	tx=$(echo "$DATA"/projects/*/chats/$SID.jsonl)
	wait_for 120 bash -c "[ \$(wc -l <'$tx') -ge 4 ]"
	req GET /session/$SID/status
	expect 200 '.lastEventId > 100'
	# The oldest chunks left the ring: a reconnect from the start is told so.
	sse_open b /session/$SID/events -H 'Last-Event-ID: 3'
	sse_wait b '.type == "state_resync_required" and .data.reason == "ring_evicted" and .data.earliestAvailableId > 20'
}

@test "clients per session are bounded: the least recently seen makes room" {
	serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	local first
	first=$(jq -r .clientId <<<"$body")
	for i in $(seq 300); do
		curl -s -o /dev/null --unix-socket "$SOCK" -X POST -d '{}' \
		    "http://localhost/session/$SID/load"
	done
	req GET /session/$SID/status
	expect 200 '.clientCount == 256'
	# The oldest was pushed out; it heals as a stale client does.
	req POST /session/$SID/heartbeat '{}' -H "X-Qwen-Client-Id: $first"
	[ "$code" != 200 ]
	req POST /session/$SID/load '{}'
	expect 200 '.clientId | startswith("client_")'
}

