#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A transcript index cache is checked as it is used: a warm restore checks
# the blocks of the index it touches (indexBytesChecked, a counter, never
# a time), a damaged block it does not use changes nothing, and a damaged
# block it uses (a record of the replay window, the chain, the uuid hash)
# means a full pass whose answer is what a fresh pass and the reference
# loader answer.
load test_helper
load oracle_helper
load index_helper

setup() {
	index_setup 8 8
	F=$(qwen-gen-transcript --mib "$MIB" --seed 31 --branches 2 --compressions 2 \
	    --glued 2 --out "$BATS_TEST_TMPDIR/g")
	cached "$F" >/dev/null
	IDX=$(one_index)
	LAYOUT=$(qwen-inspect --index-layout "$IDX")
}

# section NAME: the byte offset of a section of the index cache.
section() {
	jq ".sections.$1[0]" <<<"$LAYOUT"
}

# record N: the byte offset of record N in the index cache.
record() {
	echo $(($(section records) + $1 * $(jq .recordSize <<<"$LAYOUT")))
}

# page: the newest replay page through the cache.
page() {
	qwen-inspect --cache-dir "$CACHE" --replay --page-size 6 "$F"
}

# page_agrees JSON: a cached page is what a fresh pass pages.
page_agrees() {
	[ "$(jq -c 'del(.index, .indexReason, .bytesRead, .indexBytesChecked)' <<<"$1")" = \
	    "$(qwen-inspect --replay --page-size 6 "$F")" ]
}

@test "a warm page checks the blocks it uses, not the index" {
	size=$(jq .size <<<"$LAYOUT")
	[ "$size" -eq "$(stat -c %s "$IDX")" ]
	o=$(page)
	[ "$(state "$o")" = "warm null" ]
	page_agrees "$o"
	checked=$(jq .indexBytesChecked <<<"$o")
	[ "$checked" -gt 0 ]
	[ "$checked" -lt "$((size / 3))" ]
	# The summary walks the whole chain: it checks much more.
	o=$(cached "$F")
	[ "$(state "$o")" = "warm null" ]
	fresh_agrees "$F" "$o"
	[ "$(jq .indexBytesChecked <<<"$o")" -gt "$((checked * 2))" ]
}

@test "a damaged block the page does not use changes nothing; used, it is found" {
	block=$(jq .block <<<"$LAYOUT")
	# An old record, a block away from the first section and the window.
	at=$(($(section records) + block + 100))
	[ "$at" -lt "$(record "$(($(jq .records <<<"$LAYOUT") - 1000))")" ]
	flip_byte "$IDX" "$at"
	o=$(page)
	[ "$(state "$o")" = "warm null" ]
	page_agrees "$o"
	# The summary walks the chain through it.
	o=$(cached "$F")
	[ "$(state "$o")" = "rescan checksum" ]
	fresh_agrees "$F" "$o"
	# Kept again whole.
	o=$(page)
	[ "$(state "$o")" = "warm null" ]
	page_agrees "$o"
}

@test "a damaged record in the replay window: a full pass, the same page" {
	flip_byte "$IDX" "$(($(record "$(($(jq .records <<<"$LAYOUT") - 1))") + 40))"
	o=$(page)
	[ "$(state "$o")" = "rescan checksum" ]
	page_agrees "$o"
	[ "$(state "$(page)")" = "warm null" ]
}

@test "a damaged chain: a full pass, the same summary and page" {
	flip_byte "$IDX" "$(($(section chain) + 4 * $(jq .chain <<<"$LAYOUT") - 2))"
	o=$(cached "$F")
	[ "$(state "$o")" = "rescan checksum" ]
	fresh_agrees "$F" "$o"
	flip_byte "$(one_index)" "$(($(section chain) + 6))"
	o=$(page)
	[ "$(state "$o")" = "rescan checksum" ]
	page_agrees "$o"
}

@test "a damaged uuid hash is found when appended bytes are indexed on top" {
	flip_byte "$IDX" "$(($(section hash) + $(jq '.sections.hash[1]' <<<"$LAYOUT") / 2))"
	# Unused by a page of the unchanged file.
	[ "$(state "$(page)")" = "warm null" ]
	# An appended record is looked up in the hash (a repeat?): checked.
	tail -n 1 "$F" >>"$F"
	o=$(cached "$F")
	[ "$(state "$o")" = "rescan checksum" ]
	fresh_agrees "$F" "$o"
	[ "$(state "$(cached "$F")")" = "warm null" ]
}
