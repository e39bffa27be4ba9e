#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A warm agent (--agent-acp, --agent-prestart yes by default): the
# daemon starts the workspace's child, the child starts its agent, and
# each load's session is resumed at the agent in the background once the
# load has been answered, so that the first prompt finds it ready.  The
# agent here is fake-child (its log says what it was asked, by which pid).

load serve_helper

setup() {
	ALOG=$BATS_TEST_TMPDIR/agent.log
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	export SERVE_CHILD
}

teardown() {
	serve_teardown
}

# warm_serve KNOBS [qwen-serve args...]: the delegating child, fake-child as its agent.
warm_serve() {
	local knobs=$1
	shift
	FAKE_CHILD="log=$ALOG,known=$SID${knobs:+,$knobs}" serve_start \
	    --agent-acp "$FAKE_CHILD_BIN" "$@"
}

# asked METHOD [ID]: how many METHOD messages (for ID) the agents read.
asked() {
	awk -v m="$1" -v id="${2:--}" '$2 == m && (id == "-" || $3 == id)' "$ALOG" 2>/dev/null | wc -l
}

asked_is() {
	[ "$(asked "$2" "${3:-}")" -eq "$1" ]
}

# The pid of the agent that read the last METHOD.
agent_pid() {
	awk -v m="$1" '$2 == m { p = $1 } END { print p }' "$ALOG"
}

@test "prestart: the agent starts with the daemon; a load's session is resumed there after its answer" {
	warm_serve ""
	# Nobody asked for anything yet: the daemon started the child, the child its agent.
	wait_for 10 asked_is 1 initialize
	make_transcript
	req POST "/session/$SID/load" '{}'
	expect 200
	wait_for 10 asked_is 1 session/resume "$SID"
	prompt_turn ev "$SID"
	# The prompt found the session resumed: no second resume, one prompt.
	[ "$(asked session/resume "$SID")" -eq 1 ]
	[ "$(asked session/prompt "$SID")" -eq 1 ]
	[ "$(asked initialize)" -eq 1 ]
	run sse_has ev '.data.update._meta["qwen.delegate"].state == "starting"'
	[ "$status" -ne 0 ]
}

@test "a held background resume does not hold the load; a prompt waits for it, then runs" {
	warm_serve hold=session/resume
	wait_for 10 asked_is 1 initialize
	make_transcript
	# The agent holds its resume until SIGUSR1: the load is answered anyway.
	req POST "/session/$SID/load" '{}'
	expect 200
	wait_for 10 asked_is 1 session/resume "$SID"
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	sse_wait ev '.data.update._meta["qwen.delegate"].state == "starting"'
	[ "$(asked session/prompt "$SID")" -eq 0 ]
	run sse_has ev '.type == "turn_complete"'
	[ "$status" -ne 0 ]
	kill -USR1 "$(agent_pid session/resume)"
	sse_wait ev ".type == \"turn_complete\" and .promptId == \"$PROMPT_ID\"" 10
	sse_has ev '.data.update._meta["qwen.delegate"].state == "ready"'
	[ "$(asked session/prompt "$SID")" -eq 1 ]
	[ "$(asked session/resume "$SID")" -eq 1 ]
}

@test "--agent-prestart no: the child is told so, and the agent starts with the first prompt" {
	warm_serve "" --agent-prestart no
	make_transcript
	req POST "/session/$SID/load" '{}'
	expect 200
	local pid
	pid=$(sed -n 's/.*started .* (pid \([0-9]*\)).*/\1/p' "$BATS_TEST_TMPDIR/err" | tail -1)
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- '--agent-prestart no'
	[ "$(asked initialize)" -eq 0 ]
	[ "$(asked session/resume "$SID")" -eq 0 ]
	prompt_turn ev "$SID"
	[ "$(asked initialize)" -eq 1 ]
	[ "$(asked session/resume "$SID")" -eq 1 ]
	# ... and on the first prompt the subscribers are told it is starting.
	sse_has ev '.data.update._meta["qwen.delegate"].state == "starting"'
}

@test "an agent that dies is started again by itself (backoff), and the session resumed there again" {
	warm_serve crash-on=session/prompt
	wait_for 10 asked_is 1 initialize
	make_transcript
	req POST "/session/$SID/load" '{}'
	expect 200
	wait_for 10 asked_is 1 session/resume "$SID"
	local first
	first=$(agent_pid initialize)
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	sse_wait ev ".type == \"turn_error\" and .promptId == \"$PROMPT_ID\"" 10
	# No prompt asks for it: the child starts another agent after its backoff.
	wait_for 15 asked_is 2 initialize
	[ "$(agent_pid initialize)" != "$first" ]
	wait_for 10 asked_is 2 session/resume "$SID"
	grep -q 'agent: starting it again in 1000 ms' "$BATS_TEST_TMPDIR/err"
}

@test "an idle daemon keeps its prestarted child: no session, no reap" {
	warm_serve "" --channel-idle-timeout-ms 1
	wait_for 10 asked_is 1 initialize
	make_transcript
	req POST "/session/$SID/load" '{}'
	expect 200
	req DELETE "/session/$SID"
	[ "$code" -lt 300 ]
	# The idle policy would end it at once; kept warm, the same child serves.
	local pid
	pid=$(sed -n 's/.*started .* (pid \([0-9]*\)).*/\1/p' "$BATS_TEST_TMPDIR/err" | tail -1)
	req POST "/session/$SID/load" '{}'
	expect 200
	kill -0 "$pid"
	[ "$(grep -c 'started .* (pid' "$BATS_TEST_TMPDIR/err")" -eq 1 ]
	run grep -q 'idle: ending it' "$BATS_TEST_TMPDIR/err"
	[ "$status" -ne 0 ]
}

@test "an agent that offers session/load and not session/resume is asked to load; its replay is not ours to pass on" {
	warm_serve "load-only,replay=3,replay-bytes=16"
	make_transcript
	req POST "/session/$SID/load" '{}'
	expect 200
	local last
	last=$(jq -r .lastEventId <<<"$body")
	wait_for 10 asked_is 1 session/load "$SID"
	[ "$(asked session/resume "$SID")" -eq 0 ]
	# Everything the bus carried for the session since our load answered.
	sse_open ev "/session/$SID/events" -H "Last-Event-ID: $last"
	prompt_post "$SID"
	sse_wait ev ".type == \"turn_complete\" and .promptId == \"$PROMPT_ID\"" 20
	[ "$(asked session/prompt "$SID")" -eq 1 ]
	# The agent's replay (16 x) stayed in the child: the subscribers have it from our load.
	! sse_has ev '.data.update.content.text == "xxxxxxxxxxxxxxxx"' || false
	grep -qE "session $SID: the agent resumed the (compact|real) transcript in" "$BATS_TEST_TMPDIR/err"
}

@test "a refused background resume is logged by its code, never the agent's words" {
	warm_serve "fail=session/resume:-32603,fail-detail=secret-words"
	make_transcript
	req POST "/session/$SID/load" '{}'
	expect 200
	wait_for 10 grep -q "refused the background resume (code -32603)" "$BATS_TEST_TMPDIR/err"
	# fake-child's message is "Injected failure"; the log has no message.
	run ! grep -q "Injected failure" "$BATS_TEST_TMPDIR/err"
	run ! grep -q "secret-words" "$BATS_TEST_TMPDIR/err"
}
