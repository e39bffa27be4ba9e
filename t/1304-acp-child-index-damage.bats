#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child restoring from a kept index checks it as it is used: a
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
