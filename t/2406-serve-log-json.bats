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
