#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve GET /metrics: Prometheus text format, checked by promtool;
# behind the same gates as every route; its figures move with the events.

load serve_helper

teardown() {
	serve_teardown
}

# metric NAME{LABELS}: the value of one sample of the last scrape.
metric() {
	awk -v k="$1" '$1 == k { print $2 }' "$BATS_TEST_TMPDIR/metrics"
}

# scrape: GET /metrics into $BATS_TEST_TMPDIR/metrics (200 expected).
scrape() {
	req GET /metrics
	expect 200
	printf '%s\n' "$body" >"$BATS_TEST_TMPDIR/metrics"
}

@test "/metrics: promtool accepts it; text format content type" {
	command -v promtool >/dev/null || skip "promtool not installed (Debian prometheus)"
	serve_start
	scrape
	[[ "$(header Content-Type)" == "text/plain; version=0.0.4"* ]]
	run promtool check metrics <"$BATS_TEST_TMPDIR/metrics"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# Every family the operator graphs is there.
	for f in qwen_serve_sessions qwen_serve_restores_total \
	    qwen_serve_restore_duration_seconds_bucket qwen_serve_restores_in_flight \
	    qwen_serve_prompts_running qwen_serve_prompts_queued \
	    qwen_serve_prompt_duration_seconds_count \
	    qwen_serve_permission_requests_pending qwen_serve_sse_subscribers \
	    qwen_serve_sse_dropped_events_total qwen_serve_connections \
	    qwen_serve_refusals_total qwen_serve_children_running \
	    qwen_serve_child_restarts_total qwen_serve_otlp_spans_dropped_total \
	    process_resident_memory_bytes; do
		grep -q "^$f[ {]" "$BATS_TEST_TMPDIR/metrics" || { echo "no $f" >&2; false; }
	done
	[ "$(metric process_resident_memory_bytes)" -gt 0 ]
}

@test "/metrics: a load, a prompt, a stream and a child crash move their figures" {
	serve_start
	make_transcript
	scrape
	[ "$(metric 'qwen_serve_restores_total{action="load",outcome="success"}')" = 0 ]
	[ "$(metric 'qwen_serve_restore_duration_seconds_count{action="load"}')" = 0 ]
	req POST /session/$SID/load '{}'
	expect 200
	scrape
	[ "$(metric 'qwen_serve_restores_total{action="load",outcome="success"}')" = 1 ]
	[ "$(metric 'qwen_serve_restore_duration_seconds_count{action="load"}')" = 1 ]
	[ "$(metric 'qwen_serve_restore_duration_seconds_bucket{action="load",le="+Inf"}')" = 1 ]
	[ "$(metric 'qwen_serve_sessions{state="idle"}')" = 1 ]
	[ "$(metric qwen_serve_children_running)" = 1 ]
	[ "$(metric qwen_serve_child_starts_total)" = 1 ]
	[ "$(metric qwen_serve_prompts_total{result=\"complete\"})" = 0 ]
	prompt_turn a $SID
	scrape
	[ "$(metric 'qwen_serve_prompts_total{result="complete"}')" = 1 ]
	[ "$(metric qwen_serve_prompt_duration_seconds_count)" = 1 ]
	[ "$(metric qwen_serve_sse_subscribers)" = 1 ]
	# The scrape's own connection is open on the Unix listener.
	[ "$(metric 'qwen_serve_connections{listener="unix"}')" -ge 1 ]
	[ "$(metric 'qwen_serve_connections_total{listener="unix"}')" -ge 3 ]
	# A restore of an unknown id fails, and is counted as a failure.
	req POST /session/$SID2/load '{}'
	scrape
	[ "$(metric 'qwen_serve_restores_total{action="load",outcome="failure"}')" = 1 ]
	# The child crashes: an exit on its own, then a restart on the next load.
	kill -KILL "$(pgrep -P "$SERVE_PID" | head -1)"
	wait_for 10 cond '[ "$(req GET /metrics; printf "%s\n" "$body" | awk '\''$1 == "qwen_serve_children_running" { print $2 }'\'')" = 0 ]'
	scrape
	[ "$(metric 'qwen_serve_child_exits_total{reason="crashed"}')" = 1 ]
	[ "$(metric qwen_serve_child_restarts_total)" = 0 ]
	req POST /session/$SID/load '{}'
	expect 200
	scrape
	[ "$(metric qwen_serve_child_restarts_total)" = 1 ]
	[ "$(metric 'qwen_serve_restores_total{action="load",outcome="success"}')" = 2 ]
}

@test "/metrics: a prompt held by the child is running, the next one queued" {
	FAKE_CHILD=hold=session/prompt serve_loaded
	prompt_post $SID
	prompt_post $SID
	wait_for 5 cond '[ "$(req GET /metrics; printf "%s\n" "$body" | awk '\''$1 == "qwen_serve_prompts_running" { print $2 }'\'')" = 1 ]'
	scrape
	[ "$(metric qwen_serve_prompts_queued)" = 1 ]
	[ "$(metric 'qwen_serve_sessions{state="prompting"}')" = 1 ]
}

@test "/metrics: same gates as every route; refusals counted by reason" {
	printf 'sekrit-token-123\n' >"$BATS_TEST_TMPDIR/token"
	chmod 600 "$BATS_TEST_TMPDIR/token"
	serve_start --token-file "$BATS_TEST_TMPDIR/token"
	TRANSPORT=tcp req GET /metrics
	expect 401
	TRANSPORT=tcp req GET /metrics '' -H 'Authorization: Bearer sekrit-token-123'
	expect 200
	TRANSPORT=tcp req GET /metrics '' -H 'Host: evil.example:80' \
	    -H 'Authorization: Bearer sekrit-token-123'
	expect 403
	TRANSPORT=tcp req GET /metrics '' -H 'Authorization: Bearer sekrit-token-123'
	printf '%s\n' "$body" >"$BATS_TEST_TMPDIR/metrics"
	[ "$(metric 'qwen_serve_refusals_total{listener="tcp",reason="unauthorized"}')" = 1 ]
	[ "$(metric 'qwen_serve_refusals_total{listener="tcp",reason="forbidden_host"}')" = 1 ]
	# No session id nor prompt text ever becomes a label.
	run ! grep -q "$SID" "$BATS_TEST_TMPDIR/metrics"
}
