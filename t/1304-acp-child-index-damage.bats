#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child restoring from an index cache checks it as it is used: a
# warm resume reads 8 KiB of the transcript and checks a bounded part of
# the index (_meta["qwen.session.restore"].indexBytesChecked), and a load
# whose replay window lies in a damaged block throws away what it derived
# and answers, from a full pass, exactly what the cold load answered.
load acp_helper
load index_helper

setup() {
	acp_setup
	index_setup 8 8
	index_session 43
}

# load_req ID METHOD: a bulk load (or resume) of SID, a page of 8.
load_req() {
	req "$1" "$2" "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"_meta\":{\"qwen.session.loadReplayMode\":\"bulk\",\"qwen.session.loadReplayPageSize\":8}}"
}

# restore ID METHOD: a child that answers one load_req ID METHOD.
restore() {
	run drive --cache-dir "$CACHE" <<EOF
$INIT
$(load_req "$1" "$2")
EOF
}

# stats ID: the restore counters of answer ID.
stats() {
	resp "$1" | jq -c '.result._meta["qwen.session.restore"]'
}

# same ID JSON: answer ID's counters are JSON's but for where the index came from.
same() {
	[ "$(stats "$1" | jq -c 'del(.index, .bytesRead, .indexBytesChecked)')" = \
	    "$(jq -c 'del(.index, .bytesRead, .indexBytesChecked)' <<<"$2")" ]
}

@test "a warm resume reads 8 KiB and checks a bounded part of the index" {
	restore 1 session/resume
	[ "$(stats 1 | jq -r .index)" = cold ]
	[ "$(stats 1 | jq .indexBytesChecked)" -eq 0 ]
	cold=$(stats 1)
	idx=$(find "$CACHE" -name 'tx-*.idx')
	restore 2 session/resume
	[ "$(stats 2 | jq -r .index)" = warm ]
	[ "$(stats 2 | jq .bytesRead)" -eq 8192 ]
	checked=$(stats 2 | jq .indexBytesChecked)
	[ "$checked" -gt 0 ]
	[ "$checked" -lt "$(($(stat -c %s "$idx") / 3))" ]
	same 2 "$cold"
}

# page_req ID: the newest transcript page of SID.
page_req() {
	req "$1" qwen/status/session/transcript "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"limit\":7,\"direction\":\"backward\"}"
}

@test "a kept index truncated or rewritten in place while in use: no SIGBUS, the same answers" {
	# The pages a cold child answers, and an index cache.
	run drive --cache-dir "$CACHE" <<EOF
$INIT
$(load_req 1 session/load)
$(page_req 2)
EOF
	[ "$status" -eq 0 ]
	local want1=$(replay 1) want2=$(resp 2 | jq -c .result)
	[ "$want2" != null ]
	idx=$(find "$CACHE" -name 'tx-*.idx')
	cp "$idx" "$BATS_TEST_TMPDIR/idx.saved"
	# A new child loads from it (warm), then the file shrinks under the
	# session and later requests use what it holds of the index; then
	# the same with the file rewritten in place with other bytes.
	local mode
	for mode in "truncate -s 4096 '$idx'" "head -c \$(stat -c %s '$idx') /dev/urandom 1<>'$idx'"; do
		cp "$BATS_TEST_TMPDIR/idx.saved" "$idx"
		run drive --cache-dir "$CACHE" <<EOF
$INIT
$(load_req 1 session/load)
shell $mode
$(page_req 2)
$(load_req 3 session/load)
EOF
		[ "$status" -eq 0 ]
		[ "$(stats 1 | jq -r .index)" = warm ]
		[ "$(resp 2 | jq -c .result)" = "$want2" ]
		[ "$(replay 3)" = "$want1" ]
		grep -qx "#exit 0" <<<"$output"
	done
}

@test "a load whose window is in a damaged block answers from a full pass" {
	restore 1 session/load
	[ "$(stats 1 | jq -r .index)" = cold ]
	cold=$(stats 1)
	want=$(replay 1)
	[ "$(jq '.updates | length' <<<"$want")" -gt 0 ]
	idx=$(find "$CACHE" -name 'tx-*.idx')
	layout=$(qwen-inspect --index-layout "$idx")
	# The leaf record: the window's last.
	at=$(jq '.sections.records[0] + (.records - 1) * .recordSize + 40' <<<"$layout")
	flip_byte "$idx" "$at"
	restore 2 session/load
	[ "$status" -eq 0 ]
	[ "$(stats 2 | jq -r .index)" = rescan ]
	[ "$(replay 2)" = "$want" ]
	same 2 "$cold"
	# Kept again whole: warm, the same page.
	restore 3 session/load
	[ "$(stats 3 | jq -r .index)" = warm ]
	[ "$(replay 3)" = "$want" ]
}
