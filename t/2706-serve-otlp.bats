#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# OTLP/HTTP JSON export (issue 17): qwen-serve and qwen-acp-child send their
# restore spans to a collector, from worker threads, batched, beside the
# trace file.  The collector is t/helper/otlp-recv.js, which checks every
# body against the OTLP protobuf schema that npm's
# @opentelemetry/otlp-proto-exporter-base ships (installed once into the
# build tree's t/otlp; the tests skip when npm cannot reach its registry).
# A dead collector costs the daemon only a count of lost spans; a slow one
# (held by the test) fills the bounded queue and the rest are dropped.

load serve_helper
bats_require_minimum_version 1.5.0

SID3=33333333-3333-4333-8333-333333333333

setup() {
	command -v node >/dev/null || skip "node not installed"
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	OTLP_DIR=${QWEN_OTLP_DIR:-$QWEN_TOP_BUILDDIR/t/otlp}
	npm_cached "$OTLP_DIR" @opentelemetry/otlp-proto-exporter-base 0.51.1
	RLOG=$BATS_TEST_TMPDIR/received.jsonl
	: >"$RLOG"
	RECV_PID=
	unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT \
	    OTEL_EXPORTER_OTLP_HEADERS OTEL_SERVICE_NAME OTEL_RESOURCE_ATTRIBUTES
	# Export each span as soon as it ends.
	export OTEL_BSP_SCHEDULE_DELAY=0
}

teardown() {
	[ -z "${RECV_PID:-}" ] || kill "$RECV_PID" 2>/dev/null || true
	serve_teardown
}

# recv_start [--hold FILE]: the collector; its base URL in $RECV.
recv_start() {
	node "$QWEN_TOP_SRCDIR/t/helper/otlp-recv.js" --modules "$OTLP_DIR/node_modules" \
	    --port-file "$BATS_TEST_TMPDIR/recv.port" --log "$RLOG" "$@" \
	    2>"$BATS_TEST_TMPDIR/recv.err" 3>&- &
	RECV_PID=$!
	wait_for 20 test -s "$BATS_TEST_TMPDIR/recv.port"
	RECV=http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/recv.port")
}

# spans JQ-FILTER: the received spans (of valid bodies) through a filter.
spans() {
	jq -s -r -c "[.[] | select(.ok) | .spans[]] | $1" "$RLOG"
}

# has_span JQ-CONDITION: some received span satisfies the condition.
has_span() {
	jq -s -e "any(.[] | select(.ok) | .spans[]; $1)" "$RLOG" >/dev/null
}

load_session() {
	req POST "/session/$1/load" '{}'
	expect 200
}

health_otlp() {
	req GET /health
	jq -e ".otlp | $1" <<<"$body" >/dev/null
}

@test "the collector gets valid restore spans from both programs, with the OTEL_* resource and headers" {
	recv_start
	OTEL_SERVICE_NAME=qwen-test OTEL_RESOURCE_ATTRIBUTES='deployment.environment=ci,host.role=a%2Cb' \
	    OTEL_EXPORTER_OTLP_HEADERS='x-api-key=k1,x-tenant=t%20one' \
	    SERVE_CHILD=$REAL serve_start --otlp-endpoint "$RECV" --trace-file "$BATS_TEST_TMPDIR/trace.jsonl"
	make_transcript "$SID"
	load_session "$SID"
	wait_for 20 has_span '.name == "qwen-code.daemon.session_restore"'
	wait_for 20 has_span '.name == "qwen-code.daemon.bridge"'

	# Every body the collector got was valid OTLP.
	run jq -r 'select(.ok | not) | .error' "$RLOG"
	[ -z "$output" ]
	# One trace: the child's restore span is a child of the daemon's.
	bridge=$(spans 'map(select(.name == "qwen-code.daemon.bridge"))[0]')
	child=$(spans 'map(select(.name == "qwen-code.daemon.session_restore"))[0]')
	[ "$(jq -r .traceId <<<"$bridge")" = "$(jq -r .traceId <<<"$child")" ]
	[ "$(jq -r .parentSpanId <<<"$child")" = "$(jq -r .spanId <<<"$bridge")" ]
	# OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES reach both programs.
	[ "$(spans 'map(.service) | unique | join(",")')" = qwen-test ]
	[ "$(spans 'map(.resource["deployment.environment"]) | unique | join(",")')" = ci ]
	[ "$(spans 'map(.resource["host.role"]) | unique | join(",")')" = "a,b" ]
	[ "$(jq -r 'select(.ok) | .headers["x-tenant"]' "$RLOG" | sort -u)" = "t one" ]
	# The file keeps working beside the export, under the programs' names.
	wait_for 10 grep -q qwen-code.daemon.session_restore "$BATS_TEST_TMPDIR/trace.jsonl"
	grep -q '"qwen-serve"' "$BATS_TEST_TMPDIR/trace.jsonl"
	health_otlp '.exported >= 1 and .dropped == 0 and .failed == 0'
	health_otlp ".endpoint == \"$RECV/v1/traces\""
}

@test "OTEL_EXPORTER_OTLP_ENDPOINT alone turns the export on for both programs" {
	recv_start
	OTEL_EXPORTER_OTLP_ENDPOINT=$RECV/ SERVE_CHILD=$REAL serve_start
	make_transcript "$SID"
	load_session "$SID"
	wait_for 20 has_span '.service == "qwen-serve"'
	wait_for 20 has_span '.service == "qwen-acp-child"'
	[ "$(jq -r .path "$RLOG" | sort -u)" = /v1/traces ]
}

@test "a dead collector: restores go on, the lost spans are counted in /health and logged" {
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:$port/v1/traces \
	    SERVE_CHILD=$REAL serve_start
	make_transcript "$SID"
	make_transcript "$SID2"
	load_session "$SID"
	load_session "$SID2"
	wait_for 20 health_otlp '.failed >= 2 and .exported == 0'
	health_otlp '.dropped == 0'
	wait_for 20 grep -q "OTLP export to http://127.0.0.1:$port/v1/traces: .* spans lost" "$BATS_TEST_TMPDIR/err"
	# The daemon still stops cleanly and at once (serve_teardown checks 0).
}

@test "a slow collector: the bounded queue drops and counts; the daemon keeps serving" {
	HOLD=$BATS_TEST_TMPDIR/release
	recv_start --hold "$HOLD"
	OTEL_BSP_MAX_QUEUE_SIZE=1 OTEL_BSP_MAX_EXPORT_BATCH_SIZE=1 \
	    SERVE_CHILD=$REAL serve_start --otlp-endpoint "$RECV"
	make_transcript "$SID"
	make_transcript "$SID2"
	make_transcript "$SID3"
	load_session "$SID"
	# The daemon's first export is in the collector's hands, unanswered.
	wait_for 20 has_span '.service == "qwen-serve"'
	# Two more restores while it waits: one span queued, one dropped.
	load_session "$SID2"
	load_session "$SID3"
	wait_for 20 health_otlp '.dropped >= 1 and .queued == 1'
	req GET "/session/$SID/status"
	expect 200
	touch "$HOLD"
	wait_for 20 health_otlp '.exported >= 2 and .queued == 0'
}

@test "a bad endpoint or OTEL_* value fails the start with a message" {
	run qwen-serve --no-tcp --socket "$BATS_TEST_TMPDIR/x.sock" --otlp-endpoint ftp://x/
	[ "$status" -eq 1 ]
	[[ "$output" == *"--otlp-endpoint ftp://x/: must start with http:// or https://"* ]]
	OTEL_BSP_MAX_QUEUE_SIZE=0 run qwen-serve --no-tcp --socket "$BATS_TEST_TMPDIR/x.sock" --otlp-endpoint http://127.0.0.1:9/
	[ "$status" -eq 1 ]
	[[ "$output" == *"OTEL_BSP_MAX_QUEUE_SIZE=0: too small"* ]]
	OTEL_EXPORTER_OTLP_HEADERS='novalue' run qwen-acp-child --otlp-endpoint http://127.0.0.1:9/ </dev/null
	[ "$status" -eq 1 ]
	[[ "$output" == *"OTEL_EXPORTER_OTLP_HEADERS: not a list of key=value pairs"* ]]
}
