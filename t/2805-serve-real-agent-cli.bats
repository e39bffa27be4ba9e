#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore in front of the real qwen-code agent: prompt prints the
# agent's text, -v its tool calls; --approve answers its permission
# requests; the permission command answers one from another process.

load agent_helper
bats_require_minimum_version 1.5.0

setup() {
	agent_require
	fake_model_start '[{"when":"please write the marker","once":false,"reasoning":"I should run a command.",
	    "tool_calls":[{"name":"run_shell_command",
	    "arguments":{"command":"echo ran > marker.txt","description":"write the marker file"}}]},
	    {"when":"\"role\":\"tool\"","text":"The command has run."}]'
	agent_serve_start
	new_session
}

teardown() {
	agent_teardown
}

restore() {
	qwen-restore --socket "$SOCK" --cwd "$WS" --state-dir "$BATS_TEST_TMPDIR/state" "$@" 3>&-
}

@test "qwen-restore prompt --approve all -v: text on stdout, thoughts and tool calls on stderr, the tool runs" {
	run --separate-stderr restore --approve all -v prompt "$SID" "please write the marker"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "The command has run." ]
	[[ "$stderr" == *"I should run a command."* ]]
	[[ "$stderr" == *"tool call: "* ]]
	[[ "$stderr" == *"allowing"* ]]
	[[ "$stderr" == *": completed"* ]]
	[ "$(cat "$WS/marker.txt")" = ran ]
}

@test "qwen-restore prompt off a terminal: no --approve means none, the command is denied" {
	run --separate-stderr restore prompt "$SID" "please write the marker" </dev/null
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[ ! -e "$WS/marker.txt" ]
	# --approve ask off a terminal is none too: never a hang.
	run --separate-stderr restore --approve ask -v prompt "$SID" "please write the marker" </dev/null
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"denying"* ]]
	[ ! -e "$WS/marker.txt" ]
}

@test "qwen-restore --json prompt streams the prompt's events, permission_request among them" {
	run --separate-stderr restore --json --approve all prompt "$SID" "please write the marker"
	[ "$status" -eq 0 ]
	jq -e -s 'all(.[]; .type != null)' <<<"$output"
	jq -e -s 'any(.[]; .type == "permission_request")' <<<"$output"
	jq -e -s 'any(.[]; .type == "permission_resolved" and .data.outcome.outcome == "selected")' <<<"$output"
	jq -e -s '.[-1].type == "turn_complete"' <<<"$output"
}

@test "qwen-restore permission ID REQUEST-ID allow: answers from another process; again: exit 3" {
	sse_open ev "/session/$SID/events"
	req POST "/session/$SID/prompt" '{"prompt":[{"type":"text","text":"please write the marker"}]}'
	expect 202
	local pid rid
	pid=$(jq -r .promptId <<<"$body")
	sse_wait ev '.type == "permission_request"' 180
	rid=$(sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/ev.sse" | jq -r 'select(.type == "permission_request") | .data.requestId' | head -1)
	run restore permission "$SID" "$rid" allow
	echo "$output"
	[ "$status" -eq 0 ]
	sse_wait ev ".type == \"turn_complete\" and .promptId == \"$pid\"" 180
	[ "$(cat "$WS/marker.txt")" = ran ]
	run restore permission "$SID" "$rid" deny
	echo "$output"
	[ "$status" -eq 3 ]
	run restore permission "$SID" "$rid" maybe
	[ "$status" -eq 2 ]
}
