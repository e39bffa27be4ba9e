#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Through qwen-serve, after a restart: a resume from the index the previous
# child kept checks a bounded part of it and reads 8 KiB of the transcript,
# and a load whose window is in a damaged block of it answers, from a full
# pass, what the cold load answered (the restore counters say rescan).
load serve_restore_helper
load index_helper

setup() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	index_setup 8 8
}

teardown() {
	rteardown
}

R='.state._meta["qwen.session.restore"]'

# same: a restore answer without what differs between two restores.
same() {
	jq -S "del(.clientId, .createdAt, .eventEpoch, $R.index, $R.bytesRead,
	    $R.indexBytesChecked, (.. | objects | .serverTimestamp))"
}

# restart: a new daemon (and child) on the same cache.
restart() {
	serve_stop
	SERVE_CHILD=$REAL serve_start --cache-dir "$CACHE"
}

@test "after a restart: a bounded warm resume; a damaged window, a full pass" {
	SERVE_CHILD=$REAL serve_start --cache-dir "$CACHE"
	qwen-gen-transcript --mib "$MIB" --seed 9 --session-id "$SID" --data-dir "$DATA" \
	    --workspace "$WS" >/dev/null
	req POST /session/$SID/load '{}'
	expect 200
	cold=$body
	wait_for 10 bash -c "ls '$CACHE'/tx-*.idx"
	idx=$(one_index)
	restart
	req POST /session/$SID/resume '{}'
	expect 200
	[ "$(jq -r "$R.index" <<<"$body")" = warm ]
	[ "$(jq "$R.bytesRead" <<<"$body")" -eq 8192 ]
	[ "$(jq "$R.indexBytesChecked" <<<"$body")" -gt 0 ]
	[ "$(jq "$R.indexBytesChecked" <<<"$body")" -lt "$(($(stat -c %s "$idx") / 3))" ]
	restart
	layout=$(qwen-inspect --index-layout "$idx")
	flip_byte "$idx" "$(jq '.sections.records[0] + (.records - 2) * .recordSize + 8' <<<"$layout")"
	req POST /session/$SID/load '{}'
	expect 200
	[ "$(jq -r "$R.index" <<<"$body")" = rescan ]
	[ "$(same <<<"$body")" = "$(same <<<"$cold")" ]
}
