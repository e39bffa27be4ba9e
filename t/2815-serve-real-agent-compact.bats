#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The compact resume (--agent-acp, --agent-compact yes by default): the
# delegating child hands the real agent a compact transcript (the first
# record, the state records, the last checkpoint and the chain after it)
# in <data>/agent-runtime, and copies what the agent appends there into
# the real transcript, byte for byte, whole lines only.

load agent_helper

setup() {
	agent_require
	[ -x "$QWEN_TOP_BUILDDIR/bin/qwen-acp-child" ] || skip "qwen-acp-child not built"
	SID=44444444-4444-4444-8444-444444444444
}

teardown() {
	agent_teardown
}

# gen_session MIB COMPRESSIONS: SID's transcript in the data dir; REAL its path.
gen_session() {
	local san
	san=$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')
	REAL=$DATA/projects/$san/chats/$SID.jsonl
	COMPACT=$DATA/agent-runtime/projects/$san/chats/$SID.jsonl
	qwen-gen-transcript --mib "$1" --seed 9 --compressions "$2" --session-id "$SID" \
	    --data-dir "$DATA" --workspace "$WS" >/dev/null
	ORIG=$BATS_TEST_TMPDIR/orig/$SID.jsonl
	mkdir -p "${ORIG%/*}"
	cp "$REAL" "$ORIG"
}

# The compact file's size when it was written (from the child's log).
compact_base() {
	sed -n "s/.*session $SID: the agent resumes a compact transcript (\([0-9]*\) of.*/\1/p" \
	    "$BATS_TEST_TMPDIR/err" | tail -1
}

# The turn numbers of FILE's prompt ids (<sessionId>########N), sorted.
turns() {
	grep -o "\"prompt_id\":\"$SID########[0-9]*\"" "$1" | sed 's/.*#\([0-9]*\)"$/\1/' | sort -n
}

# inspect FILE FIELD: what our loader says of FILE.
inspect() {
	qwen-acp-child --inspect "$1" | jq -r ".$2"
}

# The real transcript is the original plus the whole lines the agent
# appended to its compact file, exactly (bytes after the last newline:
# never copied).
real_is_original_plus_agent() {
	local base n
	base=$(compact_base)
	[ -n "$base" ]
	tail -c +"$((base + 1))" "$COMPACT" >"$BATS_TEST_TMPDIR/added"
	n=$(tr -dc '\n' <"$BATS_TEST_TMPDIR/added" | wc -c)
	[ "$n" -gt 0 ]
	{ cat "$ORIG"; head -n "$n" "$BATS_TEST_TMPDIR/added"; } \
	    >"$BATS_TEST_TMPDIR/expect.jsonl"
	cmp "$BATS_TEST_TMPDIR/expect.jsonl" "$REAL"
}

@test "compact: after delegated turns the real transcript loads in our child and in the agent as if the agent wrote it" {
	fake_model_start '[{"when":"first delegated question","text":"ANSWER-ONE."},
	    {"when":"second delegated question","text":"ANSWER-TWO."},
	    {"when":"question to the agent itself","text":"ANSWER-THREE."}]'
	agent_delegate_start
	gen_session 4 8
	local leaf chain
	leaf=$(inspect "$REAL" leafUuid)
	chain=$(inspect "$REAL" activeChainLength)
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	expect 200
	sse_open ev "/session/$SID/events"
	prompt_and_wait ev "A first delegated question"
	prompt_and_wait ev "A second delegated question"
	# The agent resumed a compact file, much smaller than the real one.
	grep -q "session $SID: the agent resumes a compact transcript" "$BATS_TEST_TMPDIR/err"
	[ "$(compact_base)" -lt "$(($(stat -c %s "$ORIG") / 4))" ]
	[ "$(stat -c %a "$DATA/agent-runtime")" = 700 ]
	# Its model request held the history after the last checkpoint.
	local f
	f=$(model_request_with "A second delegated question")
	jq -e '.messages | tostring | contains("ANSWER-ONE.")' "$f"
	jq -e '.messages | tostring | contains("state_snapshot")' "$f"
	sse_stop_all
	serve_stop
	# Byte for byte: the original, then every whole line the agent appended.
	real_is_original_plus_agent
	# It numbered its turns after the old ones, as on the whole transcript.
	local old new
	old=$(turns "$ORIG" | tail -1)
	new=$(turns "$BATS_TEST_TMPDIR/added" | head -1)
	[ -n "$new" ]
	[ "$new" -gt "$old" ]
	# Our loader: the same chain, grown by the agent's records from the old leaf.
	[ "$(inspect "$REAL" gaps)" = 0 ]
	[ "$(inspect "$REAL" malformedLines)" = 0 ]
	[ "$(inspect "$REAL" activeChainLength)" -gt "$chain" ]
	[ "$(inspect "$ORIG" lastActiveCompressionUuid)" = \
	    "$(inspect "$REAL" lastActiveCompressionUuid)" ]
	grep -q "\"parentUuid\":\"$leaf\"" "$REAL"
	agent_delegate_start
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	expect 200
	jq -e '[.compactedReplay[].data.update | select(.sessionUpdate == "agent_message_chunk") | .content.text] | any(. == "ANSWER-TWO.")' <<<"$body"
	serve_stop
	# The agent itself (as the child, on the real transcript) sees both turns.
	agent_serve_start
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	expect 200
	sse_open ev3 "/session/$SID/events"
	prompt_and_wait ev3 "A question to the agent itself"
	f=$(model_request_with "A question to the agent itself")
	jq -e '.messages | tostring | contains("ANSWER-ONE.") and contains("ANSWER-TWO.")' "$f"
	jq -e '.messages | tostring | contains("state_snapshot")' "$f"
}

@test "compact: an agent SIGKILLed mid-turn loses no complete record" {
	fake_model_start "[{\"when\":\"a held question\",\"hold\":\"$BATS_TEST_TMPDIR/never\",\"text\":\"never sent\"}]"
	# No restart after the kill: the compact file stays the one it wrote to.
	agent_delegate_start --agent-prestart no
	gen_session 2 4
	req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
	expect 200
	sse_open ev "/session/$SID/events"
	req POST "/session/$SID/prompt" '{"prompt":[{"type":"text","text":"a held question"}]}'
	expect 202
	local pid=$(jq -r .promptId <<<"$body") agent
	wait_for 180 model_has_request "a held question"
	# The agent wrote the user's record before it asked the model.
	wait_for 20 grep -q "a held question" "$COMPACT"
	agent=$(sed -n 's/.*agent \([0-9]*\) started.*/\1/p' "$BATS_TEST_TMPDIR/err" | tail -1)
	kill -KILL "$agent"
	sse_wait ev ".type == \"turn_error\" and .promptId == \"$pid\"" 60
	sse_stop_all
	serve_stop
	grep -q "a held question" "$REAL"
	real_is_original_plus_agent
	[ "$(inspect "$REAL" malformedLines)" = 0 ]
	[ "$(inspect "$REAL" tornTailBytes)" = 0 ]
}
