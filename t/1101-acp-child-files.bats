#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child and hostile transcript files: invalid UTF-8 is replayed as
# U+FFFD (fast and json-c paths alike), a FIFO or a symlink where a
# transcript should be is a prompt transcript_unreadable naming the session
# (never a hang), and nothing is ever appended through a symlink.
load acp_helper

setup() {
	command -v jq >/dev/null || skip "jq not installed"
	acp_setup
}

BULK='"_meta":{"qwen.session.loadReplayMode":"bulk"}'

# utf8_ok FILE: FILE is valid UTF-8 throughout.
utf8_ok() {
	iconv -f UTF-8 -t UTF-8 "$1" >/dev/null
}

# bad_utf8 SID: give SID's transcript two invalid bytes in a user text and
# a truncated sequence in an assistant text.
bad_utf8() {
	make_transcript "$1" 2
	sed -i -e 's/question 1/quest\xff\xfeion 1/' -e 's/answer 2/answer \xe2\x82 2/' \
	    "$CHATS/$1.jsonl"
}

@test "invalid UTF-8 in a transcript: the load answers U+FFFD, a sibling keeps working" {
	bad_utf8 "$SID1"
	make_transcript "$SID2" 1
	run drive <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\",$BULK}")
$(req 2 session/load "{\"sessionId\":\"$SID1\"}")
$(req 3 session/resume "{\"sessionId\":\"$SID2\"}")
$(prompt_req 4 "$SID2" hello)
EOF
	[ "$status" -eq 0 ]
	child_lines >"$BATS_TEST_TMPDIR/out"
	utf8_ok "$BATS_TEST_TMPDIR/out"
	# Bulk and legacy replay both carry the text, bad bytes as U+FFFD.
	[ "$(resp 1 | jq -r '.result._meta["qwen.session.loadReplay"].updates[0].content.text')" = \
	    $'quest\uFFFD\uFFFDion 1' ]
	grep -q $'answer \uFFFD\uFFFD 2' "$BATS_TEST_TMPDIR/out"
	[ "$(resp 2 | jq '.result._meta["qwen.session.replayInfo"].count')" -eq 4 ]
	# The sibling on the same child is unaffected.
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].chainRecords')" -eq 2 ]
	[ "$(resp 4 | jq -r .result.stopReason)" = end_turn ]
}

@test "invalid UTF-8: the fast and json-c projections agree byte for byte" {
	command -v qwen-inspect >/dev/null || skip "qwen-inspect not built"
	bad_utf8 "$SID1"
	f="$CHATS/$SID1.jsonl"
	run qwen-inspect --replay-compare "$f"
	[ "$status" -eq 0 ]
	[ "$(jq -r 'select(.same != null) | .same' <<<"$output")" = true ]
	qwen-inspect --replay "$f" | jq -c .updates >"$BATS_TEST_TMPDIR/fast"
	qwen-inspect --replay --jsonc "$f" | jq -c .updates >"$BATS_TEST_TMPDIR/jsonc"
	cmp "$BATS_TEST_TMPDIR/fast" "$BATS_TEST_TMPDIR/jsonc"
	utf8_ok "$BATS_TEST_TMPDIR/fast"
	grep -q $'quest\uFFFD\uFFFDion' "$BATS_TEST_TMPDIR/fast"
}

@test "a FIFO named like a transcript: a prompt transcript_unreadable, no hang" {
	mkdir -p "$CHATS"
	mkfifo "$CHATS/$SID1.jsonl"
	make_transcript "$SID2" 1
	DRIVE_TIMEOUT=20 run drive <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\"}")
$(req 2 session/resume "{\"sessionId\":\"$SID1\"}")
$(req 3 session/resume "{\"sessionId\":\"$SID2\"}")
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r .error.data.errorKind)" = transcript_unreadable ]
	resp 1 | jq -r .error.message | grep -q "$SID1"
	[ "$(resp 2 | jq -r .error.data.errorKind)" = transcript_unreadable ]
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].chainRecords')" -eq 2 ]
}

@test "a symlinked transcript is refused; its target is never appended to" {
	make_transcript "$SID1" 1
	mv "$CHATS/$SID1.jsonl" "$BATS_TEST_TMPDIR/victim.jsonl"
	ln -s "$BATS_TEST_TMPDIR/victim.jsonl" "$CHATS/$SID1.jsonl"
	before=$(cksum <"$BATS_TEST_TMPDIR/victim.jsonl")
	run drive <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\"}")
$(prompt_req 2 "$SID1" hello)
$(req 3 session/resume "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r .error.data.errorKind)" = transcript_unreadable ]
	resp 1 | jq -r .error.message | grep -q "$SID1"
	[ "$(resp 2 | jq -r .error.code)" = -32002 ]
	[ "$(resp 3 | jq -r .error.data.errorKind)" = transcript_unreadable ]
	[ "$(cksum <"$BATS_TEST_TMPDIR/victim.jsonl")" = "$before" ]
}

@test "a transcript swapped for a symlink after the load: appends stay in the file" {
	make_transcript "$SID1" 1
	cp "$CHATS/$SID1.jsonl" "$BATS_TEST_TMPDIR/victim.jsonl"
	before=$(cksum <"$BATS_TEST_TMPDIR/victim.jsonl")
	# The first record write of the prompt is cut short: the truncate-back
	# must cut the transcript the child opened, not the link's target.
	QWEN_ACP_FAULT_SHORT_WRITE=1 run drive <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\"}")
shell mv "$CHATS/$SID1.jsonl" "$BATS_TEST_TMPDIR/moved.jsonl" && ln -s "$BATS_TEST_TMPDIR/victim.jsonl" "$CHATS/$SID1.jsonl"
$(prompt_req 2 "$SID1" hello)
$(prompt_req 3 "$SID1" again)
EOF
	[ "$status" -eq 0 ]
	[ "$(cksum <"$BATS_TEST_TMPDIR/victim.jsonl")" = "$before" ]
	[ "$(resp 2 | jq -r .error.data.errorKind)" = transcript_write_failed ]
	[ "$(resp 3 | jq -r .result.stopReason)" = end_turn ]
	all_lines_parse "$BATS_TEST_TMPDIR/moved.jsonl"
	grep -q '"again"' "$BATS_TEST_TMPDIR/moved.jsonl"
}

@test "a replay bound past the frame cap is lowered: the answer fits, partial" {
	make_transcript "$SID1" 1500
	[ "$(stat -c %s "$CHATS/$SID1.jsonl")" -gt 600000 ]
	run drive --max-frame-bytes 262144 --replay-max-bytes 100000000 <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\",$BULK}")
EOF
	[ "$status" -eq 0 ]
	child_lines >"$BATS_TEST_TMPDIR/out"
	[ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$BATS_TEST_TMPDIR/out")" -le 262144 ]
	[ "$(resp 1 | jq '.result._meta["qwen.session.loadReplay"].partial')" = true ]
	[ "$(resp 1 | jq '.result._meta["qwen.session.loadReplay"].updates | length')" -gt 100 ]
	grep -q 'lowered to 196608' "$ERR"
}
