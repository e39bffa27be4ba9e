#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve honours QWEN_TRACE_FILE as qwen-acp-child does (issue 17):
# without --trace-file both programs write their spans to that file, so
# qwen-trace-dump joins a restore's daemon and child halves.

load serve_helper
bats_require_minimum_version 1.5.0

setup() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	TRACE=$BATS_TEST_TMPDIR/trace.jsonl
}

teardown() {
	serve_teardown
}

# The service.name of every resource in the trace file, sorted, unique.
services() {
	jq -r '.resourceSpans[].resource.attributes[] |
	    select(.key == "service.name") | .value.stringValue' "$TRACE" | sort -u | tr '\n' ' '
}

@test "QWEN_TRACE_FILE: the daemon and the child write the same file" {
	QWEN_TRACE_FILE=$TRACE SERVE_CHILD=$REAL serve_start
	make_transcript "$SID"
	req POST /session/$SID/load '{}'
	expect 200
	wait_for 10 bash -c "grep -q qwen-serve '$TRACE' && grep -q qwen-acp-child '$TRACE'"
	[ "$(services)" = "qwen-acp-child qwen-serve " ]
	run qwen-trace-dump --no-pager "$TRACE"
	[ "$status" -eq 0 ]
	[[ "$output" == *"restore load session $SID"* ]]
	[[ "$output" != *"directly"* ]]
}

@test "--trace-file wins over QWEN_TRACE_FILE" {
	QWEN_TRACE_FILE=$BATS_TEST_TMPDIR/env.jsonl SERVE_CHILD=$REAL serve_start --trace-file "$TRACE"
	make_transcript "$SID"
	req POST /session/$SID/load '{}'
	expect 200
	wait_for 10 grep -q qwen-serve "$TRACE"
	run ! grep -qs qwen-serve "$BATS_TEST_TMPDIR/env.jsonl"
}
