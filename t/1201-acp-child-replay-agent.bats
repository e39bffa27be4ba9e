#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Replay equal to the real agent's: the real qwen-code agent (0.24.4)
# writes a transcript, driven by the fake model through text, thoughts,
# read-only tools, tool calls allowed, denied and failing (an edit of a file
# not read first, a missing file, a relative path), and a
# compression; and through a plan (todo_write), web_fetch of a loopback
# page, a background agent and its notices, a skill and a cancelled prompt;
# through a prompt with an @file reference and one with a resource link,
# and a model that repeats its tool call ids;
# then the agent's own bulk session/load replay of that file and
# qwen-acp-child's are compared update by update, nothing removed.  The
# last test makes or checks t/1009's golden (the kinds the agent cannot be
# driven to write here).

load agent_helper

setup() {
	agent_require
	command -v jq >/dev/null || skip "jq not installed"
	mkdir -p "$BATS_TEST_TMPDIR/ws"
	WS=$(cd "$BATS_TEST_TMPDIR/ws" && pwd -P)
	printf 'first line\nsecond line\n' >"$WS/notes.txt"
	printf 'old text\n' >"$WS/edit-me.txt"
}

teardown() {
	[ -z "${PAGE_PID:-}" ] || kill "$PAGE_PID" 2>/dev/null || true
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
	local text=$1
	shift
	turn_blocks "$(jq -nc --arg t "$text" '[{type:"text",text:$t}]')" "$@"
}

# turn_blocks JSON [PERMISSION-KIND...]: turn, with the prompt's content
# blocks as they are.
turn_blocks() {
	local blocks=$1 k
	shift
	req POST "/session/$SID/prompt" "{\"prompt\":$blocks}"
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

# Nothing depends on the agent's live configuration in these scenarios
# (qwen-acp-child(8) lists what can): the updates compare as they are.
normalize() {
	jq -S -c .
}

# compare_replays: both bulk loads of SID, kept in QWEN_REPLAY_KEEP (a
# directory) when set; agent.jsonl and ours.jsonl in BATS_TEST_TMPDIR.
compare_replays() {
	load_bulk "$AGENT_NODE" "$AGENT_CLI" --acp | normalize >"$BATS_TEST_TMPDIR/agent.jsonl"
	load_bulk qwen-acp-child --data-dir "$DATA" --workspace "$WS" | normalize >"$BATS_TEST_TMPDIR/ours.jsonl"
	if [ -n "${QWEN_REPLAY_KEEP:-}" ]; then
		cp "$BATS_TEST_TMPDIR/agent.jsonl" "$BATS_TEST_TMPDIR/ours.jsonl" \
		    "$DATA"/projects/*/chats/"$SID".jsonl "$QWEN_REPLAY_KEEP"
		cp -r "$MODEL_LOG" "$QWEN_REPLAY_KEEP"
	fi
}

# has JQ: some condition on the agent's replay (a jq program over all of it).
has() {
	jq -e -s "$1" "$BATS_TEST_TMPDIR/agent.jsonl" >/dev/null
}

@test "replay of a transcript the real agent wrote equals the agent's own, update by update" {
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
	compare_replays
	# The transcript has what the scenario needs.
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

@test "plans, a cancelled prompt, web_fetch, the agent and skill tools: our replay equals the agent's" {
	# The page web_fetch reads: a second fake server's model list.
	mkdir -p "$BATS_TEST_TMPDIR/page"
	echo '[]' >"$BATS_TEST_TMPDIR/page/script.json"
	"$AGENT_NODE" "$QWEN_TOP_SRCDIR/t/helper/fake-openai.mjs" "$BATS_TEST_TMPDIR/page/script.json" \
	    "$BATS_TEST_TMPDIR/page" >"$BATS_TEST_TMPDIR/page/out" 2>&1 3>&- &
	PAGE_PID=$!
	wait_for 20 test -s "$BATS_TEST_TMPDIR/page/port"
	url=http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/page/port")/v1/models
	# A project skill, so that the agent runs it and presents it on load.
	mkdir -p "$WS/.qwen/skills/greet"
	printf -- '---\nname: greet\ndescription: Greets the user.\n---\nSay hello.\n' \
	    >"$WS/.qwen/skills/greet/SKILL.md"
	fake_model_start "$(jq -nc --arg url "$url" --arg hold "$BATS_TEST_TMPDIR/release" \
	    --arg subagent "$BATS_TEST_TMPDIR/release-subagent" '[
	  {when: "make a plan", tool_calls: [{name: "todo_write", arguments: {todos: [
	    {id: "t1", content: "read the notes", status: "in_progress"},
	    {id: "t2", content: "write the summary", status: "pending", blockedBy: ["t1"]}]}}]},
	  {when: "fetch the page", tool_calls: [{name: "web_fetch",
	    arguments: {url: $url, prompt: "Which models are listed?"}}]},
	  {when: "delegate it", tool_calls: [{name: "agent", arguments: {description: "count the notes",
	    prompt: "Count the lines of notes.txt", subagent_type: "general-purpose"}}]},
	  {when: "Count the lines of notes.txt", hold: $subagent, text: "Two lines."},
	  {when: "use the skill", tool_calls: [{name: "skill", arguments: {skill: "greet"}}]},
	  {when: "a held question", hold: $hold, text: "never shown"},
	  {when: "\"role\":\"tool\"", text: "Done.", once: false},
	  {text: "Noted.", once: false}
	] | map(. + {usage: {prompt_tokens: 120, completion_tokens: 7}})')"
	APPROVAL_MODE=yolo AGENT_TODO_WRITE=1 agent_serve_start
	new_session thread
	sse_open ev "/session/$SID/events"
	turn "make a plan"
	turn "fetch the page"
	turn "delegate it"
	# The subagent runs in the background, its answer held until the turn
	# that started it has ended: a subagent done sooner has its notice
	# taken into that turn (seen on a loaded machine), and one done later
	# gets the notification turn this scenario replays.  A next prompt
	# sent before that turn takes the notice into its own, so wait for it.
	touch "$BATS_TEST_TMPDIR/release-subagent"
	wait_for 180 cond "grep '\"subtype\":\"notification\"' \"\$DATA\"/projects/*/chats/\"\$SID\".jsonl | grep -q '\"backgroundTurn\"'" || {
		# What the agent wrote and asked instead, for the next reader.
		jq -c '[.type, .subtype // "", (.message.role // "")]' \
		    "$DATA"/projects/*/chats/"$SID".jsonl | tail -20 >&2
		ls "$MODEL_LOG" >&2
		tail -20 "$BATS_TEST_TMPDIR/err" >&2
		false
	}
	# The agent asked the daemon to start that turn (_qwencode/start_turn)
	# and said when it ended: the stream shows it as upstream's does.
	sse_wait ev '.type == "background_notification_turn_complete"' 180
	sse_has ev '.data.update._meta.source == "background_notification_turn_started" and .data.update._meta.backgroundTurn.kind == "agent"'
	sse_has ev '.type == "turn_complete" and .data.backgroundTurn.kind == "agent" and .promptId == .data.backgroundTurn.turnId'
	turn "use the skill"
	req POST "/session/$SID/prompt" '{"prompt":[{"type":"text","text":"a held question"}]}'
	expect 202
	PROMPT_ID=$(jq -r .promptId <<<"$body")
	wait_for 180 model_has_request "a held question"
	req POST "/session/$SID/cancel" '{}'
	sse_wait ev "(.type == \"turn_complete\" or .type == \"turn_error\" or .type == \"prompt_cancelled\") and .promptId == \"$PROMPT_ID\"" 180
	touch "$BATS_TEST_TMPDIR/release"
	turn "after the cancel"
	serve_stop
	compare_replays
	has 'any(.sessionUpdate == "plan" and (.entries | length) == 2)'
	has 'any(._meta.qwenTranscript.planToolCallId)'
	has 'any(.sessionUpdate == "tool_call" and ._meta.toolName == "web_fetch")'
	has 'any(.sessionUpdate == "tool_call" and ._meta.toolName == "agent")'
	has 'any(.sessionUpdate == "tool_call" and ._meta.toolName == "skill")'
	has 'any(._meta.source == "background_task_completed" and ._meta.backgroundTask.kind == "agent")'
	has 'any(._meta.source == "background_notification" and ._meta.backgroundTurn.kind == "agent")'
	# The agent records a turn's outcome (turn_result, replayed as
	# promptCancelled) only for prompts its upstream daemon hands it with an
	# invocation context: the cancelled prompt left no record here, and
	# t/1009 covers the kind with t/data/replay/kinds.golden.
	has '[.[] | select(.content.text? == "a held question")] | length == 1'
	diff "$BATS_TEST_TMPDIR/agent.jsonl" "$BATS_TEST_TMPDIR/ours.jsonl"
}

# yolo_thread SCRIPT: the fake model answers SCRIPT (each answer with a
# usage), the daemon serves the agent in yolo mode, SID is a new session
# whose events go to ev.
yolo_thread() {
	fake_model_start "$(jq -c 'map(. + {usage: {prompt_tokens: 90, completion_tokens: 3}})' <<<"$1")"
	APPROVAL_MODE=yolo agent_serve_start
	new_session thread
	sse_open ev "/session/$SID/events"
}

@test "prompts with an @file reference and a resource link: our replay equals the agent's" {
	yolo_thread "$(jq -nc '[
	  {when: "what the notes say", text: "Two lines."},
	  {when: "summarize the linked file", text: "Summarized."},
	  {text: "Noted.", once: false}
	]')"
	turn "@notes.txt what the notes say"
	turn_blocks "$(jq -nc --arg uri "file://$WS/notes.txt" '[
	  {type: "text", text: "summarize the linked file"},
	  {type: "resource_link", uri: $uri, name: "notes.txt", mimeType: "text/plain"}]')"
	serve_stop
	compare_replays
	# The agent kept the link in the user record and replays it.
	grep -q '"resourceLinks"' "$DATA"/projects/*/chats/"$SID".jsonl
	has 'any(.sessionUpdate == "user_message_chunk" and .content.type == "resource_link" and .content.name == "notes.txt")'
	has 'any(.sessionUpdate == "user_message_chunk" and .content.text? == "@notes.txt what the notes say")'
	diff "$BATS_TEST_TMPDIR/agent.jsonl" "$BATS_TEST_TMPDIR/ours.jsonl"
}

@test "a transcript that repeats its tool call ids: our replay renames the repeats as the agent does" {
	# A provider that numbers calls per response (call_0 every time): the
	# agent writes the repeats as call_0__qwen_dup_N, and transcripts
	# written otherwise (older agents, other writers) hold call_0 again
	# and again; the agent's replay gives such repeats ":2", ":3", ...
	# suffixes, results included.
	yolo_thread "$(jq -nc --arg ws "$WS" '[
	  {when: "read it once", tool_calls: [
	    {id: "call_0", name: "read_file", arguments: {file_path: ($ws + "/notes.txt")}}]},
	  {when: "read it again", tool_calls: [
	    {id: "call_0", name: "read_file", arguments: {file_path: ($ws + "/notes.txt")}}]},
	  {when: "list the folder", tool_calls: [
	    {id: "call_0", name: "list_directory", arguments: {path: $ws}}]},
	  {when: "\"role\":\"tool\"", text: "Read.", once: false},
	  {text: "Noted.", once: false}
	]')"
	turn "read it once"
	turn "read it again"
	turn "list the folder"
	serve_stop
	compare_replays
	has 'any(.sessionUpdate == "tool_call" and .toolCallId == "call_0__qwen_dup_3")'
	diff "$BATS_TEST_TMPDIR/agent.jsonl" "$BATS_TEST_TMPDIR/ours.jsonl"
	# The same transcript with the ids repeated as written.
	sed -i 's/call_0__qwen_dup_[0-9]*/call_0/g' "$DATA"/projects/*/chats/"$SID".jsonl
	[ "$(grep -c '"functionCall":{"id":"call_0"' "$DATA"/projects/*/chats/"$SID".jsonl)" -eq 3 ]
	compare_replays
	has 'any(.sessionUpdate == "tool_call" and .toolCallId == "call_0:2")'
	diff "$BATS_TEST_TMPDIR/agent.jsonl" "$BATS_TEST_TMPDIR/ours.jsonl"
}

# The golden of t/1009: the agent's own bulk replay of the hand-made
# records in t/data/replay/kinds.jsonl.in (the kinds the fake model cannot
# make the agent write: cancelled turns, cron and mid-turn messages, goal
# and voice input, subagent readiness and usage, plans held as JSON text,
# results no call claims, the daemon's attachment references, hooked
# prompts with images, tool call ids repeated).  QWEN_UPDATE_GOLDENS=1 rewrites it.
@test "the agent's replay of the hand-made kinds is t/1009's golden" {
	local golden=$TESTDATA/replay/kinds.golden chats
	SID=00000000-0000-4000-8000-00000000c0de
	DATA=$BATS_TEST_TMPDIR/data
	MODEL_PORT=9
	chats=$DATA/projects/$(printf '%s' "$WS" | tr -c 'A-Za-z0-9' '-')/chats
	mkdir -p "$chats" "$BATS_TEST_TMPDIR/home" "$WS/.qwen/skills/pdf"
	printf -- '---\nname: pdf\ndescription: Reads PDF files.\n---\nRead it.\n' \
	    >"$WS/.qwen/skills/pdf/SKILL.md"
	sed "s|@WS@|$WS|g" "$TESTDATA/replay/kinds.jsonl.in" >"$chats/$SID.jsonl"
	load_bulk "$AGENT_NODE" "$AGENT_CLI" --acp | normalize >"$BATS_TEST_TMPDIR/agent.jsonl"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/agent.jsonl")" -gt 30 ]
	if [ -n "${QWEN_UPDATE_GOLDENS:-}" ]; then
		cp "$BATS_TEST_TMPDIR/agent.jsonl" "$golden"
	fi
	diff "$golden" "$BATS_TEST_TMPDIR/agent.jsonl"
}
