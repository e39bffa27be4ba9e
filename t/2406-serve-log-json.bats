#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve --log-format json: every line of a run is one JSON object.

load serve_helper

teardown() {
	serve_teardown
}

@test "--log-format json: every line of a run parses; session ids a field; no prompt text" {
	serve_loaded --log-format json --log-level debug
	prompt_turn a $SID '{"prompt":[{"type":"text","text":"words nobody logs"}]}'
	req POST /session/nope%0aforged/load '{}'
	req DELETE /session/$SID
	serve_stop
	[ "$SERVE_STATUS" -eq 0 ]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/err")" -gt 3 ]
	# Each line alone is an object with the fields (jq fails on any other).
	while IFS= read -r line; do
		jq -e 'type == "object" and (.time | test("^20..-..-..T..:..:..\\....Z$")) and
		    (.level | IN("error","warn","notice","info","debug")) and
		    .program == "qwen-serve" and (.pid | type == "number") and
		    (.message | type == "string")' <<<"$line" >/dev/null ||
		    { echo "not a record: $line" >&2; false; }
	done <"$BATS_TEST_TMPDIR/err"
	jq -e -s 'any(.[]; .sessionId == "'$SID'")' "$BATS_TEST_TMPDIR/err"
	jq -e -s 'any(.[]; .message == "stopped")' "$BATS_TEST_TMPDIR/err"
	run ! grep -q "words nobody logs" "$BATS_TEST_TMPDIR/err"
}

@test "--log-format: an unknown format is a usage error" {
	run qwen-serve --log-format xml --no-tcp --socket "$BATS_TEST_TMPDIR/s.sock"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--log-format: unknown format 'xml' (text, json)"* ]]
}

@test "--log-format json: every line about a session carries its request id and trace id" {
	local tp=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	local tid=4bf92f3577b34da6a3ce929d0e0e4736 rid traces
	serve_start --log-format json --log-level debug --trace-file "$BATS_TEST_TMPDIR/trace.jsonl"
	make_transcript
	req POST /session/$SID/load '{}' -H 'X-Request-Id: load-1' -H "traceparent: $tp"
	expect 200
	grep -qx 'X-Request-Id: load-1' <<<"$hdrs"
	# None given: one made and sent back; a forged one is not taken.
	req GET /health
	rid=$(sed -n 's/^X-Request-Id: //p' <<<"$hdrs")
	[[ "$rid" =~ ^[0-9a-f-]{36}$ ]]
	req GET /health '' -H 'X-Request-Id: a"b'
	rid=$(sed -n 's/^X-Request-Id: //p' <<<"$hdrs")
	[[ "$rid" =~ ^[0-9a-f-]{36}$ ]]
	req GET /health '' -H "X-Request-Id: $(printf 'x%.0s' {1..65})"
	rid=$(sed -n 's/^X-Request-Id: //p' <<<"$hdrs")
	[[ "$rid" =~ ^[0-9a-f-]{36}$ ]]
	sse_open a /session/$SID/events -H 'X-Request-Id: events-1'
	req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"words nobody logs"}]}' \
	    -H 'X-Request-Id: prompt-1' -H "traceparent: $tp"
	expect 202
	sse_wait a '.type == "turn_complete"' 20
	req DELETE /session/$SID '' -H 'X-Request-Id: delete-1'
	expect 204
	serve_stop
	[ "$SERVE_STATUS" -eq 0 ]
	# The trace ids a line may carry: the client's, or the daemon's spans'.
	traces=$(jq -c -s --arg t "$tid" '[.[] | .resourceSpans[].scopeSpans[].spans[].traceId] + [$t] | unique' \
	    "$BATS_TEST_TMPDIR/trace.jsonl")
	[ "$(jq length <<<"$traces")" -gt 1 ]
	# Every line parses; each about the session has a request id of this
	# run and a trace id of this run; ids are only ever the daemon's own.
	while IFS= read -r line; do
		jq -e --arg s "$SID" --argjson t "$traces" '
		    (if .sessionId == $s then
			(.requestId | IN("load-1", "events-1", "prompt-1", "delete-1")) and
			(.traceId as $x | $t | index($x) != null)
		    else true end) and
		    (.requestId == null or (.requestId | test("^[A-Za-z0-9._:-]{1,64}$"))) and
		    (.traceId == null or (.traceId | test("^[0-9a-f]{32}$")))' \
		    <<<"$line" >/dev/null || { echo "line without its ids: $line" >&2; false; }
	done <"$BATS_TEST_TMPDIR/err"
	# Each request reached the log, and the session's lines are many.
	for rid in load-1 prompt-1 delete-1; do
		jq -e -s --arg r "$rid" 'any(.[]; .requestId == $r and .sessionId != null)' \
		    "$BATS_TEST_TMPDIR/err" >/dev/null
	done
	jq -e -s --arg t "$tid" 'any(.[]; .traceId == $t)' "$BATS_TEST_TMPDIR/err" >/dev/null
	[ "$(jq -s --arg s "$SID" 'map(select(.sessionId == $s)) | length' "$BATS_TEST_TMPDIR/err")" -gt 3 ]
	run ! grep -q "words nobody logs" "$BATS_TEST_TMPDIR/err"
}
