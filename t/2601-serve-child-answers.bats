#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve and answers or transcripts it cannot use: a child's answer the
# framer rejects fails its request at once (502 acp_child_protocol_error,
# never a wait for the restore budget); a line naming no request ends the
# channel, failing what it carried; with the real child, invalid UTF-8 in a
# transcript loads (U+FFFD) beside a working sibling, and a FIFO or a
# symlink transcript is a prompt transcript_unreadable in the catalog's
# REST shape.

load serve_restore_helper

teardown() { rteardown; }

# A budget no test may wait for: an answer that is lost would show as a
# curl timeout long before it.
BUDGET=(--session-restore-timeout-ms 120000)
CURL_MAX=(--max-time 30)

real_serve() {
	real_child_serve "${BUDGET[@]}"
	CHATS=$DATA/projects/$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')/chats
}

@test "an answer with invalid UTF-8 fails its restore at once; the sibling stays" {
	rserve "garble=session/load@$SID:1" "${BUDGET[@]}"
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid)
	req POST /session/$SID/load '{}' "${CURL_MAX[@]}"
	expect 502 ".code == \"acp_child_protocol_error\" and .sessionId == \"$SID\""
	health_wait '.restoresUnsettled == 0 and .inFlight == 0'
	[ "$(child_pid)" = "$pid" ]
	sibling_works "$SID2"
	grep -q 'bad frame' "$BATS_TEST_TMPDIR/err"
}

@test "an unreadable line naming no request ends the channel; the daemon goes on" {
	rserve "garble=session/load@$SID:2" "${BUDGET[@]}"
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid)
	req POST /session/$SID/load '{}' "${CURL_MAX[@]}"
	[ "$code" -ge 500 ]
	health_wait '.restoresUnsettled == 0 and .inFlight == 0' 10
	wait_for 10 bash -c "! kill -0 $pid 2>/dev/null"
	grep -q 'names no request' "$BATS_TEST_TMPDIR/err"
	# A new child takes the next restore.
	req POST /session/$SID2/load '{}' "${CURL_MAX[@]}"
	expect 200
	[ "$(child_pid)" != "$pid" ]
}

@test "real child: a transcript with invalid UTF-8 loads (U+FFFD), a sibling keeps working" {
	real_serve
	sed -i 's/Why is loading slow?/Why is \xff\xfe slow?/' "$CHATS/$SID.jsonl"
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid)
	req POST /session/$SID/load '{}' "${CURL_MAX[@]}"
	expect 200
	iconv -f UTF-8 -t UTF-8 "$BATS_TEST_TMPDIR/body" >/dev/null
	grep -q $'Why is \uFFFD\uFFFD slow?' "$BATS_TEST_TMPDIR/body"
	[ "$(child_pid)" = "$pid" ]
	sibling_works "$SID2"
	sibling_works "$SID"
	! grep -q 'bad frame' "$BATS_TEST_TMPDIR/err" || false
}

@test "real child: a FIFO transcript answers transcript_unreadable at once" {
	real_serve
	rm "$CHATS/$SID.jsonl"
	mkfifo "$CHATS/$SID.jsonl"
	req POST /session/$SID/load '{}' "${CURL_MAX[@]}"
	expect 500 ".code == \"transcript_unreadable\" and .sessionId == \"$SID\""
	req POST /session/$SID2/load '{}' "${CURL_MAX[@]}"
	expect 200
	sibling_works "$SID2"
}

@test "real child: a symlinked transcript is refused and its target left alone" {
	real_serve
	mv "$CHATS/$SID.jsonl" "$BATS_TEST_TMPDIR/victim.jsonl"
	ln -s "$BATS_TEST_TMPDIR/victim.jsonl" "$CHATS/$SID.jsonl"
	local before=$(cksum <"$BATS_TEST_TMPDIR/victim.jsonl")
	req POST /session/$SID/load '{}' "${CURL_MAX[@]}"
	expect 500 ".code == \"transcript_unreadable\" and .sessionId == \"$SID\""
	req POST /session/$SID/prompt "$P"
	[ "$code" -ge 400 ]
	[ "$(cksum <"$BATS_TEST_TMPDIR/victim.jsonl")" = "$before" ]
}

@test "--compacted-replay-max-bytes cannot exceed what one child frame carries" {
	run timeout 20 qwen-serve --compacted-replay-max-bytes 268435456 \
	    --socket "$BATS_TEST_TMPDIR/x.sock" --no-tcp
	[ "$status" -eq 2 ]
	[[ "$output" == *"67043328"* ]]
}

@test "a full child's refusal is 503 session_limit_exceeded with its template filled" {
	rserve "full=session/load@$SID" "${BUDGET[@]}"
	make_transcript "$SID"
	req POST /session/$SID/load '{}' "${CURL_MAX[@]}"
	expect 503 '.code == "session_limit_exceeded"'
	[ "$(jq -r .error <<<"$body")" = "Session limit reached (4096 per workspace child)" ]
	[ "$(header Retry-After)" = 5 ]
}
