#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The delegating child: qwen-acp-child --agent-acp (through qwen-serve
# --agent-acp) loads with its own loader and hands prompts to the real
# qwen-code agent, which resumes the session and writes its transcript.

load agent_helper

setup() {
	agent_require
	[ -x "$QWEN_TOP_BUILDDIR/bin/qwen-acp-child" ] || skip "qwen-acp-child not built"
}

teardown() {
	agent_teardown
}

@test "delegate: a transcript the agent wrote loads fast, its next prompt goes to the agent, the next load shows it" {
	fake_model_start '[{"when":"first question","text":"ANSWER-ONE."},
	    {"when":"second question","text":"ANSWER-TWO."},
	    {"when":"please write the marker","tool_calls":[{"name":"run_shell_command",
	    "arguments":{"command":"echo ran > marker.txt","description":"write the marker file"}}]},
	    {"when":"\"role\":\"tool\"","text":"The command has run."}]'
	# The agent writes a transcript (the agent alone, as its own child).
	agent_serve_start
	new_session
	sse_open ev "/session/$SID/events"
	prompt_and_wait ev "A first question"
	sse_stop_all
	serve_stop
	# Our child loads it; the prompt goes to the agent.
	agent_delegate_start
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	expect 200
	jq -e '[.compactedReplay[].data.update | select(.sessionUpdate == "agent_message_chunk") | .content.text] | join("") == "ANSWER-ONE."' <<<"$body"
	sse_open ev2 "/session/$SID/events"
	prompt_and_wait ev2 "A second question"
	[ "$(streamed_text ev2)" = "ANSWER-TWO." ]
	sse_has ev2 '.data.update.sessionUpdate == "session_info_update" and .data.update._meta["qwen.delegate"].state == "starting"'
	# The agent's model request carried the whole conversation.
	local f
	f=$(model_request_with "A second question")
	jq -e '.messages | tostring | contains("ANSWER-ONE.")' "$f"
	# Permissions pass through our child both ways.
	req POST "/session/$SID/prompt" '{"prompt":[{"type":"text","text":"please write the marker"}]}'
	expect 202
	local pid=$(jq -r .promptId <<<"$body") rid
	sse_wait ev2 '.type == "permission_request"' 180
	rid=$(sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/ev2.sse" | jq -r 'select(.type == "permission_request") | .data.requestId' | head -1)
	req POST "/session/$SID/permission/$rid" '{"outcome":{"outcome":"selected","optionId":"proceed_once"}}'
	expect 200
	sse_wait ev2 ".type == \"turn_complete\" and .promptId == \"$pid\"" 180
	[ "$(cat "$WS/marker.txt")" = ran ]
	# A fresh daemon's load shows what the agent appended.
	sse_stop_all
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	agent_delegate_start
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	expect 200
	jq -e '[.compactedReplay[].data.update | select(.sessionUpdate == "user_message_chunk") | .content.text] | any(contains("A second question"))' <<<"$body"
	jq -e '[.compactedReplay[].data.update | select(.sessionUpdate == "agent_message_chunk") | .content.text] | any(. == "ANSWER-TWO.")' <<<"$body"
}

# now_ms: wall clock in ms.
now_ms() {
	date +%s%3N
}

@test "delegate: an 80 MiB transcript loads in our loader's time, the agent answers its first prompt, the next load shows it" {
	fake_model_start '[{"when":"question after the big history","text":"BIG-ANSWER."}]'
	agent_delegate_start
	SID=33333333-3333-4333-8333-333333333333
	# Compressions all along (as a long-lived session has them): the
	# model context the agent rebuilds from the last one stays in bounds.
	qwen-gen-transcript --mib 80 --seed 5 --compressions 1000 --session-id "$SID" --data-dir "$DATA" \
	    --workspace "$WS" >/dev/null
	local t0 t1 t2 size
	size=$(stat -c %s "$DATA/projects/$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')/chats/$SID.jsonl")
	t0=$(now_ms)
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	t1=$(now_ms)
	expect 200
	echo "# figure: load of a $((size / 1048576)) MiB transcript by our loader: $((t1 - t0)) ms" >&3
	sse_open ev "/session/$SID/events"
	t1=$(now_ms)
	prompt_and_wait ev "A question after the big history"
	t2=$(now_ms)
	echo "# figure: its first prompt, answered by the real agent (start, resume, turn): $((t2 - t1)) ms" >&3
	[ "$(streamed_text ev)" = "BIG-ANSWER." ]
	sse_has ev '.data.update._meta["qwen.delegate"].state == "ready"'
	sse_stop_all
	serve_stop
	agent_delegate_start
	t0=$(now_ms)
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	t1=$(now_ms)
	expect 200
	echo "# figure: the next load (with the agent's records): $((t1 - t0)) ms" >&3
	jq -e '[.compactedReplay[].data.update | select(.sessionUpdate == "agent_message_chunk") | .content.text] | any(. == "BIG-ANSWER.")' <<<"$body"
}

@test "delegate: an agent that dies mid-turn fails the turn (agent_failed); the next prompt starts another" {
	fake_model_start "[{\"when\":\"a held question\",\"hold\":\"$BATS_TEST_TMPDIR/never\",\"text\":\"never sent\"},
	    {\"when\":\"a later question\",\"text\":\"LATER-ANSWER.\"}]"
	agent_delegate_start
	new_session
	sse_open ev "/session/$SID/events"
	req POST "/session/$SID/prompt" '{"prompt":[{"type":"text","text":"a held question"}]}'
	expect 202
	local pid=$(jq -r .promptId <<<"$body") agent
	# The model has the request: the agent is mid-turn.
	wait_for 180 model_has_request "a held question"
	agent=$(sed -n 's/.*agent \([0-9]*\) started.*/\1/p' "$BATS_TEST_TMPDIR/err" | tail -1)
	[ -n "$agent" ]
	kill -KILL "$agent"
	sse_wait ev ".type == \"turn_error\" and .promptId == \"$pid\"" 60
	sse_has ev ".type == \"turn_error\" and .data.errorKind == \"agent_failed\""
	# The child lives on, and the next prompt gets a new agent.
	prompt_and_wait ev "a later question"
	[ "$(sed -n 's/.*agent \([0-9]*\) started.*/\1/p' "$BATS_TEST_TMPDIR/err" | wc -l)" -eq 2 ]
	[ "$(streamed_text ev)" = "LATER-ANSWER." ]
}
