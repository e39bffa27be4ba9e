#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore: the clientId self-heal of seed 001 and auto-resume, against
# the scripted fake daemon (t/helper/fake-daemon).

load restore_helper

@test "non-blocking self-heal: 400 invalid_client_id, one resume, retry with the new id" {
	store_client s-1 c1
	fake_start < <(heal_lines "" p-1)
	run qwen-restore prompt --no-wait s-1 "hello"
	[ "$status" -eq 0 ]
	[ "$output" = "p-1" ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
	[ "$(count POST /session/s-1/prompt)" -eq 2 ]
	# The first prompt carried the stale id, the retry the new one.
	[ "$(requests POST /session/s-1/prompt | jq -rs '.[0].clientId')" = c1 ]
	[ "$(requests POST /session/s-1/prompt | jq -rs '.[1].clientId')" = client-2 ]
	# The reattach: resume WITHOUT a client id, with the workspace cwd.
	[ "$(requests POST /session/s-1/resume | jq -r '.clientId')" = null ]
	[ "$(requests POST /session/s-1/resume | jq -r '.body | fromjson | .cwd')" = "$WS" ]
	# The same prompt body both times, and the new id is stored.
	[ "$(requests POST /session/s-1/prompt | jq -rs '.[0].body == .[1].body')" = true ]
	[ "$(stored_client s-1)" = client-2 ]
	# Non-blocking: no event subscription at all.
	[ "$(count GET /session/s-1/events)" -eq 0 ]
}

@test "blocking self-heal: the wait path heals and streams the answer" {
	store_client s-1 c1
	{
		cat <<EOF
GET /session/s-1/events 200 sse hold
>sleep 200
EOF
		sse_frames p-1 "Hello" ", world"
		heal_lines "" p-1
	} >"$BATS_TEST_TMPDIR/s.in"
	fake_start <"$BATS_TEST_TMPDIR/s.in"
	run qwen-restore prompt s-1 "say hello"
	[ "$status" -eq 0 ]
	[ "$output" = "Hello, world" ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
	[ "$(requests POST /session/s-1/prompt | jq -rs '.[1].clientId')" = client-2 ]
	# Subscribed before the prompt, and the subscription survived the heal.
	[ "$(jq -rs 'map(.method + " " + .path) | index("GET /session/s-1/events") < index("POST /session/s-1/prompt")' "$FAKE_LOG")" = true ]
	[ "$(count GET /session/s-1/events)" -eq 1 ]
}

@test "blocking self-heal: a legacy 200 answer to the retry ends the prompt" {
	store_client s-1 c1
	{
		echo "GET /session/s-1/events 200 sse hold"
		heal_lines ""
		echo 'POST /session/s-1/prompt 200 if-client=client-2 {"stopReason":"end_turn"}'
	} >"$BATS_TEST_TMPDIR/s.in"
	fake_start <"$BATS_TEST_TMPDIR/s.in"
	run qwen-restore prompt s-1 "hi"
	[ "$status" -eq 0 ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
	[ "$(count POST /session/s-1/prompt)" -eq 2 ]
}

@test "retry bound: a second invalid_client_id propagates, one resume" {
	store_client s-1 c1
	fake_start <<EOF
POST /session/s-1/prompt 400 $INVALID_C1
POST /session/s-1/resume 200 $RESUMED
EOF
	run qwen-restore --json prompt --no-wait s-1 "hi"
	[ "$status" -eq 1 ]
	[ "$(jq -r .code <<<"$output")" = invalid_client_id ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
	[ "$(count POST /session/s-1/prompt)" -eq 2 ]
	# And without --json: one line naming the command and the session.
	store_client s-1 c1
	run qwen-restore prompt --no-wait s-1 "hi"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "qwen-restore: prompt s-1: Client id \"c1\" is not registered"* ]]
}

@test "non-invalid errors are not retried: 500 propagates, no resume" {
	store_client s-1 c1
	fake_start <<'EOF'
POST /session/s-1/prompt 500 {"error":"boom","code":"internal"}
POST /session/s-1/resume 200 {"clientId":"client-2"}
EOF
	run qwen-restore prompt --no-wait s-1 "hi"
	[ "$status" -eq 1 ]
	[[ "$output" == *boom* ]]
	[ "$(count POST /session/s-1/resume)" -eq 0 ]
	[ "$(count POST /session/s-1/prompt)" -eq 1 ]
	[ "$(stored_client s-1)" = c1 ]
}

@test "the heal predicate checks the status: invalid_client_id with 409 or 500 is not healed" {
	store_client s-1 c1
	fake_start <<EOF
POST /session/s-1/prompt 409 $INVALID_C1
POST /session/s-1/prompt 500 $INVALID_C1
POST /session/s-1/resume 200 $RESUMED
EOF
	run qwen-restore prompt --no-wait s-1 "a"
	[ "$status" -ne 0 ]
	run qwen-restore prompt --no-wait s-1 "b"
	[ "$status" -ne 0 ]
	[ "$(count POST /session/s-1/resume)" -eq 0 ]
	[ "$(count POST /session/s-1/prompt)" -eq 2 ]
	[ "$(stored_client s-1)" = c1 ]
}

@test "non-invalid errors are not retried: other 400s and prompt_queue_full" {
	store_client s-1 c1
	fake_start <<'EOF'
POST /session/s-1/prompt 400 {"error":"Invalid deadline","code":"invalid_deadline_ms"}
POST /session/s-1/prompt 503 retry-after=5 {"error":"full","code":"prompt_queue_full","sessionId":"s-1","limit":5,"pendingCount":5}
POST /session/s-1/prompt 400 {"error":"plain 400 without code"}
EOF
	run qwen-restore prompt --no-wait s-1 "a"
	[ "$status" -ne 0 ]
	run qwen-restore prompt --no-wait s-1 "b"
	[ "$status" -eq 75 ]
	[[ "$output" == *"(retry in 5 s)"* ]]
	run qwen-restore prompt --no-wait s-1 "c"
	# A code-less 400 is a bad request by the catalog: exit 2.
	[ "$status" -eq 2 ]
	[ "$(count POST /session/s-1/resume)" -eq 0 ]
	[ "$(count POST /session/s-1/prompt)" -eq 3 ]
}

@test "reattach failure propagates: the resume's 404 and 500" {
	store_client s-1 c1
	fake_start <<EOF
POST /session/s-1/prompt 400 $INVALID_C1
POST /session/s-1/resume 404 $NOT_FOUND
POST /session/s-1/resume 500 {"error":"resume exploded","code":"internal"}
EOF
	run qwen-restore prompt --no-wait s-1 "hi"
	[ "$status" -eq 3 ]
	[[ "$output" == *'No session with id "s-1"'* ]]
	[ "$(count POST /session/s-1/prompt)" -eq 1 ]
	run qwen-restore prompt --no-wait s-1 "hi"
	[ "$status" -eq 1 ]
	[[ "$output" == *"resume exploded"* ]]
	[ "$(count POST /session/s-1/prompt)" -eq 2 ]
	[ "$(count POST /session/s-1/resume)" -eq 2 ]
	# A failed reattach leaves the stored id alone.
	[ "$(stored_client s-1)" = c1 ]
}

@test "reattach failure propagates: the daemon dies during the reattach" {
	store_client s-1 c1
	fake_start <<EOF
POST /session/s-1/prompt 400 $INVALID_C1
POST /session/s-1/resume 200 hold $RESUMED
EOF
	# The daemon dies while the resume is in flight (it is never answered).
	resume_seen() { [ "$(count POST /session/s-1/resume)" -eq 1 ]; }
	( wait_for 10 resume_seen && kill "$FAKE_PID" ) 3>&- &
	killer=$!
	run timeout 60 qwen-restore prompt --no-wait s-1 "hi"
	wait "$killer"
	# The resume's broken answer propagates: no retry of the prompt.
	[ "$status" -eq 1 ]
	[[ "$output" == *"no answer from the daemon"* ]]
	[ "$(count POST /session/s-1/prompt)" -eq 1 ]
}

@test "single-flight in one process: two --parallel prompts, exactly one resume" {
	store_client s-1 c1
	fake_start < <(heal_lines delay=300 p-1 p-2)
	run qwen-restore prompt --no-wait --parallel s-1 - <<<$'first\nsecond'
	[ "$status" -eq 0 ]
	[ "$(sort <<<"$output" | tr '\n' ' ')" = "p-1 p-2 " ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
	[ "$(requests POST /session/s-1/prompt | jq -r .clientId | sort | tr '\n' ' ')" = "c1 c1 client-2 client-2 " ]
	# Both prompts were sent and retried, each with its own text.
	[ "$(requests POST /session/s-1/prompt | jq -r '.body | fromjson | .prompt[0].text' | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" = "2 2 " ]
}

@test "single-flight in one process: the waiting prompts share a failed reattach" {
	store_client s-1 c1
	fake_start <<EOF
POST /session/s-1/prompt 400 if-client=c1 $INVALID_C1
POST /session/s-1/resume 500 delay=300 {"error":"resume exploded","code":"internal"}
EOF
	run qwen-restore prompt --no-wait --parallel s-1 - <<<$'one\ntwo\nthree'
	[ "$status" -eq 1 ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
	[ "$(count POST /session/s-1/prompt)" -eq 3 ]
	[ "$(grep -c 'resume exploded' <<<"$output")" -eq 3 ]
}

@test "single-flight in one process: --parallel waits stream each answer" {
	store_client s-1 c1
	{
		echo "GET /session/s-1/events 200 sse hold"
		echo ">sleep 400"
		sse_frames p-1 "answer one"
		sse_frames p-2 "answer two"
		heal_lines delay=100 p-1 p-2
	} >"$BATS_TEST_TMPDIR/s.in"
	fake_start <"$BATS_TEST_TMPDIR/s.in"
	run qwen-restore prompt --parallel s-1 - <<<$'q1\nq2'
	[ "$status" -eq 0 ]
	# Each answer under the label of its prompt, in the prompts' order.
	[ "$(grep '^==>' <<<"$output" | tr '\n' '|')" = "==> [1/2] q1 <==|==> [2/2] q2 <==|" ]
	[ "$(grep '^answer' <<<"$output" | sort | tr '\n' '|')" = "answer one|answer two|" ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
}

@test "single-flight across processes: two concurrent prompts, exactly one resume" {
	store_client s-1 c1
	fake_start < <(heal_lines delay=1000 p-1 p-2)
	qwen-restore -v prompt --no-wait s-1 one >"$BATS_TEST_TMPDIR/a.out" 2>"$BATS_TEST_TMPDIR/a.err" 3>&- &
	a=$!
	qwen-restore -v prompt --no-wait s-1 two >"$BATS_TEST_TMPDIR/b.out" 2>"$BATS_TEST_TMPDIR/b.err" 3>&- &
	b=$!
	wait "$a"
	wait "$b"
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
	# Both had the stale id; both retried with the one new id.
	[ "$(requests POST /session/s-1/prompt | jq -r .clientId | sort | tr '\n' ' ')" = "c1 c1 client-2 client-2 " ]
	[ "$(cat "$BATS_TEST_TMPDIR/a.out" "$BATS_TEST_TMPDIR/b.out" | sort | tr '\n' ' ')" = "p-1 p-2 " ]
	# The one that waited for the lock used the stored id, no second resume.
	[ "$(cat "$BATS_TEST_TMPDIR"/[ab].err | grep -c 'using the clientId stored by another process')" -eq 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR"/[ab].err | grep -c 'resume without a client id')" -eq 1 ]
	[ "$(stored_client s-1)" = client-2 ]
}

@test "auto-resume: 404 session_not_found resumes once and retries" {
	store_client s-1 c1
	{
		cat <<EOF
GET /session/s-1/events 404 $NOT_FOUND
POST /session/s-1/prompt 404 if-client=c1 $NOT_FOUND
POST /session/s-1/resume 200 $RESUMED
POST /session/s-1/prompt 202 if-client=client-2 {"promptId":"p-1","lastEventId":5}
GET /session/s-1/events 200 sse
EOF
		sse_frames p-1 "back again"
	} >"$BATS_TEST_TMPDIR/s.in"
	fake_start <"$BATS_TEST_TMPDIR/s.in"
	run qwen-restore prompt s-1 "hi"
	[ "$status" -eq 0 ]
	[ "$output" = "back again" ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
	[ "$(requests POST /session/s-1/resume | jq -r .clientId)" = null ]
	# The late subscription starts at the admission watermark.
	[ "$(count GET /session/s-1/events)" -eq 2 ]
	[ "$(requests GET /session/s-1/events | jq -rs '.[1].lastEventId')" = 5 ]
}

@test "auto-resume: a session without a transcript propagates the resume's 404" {
	fake_start <<EOF
POST /session/s-1/prompt 404 $NOT_FOUND
POST /session/s-1/resume 404 $NOT_FOUND
EOF
	run qwen-restore prompt --no-wait s-1 "hi"
	[ "$status" -eq 3 ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
	[ "$(count POST /session/s-1/prompt)" -eq 1 ]
}

@test "--no-auto-resume: 404 propagates at once" {
	store_client s-1 c1
	fake_start <<EOF
POST /session/s-1/prompt 404 $NOT_FOUND
POST /session/s-1/resume 200 $RESUMED
EOF
	run qwen-restore prompt --no-wait --no-auto-resume s-1 "hi"
	[ "$status" -eq 3 ]
	[ "$(count POST /session/s-1/resume)" -eq 0 ]
}

@test "only the prompt heals: heartbeat, cancel and close propagate invalid_client_id" {
	store_client s-1 c1
	fake_start <<EOF
POST /session/s-1/heartbeat 400 $INVALID_C1
POST /session/s-1/cancel 400 $INVALID_C1
DELETE /session/s-1 400 $INVALID_C1
POST /session/s-1/resume 200 $RESUMED
EOF
	run qwen-restore heartbeat s-1
	[ "$status" -eq 1 ]
	run qwen-restore cancel s-1
	[ "$status" -eq 1 ]
	run qwen-restore close s-1
	[ "$status" -eq 1 ]
	[ "$(count POST /session/s-1/resume)" -eq 0 ]
	[ "$(stored_client s-1)" = c1 ]
}

@test "turn_error ends the prompt with its message" {
	store_client s-1 c1
	fake_start <<'EOF'
GET /session/s-1/events 200 sse hold
> {"id":6,"v":1,"type":"turn_error","promptId":"p-1","data":{"sessionId":"s-1","message":"model failed","code":"model_error","promptId":"p-1"}}
POST /session/s-1/prompt 202 {"promptId":"p-1","lastEventId":5}
EOF
	run qwen-restore prompt s-1 "hi"
	[ "$status" -eq 1 ]
	[[ "$output" == *"turn failed: model failed (model_error)"* ]]
}

@test "a stream that ends before the turn is an error, events of other prompts are ignored" {
	store_client s-1 c1
	{
		echo "GET /session/s-1/events 200 sse"
		echo ">sleep 200"
		sse_frames p-other "not mine"
		echo '> {"id":20,"v":1,"type":"session_update","promptId":"p-1","data":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"partial"}}}}'
		echo 'POST /session/s-1/prompt 202 {"promptId":"p-1","lastEventId":5}'
	} >"$BATS_TEST_TMPDIR/s.in"
	fake_start <"$BATS_TEST_TMPDIR/s.in"
	run qwen-restore prompt s-1 "hi"
	[ "$status" -eq 1 ]
	[[ "$output" == "partial"* ]]
	[[ "$output" != *"not mine"* ]]
	[[ "$output" == *"event stream ended before the turn finished"* ]]
}
