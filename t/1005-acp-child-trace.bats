#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child: restore spans (phase profiler) and the lag snapshot.
load acp_helper

setup() {
	acp_setup
	TRACE="$BATS_TEST_TMPDIR/trace.jsonl"
}

TP_TRACE=4bf92f3577b34da6a3ce929d0e0e4736
TP_SPAN=00f067aa0ba902b7

# spans: one flat object per span: name, ids, attrs {key: value}.
spans() {
	jq -c '.resourceSpans[].scopeSpans[].spans[] | {name, traceId, spanId,
	    parentSpanId: (.parentSpanId // ""), status,
	    attrs: (.attributes | map({(.key): (.value | to_entries[0].value)}) | add)}' "$TRACE"
}

STAGES="settings_load existence_check transcript_read chain_reconstruct config_setup auth file_system_setup session_register history_replay response_build"

@test "load: a session_restore span, child of the given traceparent, every stage measured" {
	make_transcript "$SID1" 5
	run drive --trace-file "$TRACE" <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\",\"_meta\":{\"qwen.telemetry.traceparent\":\"00-$TP_TRACE-$TP_SPAN-01\",\"qwen.session.loadReplayMode\":\"bulk\"}}")
EOF
	[ "$(resp 1 | jq '.result | has("_meta")')" = true ]
	s=$(spans | jq -c 'select(.name == "qwen-code.daemon.session_restore")')
	[ "$(jq -r .traceId <<<"$s")" = "$TP_TRACE" ]
	[ "$(jq -r .parentSpanId <<<"$s")" = "$TP_SPAN" ]
	[ "$(jq -r '.attrs["qwen-code.daemon.operation"]' <<<"$s")" = acp_session_load ]
	[ "$(jq -r '.attrs["session.id"]' <<<"$s")" = "$SID1" ]
	[ "$(jq -r '.attrs["qwen-code.daemon.session_restore.action"]' <<<"$s")" = restore ]
	for st in $STAGES; do
		jq -e ".attrs[\"qwen-code.daemon.session_restore.${st}_ms\"] | tonumber >= 0" <<<"$s"
	done
	[ "$(jq -r '.attrs | has("qwen-code.daemon.session_restore.failed_stage")' <<<"$s")" = false ]
	[ "$(jq -r '.attrs["qwen-code.daemon.session_restore.transcript_bytes"]' <<<"$s")" = "$(stat -c %s "$CHATS/$SID1.jsonl")" ]
	[ "$(jq -r '.attrs["qwen-code.daemon.session_restore.chain_records"]' <<<"$s")" = 10 ]
	[ "$(jq -r '.attrs["qwen-code.daemon.session_restore.replay_records"]' <<<"$s")" = 10 ]
	jq -e '.attrs["qwen-code.daemon.session_restore.replay_bytes"] | tonumber > 0' <<<"$s"
	[ "$(jq -r '.attrs["qwen-code.daemon.session_restore.malformed_lines"]' <<<"$s")" = 0 ]
	for k in mean_ms p50_ms p99_ms max_ms; do
		jq -e ".attrs[\"qwen-code.daemon.event_loop_lag.$k\"] | tonumber >= 0" <<<"$s"
	done
	# No transcript content anywhere in the trace.
	! grep -q "question 1" "$TRACE" || false
	! grep -q "answer" "$TRACE" || false
}

@test "load: stage timings are values, in ms, within the span; reading is never free" {
	make_transcript "$SID1" 200
	run drive --trace-file "$TRACE" <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\",\"_meta\":{\"qwen.session.loadReplayMode\":\"bulk\"}}")
EOF
	[ "$(resp 1 | jq '.result | has("_meta")')" = true ]
	local s=$(jq -c '.resourceSpans[].scopeSpans[].spans[] | select(.name == "qwen-code.daemon.session_restore")' "$TRACE")
	local keys=$(for st in $STAGES; do printf '"qwen-code.daemon.session_restore.%s_ms",' "$st"; done)
	# {span: its duration in ms, stages: [ms...], read, replay}.
	local v=$(jq -c "{span: (((.endTimeUnixNano | tonumber) - (.startTimeUnixNano | tonumber)) / 1e6),
	    stages: [.attributes[] | select(.key | IN(${keys%,})) | .value.doubleValue],
	    read: [.attributes[] | select(.key == \"qwen-code.daemon.session_restore.transcript_read_ms\") | .value.doubleValue][0],
	    replay: [.attributes[] | select(.key == \"qwen-code.daemon.session_restore.history_replay_ms\") | .value.doubleValue][0]}" <<<"$s")
	echo "$v" >&2
	[ "$(jq '.stages | length' <<<"$v")" -eq 10 ]
	jq -e '.stages | all(type == "number" and . >= 0)' <<<"$v"
	# Each stage, and all of them together, fit in the span (1 us per
	# stage of rounding): durations in ms, not timestamps, not ns.
	jq -e '.span as $d | .stages | all(. <= $d + 0.001)' <<<"$v"
	jq -e '(.stages | add) <= .span + 0.01' <<<"$v"
	# Reading and replaying 400 records take measurable time.
	jq -e '.read > 0 and .replay > 0' <<<"$v"
}

@test "resume via QWEN_TRACE_FILE: operation acp_session_resume; an invalid traceparent gives a root" {
	make_transcript "$SID1" 1
	QWEN_TRACE_FILE="$TRACE" run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\",\"_meta\":{\"qwen.telemetry.traceparent\":\"00-$TP_TRACE-0000000000000000-01\"}}")
$(req 2 session/resume "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(spans | jq -s 'length')" = 2 ]
	s=$(spans | head -1)
	[ "$(jq -r '.attrs["qwen-code.daemon.operation"]' <<<"$s")" = acp_session_resume ]
	[ "$(jq -r .parentSpanId <<<"$s")" = "" ]
	[ "$(jq -r .traceId <<<"$s")" != "$TP_TRACE" ]
	s=$(spans | tail -1)
	[ "$(jq -r '.attrs["qwen-code.daemon.session_restore.action"]' <<<"$s")" = refresh ]
	[ "$(jq -r '.attrs["qwen-code.daemon.session_restore.replay_records"]' <<<"$s")" = 0 ]
}

@test "failed_stage names the first failing stage" {
	make_transcript "$SID2" 1
	mkdir -p "$LOCKS"
	printf '{"session_id":"%s","owner_id":"live","pid":%d,"hostname":"%s"}\n' \
	    "$SID2" "$$" "$(hostname)" >"$LOCKS/$SID2.lock"
	run drive --trace-file "$TRACE" <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\"}")
$(req 2 session/load "{\"sessionId\":\"$SID2\"}")
EOF
	[ "$(resp 1 | jq .error.code)" = -32002 ]
	[ "$(resp 2 | jq .error.code)" = -32020 ]
	s=$(spans | jq -c "select(.attrs[\"session.id\"] == \"$SID1\")")
	[ "$(jq -r '.attrs["qwen-code.daemon.session_restore.failed_stage"]' <<<"$s")" = existence_check ]
	[ "$(jq -r '.attrs | has("qwen-code.daemon.session_restore.transcript_read_ms")' <<<"$s")" = false ]
	[ "$(jq -r .status.code <<<"$s")" = 2 ]
	s=$(spans | jq -c "select(.attrs[\"session.id\"] == \"$SID2\")")
	[ "$(jq -r '.attrs["qwen-code.daemon.session_restore.failed_stage"]' <<<"$s")" = auth ]
	jq -e '.attrs["qwen-code.daemon.session_restore.chain_reconstruct_ms"] | tonumber >= 0' <<<"$s"
}

@test "session/new writes a session_start span" {
	run drive --trace-file "$TRACE" <<EOF
$INIT
$(req 1 session/new "{\"_meta\":{\"qwen.telemetry.traceparent\":\"00-$TP_TRACE-$TP_SPAN-01\"}}")
EOF
	s=$(spans)
	[ "$(jq -r .name <<<"$s")" = qwen-code.daemon.session_start ]
	[ "$(jq -r .traceId <<<"$s")" = "$TP_TRACE" ]
	[ "$(jq -r '.attrs["qwen-code.daemon.operation"]' <<<"$s")" = acp_session_new ]
}

@test "an unwritable trace file is an error at start" {
	run qwen-acp-child --trace-file /nonexistent/dir/trace.jsonl </dev/null
	[ "$status" -eq 1 ]
	[[ "$output" == *"trace file"* ]]
}

@test "SIGHUP reopens the trace file (rotation)" {
	make_transcript "$SID1" 1
	run drive --trace-file "$TRACE" <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
shell mv "$TRACE" "$TRACE.1"
kill 1
shell i=0; while [ ! -e "$TRACE" ] && [ \$i -lt 250 ]; do sleep 0.02; i=\$((i + 1)); done; [ -e "$TRACE" ]
$(req 2 qwen/status/loop_lag '{}')
$(req 3 session/resume "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].refreshed')" = true ]
	[ "$(jq -s length "$TRACE.1")" = 1 ]
	[ "$(jq -s length "$TRACE")" = 1 ]
}
