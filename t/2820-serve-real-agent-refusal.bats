#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The real agent's own words when it fails a prompt: a transcript with one
# compression early and a long history after it makes the agent refuse
# the next prompt ("Context is too large to send safely after automatic
# compression", its JSON-RPC error -32603 with the words in
# data.details).  turn_error carries those words and that code, with our
# classification alongside, and so does an ACP client's session/prompt
# error, with the agent as the child (--child-command) and behind our
# delegating child (--agent-acp).

load agent_helper
load serve_acp_helper

REFUSAL="Context is too large to send safely after automatic compression"

setup() {
	agent_require
	[ -x "$QWEN_TOP_BUILDDIR/bin/qwen-acp-child" ] || skip "qwen-acp-child not built"
}

teardown() {
	agent_teardown
}

# big_history: SID, a transcript whose only compression is at its middle:
# the last turn's prompt counts some 250000 tokens, over the agent's hard
# limit, and the summary the fake model gives does not bring it under.
big_history() {
	SID=55555555-5555-4555-8555-555555555555
	qwen-gen-transcript --mib 2 --seed 25 --compressions 1 --session-id "$SID" \
	    --data-dir "$DATA" --workspace "$WS" >/dev/null
}

# refused_by_rest ACTION: restore SID with ACTION, prompt it; the turn
# fails with the agent's words and code.
refused_by_rest() {
	req POST "/session/$SID/$1" "{\"cwd\":\"$WS\"}"
	expect 200
	sse_open ev "/session/$SID/events"
	req POST "/session/$SID/prompt" '{"prompt":[{"type":"text","text":"a question it refuses"}]}'
	expect 202
	local pid
	pid=$(jq -r .promptId <<<"$body")
	sse_wait ev "(.type == \"turn_complete\" or .type == \"turn_error\") and .promptId == \"$pid\"" 180
	sse_has ev ".type == \"turn_error\" and .promptId == \"$pid\" and
	    (.data.message | startswith(\"$REFUSAL\")) and .data.code == \"-32603\" and
	    .data.errorKind == \"acp_error\""
	! sse_has ev '.type == "turn_error" and .data.message == "Internal error"' || false
}

# refused_by_acp: an ACP client's prompt of SID (held by its own load)
# answers the agent's words, its code in data.turnErrorCode.
refused_by_acp() {
	acp_init
	acp_call 1 session/load "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"mcpServers\":[]}"
	acp_open s "$SID"
	acp_wait_answer s 1 120
	jq -e 'has("result")' <<<"$answer"
	acp_call 2 session/prompt "{\"sessionId\":\"$SID\",\"prompt\":[{\"type\":\"text\",\"text\":\"again\"}]}"
	acp_wait_answer s 2 180
	jq -e --arg r "$REFUSAL" '.error.code == -32603 and (.error.message | startswith($r)) and
	    .error.data.turnErrorCode == "-32603" and .error.data.turnErrorKind == "acp_error"' <<<"$answer"
}

@test "--agent-acp: the agent's refusal reaches turn_error and the ACP client in its own words and code" {
	fake_model_start '[]'
	agent_delegate_start
	big_history
	refused_by_rest load
	refused_by_acp
}

@test "--child-command: the agent's refusal reaches turn_error and the ACP client in its own words and code" {
	fake_model_start '[]'
	agent_serve_start
	big_history
	refused_by_rest resume
	refused_by_acp
}
