#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A restore timeout with the real qwen-code agent as the child: a 1 ms
# budget makes its load cross the deadline; 504, the late restore
# settles, and a sibling session on the same child keeps answering.

load agent_helper
load serve_restore_helper

setup() {
	agent_require
}

teardown() {
	agent_teardown
}

@test "real agent, 1 ms restore budget: 504, the restore settles, the sibling keeps answering" {
	fake_model_start '[{"when":"first question","text":"ANSWER-ONE."},
	    {"when":"sibling question","text":"SIBLING-ANSWER."}]'
	# A transcript the agent wrote, then a fresh daemon with a 1 ms budget.
	agent_serve_start
	new_session
	local a=$SID sib pid
	sse_open ev "/session/$a/events"
	prompt_and_wait ev "A first question"
	sse_stop_all
	serve_stop
	agent_serve_start --session-restore-timeout-ms 1
	new_session thread
	sib=$SID
	pid=$(child_pid)
	req POST "/session/$a/load" "{\"cwd\":\"$WS\"}"
	expect 504 ".code == \"session_restore_timeout\" and .timeoutMs == 1 and .sessionId == \"$a\""
	# The late answer is cleaned up on the child: the restore settles.
	health_wait '.restoresUnsettled == 0 and .inFlight == 0' 60
	grep -q "session $a: cleanup close: close_ok" "$BATS_TEST_TMPDIR/err"
	# The same child still serves the sibling.
	[ "$(child_pid)" = "$pid" ]
	kill -0 "$pid"
	SID=$sib
	sse_open ev2 "/session/$sib/events"
	prompt_and_wait ev2 "A sibling question"
	[ "$(streamed_text ev2)" = "SIBLING-ANSWER." ]
}
