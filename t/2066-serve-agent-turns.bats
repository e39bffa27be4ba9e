#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the turns an agent starts itself (a background task of its
# finished), as upstream's bridge sees them: _qwencode/start_turn asks
# first and is refused while a prompt runs; accepted, the stream says it
# started, its updates carry its id, and _qwencode/end_turn settles it
# with turn_complete and background_notification_turn_complete.  The
# fake child asks on each SIGUSR1 (its bg-turn knob).

load serve_helper

teardown() {
	sse_stop_all
	serve_teardown
}

# The pid of the fake agent, from its log (a delegating child's agent
# is its own child, not ours).
agent_pid() {
	awk 'NR == 1 { print $1 }' "$1"
}

# bg_ran NAME N: stream NAME has background turn bg-N, whole.
bg_ran() {
	sse_wait "$1" ".type == \"background_notification_turn_complete\" and .data.turnId == \"bg-$2\"" 10
}

# The whole turn, in order, on stream NAME.
bg_turn_checks() {
	local ev=$1
	sse_events "$ev" >"$BATS_TEST_TMPDIR/ev.json"
	# Started: upstream's discrete chunk, with the turn.
	jq -e --arg s "$SID" '[.[] | select(.type == "session_update" and
	    .data.update._meta.source == "background_notification_turn_started")] |
	    length == 1 and .[0].promptId == "bg-1" and
	    .[0].data.sessionId == $s and .[0].data.update.content.text == "Task done" and
	    .[0].data.update._meta.qwenDiscreteMessage == true and
	    .[0].data.update._meta.backgroundTurn ==
	    {turnId: "bg-1", taskId: "task-1", kind: "agent", startedAt: 1700000000000,
	     label: "Task done"}' "$BATS_TEST_TMPDIR/ev.json"
	# Its work is its own: the turn's id as the update's promptId.
	jq -e '[.[] | select(.data.update.content.text == "bg work 1")] |
	    length == 1 and .[0].promptId == "bg-1"' "$BATS_TEST_TMPDIR/ev.json"
	# Settled as a prompt is, then the background word.
	jq -e --arg s "$SID" '[.[] | select(.type == "turn_complete" and .promptId == "bg-1")] |
	    length == 1 and .[0].data == {sessionId: $s, promptId: "bg-1",
	    stopReason: "end_turn", backgroundTurn: {turnId: "bg-1", taskId: "task-1",
	    kind: "agent", startedAt: 1700000000000, label: "Task done"}}' \
	    "$BATS_TEST_TMPDIR/ev.json"
	jq -e --arg s "$SID" '[.[] | select(.type == "background_notification_turn_complete")] |
	    length == 1 and .[0].data == {sessionId: $s, reason: "end_turn", turnId: "bg-1"}' \
	    "$BATS_TEST_TMPDIR/ev.json"
	# In that order.
	jq -e '[.[] | select(.promptId == "bg-1") | .type] ==
	    ["session_update", "session_update", "turn_complete",
	     "background_notification_turn_complete"]' "$BATS_TEST_TMPDIR/ev.json"
}

@test "an idle session admits the agent's own turn; its end settles it on the stream" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log,bg-turn=$SID" serve_loaded
	sse_open ev "/session/$SID/events"
	kill -USR1 "$(agent_pid "$BATS_TEST_TMPDIR/child.log")"
	bg_ran ev 1
	bg_turn_checks ev
	# Over: the next one is admitted too.
	kill -USR1 "$(agent_pid "$BATS_TEST_TMPDIR/child.log")"
	bg_ran ev 2
	run ! sse_has ev '.data.update.content.text | strings | startswith("bg deferred")'
}

@test "while a prompt runs the agent's own turn is refused: it waits, nothing settles" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log,bg-turn=$SID,hold=session/prompt" serve_loaded
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	wait_for 10 prompts_read 1
	kill -USR1 "$(agent_pid "$BATS_TEST_TMPDIR/child.log")"
	sse_wait ev '.data.update.content.text == "bg deferred 1"' 10
	run ! sse_has ev '.promptId == "bg-1"'
	run ! sse_has ev '.type == "background_notification_turn_complete"'
	# The signal released the prompt too: once it is over, one is admitted.
	sse_wait ev ".type == \"turn_complete\" and .promptId == \"$PROMPT_ID\"" 10
	kill -USR1 "$(agent_pid "$BATS_TEST_TMPDIR/child.log")"
	bg_ran ev 2
}

@test "a malformed start_turn is refused: nothing starts, nothing settles" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log,bg-turn=$SID,bg-kind=daemon" serve_loaded
	sse_open ev "/session/$SID/events"
	kill -USR1 "$(agent_pid "$BATS_TEST_TMPDIR/child.log")"
	sse_wait ev '.data.update.content.text == "bg deferred 1"' 10
	run ! sse_has ev '.promptId == "bg-1"'
	run ! sse_has ev '.type == "turn_complete" or .type == "background_notification_turn_complete"'
}

@test "with --agent-acp the delegating child passes the agent's turn and its end on" {
	delegating_serve "bg-turn=$SID"
	sse_open ev "/session/$SID/events"
	# The agent has the session once its background resume is read.
	resumed() { grep -q " session/resume $SID " "$ALOG"; }
	wait_for 10 resumed
	kill -USR1 "$(agent_pid "$ALOG")"
	bg_ran ev 1
	bg_turn_checks ev
}

@test "with --agent-acp an agent that exits in its own turn has the turn ended for it" {
	delegating_serve "bg-turn=$SID,bg-open"
	sse_open ev "/session/$SID/events"
	resumed() { grep -q " session/resume $SID " "$ALOG"; }
	wait_for 10 resumed
	kill -USR1 "$(agent_pid "$ALOG")"
	sse_wait ev '.promptId == "bg-1" and .data.update.content.text == "bg work 1"' 10
	run ! sse_has ev '.type == "turn_complete" and .promptId == "bg-1"'
	kill -KILL "$(agent_pid "$ALOG")"
	# The child ends the turn the agent cannot: settled as a turn is.
	sse_wait ev '.type == "background_notification_turn_complete" and .data.turnId == "bg-1"' 10
	sse_events ev >"$BATS_TEST_TMPDIR/ev.json"
	jq -e --arg s "$SID" '[.[] | select(.type == "turn_complete" and .promptId == "bg-1")] |
	    length == 1 and .[0].data.stopReason == "agent_exited" and
	    .[0].data.backgroundTurn.turnId == "bg-1"' "$BATS_TEST_TMPDIR/ev.json"
	jq -e --arg s "$SID" '[.[] | select(.type == "background_notification_turn_complete")] |
	    length == 1 and .[0].data == {sessionId: $s, reason: "agent_exited", turnId: "bg-1"}' \
	    "$BATS_TEST_TMPDIR/ev.json"
	# The session is free again: a prompt runs (and starts the agent again).
	prompt_post "$SID"
	sse_wait ev ".type == \"turn_complete\" and .promptId == \"$PROMPT_ID\"" 20
}

@test "with --agent-acp an agent that exits in a goal turn has it ended too" {
	delegating_serve "bg-turn=$SID,bg-goal,bg-open"
	sse_open ev "/session/$SID/events"
	resumed() { grep -q " session/resume $SID " "$ALOG"; }
	wait_for 10 resumed
	kill -USR1 "$(agent_pid "$ALOG")"
	sse_wait ev '.data.update.content.text == "goal work 1"' 10
	run ! sse_has ev '.type == "turn_complete" and .promptId == "goal-1"'
	kill -KILL "$(agent_pid "$ALOG")"
	sse_wait ev '.type == "turn_complete" and .promptId == "goal-1"' 10
	sse_events ev >"$BATS_TEST_TMPDIR/ev.json"
	jq -e --arg s "$SID" '[.[] | select(.type == "turn_complete" and .promptId == "goal-1")] |
	    length == 1 and .[0].data == {sessionId: $s, promptId: "goal-1",
	    stopReason: "agent_exited"}' "$BATS_TEST_TMPDIR/ev.json"
}
