#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child: a transcript page near the end of a long session, whose
# plans count the tokens of every record before the page, reads those
# records once per child: the next pages take the kept sums (by the bytes
# each page read, in the debug log: numbers only), and answer the same.
load acp_helper
load index_helper

setup() {
	acp_setup
	index_setup 8 4
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
