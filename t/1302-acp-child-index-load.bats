#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child --cache-dir: a load or resume in a new child uses the
# index a previous child kept, reads only what it sends (the answer's
# _meta["qwen.session.restore"].bytesRead and the span's bytes_read), and
# answers exactly what the first, cold load answered.  Without the option
# the index goes to $CACHE_DIRECTORY or $XDG_CACHE_HOME/qwen-serve.
load acp_helper

setup() {
	acp_setup
	command -v jq >/dev/null || skip "jq not installed"
	CACHE="$BATS_TEST_TMPDIR/cache"
	TRACE="$BATS_TEST_TMPDIR/trace.jsonl"
	MIB=2
	[ -z "${QWEN_SANITIZED:-}" ] || MIB=0.5
	F=$(qwen-gen-transcript --mib "$MIB" --seed 41 --branches 2 --compressions 2 \
	    --data-dir "$DATA" --workspace "$WS")
	SID=$(basename "$F" .jsonl)
	SIZE=$(stat -c %s "$F")
}

# load_req ID METHOD [META-MEMBERS]: a bulk load (or resume) of SID.
load_req() {
	req "$1" "$2" "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"_meta\":{\"qwen.session.loadReplayMode\":\"bulk\"${3:-}}}"
}

# stats ID: the restore counters of answer ID.
stats() {
	resp "$1" | jq -c '.result._meta["qwen.session.restore"]'
}

@test "a second child loads from the kept index without reading the transcript" {
	run drive --cache-dir "$CACHE" <<EOF
$INIT
$(load_req 1 session/load ',"qwen.session.loadReplayPageSize":8')
EOF
	[ "$status" -eq 0 ]
	[ "$(stats 1 | jq -r .index)" = cold ]
	[ "$(stats 1 | jq .bytesRead)" -ge "$SIZE" ]
	cold=$(replay 1)
	first=$(stats 1)
	[ "$(jq '.updates | length' <<<"$cold")" -gt 0 ]
	# Kept once the answer was out, before the child exited.
	[ "$(find "$CACHE" -name 'tx-*.idx' | wc -l)" -eq 1 ]
	run drive --cache-dir "$CACHE" --trace-file "$TRACE" <<EOF
$INIT
$(load_req 2 session/load ',"qwen.session.loadReplayPageSize":8')
$(load_req 3 session/load ',"qwen.session.loadReplayPageSize":8')
EOF
	[ "$status" -eq 0 ]
	[ "$(stats 2 | jq -r .index)" = warm ]
	# The cold load read the file once, then what the warm one reads: the
	# page's records and the checkpoint, plus 8 KiB of digests.
	sent=$(($(jq .bytesRead <<<"$first") - SIZE))
	[ "$(stats 2 | jq .bytesRead)" -le "$((sent + 8192))" ]
	[ "$sent" -lt "$((SIZE / 4))" ]
	[ "$(replay 2)" = "$cold" ]
	[ "$(stats 2 | jq -c 'del(.index, .bytesRead, .indexBytesChecked, .refreshed)')" = \
	    "$(jq -c 'del(.index, .bytesRead, .indexBytesChecked, .refreshed)' <<<"$first")" ]
	# The session's own index, refreshed: nothing appended, nothing read
	# but the page.
	[ "$(stats 3 | jq -r .index)" = kept ]
	[ "$(stats 3 | jq .bytesRead)" -le "$sent" ]
	[ "$(replay 3)" = "$cold" ]
	# The same counters on the span (numbers and names only).
	a=$(jq -c '.resourceSpans[].scopeSpans[].spans[] |
	    select(.name == "qwen-code.daemon.session_restore") |
	    (.attributes | map({(.key): (.value | to_entries[0].value)}) | add)' "$TRACE" | head -n 1)
	[ "$(jq -r '.["qwen-code.daemon.session_restore.index"]' <<<"$a")" = warm ]
	[ "$(jq -r '.["qwen-code.daemon.session_restore.bytes_read"]' <<<"$a")" = \
	    "$(stats 2 | jq .bytesRead)" ]
}

@test "resume from the kept index reads the digests only; appended bytes on top" {
	run drive --cache-dir "$CACHE" <<EOF
$INIT
$(load_req 1 session/resume)
EOF
	[ "$(stats 1 | jq -r .index)" = cold ]
	cold=$(stats 1)
	run drive --cache-dir "$CACHE" <<EOF
$INIT
$(load_req 2 session/resume)
EOF
	[ "$(stats 2 | jq -r .index)" = warm ]
	# 8 KiB of digests only: the chain and the model history (from the
	# checkpoint) are kept with the index.  The cold one read the file
	# and the checkpoint.
	warm=$(stats 2 | jq .bytesRead)
	[ "$warm" -eq 8192 ]
	checkpoint=$(($(jq .bytesRead <<<"$cold") - SIZE))
	[ "$checkpoint" -gt 0 ]
	[ "$(stats 2 | jq -c 'del(.index, .bytesRead, .indexBytesChecked)')" = "$(jq -c 'del(.index, .bytesRead, .indexBytesChecked)' <<<"$cold")" ]
	# A prompt in between appends; the next child indexes those bytes only.
	run drive --cache-dir "$CACHE" <<EOF
$INIT
$(load_req 3 session/resume)
$(prompt_req 4 "$SID" "hello")
EOF
	[ "$status" -eq 0 ]
	grown=$(stat -c %s "$F")
	[ "$grown" -gt "$SIZE" ]
	run drive --cache-dir "$CACHE" <<EOF
$INIT
$(load_req 5 session/resume)
EOF
	[ "$(stats 5 | jq -r .index)" = warm ]
	# The appended bytes, the digests, and the checkpoint again (what was
	# appended may change the chain, so it is walked).
	[ "$(stats 5 | jq .bytesRead)" -eq "$((grown - SIZE + warm + checkpoint))" ]
	[ "$(stats 5 | jq .records)" -gt "$(jq .records <<<"$cold")" ]
	[ "$(stats 5 | jq .transcriptBytes)" -eq "$grown" ]
	[ "$(stats 5 | jq -r .leafUuid)" = "$(qwen-inspect "$F" | jq -r .leafUuid)" ]
}

@test "the default cache: \$CACHE_DIRECTORY first, else \$XDG_CACHE_HOME/qwen-serve" {
	XDG_CACHE_HOME="$BATS_TEST_TMPDIR/xdg" run drive <<EOF
$INIT
$(load_req 1 session/resume)
EOF
	[ "$status" -eq 0 ]
	[ "$(find "$BATS_TEST_TMPDIR/xdg/qwen-serve" -name 'tx-*.idx' | wc -l)" -eq 1 ]
	CACHE_DIRECTORY="$BATS_TEST_TMPDIR/sd:$BATS_TEST_TMPDIR/other" run drive <<EOF
$INIT
$(load_req 2 session/resume)
EOF
	[ "$status" -eq 0 ]
	[ "$(stats 2 | jq -r .index)" = cold ]
	[ "$(find "$BATS_TEST_TMPDIR/sd" -name 'tx-*.idx' | wc -l)" -eq 1 ]
	[ ! -e "$BATS_TEST_TMPDIR/other" ]
}

@test "a big transcript with a kept index is restored on the fast lane, not behind big loads" {
	# Past the child's 16 MiB fast lane under the sanitizers too: B1 and B2
	# are big loads, which wait at the load gate until the test opens it.
	mib=120
	[ "${QWEN_SANITIZED:-0}" = 1 ] && mib=17
	B1=66666666-7777-4888-8999-aaaaaaaaaaa1
	B2=66666666-7777-4888-8999-aaaaaaaaaaa2
	B3=66666666-7777-4888-8999-aaaaaaaaaaa3
	for s in 1 2 3; do
		qwen-gen-transcript --mib "$mib" --seed "$((50 + s))" --data-dir "$DATA" \
		    --workspace "$WS" --session-id "66666666-7777-4888-8999-aaaaaaaaaaa$s" >/dev/null
	done
	run drive --cache-dir "$CACHE" <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$B3\",\"cwd\":\"$WS\"}")
EOF
	[ "$(stats 1 | jq -r .index)" = cold ]
	# Both workers hold cold passes at the gate; B3 reads only its index and
	# is answered meanwhile, then the gate lets the two go.
	gate_open
	run acp-drive -q -t 60 -e "$ERR" -- qwen-acp-child --data-dir "$DATA" \
	    --workspace "$WS" --cache-dir "$CACHE" <<EOF
$INIT
batch 3
{"jsonrpc":"2.0","id":"b1","method":"session/resume","params":{"sessionId":"$B1"}}
{"jsonrpc":"2.0","id":"b2","method":"session/resume","params":{"sessionId":"$B2"}}
{"jsonrpc":"2.0","id":"w","method":"session/resume","params":{"sessionId":"$B3"}}
wait "w"
shell printf xx >"$GATE"
wait "b1"
wait "b2"
EOF
	[ "$status" -eq 0 ]
	[ "$(resp '"w"' | jq -r '.result._meta["qwen.session.restore"].index')" = warm ]
	[ "$(resp '"b1"' | jq -r '.result._meta["qwen.session.restore"].index')" = cold ]
	w=$(line_no '.id == "w"')
	[ "$w" -lt "$(line_no '.id == "b1"')" ]
	[ "$w" -lt "$(line_no '.id == "b2"')" ]
}
