#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: --writer-idle-timeout-ms evicts an SSE subscriber whose
# socket takes nothing (client_evicted writer_idle_timeout); a reading or
# merely quiet subscriber stays.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

P='{"prompt":[{"type":"text","text":"hello"}]}'

subscribers() {
	req GET /session/$SID/status
	[ "$code" = 200 ]
	jq -e ".subscriberCount == $1" >/dev/null <<<"$body"
}

@test "a subscriber that stops reading is evicted after the writer idle timeout; a reading one stays" {
	command -v python3 >/dev/null || skip "python3 not installed"
	# 2000 small frames: more than the kernel's socket buffers take, far
	# fewer than the queue caps (2048 frames, 2 MiB) that would evict first.
	FAKE_CHILD=chunks=2000 serve_loaded --writer-idle-timeout-ms 1500
	req GET /capabilities
	expect 200 '(.features | index("writer_idle_timeout")) != null'
	python3 "$QWEN_TOP_SRCDIR/t/helper/sse-stall.py" "$SOCK" \
	    "/session/$SID/events?maxQueued=2048" "$BATS_TEST_TMPDIR/stall" 3>&- &
	local stall=$!
	wait_for 5 test -e "$BATS_TEST_TMPDIR/stall.ready"
	sse_open fast "/session/$SID/events?maxQueued=2048"
	req POST /session/$SID/prompt "$P"
	expect 202
	wait_for 20 grep -q '^event: turn_complete' "$BATS_TEST_TMPDIR/fast.sse"
	wait_for 20 subscribers 1
	touch "$BATS_TEST_TMPDIR/stall.go"
	wait $stall
	sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/stall" | tr -d '\r' >"$BATS_TEST_TMPDIR/stall.json"
	jq -e -s '.[-1].type == "client_evicted" and .[-1].data.reason == "writer_idle_timeout" and .[-1].data.errorKind == "writer_idle_timeout" and .[-1].data.timeoutMs == 1500 and .[-1].data.idleForMs >= 1500 and (.[-1] | has("id") | not)' "$BATS_TEST_TMPDIR/stall.json" >/dev/null
	run ! grep -q '^event: client_evicted' "$BATS_TEST_TMPDIR/fast.sse"
	[ "$(grep -c '^event: session_update' "$BATS_TEST_TMPDIR/fast.sse")" = 2000 ]
	grep -q 'evicting an SSE client whose socket took nothing' "$BATS_TEST_TMPDIR/err"
}

@test "a quiet stream with nothing to send is not idle" {
	serve_loaded --writer-idle-timeout-ms 200
	sse_open quiet /session/$SID/events
	subscribers 1
	# Several timeouts long with nothing queued: still subscribed.
	sleep 1
	subscribers 1
	run ! grep -q client_evicted "$BATS_TEST_TMPDIR/quiet.sse"
}

@test "without the flag a stalled subscriber stays (only the queue caps apply)" {
	command -v python3 >/dev/null || skip "python3 not installed"
	FAKE_CHILD=chunks=300 serve_loaded
	req GET /capabilities
	expect 200 '(.features | index("writer_idle_timeout")) == null'
	python3 "$QWEN_TOP_SRCDIR/t/helper/sse-stall.py" "$SOCK" \
	    "/session/$SID/events?maxQueued=2048" "$BATS_TEST_TMPDIR/stall" 3>&- &
	local stall=$!
	wait_for 5 test -e "$BATS_TEST_TMPDIR/stall.ready"
	sse_open fast /session/$SID/events
	req POST /session/$SID/prompt "$P"
	wait_for 20 grep -q '^event: turn_complete' "$BATS_TEST_TMPDIR/fast.sse"
	subscribers 2
	sse_stop_all
	touch "$BATS_TEST_TMPDIR/stall.go"
	kill "$stall" 2>/dev/null || true
	wait "$stall" || true
}
