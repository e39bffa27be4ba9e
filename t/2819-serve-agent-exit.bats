#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The --agent-acp agent ends with its child: at shutdown (stdin EOF or
# SIGTERM) and at the daemon's idle end the child closes the agent's
# stdin, sends its process group SIGTERM, SIGKILL 1.5 s later if it is
# still there, and reaps it before it exits; a SIGKILLed child takes its
# agent with it (PR_SET_PDEATHSIG).  The agent is fake-child: "linger"
# ignores its stdin's EOF (SIGTERM ends it), "linger,ignore-term" only
# dies of SIGKILL.  The order is read from process states and the
# child's log, never from a clock.

load serve_helper

setup() {
	ALOG=$BATS_TEST_TMPDIR/agent.log
	CERR=$BATS_TEST_TMPDIR/child.err
	CHILD_PID=
}

teardown() {
	local pid
	# A failed test must not leave its agent running.
	for pid in $(agent_pids "$CERR") $(agent_pids "$BATS_TEST_TMPDIR/err"); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	[ -z "$CHILD_PID" ] || kill -KILL "$CHILD_PID" 2>/dev/null || true
	serve_teardown
}

# agent_pids FILE: the agents a child started (from its log in FILE).
agent_pids() {
	sed -n 's/.* info: agent \([0-9]*\) started.*/\1/p' "$1" 2>/dev/null
}

# process_gone PID: PID has exited (gone, or a zombie not yet reaped).
process_gone() {
	[ ! -e "/proc/$1/stat" ] || [ "$(awk '{ print $3 }' "/proc/$1/stat")" = Z ]
}

# group_empty PGID: no process is left in the process group.
group_empty() {
	if pgrep -g "$1" >/dev/null; then
		return 1
	fi
}

asked_init() {
	[ "$(awk '$2 == "initialize"' "$ALOG" 2>/dev/null | wc -l)" -ge 1 ]
}

# child_start KNOBS: qwen-acp-child on a FIFO the test holds open (fd 4),
# fake-child (KNOBS) its agent; waits until the agent took initialize (it
# has read its knobs).  AGENT is its pid.
child_start() {
	local fifo=$BATS_TEST_TMPDIR/in
	mkdir -p "$BATS_TEST_TMPDIR/ws" "$BATS_TEST_TMPDIR/data"
	mkfifo "$fifo"
	exec 4<>"$fifo"
	FAKE_CHILD="log=$ALOG,$1" qwen-acp-child --workspace "$BATS_TEST_TMPDIR/ws" \
	    --data-dir "$BATS_TEST_TMPDIR/data" --agent-acp "$FAKE_CHILD_BIN" \
	    <"$fifo" >"$BATS_TEST_TMPDIR/child.out" 2>"$CERR" 4>&- 3>&- &
	CHILD_PID=$!
	wait_for 10 asked_init
	AGENT=$(agent_pids "$CERR")
	[ -n "$AGENT" ]
}

# child_wait: the child's exit status is CHILD_STATUS.
child_wait() {
	CHILD_STATUS=0
	wait "$CHILD_PID" || CHILD_STATUS=$?
	CHILD_PID=
}

@test "stdin EOF: an agent deaf to its own EOF ends on SIGTERM, reaped before the child exits" {
	child_start linger
	exec 4>&-
	child_wait
	[ "$CHILD_STATUS" -eq 0 ]
	# The child saw it go (it waited for its exit), and sent no SIGKILL.
	grep -q "agent $AGENT exited (status 143)" "$CERR"
	run ! grep -q "killing it" "$CERR"
	[ ! -e "/proc/$AGENT" ]
	group_empty "$AGENT"
}

@test "SIGTERM: an agent that ignores SIGTERM is SIGKILLed after the grace, reaped, then the child exits" {
	child_start linger,ignore-term
	kill -TERM "$CHILD_PID"
	child_wait
	[ "$CHILD_STATUS" -eq 0 ]
	# SIGKILL came from the child, after the SIGTERM it ignored, and the
	# child reaped it before it left.
	local killing exited
	killing=$(grep -n "agent $AGENT still runs 1500 ms after SIGTERM: killing it" "$CERR" | cut -d: -f1)
	exited=$(grep -n "agent $AGENT exited (status 137)" "$CERR" | cut -d: -f1)
	[ -n "$killing" ]
	[ -n "$exited" ]
	[ "$killing" -lt "$exited" ]
	[ ! -e "/proc/$AGENT" ]
	group_empty "$AGENT"
}

@test "a SIGKILLed child leaves no agent behind" {
	child_start linger,ignore-term
	# Only SIGKILL ends this agent, and its stdin stays open: nobody but
	# the kernel (the parent-death signal) tells it its child is gone.
	local ign
	ign=$(awk '$1 == "SigIgn:" { print $2 }' "/proc/$AGENT/status")
	[ $(( (16#$ign >> 14) & 1 )) -eq 1 ]
	kill -KILL "$CHILD_PID"
	child_wait
	[ "$CHILD_STATUS" -eq 137 ]
	wait_for 10 process_gone "$AGENT"
	wait_for 10 group_empty "$AGENT"
}

@test "the daemon's idle end: the child ends its agent and waits for it" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child \
	    FAKE_CHILD="log=$ALOG,known=$SID,linger" serve_start \
	    --agent-acp "$FAKE_CHILD_BIN" --agent-prestart no --channel-idle-timeout-ms 1
	make_transcript
	req POST "/session/$SID/load" '{}'
	expect 200
	prompt_turn ev "$SID"
	local agent child
	agent=$(agent_pids "$BATS_TEST_TMPDIR/err")
	child=$(sed -n 's/.*started .* (pid \([0-9]*\)).*/\1/p' "$BATS_TEST_TMPDIR/err" | tail -1)
	[ -n "$agent" ]
	[ -n "$child" ]
	req DELETE "/session/$SID"
	[ "$code" -lt 300 ]
	wait_for 10 grep -q "child $child idle: ending it" "$BATS_TEST_TMPDIR/err"
	wait_for 10 grep -q "child $child exited (status 0)" "$BATS_TEST_TMPDIR/err"
	# The child logged the agent's end itself: it waited for it.
	grep -q "agent $agent exited (status 143)" "$BATS_TEST_TMPDIR/err"
	wait_for 10 process_gone "$agent"
	group_empty "$agent"
}
