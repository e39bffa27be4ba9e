#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Every session/update kind the agent sends reaches clients unchanged: a
# fake child sends plan, usage_update, current_mode_update,
# config_option_update, available_commands_update, agent_thought_chunk and
# tool_call_update on a prompt; an SSE subscriber and an ACP client each
# get every one exactly as it was sent, in order.

load serve_acp_helper

setup() {
	UPD=$BATS_TEST_TMPDIR/updates.jsonl
	cat >"$UPD" <<'EOF'
{"sessionUpdate":"plan","entries":[{"content":"step one","priority":"high","status":"pending"},{"content":"step two","priority":"low","status":"completed"}],"_meta":{"x":1}}
{"sessionUpdate":"usage_update","used":1234,"size":200000,"cost":{"amount":0.5,"currency":"USD"}}
{"sessionUpdate":"current_mode_update","currentModeId":"plan"}
{"sessionUpdate":"config_option_update","configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"fake","options":[{"value":"fake","name":"Fake"}]}]}
{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"compress","description":"Compress the history","input":null}]}
{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"thinking \u00e9 \"quoted\""}}
{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ok"}}],"rawOutput":{"a":[1,2.5,null,true]},"_meta":{"toolName":"run_shell_command","provenance":"builtin"}}
EOF
	jq -S -c . "$UPD" >"$BATS_TEST_TMPDIR/want"
}

teardown() {
	rteardown
}

# got FILE: the updates other than the fake's text chunks, sorted keys.
got() {
	jq -S -c 'select(.sessionUpdate != "agent_message_chunk")' >"$BATS_TEST_TMPDIR/$1"
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/$1"
}

@test "SSE: every update kind the child sends arrives unchanged" {
	FAKE_CHILD="updates=$UPD" serve_start
	req POST /session "{\"cwd\":\"$WS\",\"sessionScope\":\"thread\"}"
	expect 200
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	sse_open ev "/session/$sid/events"
	req POST "/session/$sid/prompt" '{"prompt":[{"type":"text","text":"go"}]}'
	expect 202
	sse_wait ev '.type == "turn_complete"'
	sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/ev.sse" |
	    jq -c 'select(.type == "session_update") | .data.update' | got sse
}

@test "ACP: every update kind the child sends arrives unchanged" {
	FAKE_CHILD="updates=$UPD" serve_start
	acp_init
	acp_open conn
	acp_call 1 session/new "{\"cwd\":\"$WS\",\"mcpServers\":[]}"
	acp_wait_answer conn 1
	local sid
	sid=$(jq -r .result.sessionId <<<"$answer")
	acp_open s1 "$sid"
	acp_call 2 session/prompt "{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}"
	acp_wait_answer s1 2
	acp_msgs s1 | jq -c '.[] | select(.method == "session/update") | .params.update' | got acp
}
