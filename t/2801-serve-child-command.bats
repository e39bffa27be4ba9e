#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve --child-command: any ACP agent as the workspace child, split
# without a shell, given upstream's child environment (§4.1).

load serve_helper

teardown() {
	serve_teardown
}

# A child command that records its argv and environment, then execs the
# real qwen-acp-child (which must accept the secret under upstream's name).
recording_child() {
	local rec=$BATS_TEST_TMPDIR/rec
	mkdir -p "$rec"
	cat >"$rec/agent" <<EOF
#!/bin/sh
env >"$rec/env"
printf '%s\n' "\$@" >"$rec/argv"
exec qwen-acp-child --workspace "\$PWD" --data-dir "$BATS_TEST_TMPDIR/data"
EOF
	chmod +x "$rec/agent"
	SERVE_CHILD_COMMAND="$rec/agent --acp 'two words' \"it's\" a\\ b"
}

@test "child-command: upstream's child environment, argv split without a shell, secret accepted" {
	recording_child
	export QWEN_SERVER_TOKEN=daemon-secret-token NODE_OPTIONS=--require=/nonexistent.js
	export LD_PRELOAD= LD_AUDIT= MY_AGENT_SETTING=passed-through
	export QWEN_ACP_PARENT_CAPABILITY=stale-from-outside
	serve_start
	local auth=(-H 'Authorization: Bearer daemon-secret-token')
	req POST /session "{\"cwd\":\"$WS\"}" "${auth[@]}"
	expect 200 '.sessionId | length > 0'
	local rec=$BATS_TEST_TMPDIR/rec sid
	sid=$(jq -r .sessionId <<<"$body")
	[ "$(cat "$rec/argv")" = "$(printf '%s\n' --acp 'two words' "it's" 'a b')" ]
	grep -qx 'QWEN_CODE_NO_RELAUNCH=true' "$rec/env"
	grep -qx 'QWEN_CODE_SERVE=1' "$rec/env"
	grep -qx 'MY_AGENT_SETTING=passed-through' "$rec/env"
	grep -qx "PWD=$WS" "$rec/env"
	local secret
	secret=$(sed -n 's/^QWEN_CODE_PRIVATE_ACP_CAPABILITY=//p' "$rec/env")
	[[ "$secret" =~ ^[A-Za-z0-9_-]{43}$ ]]
	run grep -E '^(QWEN_SERVER_TOKEN|NODE_OPTIONS|LD_PRELOAD|LD_AUDIT|QWEN_ACP_PARENT_CAPABILITY)=' "$rec/env"
	[ "$status" -eq 1 ]
	# The secret is in the environment only: not on a command line, not logged.
	run grep -rF -- "$secret" "$rec/argv" "$BATS_TEST_TMPDIR/err"
	[ "$status" -eq 1 ]
	# The session works end to end through the recorded child.
	sse_open ev "/session/$sid/events" "${auth[@]}"
	req POST "/session/$sid/prompt" '{"prompt":[{"type":"text","text":"hi"}]}' "${auth[@]}"
	expect 202
	sse_wait ev '.type == "turn_complete"' 20
}

@test "child-command: a child given the wrong secret under upstream's name is refused" {
	local w=$BATS_TEST_TMPDIR/wrong
	cat >"$w" <<EOF
#!/bin/sh
QWEN_CODE_PRIVATE_ACP_CAPABILITY=not-the-secret exec qwen-acp-child --workspace "\$PWD" --data-dir "$BATS_TEST_TMPDIR/data"
EOF
	chmod +x "$w"
	SERVE_CHILD_COMMAND=$w serve_start --initialize-timeout-ms 5000
	req POST /session "{\"cwd\":\"$WS\"}"
	[ "$code" -ge 500 ]
	wait_for 5 grep -q 'initialize failed' "$BATS_TEST_TMPDIR/err"
}

@test "child-command: --check-config shows the command line it would run" {
	mkdir -p "$BATS_TEST_TMPDIR/ws"
	run qwen-serve --check-config --no-tcp --socket "$BATS_TEST_TMPDIR/s.sock" \
	    --workspace "$BATS_TEST_TMPDIR/ws" --child-command "sh -c 'exec cat' \"x y\""
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"child: sh"* ]]
	[[ "$output" == *"child command: sh -c 'exec cat' 'x y'"* ]]
	run qwen-serve --check-config --no-tcp --socket "$BATS_TEST_TMPDIR/s.sock" \
	    --workspace "$BATS_TEST_TMPDIR/ws" --child-command "/nonexistent/agent --acp"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--child-command /nonexistent/agent: No such file or directory"* ]]
}

@test "child-command: usage errors (bad quoting, empty, with --child or --agent-command)" {
	run qwen-serve --child-command "qwen --acp 'x"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--child-command: unterminated single quote"* ]]
	run qwen-serve --child-command "  "
	[ "$status" -eq 2 ]
	[[ "$output" == *"--child-command: no command"* ]]
	run qwen-serve --child-command "qwen --acp" --child /bin/true
	[ "$status" -eq 2 ]
	[[ "$output" == *"exclusive"* ]]
	run qwen-serve --child-command "qwen --acp" --agent-command cat
	[ "$status" -eq 2 ]
	[[ "$output" == *"--agent-command"* ]]
}
