#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve --cache-dir: the daemon hands the directory to its child (as
# --data-dir), so a load after a restart restores from the index the
# previous child kept there (the child's restore span: index warm, a few
# KiB read) and answers what the cold load answered.
load serve_restore_helper

setup() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	command -v jq >/dev/null || skip "jq not installed"
	CACHE=$BATS_TEST_TMPDIR/cache
	TRACE=$BATS_TEST_TMPDIR/trace.jsonl
}

teardown() {
	rteardown
}

# child_restores: index and bytes_read of each child restore span, in order.
child_restores() {
	jq -c '.resourceSpans[].scopeSpans[].spans[]
	    | select(.name == "qwen-code.daemon.session_restore")
	    | (reduce .attributes[] as $a ({}; .[$a.key] = ($a.value | .stringValue // .intValue)))
	    | {index: .["qwen-code.daemon.session_restore.index"],
	       read: (.["qwen-code.daemon.session_restore.bytes_read"] | tonumber)}' \
	    "$TRACE" 2>/dev/null
}

R='.state._meta["qwen.session.restore"]'

# same: a load answer without what differs between two loads.
same() {
	jq -S "del(.clientId, .createdAt, .eventEpoch, $R.index, $R.bytesRead, $R.indexBytesChecked,
	    (.. | objects | .serverTimestamp))"
}

@test "a load after a restart restores from the index the previous child kept" {
	SERVE_CHILD=$REAL serve_start --cache-dir "$CACHE" --trace-file "$TRACE"
	f=$(qwen-gen-transcript --mib 2 --seed 8 --session-id "$SID" --data-dir "$DATA" \
	    --workspace "$WS")
	size=$(stat -c %s "$f")
	req POST /session/$SID/load '{}'
	expect 200
	cold=$body
	wait_for 10 bash -c "ls '$CACHE'/tx-*.idx"
	serve_stop
	SERVE_CHILD=$REAL serve_start --cache-dir "$CACHE" --trace-file "$TRACE"
	req POST /session/$SID/load '{}'
	expect 200
	[ "$(same <<<"$body")" = "$(same <<<"$cold")" ]
	[ "$(jq -r "$R.index" <<<"$body")" = warm ]
	wait_for 10 bash -c "[ \$(grep -c session_restore '$TRACE') -ge 2 ]"
	run child_restores
	echo "$output"
	[ "$(jq -r .index <<<"${lines[0]}")" = cold ]
	[ "$(jq .read <<<"${lines[0]}")" -ge "$size" ]
	[ "$(jq -r .index <<<"${lines[1]}")" = warm ]
	# The cold load read the file, then what it replayed; the warm one
	# what it replayed and 8 KiB of digests.
	[ "$(jq .read <<<"${lines[1]}")" -le "$(($(jq .read <<<"${lines[0]}") - size + 8192))" ]
	[ "$(jq .read <<<"${lines[1]}")" -eq "$(jq "$R.bytesRead" <<<"$body")" ]
}
