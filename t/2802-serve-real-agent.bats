#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve with the real qwen-code agent (@qwen-code/qwen-code 0.24.4,
# from npm) as its --child-command, against a fake OpenAI-compatible model
# on loopback.  Skipped when npm cannot reach the registry.

load agent_helper

setup() {
	agent_require
}

teardown() {
	agent_teardown
}

@test "real agent: new, prompt, the model's text streamed as agent_message_chunk, turn_complete" {
	local answer="The fake model answers the first question, in several chunks."
	fake_model_start "$(jq -nc --arg a "$answer" '[{when:"first question",text:$a}]')"
	agent_serve_start
	new_session
	sse_open ev "/session/$SID/events"
	prompt_and_wait ev "A first question about loading"
	[ "$(streamed_text ev)" = "$answer" ]
	# Streamed: the model's chunks arrive as several updates.
	local n
	n=$(sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/ev.sse" |
	    jq -s '[.[] | select(.data.update.sessionUpdate? == "agent_message_chunk" and (.data.update.content.text | length) > 0)] | length')
	[ "$n" -gt 1 ]
	# The prompt reached the model.
	[ -n "$(model_request_with "A first question about loading")" ]
}

@test "real agent: after a restart, load replays the turn and the next prompt's model request carries it" {
	fake_model_start '[{"when":"first question","text":"ANSWER-ONE is the first answer."},
	    {"when":"second question","text":"ANSWER-TWO."}]'
	agent_serve_start
	new_session
	sse_open ev "/session/$SID/events"
	prompt_and_wait ev "A first question about loading"
	sse_stop_all
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	agent_serve_start
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	expect 200
	jq -e '[.compactedReplay[].data.update | select(.sessionUpdate == "user_message_chunk") | .content.text] | any(contains("A first question about loading"))' <<<"$body"
	jq -e '[.compactedReplay[].data.update | select(.sessionUpdate == "agent_message_chunk") | .content.text] | join("") == "ANSWER-ONE is the first answer."' <<<"$body"
	sse_open ev2 "/session/$SID/events"
	prompt_and_wait ev2 "A second question"
	[ "$(streamed_text ev2)" = "ANSWER-TWO." ]
	local f
	f=$(model_request_with "A second question")
	[ -n "$f" ]
	jq -e '.messages | tostring | contains("A first question about loading")' "$f"
	jq -e '.messages | tostring | contains("ANSWER-ONE is the first answer.")' "$f"
}
