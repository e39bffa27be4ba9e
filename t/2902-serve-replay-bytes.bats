#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve forwards a load's replay as the child's bytes: the answer's
# compactedReplay, put together around the child's encoded updates, is
# byte for byte what parsing and encoding every update again gives
# (QWEN_SERVE_REPLAY_REENCODE=1, the json-c path), with escapes, unicode
# and odd numbers in the transcript, whole or cut to the byte budget, and
# through the ACP-over-HTTP bridge, which parses them, too; and a
# transcript page's events, forwarded as the child's bytes as well.
load serve_acp_helper

setup() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	command -v jq >/dev/null || skip "jq not installed"
}

teardown() {
	rteardown
}

# load_both [qwen-serve args...]: the load's body through the json-c path
# ($BATS_TEST_TMPDIR/jsonc) and from the child's bytes (.../bytes).
load_both() {
	local how
	for how in jsonc bytes; do
		if [ "$how" = jsonc ]; then
			QWEN_SERVE_REPLAY_REENCODE=1 SERVE_CHILD=$REAL serve_start "$@"
		else
			SERVE_CHILD=$REAL serve_start "$@"
		fi
		[ -n "${F:-}" ] || make_odd_transcript
		req POST /session/$SID/load '{}'
		expect 200
		masked <<<"$body" >"$BATS_TEST_TMPDIR/$how"
		serve_stop
		grep "forwarded as the child's bytes" "$BATS_TEST_TMPDIR/err" >"$BATS_TEST_TMPDIR/$how.log" || true
	done
}

# A transcript for SID with escapes, non-ASCII text, odd numbers and
# whitespace inside its records (as t/1007 mutates them).
make_odd_transcript() {
	F=$(qwen-gen-transcript --mib 1 --seed 12 --branches 1 --compressions 1 \
	    --session-id "$SID" --data-dir "$DATA" --workspace "$WS")
	sed -i -e 's/ memory / mem\\u00f6ry /g' -e 's/ client / cli\\u0022ent /g' \
	    -e 's| before | bef\\/ore |g' -e 's/ stream / str\\u20acam /g' \
	    -e 's/ worker / wor\\tker /g' -e 's/ migrate / mig\\u001frate /g' \
	    -e 's/ value / val\\u000aue \\ud83d\\ude00 /g' \
	    -e 's/"cachedContentTokenCount":\([0-9]*\)/"cachedContentTokenCount":\1.50e+1/' \
	    -e 's/,"message":{/, "message" : {/' "$F"
}

@test "the replay from the child's bytes is byte for byte the json-c path's" {
	load_both --log-level debug
	[ "$(jq '.compactedReplay | length' "$BATS_TEST_TMPDIR/bytes")" -gt 50 ]
	grep -q 'mem\\u00f6ry\|memöry' "$BATS_TEST_TMPDIR/bytes"
	cmp "$BATS_TEST_TMPDIR/jsonc" "$BATS_TEST_TMPDIR/bytes"
	# Each path was the one taken.
	[ ! -s "$BATS_TEST_TMPDIR/jsonc.log" ]
	grep -q 'replay of [0-9]* updates' "$BATS_TEST_TMPDIR/bytes.log"
}

@test "cut to --compacted-replay-max-bytes, the same history_truncated and window" {
	load_both --compacted-replay-max-bytes 20000
	[ "$(jq -r '.compactedReplay[0].type' "$BATS_TEST_TMPDIR/bytes")" = history_truncated ]
	[ "$(jq '.compactedReplay | length' "$BATS_TEST_TMPDIR/bytes")" -gt 2 ]
	cmp "$BATS_TEST_TMPDIR/jsonc" "$BATS_TEST_TMPDIR/bytes"
}

@test "the ACP bridge replays the child's bytes as session/update notifications" {
	SERVE_CHILD=$REAL serve_start
	make_odd_transcript
	req POST /session/$SID/load '{}'
	expect 200
	want=$(jq -c '[.compactedReplay[] | select(.type == "session_update") | .data]' <<<"$body")
	[ "$(jq length <<<"$want")" -gt 50 ]
	serve_stop
	SERVE_CHILD=$REAL serve_start
	acp_init
	acp_call 1 session/load "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"mcpServers\":[]}"
	acp_open s "$SID"
	acp_wait_answer s 1 30
	got=$(acp_msgs s | jq -c '[.[] | select(.method == "session/update") | .params]')
	# What differs, should it ever: the counts, the first lines apart.
	echo "want $(jq length <<<"$want") updates, got $(jq length <<<"$got")"
	diff <(jq -c '.[]' <<<"$want") <(jq -c '.[]' <<<"$got") | head -4 | cut -c1-300 || true
	[ "$got" = "$want" ]
}

@test "a transcript page from the child's bytes is byte for byte the json-c path's" {
	local how
	for how in jsonc bytes; do
		if [ "$how" = jsonc ]; then
			QWEN_SERVE_REPLAY_REENCODE=1 SERVE_CHILD=$REAL serve_start --log-level debug
		else
			SERVE_CHILD=$REAL serve_start --log-level debug
		fi
		[ -n "${F:-}" ] || make_odd_transcript
		req GET "/session/$SID/transcript?limit=200&direction=backward"
		expect 200
		printf '%s' "$body" >"$BATS_TEST_TMPDIR/$how"
		serve_stop
		grep "transcript page of [0-9]* events forwarded as the child's bytes" \
		    "$BATS_TEST_TMPDIR/err" >"$BATS_TEST_TMPDIR/$how.log" || true
	done
	[ "$(jq '.events | length' "$BATS_TEST_TMPDIR/bytes")" -gt 50 ]
	grep -q 'mem\\u00f6ry\|memöry' "$BATS_TEST_TMPDIR/bytes"
	cmp "$BATS_TEST_TMPDIR/jsonc" "$BATS_TEST_TMPDIR/bytes"
	# Each path was the one taken.
	[ ! -s "$BATS_TEST_TMPDIR/jsonc.log" ]
	[ -s "$BATS_TEST_TMPDIR/bytes.log" ]
}
