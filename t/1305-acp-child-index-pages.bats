#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen/status/session/transcript (and our older _qwen/session/transcript)
# pages (GET /session/:id/transcript) in a new
# child come from the index a load kept in --cache-dir: the transcript is
# not read again (8 KiB of digests, in the child's debug log: ids and
# numbers only), the pages are those a full pass gives, and a damaged
# block a page uses means a full pass and the same page.
load acp_helper
load index_helper

setup() {
	acp_setup
	index_setup 8 8
	index_session 47
	run drive --cache-dir "$CACHE" <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\"}")
EOF
	[ "$status" -eq 0 ]
	IDX=$(one_index)
}

# pages CACHE-DIR: the newest page and the one before it, by a new child
# with that cache, at debug level.
pages() {
	run drive --cache-dir "$1" --log-level debug <<EOF
$INIT
$(req 1 qwen/status/session/transcript "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"limit\":7,\"direction\":\"backward\"}")
$(req 2 _qwen/session/transcript "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"limit\":7,\"cursor\":\"v1.b.20\"}")
EOF
	[ "$status" -eq 0 ]
	resp 1 | jq -c .result
	resp 2 | jq -c .result
}

@test "pages come from the kept index; the file is not read again" {
	want=$(pages "$BATS_TEST_TMPDIR/fresh")
	grep -q "transcript pages from the cold index" "$ERR"
	[ "$(jq -s '.[0].records' <<<"$want")" -eq 7 ]
	[ "$(jq -s '.[1].records' <<<"$want")" -eq 7 ]
	got=$(pages "$CACHE")
	grep -q "transcript pages from the warm index, 8192 bytes read" "$ERR"
	[ "$got" = "$want" ]
}

@test "a damaged block a page uses: a full pass, the same pages" {
	want=$(pages "$BATS_TEST_TMPDIR/fresh")
	layout=$(qwen-inspect --index-layout "$IDX")
	flip_byte "$IDX" "$(jq '.sections.records[0] + (.records - 1) * .recordSize + 40' <<<"$layout")"
	got=$(pages "$CACHE")
	grep -q "transcript pages from the warm index" "$ERR"
	grep -q "transcript pages from the rescan index" "$ERR"
	[ "$got" = "$want" ]
}

# branch CACHE-DIR NEW-ID: a branch of the whole active history by a new child.
branch() {
	run drive --cache-dir "$1" --log-level debug <<EOF2
$INIT
$(req 1 _qwen/session/branch "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"newSessionId\":\"$2\"}")
EOF2
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r '.result | has("sessionId")')" = true ]
}

@test "a branch from a damaged kept index is written from a full pass" {
	branch "$BATS_TEST_TMPDIR/fresh" "$SID1"
	layout=$(qwen-inspect --index-layout "$IDX")
	# An old record: a page would not use it, a branch copies it.
	flip_byte "$IDX" "$(($(jq '.sections.records[0]' <<<"$layout") + 16384 + 100))"
	branch "$CACHE" "$SID2"
	grep -q "transcript pages from the rescan index" "$ERR"
	# The same records, under the new ids.
	[ "$(sed "s/$SID1/X/g" "$(dirname "$F")/$SID1.jsonl")" = \
	    "$(sed "s/$SID2/X/g" "$(dirname "$F")/$SID2.jsonl")" ]
}

@test "a page through a fresh child keeps the index it built: the next fresh child reads 8 KiB, not the file" {
	pc=$BATS_TEST_TMPDIR/pagecache
	want=$(pages "$pc")
	grep -q "transcript pages from the cold index, $(stat -c %s "$F") bytes read" "$ERR"
	[ "$(find "$pc" -name 'tx-*.idx' | wc -l)" -eq 1 ]
	got=$(pages "$pc")
	grep -q "transcript pages from the warm index, 8192 bytes read" "$ERR"
	[ "$got" = "$want" ]
}

@test "a branch through a fresh child keeps the index it built: the next fresh child's page reads 8 KiB" {
	pc=$BATS_TEST_TMPDIR/pagecache
	branch "$pc" "$SID1"
	grep -q "transcript pages from the cold index" "$ERR"
	want=$(pages "$BATS_TEST_TMPDIR/fresh")
	got=$(pages "$pc")
	grep -q "transcript pages from the warm index, 8192 bytes read" "$ERR"
	[ "$got" = "$want" ]
}
