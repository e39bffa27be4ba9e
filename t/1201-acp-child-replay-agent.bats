#!/usr/bin/env bats
# Replay equal to the real agent's: the real qwen-code agent (0.24.4)
# writes a transcript, driven by the fake model through text, thoughts,
# read-only tools, tool calls allowed, denied and failing (an edit of a file
# not read first, a missing file, a relative path), and a
# compression; then the agent's own bulk session/load replay of that file
# and qwen-acp-child's are compared update by update.

load agent_helper

setup() {
	agent_require
	command -v jq >/dev/null || skip "jq not installed"
	mkdir -p "$BATS_TEST_TMPDIR/ws"
	WS=$(cd "$BATS_TEST_TMPDIR/ws" && pwd -P)
	printf 'first line\nsecond line\n' >"$WS/notes.txt"
	printf 'old text\n' >"$WS/edit-me.txt"
	fake_model_start "$(jq -nc --arg ws "$WS" '[
	  {when: "say hello", reasoning: "The user greets me.", text: "Hello there.\nHow can I help?"},
	  {when: "look around", text: "Looking.", tool_calls: [
	    {name: "read_file", arguments: {file_path: ($ws + "/notes.txt"), offset: 0, limit: 1}},
	    {name: "list_directory", arguments: {path: $ws}},
	    {name: "glob", arguments: {pattern: "*.txt"}},
	    {name: "grep_search", arguments: {pattern: "line", glob: "*.txt"}}]},
	  {when: "write a file", tool_calls: [
	    {name: "write_file", arguments: {file_path: ($ws + "/out.txt"), content: "written\n"}}]},
	  {when: "edit the file", tool_calls: [
	    {name: "edit", arguments: {file_path: ($ws + "/edit-me.txt"), old_string: "old", new_string: "new"}}]},
	  {when: "delete the notes", tool_calls: [
	    {name: "run_shell_command", arguments: {command: "rm notes.txt", description: "delete the notes", timeout: 5000}}]},
	  {when: "run a command", tool_calls: [
	    {name: "run_shell_command", arguments: {command: "echo ran > marker.txt", description: "write the marker"}}]},
	  {when: "read a missing file", tool_calls: [
	    {name: "read_file", arguments: {file_path: ($ws + "/missing.txt")}}]},
	  {when: "read a relative path", tool_calls: [
	    {name: "read_file", arguments: {file_path: "notes.txt"}}]},
	  {when: "\"role\":\"tool\"", text: "Done with the tools."},
	  {when: "\"role\":\"tool\"", text: "Done with the tools."},
	  {when: "\"role\":\"tool\"", text: "Done with the tools."},
	  {when: "\"role\":\"tool\"", text: "Done with the tools."},
	  {when: "\"role\":\"tool\"", text: "Done with the tools."},
	  {when: "\"role\":\"tool\"", text: "Done with the tools."},
	  {when: "\"role\":\"tool\"", text: "Done with the tools."},
	  {text: "<state_snapshot>the summary</state_snapshot>", once: false}
	] | map(. + {usage: {prompt_tokens: 50000, completion_tokens: 5}})')"
	# (Every answer reports a large prompt, so that /compress finds a
	# history worth compressing; the last answer is the summary.)
}

teardown() {
	agent_teardown
}

# permission KIND: answer the next unanswered permission_request with the
# first option of KIND (allow_once, reject_once).
permission() {
	local ev rid opt
	sse_wait ev ".type == \"permission_request\" and ([.data.requestId] | inside([$ANSWERED]) | not)" 180
	ev=$(sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/ev.sse" | jq -c "select(.type == \"permission_request\" and ([.data.requestId] | inside([$ANSWERED]) | not))" | head -1)
	rid=$(jq -r .data.requestId <<<"$ev")
	opt=$(jq -r --arg k "$1" '.data.options | map(select(.kind == $k)) | .[0].optionId' <<<"$ev")
	ANSWERED="$ANSWERED${ANSWERED:+,}\"$rid\""
	req POST "/session/$SID/permission/$rid" "{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"$opt\"}}"
	expect 200
}

# turn TEXT [PERMISSION-KIND...]: prompt, answer its permission requests,
# wait for the end of the turn.
turn() {
	local text=$1 k
	shift
	req POST "/session/$SID/prompt" "$(jq -nc --arg t "$text" '{prompt:[{type:"text",text:$t}]}')"
	expect 202
	PROMPT_ID=$(jq -r .promptId <<<"$body")
	for k in "$@"; do
		permission "$k"
	done
	sse_wait ev "(.type == \"turn_complete\" or .type == \"turn_error\") and .promptId == \"$PROMPT_ID\"" 180
}

# load_bulk CMD...: initialize CMD over ACP and session/load SID in bulk
# mode; print the replay's updates, one per line.
load_bulk() {
	local out=$BATS_TEST_TMPDIR/load.$$
	HOME=$BATS_TEST_TMPDIR/home QWEN_HOME=$DATA OPENAI_MODEL=fake \
	    OPENAI_BASE_URL=http://127.0.0.1:$MODEL_PORT/v1 OPENAI_API_KEY=sk-fake-test \
	    acp-drive -q -t 180 -e "$BATS_TEST_TMPDIR/load.err" -- "$@" >"$out" <<EOF
send {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}
wait 1
send {"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"$SID","cwd":"$WS","mcpServers":[],"_meta":{"qwen.session.loadReplayMode":"bulk"}}}
wait 2
EOF
	grep -v '^#' "$out" | jq -c 'select(.id == 2) | .result._meta["qwen.session.loadReplay"].updates[]'
}

# Fields that depend on the agent's live configuration, not on the file:
# plan's _meta.stats is the session's running token count.
normalize() {
	jq -S -c 'del(._meta.stats)'
}

@test "replay of a transcript the real agent wrote equals the agent's own, update by update" {
	APPROVAL_MODE=default agent_serve_start --permission-response-timeout-ms 120000
	new_session thread
	sse_open ev "/session/$SID/events"
	ANSWERED=
	turn "say hello"
	turn "look around"
	turn "write a file" allow_once
	turn "edit the file"
	turn "delete the notes" reject_once
	turn "run a command" allow_once
	turn "read a missing file"
	turn "read a relative path"
	turn "/compress"
	[ "$(cat "$WS/marker.txt")" = ran ]
	[ "$(cat "$WS/out.txt")" = written ]
	grep -q old "$WS/edit-me.txt"
	[ -f "$WS/notes.txt" ]
	serve_stop
	load_bulk "$AGENT_NODE" "$AGENT_CLI" --acp | normalize >"$BATS_TEST_TMPDIR/agent.jsonl"
	load_bulk qwen-acp-child --data-dir "$DATA" --workspace "$WS" | normalize >"$BATS_TEST_TMPDIR/ours.jsonl"
	if [ -n "${QWEN_REPLAY_KEEP:-}" ]; then	# a directory for both replays
		cp "$BATS_TEST_TMPDIR/agent.jsonl" "$BATS_TEST_TMPDIR/ours.jsonl" \
		    "$DATA"/projects/*/chats/"$SID".jsonl "$QWEN_REPLAY_KEEP"
		cp -r "$MODEL_LOG" "$QWEN_REPLAY_KEEP"
	fi
	# The transcript has what the scenario needs.
	has() { jq -e -s "$1" "$BATS_TEST_TMPDIR/agent.jsonl" >/dev/null; }
	has 'any(.sessionUpdate == "agent_thought_chunk")'
	has 'any(._meta.usage.inputTokens > 0)'
	has 'any(.sessionUpdate == "tool_call" and (.title | startswith("Shell: echo ran")))'
	has 'any(.sessionUpdate == "tool_call" and (.title | startswith("ReadFile: notes.txt")))'
	has '[.[] | select(.sessionUpdate == "tool_call_update" and .status == "failed")] | length >= 3'
	has 'any(.sessionUpdate == "user_message_chunk" and .content.text == "/compress")'
	has 'any(._meta.source == "slash_command" and ._meta.contextCompression.phase == "done")'
	grep -q '"chat_compression"' "$DATA"/projects/*/chats/"$SID".jsonl
	has 'all(._meta["qwen.session.recordId"] | length == 36)'
	diff "$BATS_TEST_TMPDIR/agent.jsonl" "$BATS_TEST_TMPDIR/ours.jsonl"
}
