#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child: the session writer lease between processes.
load acp_helper

setup() { acp_setup; }

# A second child runs while the first one (in the background) holds SID1.
@test "a second child writing the same session fails with -32020 until the first closes" {
	make_transcript "$SID1" 1
	fifo="$BATS_TEST_TMPDIR/fifo"
	mkfifo "$fifo"
	drive <"$fifo" >"$BATS_TEST_TMPDIR/first" 3>&- &
	exec 4>"$fifo"
	cat >&4 <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
EOF
	wait_for 10 grep -q '"id":1,' "$BATS_TEST_TMPDIR/first"
	[ -e "$LOCKS/$SID1.lock" ]
	jq -e --arg sid "$SID1" '.session_id == $sid and (.pid | type == "number") and
	    (.hostname | type == "string") and (.owner_id | type == "string") and
	    .process_kind == "qwen-acp-child" and (.acquired_at | type == "string")' "$LOCKS/$SID1.lock"
	run drive <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\"}")
$(req 2 session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID2\"}}")
EOF
	[ "$(resp 1 | jq .error.code)" = -32020 ]
	[ "$(resp 1 | jq -r .error.data.errorKind)" = session_writer_conflict ]
	[ "$(resp 2 | jq -r .result.sessionId)" = "$SID2" ]
	# The first child closes the session: the lease is free for the second.
	cat >&4 <<EOF
$(req 2 qwen/control/session/close "{\"sessionId\":\"$SID1\"}")
EOF
	wait_for 10 grep -q '"id":2,' "$BATS_TEST_TMPDIR/first"
	run drive <<EOF
$INIT
$(prompt_req 1 "$SID1" "x")
$(req 2 session/resume "{\"sessionId\":\"$SID1\"}")
$(prompt_req 3 "$SID1" "now mine")
EOF
	[ "$(resp 1 | jq .error.code)" = -32002 ]
	[ "$(resp 2 | jq '.result._meta["qwen.session.restore"].records')" = 2 ]
	[ "$(resp 3 | jq -r .result.stopReason)" = end_turn ]
	exec 4>&-
	wait
	[ -z "$(ls "$LOCKS")" ]
}

@test "the first child's prompts keep working while the second is refused" {
	fifo="$BATS_TEST_TMPDIR/fifo"
	mkfifo "$fifo"
	drive <"$fifo" >"$BATS_TEST_TMPDIR/first" 3>&- &
	exec 4>"$fifo"
	cat >&4 <<EOF
$INIT
$(req 1 session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID1\"}}")
$(prompt_req 2 "$SID1" "one")
EOF
	wait_for 10 grep -q '"id":2,' "$BATS_TEST_TMPDIR/first"
	run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(resp 1 | jq .error.code)" = -32020 ]
	cat >&4 <<EOF
$(prompt_req 3 "$SID1" "two")
EOF
	exec 4>&-
	wait
	output=$(cat "$BATS_TEST_TMPDIR/first")
	[ "$(resp 3 | jq -r .result.stopReason)" = end_turn ]
	all_lines_parse "$CHATS/$SID1.jsonl"
	[ "$(wc -l <"$CHATS/$SID1.jsonl")" -eq 4 ]
}

@test "a lock whose owner pid is dead on this host is reclaimed" {
	make_transcript "$SID1" 1
	sh -c 'exit 0' &
	dead=$!
	wait "$dead"
	mkdir -p "$LOCKS"
	printf '{"schema_version":2,"state":"active","session_id":"%s","owner_id":"old-owner","pid":%d,"hostname":"%s","process_kind":"qwen-acp-child","acquired_at":"2026-01-01T00:00:00.000Z"}\n' \
	    "$SID1" "$dead" "$(hostname)" >"$LOCKS/$SID1.lock"
	run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
shell jq -e '.owner_id != "old-owner"' "$LOCKS/$SID1.lock" >/dev/null
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].records')" = 2 ]
	[ ! -e "$LOCKS/$SID1.lock" ]
}

@test "a reused pid (different start time) counts as dead" {
	make_transcript "$SID1" 1
	mkdir -p "$LOCKS"
	printf '{"session_id":"%s","owner_id":"old-owner","pid":%d,"process_start_identity":"linux:nope:1","hostname":"%s"}\n' \
	    "$SID1" "$$" "$(hostname)" >"$LOCKS/$SID1.lock"
	run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].records')" = 2 ]
}

@test "a live owner, or an owner on another host, is never reclaimed" {
	make_transcript "$SID1" 1
	mkdir -p "$LOCKS"
	printf '{"session_id":"%s","owner_id":"live","pid":%d,"hostname":"%s"}\n' \
	    "$SID1" "$$" "$(hostname)" >"$LOCKS/$SID1.lock"
	run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(resp 1 | jq .error.code)" = -32020 ]
	[[ "$(resp 1 | jq -r .error.message)" == *"pid $$"* ]]
	[ "$(jq -r .owner_id "$LOCKS/$SID1.lock")" = live ]
	printf '{"session_id":"%s","owner_id":"remote","pid":999999999,"hostname":"some-other-host"}\n' \
	    "$SID1" >"$LOCKS/$SID1.lock"
	run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(resp 1 | jq .error.code)" = -32020 ]
	[ "$(jq -r .owner_id "$LOCKS/$SID1.lock")" = remote ]
}

@test "the lease directory is private" {
	run drive <<EOF
$INIT
$(req 1 session/new '{}')
EOF
	[ "$(stat -c %a "$LOCKS")" = 700 ]
}

# A restore takes its lease while it reads the transcript: a read that
# fails gives the lease back, so the next restore is not its conflict.
@test "a restore whose transcript read fails gives back the lease it took meanwhile" {
	make_transcript "$SID1" 1
	QWEN_ACP_FAULT_READ=1 run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
$(req 2 session/resume "{\"sessionId\":\"$SID1\"}")
$(req 3 qwen/control/session/close "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r .error.data.errorKind)" = transcript_unreadable ]
	[ "$(resp 2 | jq '.result._meta["qwen.session.restore"].records')" = 2 ]
	[ -z "$(ls "$LOCKS")" ]
}
