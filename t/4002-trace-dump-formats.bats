#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-trace-dump: --format json and chrome, malformed lines, colours and
# the pager.
load test_helper
bats_require_minimum_version 1.5.0

TD="${TESTDATA:-$BATS_TEST_DIRNAME/data}/trace-dump"

@test "--format json: one object per restore per line" {
	run qwen-trace-dump --format json "$TD/all.jsonl"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 6 ]
	for l in "${lines[@]}"; do jq -e . <<<"$l" >/dev/null; done
	q=$(grep 5e7d0f2a-0003 <<<"$output")
	[ "$(jq -r '[.type,.action,.budgetMs,.publicResult,.lateResult,.cleanupResult,.overdue,.child.failedStage] | join(" ")' <<<"$q")" = "restore load 500 timeout failure quarantined true auth" ]
	[ "$(jq -r '.child.stages.transcript_read' <<<"$q")" = 400 ]
	[ "$(jq -r '.child.loopLag.p99Ms' <<<"$q")" = 4.25 ]
	[ "$(jq -r '.elapsedMs' <<<"$q")" = 500 ]
	tq=$(grep 5e7d0f2a-0002 <<<"$output")
	[ "$(jq -r '.child.partialReplay' <<<"$tq")" = true ]
	[ "$(jq -r '.child | has("partialReplay")' <<<"$q")" = false ]
	k=$(grep 5e7d0f2a-0004 <<<"$output")
	[ "$(jq -r '.child' <<<"$k")" = null ]
	[ "$(jq -r '.cleanupResult' <<<"$k")" = transport_closed ]
	d=$(grep 5e7d0f2a-0005 <<<"$output")
	[ "$(jq -r '.daemon' <<<"$d")" = null ]
	g=$(jq -c 'select(.type == "span")' <<<"$output")
	[ "$(jq -r '.name' <<<"$g")" = qwen-code.daemon.session_start ]
	[ "$(jq -r '.attributes["qwen-code.daemon.fresh"]' <<<"$g")" = true ]
}

@test "--format json golden with the real writer" {
	make-spans "$BATS_TEST_TMPDIR/t.jsonl" -n 3 -s mix -b 100
	qwen-trace-dump --format json "$BATS_TEST_TMPDIR/t.jsonl" |
		"$TD/normalise.sh" >"$BATS_TEST_TMPDIR/out"
	diff -u "$TD/mix-json.golden" "$BATS_TEST_TMPDIR/out"
}

@test "--format chrome: valid trace-event JSON, daemon and child tracks, nested stages" {
	qwen-trace-dump --format chrome "$TD/all.jsonl" >"$BATS_TEST_TMPDIR/c.json"
	jq -e . "$BATS_TEST_TMPDIR/c.json" >/dev/null
	c="$BATS_TEST_TMPDIR/c.json"
	[ "$(jq -r '.displayTimeUnit' "$c")" = ms ]
	# Process names for the two tracks.
	[ "$(jq -r '.traceEvents[] | select(.ph=="M" and .name=="process_name" and .pid==1) | .args.name' "$c")" = "qwen-serve (daemon)" ]
	[ "$(jq -r '.traceEvents[] | select(.ph=="M" and .name=="process_name" and .pid==2) | .args.name' "$c")" = "qwen-acp-child (child)" ]
	# Daemon spans: fast, timeout, quarantined, killed; child spans: fast,
	# timeout, quarantined, direct.
	[ "$(jq '[.traceEvents[] | select(.ph=="X" and .cat=="daemon")] | length' "$c")" -eq 4 ]
	[ "$(jq '[.traceEvents[] | select(.ph=="X" and .cat=="child")] | length' "$c")" -eq 4 ]
	[ "$(jq '[.traceEvents[] | select(.ph=="X" and .cat=="stage")] | length' "$c")" -eq 30 ]
	# Every stage lies inside its child span on the same pid/tid.
	jq -e '[.traceEvents[] | select(.ph=="X" and .cat=="child")] as $c |
	    [.traceEvents[] | select(.ph=="X" and .cat=="stage") | . as $s |
	     ($c[] | select(.tid==$s.tid)) as $p |
	     ($s.pid==2 and $s.ts >= $p.ts and $s.ts + $s.dur <= $p.ts + $p.dur)] | all' "$c"
	# The daemon and child of one restore share a tid, on pids 1 and 2.
	jq -e '[.traceEvents[] | select(.ph=="X" and .cat=="daemon" and .args.sessionId=="5e7d0f2a-0002-4000-8000-000000000002")][0] as $d |
	    [.traceEvents[] | select(.ph=="X" and .cat=="child" and .tid==$d.tid)] | length == 1 and .[0].pid == 2' "$c"
	# Results as instant events; the failed stage flagged; the deadline marked.
	[ "$(jq '[.traceEvents[] | select(.ph=="i" and .name=="session.restore.public_result")] | length' "$c")" -eq 4 ]
	[ "$(jq -r '.traceEvents[] | select(.cat=="stage" and .args.failed) | .name' "$c" | sort | tr '\n' ' ')" = "auth chain_reconstruct " ]
	# Only where the daemon span reached it: not for the fast restore.
	[ "$(jq '[.traceEvents[] | select(.name=="deadline")] | length' "$c")" -eq 3 ]
	jq -e '[.traceEvents[] | select(.ph=="X" and .cat=="daemon")] as $d |
	    [.traceEvents[] | select(.name=="deadline") | . as $e |
	     ($d[] | select(.tid==$e.tid)) as $s | $e.ts <= $s.ts + $s.dur] | all' "$c"
	# Times in microseconds: the fast restore starts at T0 + 10 s.
	[ "$(jq -r '.traceEvents[] | select(.cat=="daemon" and .args.sessionId=="5e7d0f2a-0001-4000-8000-000000000001") | "\(.ts) \(.dur)"' "$c")" = "1780000010000000 112000" ]
}

@test "malformed lines are counted and reported with their line numbers, never fatal" {
	run --separate-stderr qwen-trace-dump "$TD/malformed.jsonl"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^restore ' <<<"$output")" -eq 1 ]
	[[ "$output" == *"5e7d0f2a-0001"*"success"* ]]
	diff -u - <(printf '%s\n' "${stderr_lines[@]}") <<EOT
qwen-trace-dump: $TD/malformed.jsonl:2: malformed line: span with missing or invalid traceId
qwen-trace-dump: $TD/malformed.jsonl:3: malformed line: invalid JSON: boolean expected
qwen-trace-dump: $TD/malformed.jsonl:4: malformed line: not an ExportTraceServiceRequest (no resourceSpans array)
qwen-trace-dump: $TD/malformed.jsonl:6: malformed line: invalid JSON: truncated
qwen-trace-dump: $TD/malformed.jsonl:7: malformed line: invalid JSON: unexpected character
qwen-trace-dump: 5 malformed lines skipped
EOT
	run --separate-stderr qwen-trace-dump --summary "$TD/malformed.jsonl"
	grep -qE '^malformed lines +5$' <<<"$output"
}

@test "binary garbage and an overlong count of bad lines stay non-fatal" {
	head -c 200000 /dev/urandom >"$BATS_TEST_TMPDIR/junk"
	cat "$TD/fast.jsonl" >>"$BATS_TEST_TMPDIR/junk"
	run --separate-stderr qwen-trace-dump "$BATS_TEST_TMPDIR/junk"
	[ "$status" -eq 0 ]
	[[ "$output" == *"restore load session 5e7d0f2a-0001"* ]]
	[ "$(grep -c 'malformed line:' <<<"$stderr")" -le 100 ]
}

@test "colours only on a terminal, never with NO_COLOR" {
	run qwen-trace-dump "$TD/quarantined.jsonl"
	[[ "$output" != *$'\033['* ]]
	run on_tty env PAGER= qwen-trace-dump "$TD/quarantined.jsonl"
	[[ "$output" == *$'\033[31mFAILED'* ]]
	[[ "$output" == *$'\033[31mtimeout'* ]]
	run on_tty env PAGER= NO_COLOR=1 qwen-trace-dump "$TD/quarantined.jsonl"
	[[ "$output" == *"FAILED"* ]]
	[[ "$output" != *$'\033['* ]]
}

@test "output goes through \$PAGER on a terminal, not with --no-pager" {
	p="$BATS_TEST_TMPDIR/paged"
	PAGER="tee $p" NO_COLOR=1 run on_tty qwen-trace-dump "$TD/fast.jsonl"
	grep -q 'restore load session 5e7d0f2a-0001' "$p"
	rm -f "$p"
	PAGER="tee $p" run on_tty qwen-trace-dump --no-pager "$TD/fast.jsonl"
	[[ "$output" == *"restore load session 5e7d0f2a-0001"* ]]
	[ ! -e "$p" ]
	# LESS=FRX is set for the pager unless the user has LESS.
	PAGER="sh -c 'echo LESS=\$LESS >$p'" run on_tty qwen-trace-dump "$TD/fast.jsonl"
	[ "$(cat "$p")" = LESS=FRX ]
	# A pager that cannot run is an error (exit 1), not silent success.
	PAGER=/nonexistent/pager run on_tty 'qwen-trace-dump '"$TD/fast.jsonl"'; echo "rc=$?"'
	[[ "$output" == *"the pager failed"* ]]
	[[ "$output" == *"rc=1"* ]]
}

@test "the manual page lints clean and documents every option" {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	man="$QWEN_TOP_SRCDIR/man/qwen-trace-dump.1"
	mandoc -Tlint -Wwarning "$man"
	for o in follow format max-pending no-pager result session since \
	    slowest summary trace help; do
		grep -q "^\.It Fl \\\\-$o" "$man" || { echo "undocumented: --$o"; false; }
		qwen-trace-dump --help | grep -q -- "--$o" ||
			{ echo "not in usage: --$o"; false; }
	done
	for s in "EXIT STATUS" ENVIRONMENT FILES EXAMPLES; do
		grep -q "^\.Sh $s" "$man"
	done
}
