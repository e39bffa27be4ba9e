#!/usr/bin/env bats
# qwen-serve --agent-acp starts each workspace's qwen-acp-child (and so
# its agent) when it starts, and keeps it through idle spells; a load then
# has its session resumed at the agent before any prompt.
# --agent-prestart=no starts nothing until the first request.  The agent
# is t/helper/fake-child (FAKE_CHILD reaches it through both processes).
load serve_helper

SID=11111111-2222-4333-8444-555555555555

setup() {
	ALOG=$BATS_TEST_TMPDIR/agent.log
	export FAKE_CHILD="known=$SID,log=$ALOG"
	export SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
}

teardown() {
	serve_teardown
}

@test "agent prestart: the child and its agent start with the daemon; a load is resumed at the agent before any prompt" {
	serve_start --agent-acp "$FAKE_CHILD_BIN"
	wait_for 20 grep -q ' initialize ' "$ALOG"
	grep -q "child prestarted" "$BATS_TEST_TMPDIR/err"
	make_transcript
	req POST "/session/$SID/load" '{}'
	expect 200
	wait_for 20 grep -q "session/resume $SID" "$ALOG"
	prompt_turn ev "$SID"
	run sse_has ev '.data.update._meta["qwen.delegate"].state == "starting"'
	[ "$status" -ne 0 ]
	[ "$(grep -c ' initialize ' "$ALOG")" -eq 1 ]
}

@test "agent prestart: a prestarted child outlives the idle policy with no session" {
	serve_start --agent-acp "$FAKE_CHILD_BIN" --channel-idle-timeout-ms 1
	wait_for 20 grep -q ' initialize ' "$ALOG"
	wait_for 20 grep -q "child [0-9]* initialized" "$BATS_TEST_TMPDIR/err"
	req GET /health
	expect 200
	run grep -q "idle: ending it" "$BATS_TEST_TMPDIR/err"
	[ "$status" -ne 0 ]
}

@test "agent prestart: --agent-prestart=no starts no child and no agent before a request" {
	serve_start --agent-acp "$FAKE_CHILD_BIN" --agent-prestart no
	make_transcript
	[ ! -e "$ALOG" ]
	req POST "/session/$SID/load" '{}'
	expect 200
	[ ! -e "$ALOG" ]
	prompt_turn ev "$SID"
	[ "$(awk '{print $2}' "$ALOG" | head -1)" = initialize ]
	grep -q "session/resume $SID" "$ALOG"
}

@test "agent prestart: a bad --agent-prestart value is a usage error" {
	run qwen-serve --agent-prestart maybe
	[ "$status" -eq 2 ]
	[[ "$output" == *"--agent-prestart: yes or no"* ]]
}
