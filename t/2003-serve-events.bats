#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: SSE streams — framing, replay ring, resync, heartbeats,
# back-pressure, ordering against the prompt's 202.

load serve_helper

teardown() {
	serve_teardown
}

P='{"prompt":[{"type":"text","text":"hello"}]}'

loaded() {
	serve_start "$@"
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
}

@test "events: headers, retry:, envelope and SSE lines on both listeners" {
	loaded
	for TRANSPORT in unix tcp; do
		curl -s -N -D "$BATS_TEST_TMPDIR/h$TRANSPORT" -m 1 ${TRANSPORT/unix/--unix-socket $SOCK} \
		    "$([ $TRANSPORT = tcp ] && echo "http://127.0.0.1:$PORT" || echo http://localhost)/session/$SID/events" \
		    >"$BATS_TEST_TMPDIR/b$TRANSPORT" 3>&- || true
		hdrs=$(tr -d '\r' <"$BATS_TEST_TMPDIR/h$TRANSPORT")
		[ "$(header Content-Type)" = text/event-stream ]
		[ "$(header Cache-Control)" = "no-cache, no-transform" ]
		[ "$(header X-Accel-Buffering)" = no ]
		[ "$(header X-Qwen-Event-Epoch | wc -c)" = 37 ]
		[[ "$(header X-Qwen-SSE-Stream-Id)" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4 ]]
		[ "$(head -c 13 "$BATS_TEST_TMPDIR/b$TRANSPORT")" = "$(printf 'retry: 3000\n\n')" ]
	done
	sse_open a /session/$SID/events
	req POST /session/$SID/prompt "$P"
	sse_wait a '.type == "turn_complete"'
	grep -q '^id: 4$' "$BATS_TEST_TMPDIR/a.sse"
	grep -q '^event: session_update$' "$BATS_TEST_TMPDIR/a.sse"
	sse_events a | jq -e 'all(.[]; .v == 1 and (._meta.serverTimestamp | type) == "number")' >/dev/null
	sse_events a | jq -e '[.[] | .id] == [4,5,6]' >/dev/null
	# Without Last-Event-ID: live only, no replay_complete.
	! sse_has a '.type == "replay_complete"' || false
}

@test "events: 404, invalid maxQueued 400, Last-Event-ID junk ignored" {
	loaded
	req GET /session/$SID2/events
	expect 404 '.code == "session_not_found"'
	for q in 15 2049 x; do
		req GET "/session/$SID/events?maxQueued=$q"
		expect 400 '.code == "invalid_max_queued"'
	done
	sse_open a "/session/$SID/events?maxQueued=16" -H 'Last-Event-ID: abc'
	req POST /session/$SID/prompt "$P"
	sse_wait a '.type == "turn_complete"'
	! sse_has a '.type == "replay_complete" or .type == "state_resync_required"' || false
}

@test "reconnect with Last-Event-ID replays what was missed, then replay_complete" {
	loaded
	req POST /session/$SID/prompt "$P"
	wait_for 5 bash -c "curl -s --unix-socket '$SOCK' http://localhost/session/$SID/status | jq -e '.lastEventId == 6' >/dev/null"
	for TRANSPORT in unix tcp; do
		sse_open r$TRANSPORT /session/$SID/events -H 'Last-Event-ID: 4'
		sse_wait r$TRANSPORT '.type == "replay_complete" and .data.replayedCount == 2 and .data.lastReplayedEventId == 6 and .data.lastEventId == 6'
		sse_events r$TRANSPORT | jq -e '[.[] | .id] == [5,6,null]' >/dev/null
	done
	sse_open u /session/$SID/events -H 'Last-Event-ID: 6'
	sse_wait u '.type == "replay_complete" and .data.replayedCount == 0'
	# Live events follow the replay.
	req POST /session/$SID/prompt "$P"
	sse_wait u '.type == "turn_complete" and .id == 9'
}

@test "resync: epoch mismatch, cursor ahead, evicted ring, seeded replay" {
	loaded --event-ring-size 2
	sse_open s /session/$SID/events -H 'Last-Event-ID: 1'
	sse_wait s '.type == "state_resync_required" and .data.reason == "seeded_replay_not_in_ring" and .data.lastDeliveredId == 1 and .data.earliestAvailableId == 4'
	req POST /session/$SID/prompt "$P"
	wait_for 5 bash -c "curl -s --unix-socket '$SOCK' http://localhost/session/$SID/status | jq -e '.lastEventId == 6' >/dev/null"
	sse_open e /session/$SID/events -H 'Last-Event-ID: 3'
	sse_wait e '.type == "state_resync_required" and .data.reason == "ring_evicted" and .data.earliestAvailableId == 5'
	sse_open f /session/$SID/events -H 'Last-Event-ID: 99'
	sse_wait f '.type == "state_resync_required" and .data.reason == "epoch_reset"'
	sse_open g /session/$SID/events -H 'Last-Event-ID: 5' -H 'X-Qwen-Event-Epoch: 00000000-0000-4000-8000-000000000000'
	sse_wait g '.type == "state_resync_required" and .data.reason == "epoch_reset" and .data.detail == "epoch_mismatch"'
	sse_open h /session/$SID/events -H 'Last-Event-ID: 4'
	sse_wait h '.type == "replay_complete" and .data.replayedCount == 2'
	# The streams stay open after a resync.
	req POST /session/$SID/prompt "$P"
	sse_wait f '.type == "turn_complete"'
}

@test "heartbeat comments keep quiet streams alive" {
	loaded --sse-heartbeat-ms 100
	sse_open a /session/$SID/events
	wait_for 5 bash -c "[ \$(grep -c '^: heartbeat' '$BATS_TEST_TMPDIR/a.sse') -ge 3 ]"
}

# beats_now: every stream's heartbeat count, a line each.
beats_now() {
	local f
	for f in "$BATS_TEST_TMPDIR"/hb.*.sse; do
		echo "$f $(grep -c '^: heartbeat' "$f")"
	done
}

# Every stream has had $1 heartbeats more than in the counts file $2.
all_beating() {
	local f n
	while read -r f n; do
		[ "$(grep -c '^: heartbeat' "$f")" -ge $((n + $1)) ] || return 1
	done <"$2"
}

# At least $2 ms have passed since the clock reading (ms) $1.
ms_passed() {
	[ $(( $(date +%s%3N) - $1 )) -ge "$2" ]
}

@test "heartbeats reach every stream when more are due than one loop turn runs" {
	loaded --sse-heartbeat-ms 100
	req POST /session '{"sessionScope":"thread"}'
	expect 200
	local sid2 i t0
	sid2=$(jq -r .sessionId <<<"$body")
	for i in $(seq 50); do
		sse_open hb.a$i /session/$SID/events
		sse_open hb.b$i /session/$sid2/events
	done
	# Held past several intervals, the daemon finds all 100 heartbeats due
	# at once: more than one timer wake-up runs, the rest on the next turns.
	kill -STOP "$SERVE_PID"
	t0=$(date +%s%3N)
	beats_now >"$BATS_TEST_TMPDIR/beats"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/beats")" -eq 100 ]
	wait_for 5 ms_passed "$t0" 500
	kill -CONT "$SERVE_PID"
	wait_for 20 all_beating 3 "$BATS_TEST_TMPDIR/beats"
	sse_stop_all
}

@test "subscriber limit: the 65th stream gets 429 subscriber_limit_exceeded" {
	loaded
	for i in $(seq 64); do
		curl -s -N --unix-socket "$SOCK" http://localhost/session/$SID/events \
		    >/dev/null 3>&- &
		echo $! >>"$BATS_TEST_TMPDIR/sse.pids"
	done
	wait_for 10 bash -c "curl -s --unix-socket '$SOCK' http://localhost/session/$SID/status | jq -e '.subscriberCount == 64' >/dev/null"
	req GET /session/$SID/events
	expect 429 ".code == \"subscriber_limit_exceeded\" and .limit == 64 and .sessionId == \"$SID\""
	[ "$(header Retry-After)" = 5 ]
	sse_stop_all
	wait_for 10 bash -c "curl -s --unix-socket '$SOCK' http://localhost/session/$SID/status | jq -e '.subscriberCount == 0' >/dev/null"
}

@test "the 202 is sent before any event of its prompt" {
	command -v node >/dev/null || skip "node not installed"
	# The child answers after 30 ms, so that scheduler noise on a loaded
	# machine cannot reorder two sockets that became readable together.
	FAKE_CHILD=delay=session/prompt:30 loaded
	run node "$QWEN_TOP_SRCDIR/t/helper/sse-order.js" "$SOCK" "$SID" 30
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"early=0 completed=30"* ]]
}

@test "a slow subscriber is warned, then evicted; others keep streaming" {
	command -v node >/dev/null || skip "node not installed"
	FAKE_CHILD=chunks=1500 loaded
	node "$QWEN_TOP_SRCDIR/t/helper/sse-slow.js" "$SOCK" "$SID" "$BATS_TEST_TMPDIR/slow" 3>&- &
	local slow=$!
	wait_for 5 test -e "$BATS_TEST_TMPDIR/slow.ready"
	sse_open fast "/session/$SID/events?maxQueued=2048"
	req POST /session/$SID/prompt "$P"
	wait_for 20 grep -q '^event: turn_complete' "$BATS_TEST_TMPDIR/fast.sse"
	! grep -q '^event: client_evicted' "$BATS_TEST_TMPDIR/fast.sse" || false
	touch "$BATS_TEST_TMPDIR/slow.go"
	wait $slow
	grep -q '^event: slow_client_warning' "$BATS_TEST_TMPDIR/slow"
	sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/slow" | jq -e -s 'any(.[]; .type == "client_evicted" and (.data.reason == "queue_overflow" or .data.reason == "queue_bytes_overflow") and .data.maxQueued == 16)' >/dev/null
	sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/slow" | jq -e -s '.[-1].type == "client_evicted"' >/dev/null
	[ "$(grep -c '^event: session_update' "$BATS_TEST_TMPDIR/fast.sse")" = 1500 ]
	req GET /session/$SID/status
	expect 200 '.subscriberCount == 1'
}

@test "an aborted stream is cleaned up (subscriber count drops)" {
	loaded
	sse_open a /session/$SID/events
	req GET /session/$SID/status
	expect 200 '.subscriberCount == 1'
	sse_stop_all
	wait_for 5 bash -c "curl -s --unix-socket '$SOCK' http://localhost/session/$SID/status | jq -e '.subscriberCount == 0' >/dev/null"
}
