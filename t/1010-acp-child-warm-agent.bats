#!/usr/bin/env bats
# qwen-acp-child --agent-acp keeps its agent warm: the agent starts with
# the child, a restored session is resumed there once its answer is out
# (the answer never waits for the agent), a prompt that comes first waits
# for that resume, and an agent that dies is started again after a backoff
# that grows.  t/helper/fake-child is the agent; the test holds its answers.
load acp_helper

setup() {
	acp_setup
	ALOG=$BATS_TEST_TMPDIR/agent.log
	AGENT="$QWEN_TOP_BUILDDIR/t/helper/fake-child"
	qwen-gen-transcript --mib 1 --seed 3 --session-id "$SID1" --data-dir "$DATA" \
	    --workspace "$WS" >/dev/null
}

# until_in FILE TEXT: a script line that waits (at most 20 s) for TEXT in FILE.
until_in() {
	printf 'shell i=0; until grep -q -- "%s" "%s" 2>/dev/null; do i=$((i+1)); [ $i -lt 400 ] || exit 1; sleep 0.05; done\n' "$2" "$1"
}

# agent_kill SIG: a script line that signals the agent that wrote the
# last line of its log (the first field is its pid).
agent_kill() {
	printf 'shell kill -%s $(tail -1 %s | cut -d" " -f1)\n' "$1" "$ALOG"
}

# until_count N TEXT: a script line that waits for N lines with TEXT in
# the agent's log.
until_count() {
	printf 'shell i=0; until [ "$(grep -c -- "%s" %s)" -ge %s ]; do i=$((i+1)); [ $i -lt 400 ] || exit 1; sleep 0.05; done\n' "$2" "$ALOG" "$1"
}

load_req() {	# load_req ID SID
	req "$1" session/load "{\"sessionId\":\"$2\",\"cwd\":\"$WS\",\"mcpServers\":[]}"
}

@test "warm agent: started with the child; the load answers while the agent resume is held; the prompt waits for it" {
	run env FAKE_CHILD="hold=session/resume,known=$SID1,log=$ALOG" \
	    acp-drive -t 20 -e "$ERR" -- qwen-acp-child --data-dir "$DATA" --workspace "$WS" \
	    --agent-acp "$AGENT" <<EOF
$(until_in "$ALOG" " initialize ")
$INIT
$(load_req '"load"' "$SID1")
$(until_in "$ALOG" "session/resume $SID1")
send {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"hi"}]}}
waitfor "starting"
$(agent_kill USR1)
wait 1
EOF
	echo "$output" | tail -5
	[ "$status" -eq 0 ]
	[ "$(resp '"load"' | jq -r 'has("result")')" = true ]
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	# The agent started before the parent said anything; one resume.
	[ "$(awk '{print $2}' "$ALOG" | head -1)" = initialize ]
	[ "$(grep -c "session/resume $SID1" "$ALOG")" -eq 1 ]
	[ "$(grep -c "session/prompt $SID1" "$ALOG")" -eq 1 ]
	# The prompt was told to wait, then that the agent was ready.
	[ "$(line_no '.params.update._meta["qwen.delegate"].state == "starting"')" -lt \
	    "$(line_no '.params.update._meta["qwen.delegate"].state == "ready"')" ]
	grep -q "session $SID1: session/resume at the agent (warm)" "$ERR"
}

@test "warm agent: the first prompt of a resumed session goes straight to the agent" {
	run env FAKE_CHILD="known=$SID1,log=$ALOG" \
	    acp-drive -t 20 -e "$ERR" -- qwen-acp-child --data-dir "$DATA" --workspace "$WS" \
	    --agent-acp "$AGENT" <<EOF
$INIT
$(load_req '"load"' "$SID1")
$(until_in "$ERR" "resumed at the agent (warm)")
$(prompt_req 1 "$SID1" hi)
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	[ "$(child_lines | grep -c '"state":"starting"' || true)" = 0 ]
}

@test "warm agent: --agent-prestart=no starts nothing before the first prompt" {
	run env FAKE_CHILD="known=$SID1,log=$ALOG" \
	    acp-drive -t 20 -e "$ERR" -- qwen-acp-child --data-dir "$DATA" --workspace "$WS" \
	    --agent-acp "$AGENT" --agent-prestart no <<EOF
$INIT
$(load_req '"load"' "$SID1")
shell test ! -e $ALOG
$(prompt_req 1 "$SID1" hi)
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	[ "$(awk '{print $2}' "$ALOG" | head -1)" = initialize ]
	[ "$(grep -c "session/resume $SID1" "$ALOG")" -eq 1 ]
	run grep -c "(warm)" "$ERR"
	[ "$output" = 0 ]
}

@test "warm agent: a dead agent is started again after a backoff that doubles, and resumes the session again" {
	run env FAKE_CHILD="known=$SID1,log=$ALOG" \
	    acp-drive -t 20 -e "$ERR" -- qwen-acp-child --data-dir "$DATA" --workspace "$WS" \
	    --agent-acp "$AGENT" <<EOF
$INIT
$(load_req '"load"' "$SID1")
$(until_in "$ERR" "resumed at the agent (warm)")
$(agent_kill KILL)
$(until_in "$ERR" "restarting it in 500 ms")
$(until_count 2 " initialize ")
$(until_count 2 session/resume)
$(agent_kill KILL)
$(until_in "$ERR" "restarting it in 1000 ms")
$(until_count 3 session/resume)
$(prompt_req 1 "$SID1" hi)
EOF
	echo "$output" | tail -3
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	[ "$(grep -c ' initialize ' "$ALOG")" -eq 3 ]
	[ "$(grep -c 'agent [0-9]* started' "$ERR")" -eq 3 ]
}
