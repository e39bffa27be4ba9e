#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The real qwen-code agent as the child (--child-command) answers what the
# daemon asks of it, because the daemon uses upstream's method names:
# transcript pages (qwen/status/session/transcript), branch
# (qwen/control/session/branch); and DELETE then an immediate load of
# the same session succeeds (the load waits for the agent's close); and
# the agent's own session calls (context usage, stats, supported
# commands) are answered by the agent through the daemon.

load agent_helper

setup() {
	agent_require
	fake_model_start '[{"when":"first question","text":"ANSWER-ONE."}]'
}

teardown() {
	agent_teardown
}

@test "real agent as the child: transcript pages and branch answer, DELETE then load succeeds" {
	agent_serve_start
	new_session
	sse_open ev "/session/$SID/events"
	prompt_and_wait ev "A first question"
	req GET "/session/$SID/transcript?limit=20"
	expect 200 '.sessionId != null and (.events | type) == "array" and (.events | length) > 0'
	req POST "/session/$SID/branch" '{}'
	expect 201 '(.clientId | type) == "string" and (.state | type) == "object"'
	jq -e '.sessionId | test("^[0-9a-f-]{36}$")' <<<"$body"
	local branch
	branch=$(jq -r .sessionId <<<"$body")
	[ "$branch" != "$SID" ]
	# Without atRecordId the real agent resumed it: live, one client.
	req GET "/session/$branch/status"
	expect 200 '.clientCount == 1'
	req DELETE "/session/$branch"
	expect 204
	req DELETE "/session/$SID"
	[ "$code" -lt 300 ]
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	expect 200 ".sessionId == \"$SID\""
}

@test "real agent as the child: the agent's own session calls answer through the daemon" {
	agent_serve_start
	new_session
	sse_open ev "/session/$SID/events"
	prompt_and_wait ev "A first question"
	req GET "/session/$SID/context-usage"
	expect 200 '. | type == "object"'
	req GET "/session/$SID/stats"
	expect 200 '. | type == "object"'
	req GET "/session/$SID/supported-commands"
	expect 200 '(.availableCommands | type) == "array"'
	req GET "/session/$SID/hooks"
	expect 200 "(.hooks | type) == \"array\" and .sessionId == \"$SID\""
}
