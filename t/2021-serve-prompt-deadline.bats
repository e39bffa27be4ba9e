#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the absolute prompt deadline (--prompt-deadline-ms, body
# deadlineMs): its errors, turn_error prompt_deadline_exceeded to every
# subscriber, the cancel sent to the child, the next queued prompt, and
# the expired prompt's late output dropped.

load serve_helper

teardown() {
	serve_teardown
}

# The envelopes of NAME whose type is T (and promptId P when given).
count_of() {
	sse_events "$1" | jq "[.[] | select(.type == \"$2\" and (\"${3-}\" == \"\" or .promptId == \"${3-}\"))] | length"
}

# prompts_sent N: the child has read N session/prompt requests.
prompts_sent() {
	[ "$(grep -c "session/prompt $SID" "$BATS_TEST_TMPDIR/child.log")" = "$1" ]
}

@test "deadlineMs: 400 invalid_deadline_ms unless a positive integer; feature tag only with the flag" {
	serve_loaded
	for d in 0 -1 '"500"' 1.5 true '{}'; do
		req POST /session/$SID/prompt "{\"prompt\":[{\"type\":\"text\",\"text\":\"x\"}],\"deadlineMs\":$d}"
		expect 400 '.code == "invalid_deadline_ms"'
	done
	req GET /session/$SID/status
	expect 200 '.hasActivePrompt == false'
	req GET /capabilities
	expect 200 '(.features | index("prompt_absolute_deadline")) == null and (.features | index("writer_idle_timeout")) == null'
	serve_stop
	serve_start --prompt-deadline-ms 60000
	req GET /capabilities
	expect 200 '(.features | index("prompt_absolute_deadline")) != null'
}

@test "bad --prompt-deadline-ms and QWEN_SERVE_PROMPT_DEADLINE_MS exit 2 naming the setting" {
	run qwen-serve --prompt-deadline-ms 12x --check-config
	[ "$status" -eq 2 ]
	[[ "$output" == *--prompt-deadline-ms* ]]
	QWEN_SERVE_PROMPT_DEADLINE_MS=-5 run qwen-serve --check-config
	[ "$status" -eq 2 ]
	[[ "$output" == *QWEN_SERVE_PROMPT_DEADLINE_MS* ]]
}

@test "an agent that never answers: turn_error prompt_deadline_exceeded to every subscriber, cancel, then the next prompt" {
	# The child ignores session/cancel too, so the session moves on after
	# the cancel grace; the second prompt hangs the same way.
	FAKE_CHILD="hang=session/prompt,hang=session/cancel,log=$BATS_TEST_TMPDIR/child.log" \
	    serve_loaded --prompt-deadline-ms 300
	sse_open a /session/$SID/events
	sse_open b /session/$SID/events
	local p1 p2
	prompt_post "$SID"
	p1=$PROMPT_ID
	prompt_post "$SID"
	p2=$PROMPT_ID
	for s in a b; do
		sse_wait $s ".type == \"turn_error\" and .promptId == \"$p1\" and .data.code == \"prompt_deadline_exceeded\" and .data.errorKind == \"prompt_deadline_exceeded\" and .data.deadlineMs == 300 and .data.promptId == \"$p1\" and .data.sessionId == \"$SID\"" 10
	done
	wait_for 10 grep -q "session/cancel $SID" "$BATS_TEST_TMPDIR/child.log"
	# The second prompt goes to the child once the grace is over.
	wait_for 20 prompts_sent 2
	for s in a b; do
		sse_wait $s ".type == \"turn_error\" and .promptId == \"$p2\" and .data.code == \"prompt_deadline_exceeded\"" 10
	done
	[ "$(count_of a turn_complete)" = 0 ]
	req GET /session/$SID/status
	expect 200 '.hasActivePrompt == false'
	grep -q 'prompt exceeded its 300 ms deadline' "$BATS_TEST_TMPDIR/err"
}

@test "deadlineMs shortens the flag's deadline; a longer one does not lengthen it" {
	# body deadlineMs:the deadline that applies, under a flag of 400.
	local pair
	for pair in 200:200 600000:400; do
		FAKE_CHILD="hang=session/prompt,hang=session/cancel" serve_loaded --prompt-deadline-ms 400
		sse_open a /session/$SID/events
		prompt_post "$SID" "{\"prompt\":[{\"type\":\"text\",\"text\":\"x\"}],\"deadlineMs\":${pair%:*}}"
		sse_wait a ".type == \"turn_error\" and .data.code == \"prompt_deadline_exceeded\" and .data.deadlineMs == ${pair#*:}" 10
		sse_stop_all
		serve_stop
		[ "$SERVE_STATUS" = 0 ]
	done
}

@test "without the flag, deadlineMs alone sets a deadline; a child that honours the cancel frees the session at once" {
	# Three chunks a second apart: the deadline falls after the first.
	FAKE_CHILD="chunks=3,chunk-delay=1000,log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	sse_open a /session/$SID/events
	local p1 p2
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"x"}],"deadlineMs":300}'
	p1=$PROMPT_ID
	prompt_post "$SID"
	p2=$PROMPT_ID
	sse_wait a ".type == \"turn_complete\" and .promptId == \"$p2\"" 20
	sse_has a ".type == \"turn_error\" and .promptId == \"$p1\" and .data.code == \"prompt_deadline_exceeded\""
	# The child answered the first prompt "cancelled": that answer is not
	# a second terminal event for it.
	[ "$(count_of a turn_complete "$p1")" = 0 ]
	[ "$(count_of a turn_error "$p1")" = 1 ]
	[ "$(count_of a session_update "$p2")" = 3 ]
	# prompt, cancel, prompt: in that order on the child's stdin.
	[ "$(grep -E "session/(prompt|cancel) $SID" "$BATS_TEST_TMPDIR/child.log" | cut -d' ' -f2 | tr '\n' ' ')" = "session/prompt session/cancel session/prompt " ]
}

@test "late output of an expired prompt is dropped, not credited to the next one" {
	# The child ignores the cancel and keeps streaming the first prompt:
	# its chunks after the deadline and its answer must not reach clients.
	FAKE_CHILD="chunks=3,chunk-delay=1000,hang=session/cancel" serve_loaded --prompt-deadline-ms 300
	sse_open a /session/$SID/events
	local p1 p2
	prompt_post "$SID"
	p1=$PROMPT_ID
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"x"}],"deadlineMs":60000}'
	p2=$PROMPT_ID
	sse_wait a ".type == \"turn_error\" and .promptId == \"$p1\"" 10
	# The second prompt has the same 300 ms flag deadline (60000 cannot
	# lengthen it), so it ends the same way, after the first one's answer.
	sse_wait a ".type == \"turn_error\" and .promptId == \"$p2\"" 20
	local before
	before=$(sse_events a | jq "[.[] | select(.type == \"turn_error\" and .promptId == \"$p1\")][0].id as \$t | [.[] | select(.type == \"session_update\" and .id < \$t)] | length")
	[ "$before" -lt 3 ]
	# Nothing of the first prompt after its turn_error; the second one's
	# updates are its own (its first chunk at once, as the first's was).
	sse_events a | jq -e "[.[] | select(.type == \"turn_error\" and .promptId == \"$p1\")][0].id as \$t | all(.[]; .type != \"session_update\" or .id < \$t or .promptId == \"$p2\")" >/dev/null
	[ "$(count_of a turn_complete)" = 0 ]
	[ "$(count_of a session_update "$p1")" = "$before" ]
}
