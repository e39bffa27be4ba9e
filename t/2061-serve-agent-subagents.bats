#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a live session's subagents (GET /session/:id/subagents/:ref
# and POST .../cancel) are found among its agent's tasks, as upstream's
# daemon finds them: qwen/status/session/tasks asked of the agent, the
# agent task with an output file whose id, tool call or id's last part the
# reference names answered as upstream's virtual subagent session, its
# cancel the agent's qwen/control/session/task/cancel.

load serve_helper

teardown() {
	serve_teardown
}

# tasks_file: the agent's tasks, one subagent among a shell and an agent
# without an output file.
tasks_file() {
	cat >"$BATS_TEST_TMPDIR/tasks.json" <<'J'
{"tasks":[
 {"kind":"shell","id":"call-7","label":"ls","status":"running","startTime":1},
 {"kind":"agent","id":"nofile-call-7","label":"x","status":"running","startTime":1},
 {"kind":"agent","id":"agent-1-call-7","toolUseId":"tool-9","label":"Find the bug",
  "outputFile":"/tmp/a.jsonl","status":"completed","startTime":1000,"endTime":4500,
  "stats":{"totalTokens":321}}
]}
J
}

# b64url S: S in base64url without padding.
b64url() {
	printf %s "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='
}

@test "a reference resolves to upstream's virtual subagent session" {
	tasks_file
	FAKE_CHILD="echo-ext,answer=qwen/status/session/tasks:$BATS_TEST_TMPDIR/tasks.json,log=$BATS_TEST_TMPDIR/log" serve_loaded
	local vid="subagent.$(b64url "$SID").$(b64url agent-1-call-7)" ref
	# The task id, its tool call, the id's last part after a "-".
	for ref in agent-1-call-7 tool-9 call-7; do
		req GET "/session/$SID/subagents/$ref"
		expect 200
		jq -e --arg v "$vid" '. == {sessionId: $v, taskId: "agent-1-call-7",
		    title: "Find the bug", status: "completed", durationMs: 3500,
		    totalTokens: 321}' <<<"$body"
		[ "$(header Cache-Control)" = no-store ]
	done
	# Upstream serves it, as the SDK asks it, under /session/ only.
	req GET "/workspaces/primary/session/$SID/subagents/tool-9"
	expect 404 '.code == "not_found"'
	grep -q " qwen/status/session/tasks $SID " "$BATS_TEST_TMPDIR/log"
	# None: upstream's 404 with the reference.
	req GET "/session/$SID/subagents/nope"
	expect 404 '.code == "session_not_found" and .subagentRef == "nope" and .error == "Subagent session not found"'
	# A shell task, or an agent task without an output file, is no subagent.
	req GET "/session/$SID/subagents/nofile-call-7"
	expect 404 '.code == "session_not_found"'
}

@test "cancel resolves the reference, then cancels its task through the agent" {
	tasks_file
	FAKE_CHILD="echo-ext,answer=qwen/status/session/tasks:$BATS_TEST_TMPDIR/tasks.json" serve_loaded
	req POST "/session/$SID/subagents/tool-9/cancel" '{}'
	expect 200
	[ "$(jq -r .method <<<"$body")" = qwen/control/session/task/cancel ]
	jq -e --arg s "$SID" '.params == {sessionId: $s, taskId: "agent-1-call-7", taskKind: "agent"}' <<<"$body"
	req POST "/session/$SID/subagents/call-7/cancel" '{}'
	expect 200 '.params.taskId == "agent-1-call-7"'
	req POST "/session/$SID/subagents/nope/cancel" '{}'
	expect 404 '.code == "session_not_found" and .subagentRef == "nope"'
}

@test "a bad reference is 400 invalid_subagent_ref, nothing asked" {
	FAKE_CHILD="echo-ext,log=$BATS_TEST_TMPDIR/log" serve_loaded
	req GET "/session/$SID/subagents/$(head -c 501 /dev/zero | tr '\0' a)"
	expect 400 '.code == "invalid_subagent_ref"'
	req POST "/session/$SID/subagents/$(head -c 501 /dev/zero | tr '\0' a)/cancel" '{}'
	expect 400 '.code == "invalid_subagent_ref"'
	# 500 UTF-16 units are still one: 250 two-byte letters (500 units) are.
	req GET "/session/$SID/subagents/$(printf '%%C3%%A9%.0s' $(seq 500))"
	expect 404 '.code == "session_not_found"'
	req GET "/session/$SID/subagents/$(printf '%%C3%%A9%.0s' $(seq 501))"
	expect 400 '.code == "invalid_subagent_ref"'
	run ! grep -E 'task/cancel' "$BATS_TEST_TMPDIR/log"
	# No reference: not these routes.
	req GET "/session/$SID/subagents/"
	expect 404
	req GET "/session/$SID2/subagents/x"
	expect 404 '.code == "session_not_found"'
}

@test "an agent without tasks: the stable 500 and its code, never a hang" {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	SERVE_CHILD=$REAL serve_loaded
	req GET "/session/$SID/subagents/a1"
	expect 500 '.error == "Method not found: qwen/status/session/tasks" and .code == -32601'
	req POST "/session/$SID/subagents/a1/cancel" '{}'
	expect 500 '.code == -32601'
}

@test "a subagent the agent no longer lists is found among its sidecars on disk" {
	echo '{"tasks":[]}' >"$BATS_TEST_TMPDIR/tasks.json"
	FAKE_CHILD="echo-ext,answer=qwen/status/session/tasks:$BATS_TEST_TMPDIR/tasks.json" serve_loaded
	local chats dir
	chats=$(dirname "$(find "$DATA/projects" -name "$SID.jsonl" | head -1)")
	[ -d "$chats" ]
	dir=$(dirname "$chats")/subagents/$SID
	mkdir -p "$dir"
	echo '{"agentId":"agent-x-call-3","toolUseId":"tool-3","agentType":"explore",
	    "status":"failed","createdAt":"2026-01-01T00:00:00.000Z",
	    "lastUpdatedAt":"2026-01-01T00:00:02.500Z"}' >"$dir/agent-x.meta.json"
	echo 'not json' >"$dir/broken.meta.json"
	echo '{"agentId":"other"}' >"$dir/other.jsonl"
	req GET "/session/$SID/subagents/tool-3"
	expect 200
	jq -e --arg v "subagent.$(b64url "$SID").$(b64url agent-x-call-3)" '. == {sessionId: $v,
	    taskId: "agent-x-call-3", title: "explore", status: "failed", durationMs: 2500}' <<<"$body"
	req GET "/session/$SID/subagents/call-3"
	expect 200 '.taskId == "agent-x-call-3"'
	req POST "/session/$SID/subagents/call-3/cancel" '{}'
	expect 200 '.params.taskId == "agent-x-call-3"'
	req GET "/session/$SID/subagents/other"
	expect 404 '.code == "session_not_found"'
}
