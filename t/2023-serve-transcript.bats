#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: GET /session/:id/transcript, paged history from the real
# qwen-acp-child's index, live or not: forward and backward paging,
# cursors, beforeRecordId, upstream's errors, and the real SDK's
# getSessionTranscriptPage.

load serve_helper
bats_require_minimum_version 1.5.0

setup() {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
}

teardown() {
	serve_teardown
}

# A generated transcript for SID (about 1 MiB, a few hundred records).
gen() {
	serve_start "$@"
	qwen-gen-transcript --mib 1 --seed 7 --data-dir "$DATA" --workspace "$WS" \
	    --session-id "$SID" >/dev/null
	TX=$(ls "$DATA"/projects/*/chats/"$SID".jsonl)
	CHAIN=$(qwen-inspect "$TX" | jq .activeChainLength)
	[ "$CHAIN" -gt 200 ]
}

# page QUERY: GET the transcript with QUERY; $code, $body.
page() {
	req GET "/session/$SID/transcript$1"
}

# The source record ids of a page's events, in order, one per line.
record_ids() {
	jq -r '.events[].data._meta.qwenTranscript.sourceRecordIds // [] | .[]' <<<"$body" | uniq
}

# walk FIRST-QUERY LIMIT: follow nextCursor to the end; the events of every
# page, in page order, into $BATS_TEST_TMPDIR/walk (one JSON array per page).
walk() {
	local q=$1 limit=$2 n=0
	: >"$BATS_TEST_TMPDIR/walk"
	while :; do
		page "$q"
		expect 200 ".v == 1 and .sessionId == \"$SID\" and (.events | type) == \"array\""
		jq -c .events <<<"$body" >>"$BATS_TEST_TMPDIR/walk"
		n=$((n + 1))
		[ "$n" -lt 100 ]
		[ "$(jq -r .hasMore <<<"$body")" = true ] || break
		q="?limit=$limit&cursor=$(jq -r .nextCursor <<<"$body")"
	done
	PAGES=$n
}

@test "forward pages from the oldest record cover the active history once, in order" {
	gen
	walk "?limit=50" 50
	[ "$PAGES" = $(( (CHAIN + 49) / 50 )) ]
	# The same updates as the child's whole-history projection.
	qwen-inspect --replay --max-bytes 1000000000 --max-updates 1000000 "$TX" |
	    jq -c '[.updates[] | select(._meta.qwenTranscript.sourceRecordIds != null) | ._meta.qwenTranscript.sourceRecordIds]' >"$BATS_TEST_TMPDIR/want"
	jq -s -c '[add[] | .data._meta.qwenTranscript.sourceRecordIds | select(. != null)]' \
	    "$BATS_TEST_TMPDIR/walk" >"$BATS_TEST_TMPDIR/got"
	cmp "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
	jq -e -s 'all(add[]; .v == 1 and .type == "session_update" and has("id") == false and (.data.sessionUpdate | type) == "string")' \
	    "$BATS_TEST_TMPDIR/walk" >/dev/null
}

@test "direction=backward pages from the newest record; beforeRecordId ends a page before that record" {
	gen
	local fwd_all
	walk "?limit=40" 40
	fwd_all=$(jq -s -c add "$BATS_TEST_TMPDIR/walk")
	walk "?limit=40&direction=backward" 40
	[ "$PAGES" = $(( (CHAIN + 39) / 40 )) ]
	# Backward pages, put back in time order, are the same history.
	[ "$(tac "$BATS_TEST_TMPDIR/walk" | jq -s -c add)" = "$fwd_all" ]
	# The newest page ends with the last record; its cursor goes back.
	page "?limit=10&direction=backward"
	expect 200 '.hasMore == true and (.nextCursor | type) == "string"'
	local newest first
	newest=$(record_ids | tail -1)
	first=$(record_ids | head -1)
	[ "$newest" = "$(jq -r '[.[].data._meta.qwenTranscript.sourceRecordIds // [] | .[]] | last' <<<"$fwd_all")" ]
	# beforeRecordId: the page just before the newest page's first record.
	page "?limit=10&beforeRecordId=$first"
	expect 200 '.hasMore == true'
	run ! grep -qx "$first" <(record_ids)
	[ "$(record_ids | wc -l)" -ge 1 ]
	page "?limit=10&cursor=$(jq -r .nextCursor <<<"$body")"
	expect 200
}

@test "errors: limit, cursor, direction, beforeRecordId, combinations, unknown session" {
	gen
	for l in 0 501 abc -1 1.5 ''; do
		page "?limit=$l"
		expect 400 '.code == "invalid_transcript_limit"'
	done
	page "?limit=501"
	expect 400 '.maxLimit == 500'
	page "?direction=forward"
	expect 400 '.code == "invalid_transcript_cursor"'
	page "?cursor="
	expect 400 '.code == "invalid_transcript_cursor"'
	for c in nonsense v1.x.3 v1.f. v1.f.-1 v2.f.1 v1.f.99999999; do
		page "?cursor=$c"
		expect 400 ".code == \"invalid_transcript_cursor\" and .sessionId == \"$SID\""
	done
	page "?beforeRecordId=no-such-record"
	expect 400 '.code == "invalid_transcript_cursor"'
	page "?beforeRecordId=$(printf 'x%.0s' $(seq 201))"
	expect 400 '.code == "invalid_transcript_cursor"'
	page "?direction=backward&cursor=v1.b.3"
	expect 400 '.code == "invalid_transcript_cursor"'
	page "?cursor=v1.f.3&beforeRecordId=x"
	expect 400 '.code == "invalid_transcript_cursor"'
	page "?atRecordId=x&snapshot=y"
	expect 400 '.code == "invalid_transcript_cursor"'
	page "?compactedReplayMode=tiny"
	expect 400 '.code == "invalid_compacted_replay_mode"'
	req GET /session/$SID2/transcript
	expect 404 ".code == \"session_not_found\" and .sessionId == \"$SID2\""
	req GET /capabilities
	expect 200 '(.features | index("session_transcript")) != null'
}

@test "a live session's pages include what it appended since it was loaded" {
	gen
	req POST /session/$SID/load '{}'
	expect 200
	page "?limit=5&direction=backward"
	expect 200
	local before
	before=$(record_ids | tail -1)
	sse_open a /session/$SID/events
	req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"paging marker"}]}'
	expect 202
	sse_wait a '.type == "turn_complete"' 20
	page "?limit=5&direction=backward"
	expect 200
	[ "$(record_ids | tail -1)" != "$before" ]
	jq -e 'any(.events[]; .data.sessionUpdate == "user_message_chunk" and .data.content.text == "paging marker")' <<<"$body" >/dev/null
}

@test "SDK: getSessionTranscriptPage pages both ways and sees the 400" {
	gen
	sdk_run transcript
	[ "$status" -eq 0 ]
	walk "?limit=100" 100
	[[ "$output" == *"EVENTS=$(jq -s 'add | length' "$BATS_TEST_TMPDIR/walk")"* ]]
}

@test "load historyPageSize: a short replay, historyHasMore and its anchor; the rest pages from the anchor" {
	gen
	req POST /session/$SID/load '{"historyPageSize":20}'
	expect 200 '.historyHasMore == true and (.historyAnchorRecordId | type) == "string"'
	local anchor n
	anchor=$(jq -r .historyAnchorRecordId <<<"$body")
	n=$(jq '.compactedReplay | length' <<<"$body")
	req DELETE /session/$SID
	expect 204
	req POST /session/$SID/load '{}'
	expect 200
	[ "$n" -lt "$(jq '.compactedReplay | length' <<<"$body")" ]
	# What the short replay left out: the page before its anchor.
	page "?limit=20&beforeRecordId=$anchor"
	expect 200 '(.events | length) > 0'
	run ! grep -qx "$anchor" <(record_ids)
}
