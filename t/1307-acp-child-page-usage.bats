#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child: a transcript page near the end of a long session, whose
# plans count the tokens of every record before the page, reads those
# records once per child: the next pages take the kept sums (by the bytes
# each page read, in the debug log: numbers only), and answer the same.
# The sums are kept beside the index cache (tx-<hash>.sum), so a fresh
# child's page reads what a later page of the first child read, and the
# digests that check them; a damaged or stale file is never used.  A fresh
# child reads the blocks of the kept index its page uses, not all of it.
load acp_helper
load index_helper

setup() {
	acp_setup
	# 8 MiB under the sanitizers too: the page's blocks are a fixed cost,
	# so a smaller transcript's index is not twice what a page reads.
	index_setup 8 8
	index_session 47
}

# page ID LIMIT CURSOR: one page request (backward from CURSOR, or the end).
page() {
	local c=
	[ -z "$3" ] || c=",\"cursor\":\"$3\""
	req "$1" qwen/status/session/transcript "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"limit\":$2,\"direction\":\"backward\"$c}"
}

# page_reads N: the bytes the Nth page of the debug log read.
page_reads() {
	sed -n 's/.*transcript page of [0-9]* records, \([0-9]*\) bytes read.*/\1/p' "$ERR" |
	    sed -n "${1}p"
}

@test "the pages of a long session count the records before them once" {
	run drive --log-level debug <<EOF
$INIT
$(page 1 200 "")
$(page 2 200 "")
EOF
	[ "$status" -eq 0 ]
	resp 1 | jq -c .result >"$BATS_TEST_TMPDIR/a"
	resp 2 | jq -c .result >"$BATS_TEST_TMPDIR/b"
	# The page has a plan, so its stats count the records before it.
	jq -e '[.events[] | select(.data.sessionUpdate == "plan")] | length > 0' \
	    "$BATS_TEST_TMPDIR/a" >/dev/null
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	first=$(page_reads 1)
	second=$(page_reads 2)
	echo "first page read $first bytes, the second $second" >&2
	[ "$first" -gt 0 ]
	[ "$second" -gt 0 ]
	[ $((second * 2)) -lt "$first" ]
}

# plans FILE: the plan updates of a page, in order.
plans() {
	jq -c '[.events[] | select(.data.sessionUpdate == "plan")]' "$1"
}

@test "a plan says the same on pages that start at other kept sums" {
	# The newest 200 records and the newest 500 start 300 records apart,
	# past different kept sums (one every 256 records), with other records
	# after them: a plan on both pages says the same only when the sums
	# and the records after them add up.
	run drive --log-level debug <<EOF
$INIT
$(page 1 200 "")
$(page 2 500 "")
EOF
	[ "$status" -eq 0 ]
	resp 1 | jq -c .result >"$BATS_TEST_TMPDIR/short"
	resp 2 | jq -c .result >"$BATS_TEST_TMPDIR/long"
	[ "$(jq '.records' "$BATS_TEST_TMPDIR/short")" -eq 200 ]
	[ "$(jq '.records' "$BATS_TEST_TMPDIR/long")" -eq 500 ]
	n=$(plans "$BATS_TEST_TMPDIR/short" | jq length)
	[ "$n" -gt 0 ]
	[ "$(plans "$BATS_TEST_TMPDIR/long" | jq -c ".[-$n:]")" = \
	    "$(plans "$BATS_TEST_TMPDIR/short")" ]
	plans "$BATS_TEST_TMPDIR/short" | jq -e 'all(.[]; .data._meta.stats.promptTokens > 0)' >/dev/null
}

# fresh N: a fresh child with the index cache in $CACHE answers the last
# 200 records: the result in $BATS_TEST_TMPDIR/pN, its debug log in
# $BATS_TEST_TMPDIR/errN.
fresh() {
	: >"$ERR"
	run drive --cache-dir "$CACHE" --log-level debug <<EOF
$INIT
$(page 1 200 "")
EOF
	[ "$status" -eq 0 ]
	resp 1 | jq -c .result >"$BATS_TEST_TMPDIR/p$1"
	cp "$ERR" "$BATS_TEST_TMPDIR/err$1"
}

# fresh_reads N: the bytes fresh child N read for its page.
fresh_reads() {
	sed -n 's/.*transcript page of [0-9]* records, \([0-9]*\) bytes read.*/\1/p' \
	    "$BATS_TEST_TMPDIR/err$1"
}

# index_reads N: the bytes of the index cache fresh child N read by its page.
index_reads() {
	sed -n 's/.*transcript page of .* bytes read, \([0-9]*\) of the index cache.*/\1/p' \
	    "$BATS_TEST_TMPDIR/err$1"
}

# later_reads: a child's second page of the last 200 records, its sums in
# memory (kept in another cache directory): its bytes read are page_reads 2.
later_reads() {
	: >"$ERR"
	run drive --cache-dir "$BATS_TEST_TMPDIR/other" --log-level debug <<EOF
$INIT
$(page 1 200 "")
$(page 2 200 "")
EOF
	[ "$status" -eq 0 ]
	page_reads 2
}

# sums_file: the kept sums of the session, beside its index.
sums_file() {
	local idx
	idx=$(one_index)
	echo "${idx%.idx}.sum"
}

@test "a fresh child's page takes the sums the last child kept" {
	fresh 1
	[ -s "$(sums_file)" ]
	fresh 2
	grep -q 'transcript pages from the warm index' "$BATS_TEST_TMPDIR/err2"
	cmp "$BATS_TEST_TMPDIR/p1" "$BATS_TEST_TMPDIR/p2"
	later_reads
	later=$(page_reads 2)
	echo "fresh pages read $(fresh_reads 1) then $(fresh_reads 2) bytes," \
	    "a later page $later" >&2
	[ "$later" -gt 0 ]
	# The page's records and those since the last sum, and the two 4 KiB
	# digests that check the sums: nothing before.
	[ "$(fresh_reads 2)" -le $((later + 8192)) ]
	[ "$(fresh_reads 1)" -gt $((later * 2)) ]
}

@test "a fresh child's page reads the blocks of the index it uses, not the index" {
	fresh 1
	size=$(stat -c %s "$(one_index)")
	fresh 2
	grep -q 'transcript pages from the warm index' "$BATS_TEST_TMPDIR/err2"
	cmp "$BATS_TEST_TMPDIR/p1" "$BATS_TEST_TMPDIR/p2"
	read=$(index_reads 2)
	echo "the page read $read bytes of an index of $size" >&2
	[ "$read" -gt 0 ]
	[ $((read * 2)) -lt "$size" ]
}

@test "damaged kept sums are not used, and are made again" {
	fresh 1
	f=$(sums_file)
	# A byte of the last sum's prompt tokens: the one the page starts from.
	flip_byte "$f" $(($(stat -c %s "$f") - 24 + 6))
	fresh 2
	cmp "$BATS_TEST_TMPDIR/p1" "$BATS_TEST_TMPDIR/p2"
	[ "$(fresh_reads 2)" -eq "$(fresh_reads 1)" ]
	fresh 3
	cmp "$BATS_TEST_TMPDIR/p1" "$BATS_TEST_TMPDIR/p3"
	later_reads
	[ "$(fresh_reads 3)" -le $(($(page_reads 2) + 8192)) ]
}

@test "kept sums of a transcript rewritten since are not used" {
	fresh 1
	[ -s "$(sums_file)" ]
	# Other token counts, the file longer, rewritten in place (same inode).
	sed 's/"promptTokenCount":\([0-9]\)/"promptTokenCount":1\1/g' "$F" \
	    >"$BATS_TEST_TMPDIR/new"
	cat "$BATS_TEST_TMPDIR/new" >"$F"
	fresh 2
	rm -rf "$CACHE"
	fresh 3
	cmp "$BATS_TEST_TMPDIR/p2" "$BATS_TEST_TMPDIR/p3"
	run ! cmp -s "$BATS_TEST_TMPDIR/p1" "$BATS_TEST_TMPDIR/p2"
}
