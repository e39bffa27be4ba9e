#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child replay: the fast projection (straight from the record
# bytes) and the json-c projection give the same updates byte for byte, on
# generated transcripts (tool calls, thoughts, plans, compressions, glued and
# torn lines) mutated with escapes, unicode, odd numbers and whitespace, and
# on hand-made edge records (t/data/replay/edge.jsonl.in).
load test_helper

EDGE="$TESTDATA/replay/edge.jsonl.in"

setup() {
	command -v jq >/dev/null || skip "jq not installed"
	MIB=1
	[ -z "${QWEN_SANITIZED:-}" ] || MIB=0.3
}

# edge FILE PARENT: append the edge records (sessionId from FILE's name),
# the first one hanging from PARENT (a JSON value: null or "uuid").
edge() {
	local sid
	sid=$(basename "$1" .jsonl)
	printf '\n' >>"$1"
	sed -e "s/@SID@/$sid/g" -e "s/@PARENT@/$2/" "$EDGE" >>"$1"
}

# compare FILE: run --replay-compare, print its JSON, fail when they differ.
compare() {
	run qwen-inspect --replay-compare "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r 'select(.same != null) | .same' <<<"$output")" = true ]
}

# gen SEED: a generated transcript with everything the generator makes.
gen() {
	qwen-gen-transcript --mib "$MIB" --seed "$1" --branches 2 --compressions 2 \
	    --glued 3 --torn-tail --out "$BATS_TEST_TMPDIR/g$1"
}

@test "edge records: both projections agree; bad bytes go to json-c" {
	f="$BATS_TEST_TMPDIR/replay-edge.jsonl"
	: >"$f"
	edge "$f" null
	compare "$f"
	[ "$(jq .fastRecords <<<"$output")" -ge 18 ]
	[ "$(jq .jsoncRecords <<<"$output")" -ge 5 ]
	# The same content through both paths, as the child answers it.
	qwen-inspect --replay "$f" | jq -c .updates >"$BATS_TEST_TMPDIR/fast"
	qwen-inspect --replay --jsonc "$f" | jq -c .updates >"$BATS_TEST_TMPDIR/jsonc"
	cmp "$BATS_TEST_TMPDIR/fast" "$BATS_TEST_TMPDIR/jsonc"
	u="$BATS_TEST_TMPDIR/fast"
	[ "$(jq '[.[] | select(.sessionUpdate == "plan")] | length' "$u")" -eq 1 ]
	[ "$(jq '[.[] | select(.sessionUpdate == "agent_thought_chunk")] | length' "$u")" -eq 2 ]
	jq -e 'any(.[]; .toolCallId == "call-\"open\"" and .status == "failed" and
	    .sessionUpdate == "tool_call_update" and (.content[0].content.text | startswith("Tool result missing")))' "$u"
	# The agent's fields (the records at the end of the edge file).
	e() { jq -e "$1" "$u" >/dev/null; }
	r=00000000-0000-4000-8000-0000000e0027
	e "all(.[]; ._meta[\"qwen.session.recordId\"] == ._meta.qwenTranscript.sourceRecordIds[0])"
	e "all(.[]; .timestamp == ._meta.timestamp)"
	e "[.[] | select(._meta.qwenTranscript.sourceRecordIds[0] == \"$r\" and .sessionUpdate != \"tool_call_update\") | ._meta.qwenTranscript.segmentId] == [\"$r:0\", \"$r:0\", \"$r:2\", null, null, \"$r:5\", null, null, null, null, null, null, null, null]"
	e 'any(.[]; ._meta.usage == {inputTokens: 7, outputTokens: 0, totalTokens: 0, thoughtTokens: 2, cachedReadTokens: 1.5})'
	e 'any(.[]; .toolCallId == "r1" and .title == "ReadFile: dir/f.txt (lines 11-15)" and .kind == "read" and
	    .locations == [{path: "/ws/dir/f.txt", line: 10}] and .content == [] and
	    ._meta.toolName == "read_file" and ._meta.provenance == "builtin")'
	e 'any(.[]; .title == "Shell: ls\nwc [in /ws/sub] [timeout: 5000ms] (two lines)" and .kind == "execute")'
	e 'any(.[]; .title == "Shell: sleep 1 [background]")'
	e 'any(.[]; .title == "Grep: '"'x'"' in . (filter: '"'*.c'"')" and .kind == "search")'
	e 'any(.[]; .title == "Glob: '"'*.h'"' in /elsewhere")'
	e 'any(.[]; .title == "WriteFile: Writing to ." and .kind == "edit" and .locations == [{path: "/ws", line: null}])'
	e 'any(.[]; .title == "Edit: Create e")'
	e 'any(.[]; .toolCallId == "e2" and .title == "Edit: why" and .kind == "edit" and .locations == [])'
	e 'any(.[]; .title == "mcp__srv__do" and .kind == "other" and ._meta.provenance == "mcp" and ._meta.serverId == "srv")'
	e 'any(.[]; .sessionUpdate == "tool_call_update" and .toolCallId == "r1" and .status == "completed" and
	    .rawOutput == null and (has("rawOutput")) and ._meta.artifacts == [{id: "a"}] and
	    ([.content[].content.text] == ["note", "{\"other\":[1,\"x\"]}"]))'
	e 'any(.[]; .toolCallId == "s1" and .status == "failed" and .content[0].content.text == "boom")'
	e 'any(.[]; .content == [{type: "diff", path: "e", oldText: "", newText: ""}] and ._meta.toolName == "edit")'
	e 'any(.[]; ._meta.source == "slash_command" and .content.text == "one  \ntwo  \n" and
	    ._meta.contextCompression == {phase: "done", n: 1} and ._meta.contextCompressionNotice == {x: true} and
	    ._meta.sessionArtifacts == [1])'
	e 'any(.[]; ._meta.source == "slash_command" and .content.text == "" and (._meta | has("contextCompression") | not))'
	jq -e '[.[] | select((.content | type) == "object" and .content.text == "escapes \" \\ / \b \f \n \r \t A é € \u001f \u007f \uffff")] | length == 1' "$u"
}

@test "generated transcripts: both projections agree, all records on the fast path" {
	for seed in 1 2; do
		f=$(gen "$seed")
		compare "$f"
		[ "$(jq .jsoncRecords <<<"$output")" -eq 0 ]
		[ "$(jq .fastRecords <<<"$output")" -gt 20 ]
		[ "$(jq .updates <<<"$output")" -gt 20 ]
	done
}

@test "generated transcripts with escapes, unicode, numbers and whitespace agree" {
	f=$(gen 3)
	leaf=$(qwen-inspect "$f" | jq .leafUuid)
	sed -i -e 's/ memory / mem\\u00f6ry /g' -e 's/ client / cli\\u0022ent /g' \
	    -e 's| before | bef\\/ore |g' -e 's/ token / tok\\u0065n /g' \
	    -e 's/ stream / str\\u20acam /g' -e 's/ worker / wor\\tker /g' \
	    -e 's/ refactor / refac\ttor /g' -e 's/ migrate / mig\\u001frate /g' \
	    -e 's/ value / val\\u000aue \\ud83d\\ude00 /g' \
	    -e 's/"cachedContentTokenCount":\([0-9]*\)/"cachedContentTokenCount":\1.50e+1/' \
	    -e 's/,"message":{/, "message" : {/' "$f"
	edge "$f" "$leaf"
	compare "$f"
	[ "$(jq .fastRecords <<<"$output")" -gt 20 ]
	# The mutations reached the fast path: escapes re-encoded, not copied.
	qwen-inspect --replay --max-bytes 100000000 "$f" >"$BATS_TEST_TMPDIR/r"
	grep -q 'memöry' "$BATS_TEST_TMPDIR/r"
	grep -q 'bef/ore' "$BATS_TEST_TMPDIR/r"
	grep -q 'mig\\u001frate' "$BATS_TEST_TMPDIR/r"
}

@test "records the fast path refuses (NUL, lone surrogates, -0, NaN, duplicate keys) still agree" {
	f=$(gen 4)
	sed -i -e 's/ chain / ch\\u0000ain /g' -e 's/ offset / \\udc00offset /g' \
	    -e 's/"totalTokenCount":/"totalTokenCount":-0,"x":/' \
	    -e 's/"thoughtsTokenCount":0/"thoughtsTokenCount":NaN/' \
	    -e 's/"provenance":"tool_result"/"provenance":"tool_result","provenance":"x"/' \
	    -e '0~7s/"message"/"m\\u0065ssage"/' "$f"
	compare "$f"
	[ "$(jq .jsoncRecords <<<"$output")" -gt 10 ]
	[ "$(jq .fastRecords <<<"$output")" -gt 10 ]
}
