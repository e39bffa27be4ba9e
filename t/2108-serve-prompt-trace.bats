#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a prompt's trace context.  session/prompt carries the
# traceparent of the daemon's prompt span (qwen-code.daemon.bridge,
# operation session.prompt) in _meta, as new/load/resume do, and the real
# child's qwen-code.daemon.session_prompt span is its child in the trace,
# as qwen-trace-dump shows.

load serve_helper
bats_require_minimum_version 1.5.0

setup() {
	TRACE=$BATS_TEST_TMPDIR/trace.jsonl
}

teardown() {
	serve_teardown
}

# The traceparent (4th field) of the child's last METHOD for SID.
child_tp() {
	awk -v m="$1" -v s="$SID" '$2 == m && $3 == s { tp = $4 } END { print tp }' \
	    "$BATS_TEST_TMPDIR/child.log"
}

child_got() {
	[ -n "$(child_tp "$1")" ]
}

# traced [KNOBS]: SID loaded with the fake child (KNOBS, and its message
# log) and --trace-file.
traced() {
	FAKE_CHILD="${1:+$1,}log=$BATS_TEST_TMPDIR/child.log" serve_loaded --trace-file "$TRACE"
}

# The spans named NAME in the trace file, as compact JSON, one a line:
# {traceId, spanId, parentSpanId, status, attrs: {key: value}}.
spans_named() {
	jq -c --arg n "$1" '.resourceSpans[].scopeSpans[].spans[] | select(.name == $n) |
	    {traceId, spanId, parentSpanId, status: .status.code,
	     attrs: ([.attributes[]? | {key, value: (.value | to_entries[0].value)}] | from_entries)}' \
	    "$TRACE"
}

# The daemon's prompt span (bridge span of operation session.prompt).
daemon_prompt_span() {
	spans_named qwen-code.daemon.bridge |
	    jq -c 'select(.attrs["qwen-code.daemon.operation"] == "session.prompt")'
}

has_daemon_prompt_span() {
	[ -n "$(daemon_prompt_span)" ]
}

has_child_prompt_span() {
	[ -n "$(spans_named qwen-code.daemon.session_prompt)" ]
}

@test "session/prompt to the child carries the traceparent of the daemon's prompt span" {
	traced
	# A client's own _meta keys stay; its traceparent does not win.
	req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"hi"}],"_meta":{"qwen.telemetry.traceparent":"00-0123456789abcdef0123456789abcdef-0123456789abcdef-01","x":1}}'
	expect 202
	wait_for 10 child_got session/prompt
	local tp ltp
	tp=$(child_tp session/prompt)
	ltp=$(child_tp session/load)
	[[ "$tp" =~ ^00-[0-9a-f]{32}-[0-9a-f]{16}-01$ ]]
	[ "$tp" != "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01" ]
	# Its own span, not the load's.
	[ "${tp:36:16}" != "${ltp:36:16}" ]
	# The span the daemon wrote is the one named in the traceparent.
	wait_for 10 has_daemon_prompt_span
	local sp
	sp=$(daemon_prompt_span)
	[ "$(jq -r .traceId <<<"$sp")" = "${tp:3:32}" ]
	[ "$(jq -r .spanId <<<"$sp")" = "${tp:36:16}" ]
	jq -e --arg s "$SID" '.attrs["session.id"] == $s and
	    .attrs["qwen-code.daemon.prompt.result"] == "complete" and
	    .attrs["qwen-code.daemon.prompt.stop_reason"] == "end_turn" and
	    (.attrs["qwen-code.daemon.prompt.id"] | length) == 36' <<<"$sp"
}

@test "a prompt the child fails: the daemon's prompt span ends with an error status" {
	traced fail=session/prompt:-32603
	prompt_post "$SID"
	wait_for 10 has_daemon_prompt_span
	jq -e '.attrs["qwen-code.daemon.prompt.result"] == "error" and .status == 2' <<<"$(daemon_prompt_span)"
}

@test "a session closed under its running prompt: the prompt span ends as session_closed" {
	traced hang=session/prompt
	prompt_post "$SID"
	wait_for 10 child_got session/prompt
	run ! has_daemon_prompt_span
	req DELETE /session/$SID
	expect 204
	wait_for 10 has_daemon_prompt_span
	jq -e '.attrs["qwen-code.daemon.prompt.result"] == "session_closed"' <<<"$(daemon_prompt_span)"
}

@test "real child: its session_prompt span is the daemon's prompt span's child in qwen-trace-dump" {
	local real=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$real" ] || skip "qwen-acp-child not built"
	SERVE_CHILD=$real serve_loaded --trace-file "$TRACE"
	prompt_turn a "$SID"
	wait_for 10 has_child_prompt_span
	wait_for 10 has_daemon_prompt_span
	run qwen-trace-dump --no-pager --format json "$TRACE"
	[ "$status" -eq 0 ]
	local d c
	d=$(jq -c 'select(.name? == "qwen-code.daemon.bridge" and
	    .attributes["qwen-code.daemon.operation"] == "session.prompt")' <<<"$output")
	c=$(jq -c 'select(.name? == "qwen-code.daemon.session_prompt")' <<<"$output")
	[ -n "$d" ]
	[ -n "$c" ]
	[ "$(jq -r .traceId <<<"$c")" = "$(jq -r .traceId <<<"$d")" ]
	[ "$(jq -r .parentSpanId <<<"$c")" = "$(jq -r .spanId <<<"$d")" ]
	jq -e --arg s "$SID" '.attributes["session.id"] == $s and
	    .attributes["qwen-code.daemon.prompt.stop_reason"] == "end_turn"' <<<"$c"
	# Ids and outcomes only: the prompt's text ("hello") is nowhere in the trace.
	run ! grep -q hello "$TRACE"
	# The text rendering names the daemon's span as the parent.
	run qwen-trace-dump --no-pager "$TRACE"
	[ "$status" -eq 0 ]
	[[ "$output" == *"parent     $(jq -r .spanId <<<"$d")"* ]]
}
