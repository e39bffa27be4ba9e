#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The compact resume, with fake-child as the --agent-acp agent (its
# append knobs write a turn's records into the transcript its
# QWEN_RUNTIME_DIR holds, as the real agent does): the compact file
# agrees with the real transcript on what a resume needs, what the agent
# appends is copied back byte for byte and whole lines only, a refused
# compact file falls back to the real one, --agent-compact no turns it off.

load serve_helper

setup() {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	export SERVE_CHILD
}

teardown() {
	serve_teardown
}

# compact_serve KNOBS [qwen-serve args...]: the delegating child, fake-child its agent.
compact_serve() {
	local knobs=$1
	shift
	FAKE_CHILD="known=$SID${knobs:+,$knobs}" serve_start --agent-acp "$FAKE_CHILD_BIN" "$@"
	local san
	san=$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')
	REAL=$DATA/projects/$san/chats/$SID.jsonl
	COMPACT=$DATA/agent-runtime/projects/$san/chats/$SID.jsonl
	ORIG=$BATS_TEST_TMPDIR/orig/$SID.jsonl
	[ ! -e "$REAL" ] || return 0
	qwen-gen-transcript --mib 1 --seed 3 --compressions 3 --session-id "$SID" \
	    --data-dir "$DATA" --workspace "$WS" >/dev/null
	mkdir -p "${ORIG%/*}"
	cp "$REAL" "$ORIG"
}

inspect() {
	qwen-acp-child --inspect "$1" | jq -r ".$2"
}

# The compact file's size when written (from the child's log).
compact_base() {
	sed -n "s/.*session $SID: the agent resumes a compact transcript (\([0-9]*\) of.*/\1/p" \
	    "$BATS_TEST_TMPDIR/err" | tail -1
}

# turn TEXT: one prompt (plain text) to SID, answered.
turn() {
	prompt_turn "ev$RANDOM" "$SID" "{\"prompt\":[{\"type\":\"text\",\"text\":\"$1\"}]}"
}

@test "compact: the compact file agrees with the real one; N delegated turns land in the real transcript byte for byte" {
	compact_serve append
	req POST "/session/$SID/load" '{}'
	expect 200
	wait_for 10 grep -q "session $SID: the agent resumes a compact transcript" "$BATS_TEST_TMPDIR/err"
	# What a resume needs, in a much smaller file: the same leaf, the same
	# last checkpoint, the same model history, no gap; private.
	[ "$(stat -c %s "$COMPACT")" -lt "$(($(stat -c %s "$ORIG") / 2))" ]
	[ "$(inspect "$COMPACT" leafUuid)" = "$(inspect "$ORIG" leafUuid)" ]
	[ "$(inspect "$COMPACT" lastActiveCompressionUuid)" = "$(inspect "$ORIG" lastActiveCompressionUuid)" ]
	[ "$(inspect "$COMPACT" modelHistoryEntries)" = "$(inspect "$ORIG" modelHistoryEntries)" ]
	[ "$(inspect "$COMPACT" gaps)" = 0 ]
	[ "$(head -1 "$COMPACT" | jq -r .uuid)" = "$(head -1 "$ORIG" | jq -r .uuid)" ]
	[ "$(stat -c %a "$DATA/agent-runtime")" = 700 ]
	[ "$(stat -c %a "$COMPACT")" = 600 ]
	local base chain
	base=$(stat -c %s "$COMPACT")
	chain=$(inspect "$ORIG" activeChainLength)
	turn "question one"
	turn "question two"
	turn "question three"
	wait_for 10 grep -q "question three" "$REAL"
	# The real transcript: the original, then the agent's bytes, exactly.
	{ cat "$ORIG"; tail -c +"$((base + 1))" "$COMPACT"; } >"$BATS_TEST_TMPDIR/expect"
	cmp "$BATS_TEST_TMPDIR/expect" "$REAL"
	# Our loader: the old chain and six records more, from the old leaf.
	[ "$(inspect "$REAL" activeChainLength)" -eq "$((chain + 6))" ]
	[ "$(inspect "$REAL" leafUuid)" = "$(tail -1 "$COMPACT" | jq -r .uuid)" ]
	[ "$(inspect "$REAL" gaps)" = 0 ]
	# A fresh load shows the agent's turns.
	serve_stop
	compact_serve append
	req POST "/session/$SID/load" '{}'
	expect 200
	jq -e '[.compactedReplay[].data.update | select(.sessionUpdate == "user_message_chunk") | .content.text] | any(. == "question three")' <<<"$body"
}

@test "compact: an agent killed mid-write: its whole records are copied, its torn line is not" {
	compact_serve append-torn --agent-prestart no
	req POST "/session/$SID/load" '{}'
	expect 200
	sse_open ev "/session/$SID/events"
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"the last question"}]}'
	sse_wait ev ".type == \"turn_error\" and .promptId == \"$PROMPT_ID\"" 20
	grep -q "torn-record" "$COMPACT"
	grep -q "the last question" "$REAL"
	grep -q "fake answer" "$REAL"
	run ! grep -q "torn-record" "$REAL"
	[ "$(inspect "$REAL" malformedLines)" = 0 ]
	[ "$(inspect "$REAL" tornTailBytes)" = 0 ]
	[ "$(tail -c 1 "$REAL" | od -An -c | tr -d ' ')" = '\n' ]
}

@test "compact: a compact file the agent refuses: the real one, linked in, and the log says why without the agent's words" {
	compact_serve append,fail-first=session/resume:-32603
	req POST "/session/$SID/load" '{}'
	expect 200
	wait_for 10 grep -q "session $SID: the agent refused its compact transcript (code -32603)" \
	    "$BATS_TEST_TMPDIR/err"
	run ! grep -q "Injected failure" "$BATS_TEST_TMPDIR/err"
	# The agent now has the real transcript itself.
	wait_for 10 cond "[ \"\$(stat -c %i '$COMPACT')\" = \"\$(stat -c %i '$REAL')\" ]"
	turn "after the fallback"
	grep -q "after the fallback" "$REAL"
	[ "$(grep -c "after the fallback" "$REAL")" -eq 1 ]
}

@test "compact: --agent-compact no: no runtime directory, the agent writes the real transcript" {
	compact_serve append --agent-compact no
	req POST "/session/$SID/load" '{}'
	expect 200
	turn "uncompacted question"
	grep -q "uncompacted question" "$REAL"
	[ ! -e "$DATA/agent-runtime" ]
	run ! grep -q "compact transcript" "$BATS_TEST_TMPDIR/err"
}
