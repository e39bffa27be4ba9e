#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-trace-dump: the text view, --summary and the filters, against
# golden output with ids and times normalised.
load test_helper

TD="$TESTDATA/trace-dump"
[ -n "${TESTDATA:-}" ] || TD="$BATS_TEST_DIRNAME/data/trace-dump"

norm() { "$TD/normalise.sh" "$@"; }

# golden NAME CMD...: CMD's stdout, normalised, must equal NAME.golden.
golden() {
	local name=$1
	shift
	"$@" >"$BATS_TEST_TMPDIR/raw"
	norm <"$BATS_TEST_TMPDIR/raw" >"$BATS_TEST_TMPDIR/out"
	diff -u "$TD/$name.golden" "$BATS_TEST_TMPDIR/out"
}

@test "text view of every restore shape matches the golden output" {
	golden all qwen-trace-dump --no-pager "$TD/all.jsonl"
}

@test "real writer: make-spans restores match the golden output" {
	make-spans "$BATS_TEST_TMPDIR/t.jsonl" -n 10 -s mix -b 100
	golden mix qwen-trace-dump "$BATS_TEST_TMPDIR/t.jsonl"
}

@test "fast restore: every stage with a bar scaled to the budget" {
	run qwen-trace-dump "$TD/fast.jsonl"
	[ "$status" -eq 0 ]
	[[ "$output" == *"restore load session 5e7d0f2a-0001-4000-8000-000000000001  success"* ]]
	[[ "$output" == *"budget     60000 ms"* ]]
	for s in settings_load existence_check transcript_read chain_reconstruct \
	    config_setup auth file_system_setup session_register history_replay \
	    response_build; do
		grep -qE "^    $s +[0-9.]+ ms  \|" <<<"$output"
	done
	[[ "$output" == *"loop lag   mean 0.8 ms, p50 0.5 ms, p99 4.2 ms, max 12.0 ms"* ]]
	[[ "$output" == *"transcript 1048576 bytes, 900 chain records"* ]]
	[[ "$output" != *FAILED* ]]
}

@test "timed-out and quarantined restore: results, overdue, failed stage, bar capped" {
	run qwen-trace-dump "$TD/quarantined.jsonl"
	[ "$status" -eq 0 ]
	[[ "$output" == *"result     timeout after 500.000 ms, late failure, cleanup quarantined, settlement overdue"* ]]
	grep -qE '^    auth +40.0 ms  \|###  +\|  FAILED$' <<<"$output"
	# config_setup 650 ms over a 500 ms budget: a full bar ending in '>'.
	grep -qE '^    config_setup +650.0 ms  \|#{40}>$' <<<"$output"
	# transcript_read 400/500 of 40 columns = 32.
	grep -qE '^    transcript_read +400.0 ms  \|#{32} {8}\|$' <<<"$output"
}

@test "child killed mid-restore: the daemon side alone" {
	run qwen-trace-dump "$TD/killed.jsonl"
	[ "$status" -eq 0 ]
	[[ "$output" == *"result     timeout after 800.000 ms, cleanup transport_closed"* ]]
	[[ "$output" == *"child      missing (no span: the child did not finish the restore)"* ]]
	[[ "$output" != *"stages"* ]]
}

@test "child driven directly: a restore without a daemon span" {
	run qwen-trace-dump "$TD/direct.jsonl"
	[ "$status" -eq 0 ]
	[[ "$output" == *"restore resume session 5e7d0f2a-0005-4000-8000-000000000005  failure"* ]]
	[[ "$output" == *"daemon     none (child driven directly)"* ]]
	[[ "$output" == *"bar: 40 columns = child span"* ]]
	grep -qE '^    chain_reconstruct +8.0 ms .*FAILED$' <<<"$output"
}

@test "unknown spans are shown as generic spans" {
	run qwen-trace-dump "$TD/generic.jsonl"
	[ "$status" -eq 0 ]
	[[ "$output" == *"span qwen-code.daemon.session_start  12.250 ms"* ]]
	[[ "$output" == *'attribute  qwen-code.daemon.fresh = true'* ]]
	[[ "$output" == *"event      session.registered at +10.000 ms"* ]]
}

@test "--summary: percentiles over a known set" {
	run qwen-trace-dump --summary "$TD/known.jsonl"
	[ "$status" -eq 0 ]
	# transcript_read is 40 ms x 1..10: nearest rank p50 200, p90 360.
	grep -qE '^  transcript_read +10 +200.0 +360.0 +400.0 +400.0$' <<<"$output"
	grep -qE '^  auth +10 +2.0 +2.0 +2.0 +2.0$' <<<"$output"
	grep -qE '^restores +10$' <<<"$output"
	golden summary qwen-trace-dump --summary "$TD/all.jsonl"
}

@test "--summary counts timeouts, quarantined, overdue and missing children" {
	run qwen-trace-dump --summary "$TD/all.jsonl"
	grep -qE '^  timed out +3$' <<<"$output"
	grep -qE '^quarantined +1$' <<<"$output"
	grep -qE '^settlement overdue +1$' <<<"$output"
	grep -qE '^child span missing +1$' <<<"$output"
	grep -qE '^child driven directly +1$' <<<"$output"
	grep -qE '^other spans +1$' <<<"$output"
}

@test "--result, --session, --trace filter restores" {
	run qwen-trace-dump --result timeout "$TD/all.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 3 ]
	[[ "$output" != *"span qwen-code.daemon.session_start"* ]]
	run qwen-trace-dump --result failure "$TD/all.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 1 ]
	[[ "$output" == *"5e7d0f2a-0005"* ]]
	run qwen-trace-dump --result success "$TD/all.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 1 ]
	run qwen-trace-dump --session 5e7d0f2a-0002-4000-8000-000000000002 "$TD/all.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 1 ]
	[[ "$output" == *"restore resume session 5e7d0f2a-0002"* ]]
	run qwen-trace-dump --trace A0000000000000000000000000000003 "$TD/all.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 1 ]
	[[ "$output" == *"5e7d0f2a-0003"* ]]
}

@test "--since with ISO 8601 and relative times" {
	# Fixture restores start 20:26:50 .. 20:27:40 on 2026-05-28.
	run qwen-trace-dump --since 2026-05-28T20:27:15Z "$TD/all.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 2 ]
	run qwen-trace-dump --since 2026-05-28T22:27:15+02:00 "$TD/all.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 2 ]
	run qwen-trace-dump --since 2026-05-28 "$TD/all.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 5 ]
	make-spans "$BATS_TEST_TMPDIR/now.jsonl" -n 2
	cat "$TD/all.jsonl" >>"$BATS_TEST_TMPDIR/now.jsonl"
	run qwen-trace-dump --since 10m "$BATS_TEST_TMPDIR/now.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 2 ]
	run qwen-trace-dump --since 2h "$BATS_TEST_TMPDIR/now.jsonl"
	[ "$(grep -c '^restore ' <<<"$output")" -eq 2 ]
}

@test "--slowest N keeps the N slowest, slowest first" {
	run qwen-trace-dump --slowest 3 "$TD/all.jsonl"
	[ "$status" -eq 0 ]
	run grep -o 'session 5e7d0f2a-000[0-9]' <<<"$output"
	[ "${lines[*]}" = "session 5e7d0f2a-0002 session 5e7d0f2a-0004 session 5e7d0f2a-0003" ]
}
