#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the agent's own session calls (context, usage, stats, tasks,
# goal, rewind, recap, ...) go to the session's child under upstream's
# method names, with the body (or the known query members) and the
# session id as parameters, and come back as the agent answers them.  An
# agent that lacks one answers as upstream's daemon does (500 with the
# agent's message and JSON-RPC code); one that does not answer, 504; never
# a hang.

load serve_helper

teardown() {
	serve_teardown
}

@test "each route asks the agent by upstream's method name, with the session id" {
	FAKE_CHILD=echo-ext serve_loaded
	local r
	for r in context:qwen/status/session/context \
	    context-usage:qwen/status/session/context_usage \
	    stats:qwen/status/session/stats \
	    supported-commands:qwen/status/session/supported_commands \
	    tasks:qwen/status/session/tasks agents:qwen/status/session/agents \
	    lsp:qwen/status/session/lsp resources:qwen/status/session/resources \
	    hooks:qwen/status/session/hooks \
	    rewind/snapshots:qwen/status/session/rewind_snapshots \
	    goal:qwen/control/session/goal/get; do
		req GET "/session/$SID/${r%%:*}"
		expect 200
		[ "$(jq -r .method <<<"$body")" = "${r#*:}" ]
		[ "$(jq -r .params.sessionId <<<"$body")" = "$SID" ]
	done
	for r in goal/clear:qwen/control/session/goal/clear \
	    rewind:qwen/control/session/rewind recap:qwen/control/session/recap \
	    btw:qwen/control/session/btw language:qwen/control/session/language \
	    config-option:session/set_config_option; do
		req POST "/session/$SID/${r%%:*}" '{"x":1}'
		expect 200
		[ "$(jq -r .method <<<"$body")" = "${r#*:}" ]
		jq -e --arg s "$SID" '.params == {x: 1, sessionId: $s}' <<<"$body"
	done
}

@test "the body, the query's known members and the path's id are the parameters" {
	FAKE_CHILD=echo-ext serve_loaded
	req GET "/session/$SID/context-usage?detail=true&other=1"
	expect 200
	jq -e --arg s "$SID" '.params == {detail: true, sessionId: $s}' <<<"$body"
	# The goal's control request goes under "request", as upstream sends it.
	req POST "/session/$SID/goal" '{"goal":"ship it","sessionId":"someone-else"}'
	expect 200
	[ "$(jq -r .method <<<"$body")" = qwen/control/session/goal/control ]
	jq -e --arg s "$SID" '.params.sessionId == $s' <<<"$body"
	jq -e '.params.request.goal == "ship it"' <<<"$body"
	# A body member may not name another session.
	req POST "/session/$SID/rewind" "{\"sessionId\":\"$SID2\",\"to\":3}"
	expect 200
	jq -e --arg s "$SID" '.params == {sessionId: $s, to: 3}' <<<"$body"
}

@test "agent trace, saved workflows, task cancel and workflow actions: upstream's methods and parameters" {
	FAKE_CHILD=echo-ext serve_loaded
	req GET "/session/$SID/agent-trace"
	expect 200
	[ "$(jq -r .method <<<"$body")" = qwen/status/session/agent_trace ]
	jq -e --arg s "$SID" '.params == {sessionId: $s}' <<<"$body"
	req GET "/session/$SID/agent-trace?rootAgentId=agent-7&x=1"
	expect 200
	jq -e --arg s "$SID" '.params == {rootAgentId: "agent-7", sessionId: $s}' <<<"$body"
	req GET "/session/$SID/saved-workflows/nightly%20build"
	expect 200
	[ "$(jq -r .method <<<"$body")" = qwen/status/session/saved_workflow ]
	jq -e --arg s "$SID" '.params == {sessionId: $s, name: "nightly build"}' <<<"$body"
	req POST "/session/$SID/tasks/t-9/cancel" '{"kind":"shell","other":1}'
	expect 200
	[ "$(jq -r .method <<<"$body")" = qwen/control/session/task/cancel ]
	jq -e --arg s "$SID" '.params == {sessionId: $s, taskId: "t-9", taskKind: "shell"}' <<<"$body"
	req POST "/session/$SID/tasks/t-9/workflow-action" '{"action":"run-saved","args":{"a":1},"sourceRef":"r","other":2}'
	expect 200
	[ "$(jq -r .method <<<"$body")" = qwen/control/session/task/workflow-action ]
	jq -e --arg s "$SID" '.params == {sessionId: $s, taskId: "t-9", action: "run-saved", args: {a: 1}, sourceRef: "r"}' <<<"$body"
	req POST "/session/$SID/tasks/t-9/workflow-action" '{"action":"pause"}'
	expect 200
	jq -e --arg s "$SID" '.params == {sessionId: $s, taskId: "t-9", action: "pause"}' <<<"$body"
}

@test "agent trace, task and workflow routes: upstream's 400s, nothing asked" {
	FAKE_CHILD="echo-ext log=$BATS_TEST_TMPDIR/log" serve_loaded
	req GET "/session/$SID/agent-trace?rootAgentId="
	expect 400 '.code == "invalid_root_agent_id"'
	req GET "/session/$SID/agent-trace?rootAgentId=$(head -c 501 /dev/zero | tr '\0' a)"
	expect 400 '.code == "invalid_root_agent_id"'
	req POST "/session/$SID/tasks/t-9/cancel" '{"kind":"other"}'
	expect 400 '.error | test("`kind` must be")'
	req POST "/session/$SID/tasks/t-9/cancel" '{}'
	expect 400 '.error | test("`kind` must be")'
	req POST "/session/$SID/tasks/t-9/workflow-action" '{"action":"explode"}'
	expect 400 '.error | test("`action` must be")'
	# No task id, or another path: not these routes.
	req POST "/session/$SID/tasks//cancel" '{"kind":"shell"}'
	expect 404
	req POST "/session/$SID/tasks/t-9/stop" '{"kind":"shell"}'
	expect 404
	req GET "/session/$SID/saved-workflows/"
	expect 404
	req GET "/session/$SID2/agent-trace"
	expect 404 '.code == "session_not_found"'
	run ! grep -E 'agent_trace|task/cancel|workflow-action|saved_workflow' "$BATS_TEST_TMPDIR/log"
}

@test "our own child lacks agent trace, saved workflows and tasks: 500 with its method, never a hang" {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	SERVE_CHILD=$REAL serve_loaded
	req GET "/session/$SID/agent-trace"
	expect 500 '.error == "Method not found: qwen/status/session/agent_trace" and .code == -32601'
	req GET "/session/$SID/saved-workflows/w"
	expect 500 '.error == "Method not found: qwen/status/session/saved_workflow"'
	req POST "/session/$SID/tasks/t/cancel" '{"kind":"agent"}'
	expect 500 '.error == "Method not found: qwen/control/session/task/cancel"'
	req POST "/session/$SID/tasks/t/workflow-action" '{"action":"retry"}'
	expect 500 '.error == "Method not found: qwen/control/session/task/workflow-action"'
}

@test "an agent without the method: upstream's 500 with its message and code" {
	serve_loaded
	req GET "/session/$SID/stats"
	expect 500
	[ "$(jq -r .error <<<"$body")" = "Method not found" ]
	[ "$(jq -r .code <<<"$body")" = -32601 ]
}

@test "our own child answers with the method it lacks, never a hang" {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	SERVE_CHILD=$REAL serve_loaded
	req GET "/session/$SID/context"
	expect 500
	[ "$(jq -r .error <<<"$body")" = "Method not found: qwen/status/session/context" ]
	[ "$(jq -r .code <<<"$body")" = -32601 ]
}

@test "an agent that does not answer: 504 init_timeout, and the session lives on" {
	FAKE_CHILD=hang=qwen/status/session/stats serve_loaded --initialize-timeout-ms 500
	req GET "/session/$SID/stats"
	expect 504
	[ "$(jq -r .code <<<"$body")" = init_timeout ]
	# The session is fine afterwards.
	req GET "/session/$SID/status"
	expect 200
}

@test "no live session, or a stranger's client id: the session's errors, nothing asked" {
	FAKE_CHILD="echo-ext log=$BATS_TEST_TMPDIR/log" serve_loaded
	req GET "/session/$SID2/context"
	expect 404
	[ "$(jq -r .code <<<"$body")" = session_not_found ]
	req POST "/session/$SID/recap" '{}' -H 'X-Qwen-Client-Id: client_00000000-0000-4000-8000-000000000000'
	[ "$code" -ne 200 ]
	run ! grep -E 'qwen/(status|control)/session/(context|recap)' "$BATS_TEST_TMPDIR/log"
}

# The delegating child with fake-child as its agent, which answers every
# agent-level call it is passed.
echo_serve() {
	delegating_serve "echo-ext${1:+,$1}"
}

resumed_at_agent() {
	grep -q " session/resume $SID " "$ALOG"
}

@test "with --agent-acp the child passes the call to its agent and its answer back" {
	echo_serve
	wait_for 10 resumed_at_agent
	# The background resume is answered a moment after it was read.
	passed() {
		req GET "/session/$SID/context-usage?detail=true"
		[ "$code" = 200 ]
	}
	wait_for 10 passed
	[ "$(jq -r .method <<<"$body")" = qwen/status/session/context_usage ]
	jq -e --arg s "$SID" '.params.sessionId == $s and .params.detail == true' <<<"$body"
	grep -q " qwen/status/session/context_usage $SID " "$ALOG"
	# Our own methods stay ours: a transcript page never reaches the agent.
	req GET "/session/$SID/transcript?limit=5"
	expect 200
	run ! grep -q 'qwen/status/session/transcript' "$ALOG"
}

@test "with --agent-acp, before the agent has the session: 503 runtime_still_starting" {
	echo_serve "hold=session/resume"
	wait_for 10 resumed_at_agent
	req GET "/session/$SID/stats"
	expect 503
	[ "$(jq -r .code <<<"$body")" = runtime_still_starting ]
	[ -n "$(header Retry-After)" ]
	run ! grep -q 'qwen/status/session/stats' "$ALOG"
}
