#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-trace-dump on the spans of real qwen-serve and qwen-acp-child runs:
# a fast restore, one the child fails, a timed-out one, a quarantined one
# and a child killed mid-restore.  The text, json, --summary and chrome
# views are compared, normalised (normalise.sh --all: ids, times, measured
# durations, bars), against t/data/trace-dump/real-*.golden.
#
# Regenerate the goldens after a deliberate change of the output or of the
# spans, from the build tree, then review `git diff t/data/trace-dump`:
#     QWEN_UPDATE_GOLDENS=1 make check TESTS=t/4004-trace-dump-real.bats
# (t/data/trace-dump/README.md says what each scenario does.)

load serve_restore_helper

TD="${TESTDATA:-$BATS_TEST_DIRNAME/data}/trace-dump"

# One transcript for every test: 2 MiB, the same under the sanitizers since
# the goldens keep its byte and record counts, and the generator's fixed
# cwd so that they do not depend on the temporary directory's name.
setup_file() {
	qwen-gen-transcript --mib 2 --seed 7 --session-id "$SID" \
	    --out "$BATS_FILE_TMPDIR" >/dev/null
}

setup() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	TRACE=$BATS_TEST_TMPDIR/trace.jsonl
	STOPPED=()
}

teardown() {
	local p
	for p in "${STOPPED[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
	rteardown
}

real_serve() {
	SERVE_CHILD=$REAL serve_start --trace-file "$TRACE" "$@"
}

stop() {
	kill -STOP "$1"
	STOPPED+=("$1")
}

cont() {
	local p keep=()
	kill -CONT "$1"
	for p in "${STOPPED[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	STOPPED=("${keep[@]}")
}

# big_transcript: the transcript for $SID in the data dir.
big_transcript() {
	local dir
	dir=$DATA/projects/$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')/chats
	mkdir -p "$dir"
	cp "$BATS_FILE_TMPDIR/$SID.jsonl" "$dir/"
}

# nspans NAME: how many spans named NAME for $SID are in the trace file.
nspans() {
	jq -s --arg n "$1" --arg s "$SID" '[.[].resourceSpans[].scopeSpans[].spans[] |
	    select(.name == $n and any(.attributes[]; .key == "session.id" and
	    .value.stringValue == $s))] | length' "$TRACE" 2>/dev/null
}

spans_are() {
	[ "$(nspans "$2")" = "$1" ]
}

# restore_written N_CHILD: the daemon's restore span for $SID and N_CHILD
# child restore spans are in the trace file.
restore_written() {
	wait_for 20 spans_are 1 qwen-code.daemon.bridge &&
	    wait_for 20 spans_are "$1" qwen-code.daemon.session_restore
}

# stopped_beside_sibling [qwen-serve args...]: the daemon, a sibling
# session ($SIB) on its child ($CPID), the transcript, the child stopped.
stopped_beside_sibling() {
	real_serve "$@"
	req POST /session '{}'
	expect 200
	SIB=$(jq -r .sessionId <<<"$body")
	CPID=$(child_pid)
	big_transcript
	stop "$CPID"
}

# overdue_resume [qwen-serve args...]: a resume against a 1 ms budget with
# the child stopped: 504, then overdue one budget later.  The child stays
# stopped, so no timing decides the restore's shape on a loaded machine.
overdue_resume() {
	stopped_beside_sibling --session-restore-timeout-ms 1 "$@"
	bg_req r POST /session/$SID/resume '{}'
	bg_wait r 20
	expect 504 '.code == "session_restore_timeout" and .timeoutMs == 1'
	health_wait '.restoresOverdue == 1' 20
}

# golden NAME ARGS...: qwen-trace-dump ARGS on the trace file, normalised,
# equals real-NAME.golden (or replaces it with QWEN_UPDATE_GOLDENS=1).
golden() {
	local name=$1 out=$BATS_TEST_TMPDIR/$1.out
	shift
	qwen-trace-dump --no-pager "$@" "$TRACE" >"$BATS_TEST_TMPDIR/$name.raw"
	"$TD/normalise.sh" --all <"$BATS_TEST_TMPDIR/$name.raw" >"$out"
	if [ -n "${QWEN_UPDATE_GOLDENS:-}" ]; then
		cp "$out" "$TD/real-$name.golden"
		return 0
	fi
	diff -u "$TD/real-$name.golden" "$out"
}

# goldens NAME NCHILD: the four views of $SID's restore against their goldens.
goldens() {
	golden "$1" --session "$SID"
	golden "$1-json" --session "$SID" --format json
	golden "$1-summary" --session "$SID" --summary
	golden "$1-chrome" --session "$SID" --format chrome
	export_chrome_valid "$BATS_TEST_TMPDIR/$1-chrome.raw" "$2"
}

# export_chrome_valid FILE NCHILD: trace-event JSON with the daemon's span on the
# daemon track (pid 1), NCHILD child spans on the child track (pid 2) on
# the same thread, the stages inside the child span, the daemon's events
# inside its span, in microseconds of real (epoch) time.
export_chrome_valid() {
	jq -e --argjson n "$2" '
	    [.traceEvents[] | select(.ph == "M" and .name == "process_name") |
	     "\(.pid) \(.args.name)"][:2] ==
	        ["1 qwen-serve (daemon)", "2 qwen-acp-child (child)"] and
	    ([.traceEvents[] | select(.ph == "X" and .cat == "daemon")] as $d |
	     ($d | length == 1 and .[0].pid == 1 and .[0].ts > 1.7e15) and
	     ([.traceEvents[] | select(.ph == "X" and .cat == "child")] |
	      length == $n and all(.pid == 2 and .tid == $d[0].tid)) and
	     ([.traceEvents[] | select(.ph == "i" and .pid == 1) |
	       .ts >= $d[0].ts - 1 and .ts <= $d[0].ts + $d[0].dur + 1] | all)) and
	    ([.traceEvents[] | select(.ph == "X" and .cat == "child")] as $c |
	     [.traceEvents[] | select(.ph == "X" and .cat == "stage") | . as $s |
	      ($c[] | select(.tid == $s.tid)) as $p |
	      ($s.pid == 2 and $s.ts >= $p.ts and
	       $s.ts + $s.dur <= $p.ts + $p.dur + 1)] | all)' "$1" >/dev/null
}

@test "real fast load: both spans joined, every stage, success" {
	real_serve
	big_transcript
	req POST /session/$SID/load '{}'
	expect 200
	restore_written 1
	goldens fast 1
	output=$(cat "$BATS_TEST_TMPDIR/fast.raw")
	[[ "$output" == *"restore load session $SID  success"* ]]
	[[ "$output" != *FAILED* ]]
	[[ "$output" == *"loop lag   mean "* ]]
	[[ "$output" == *"channel    1"* ]]
}

@test "real failed load: no transcript, the child's failed stage marked" {
	real_serve
	req POST /session/$SID/load '{}'
	expect 404 '.code == "session_not_found"'
	restore_written 1
	goldens failed 1
	output=$(cat "$BATS_TEST_TMPDIR/failed.raw")
	[[ "$output" == *"restore load session $SID  failure"* ]]
	[ "$(grep -c FAILED <<<"$output")" -eq 1 ]
	grep -qE '^    existence_check +[0-9.]+ ms  \|.*\|  FAILED$' <<<"$output"
	[ "$(jq -r '.child.failedStage' "$BATS_TEST_TMPDIR/failed-json.raw")" = existence_check ]
	[ "$(jq -r '.traceEvents[] | select(.cat=="stage" and .args.failed) | .name' \
	    "$BATS_TEST_TMPDIR/failed-chrome.raw")" = existence_check ]
}

# The child stopped until the restore is overdue, then let go.
@test "real timed-out resume: 504, overdue, the late success closed" {
	overdue_resume
	cont "$CPID"
	health_wait '.restoresUnsettled == 0' 20
	grep -q "session $SID: cleanup close: close_ok" "$BATS_TEST_TMPDIR/err"
	restore_written 1
	goldens timeout 1
	output=$(cat "$BATS_TEST_TMPDIR/timeout.raw")
	[[ "$output" == *"result     timeout after "*" ms, late success, cleanup closed, settlement overdue"* ]]
}

# Overdue as above; then, with the daemon stopped, the child answers into
# the pipe; the child stopped again, the daemon reads the late answer and
# its close times out (--initialize-timeout-ms, generous for the child's
# start on a loaded machine): quarantined.  Closing the sibling drains the
# channel, whose end settles the restore.
@test "real quarantined resume: the cleanup close times out, the drain settles it" {
	overdue_resume --initialize-timeout-ms 3000
	local cpid=$CPID
	stop "$SERVE_PID"
	cont "$cpid"
	wait_for 30 spans_are 1 qwen-code.daemon.session_restore
	wait_for 30 answer_in_pipe "$cpid" "$SERVE_PID"
	stop "$cpid"
	cont "$SERVE_PID"
	health_wait '.restoresQuarantined == 1' 20
	cont "$cpid"
	req POST /session/$SID/load '{}'
	expect 409 '.reason == "awaiting_abandoned_cleanup"'
	req DELETE /session/$SIB
	expect 204
	health_wait '.restoresUnsettled == 0' 20
	restore_written 1
	goldens quarantined 1
	output=$(cat "$BATS_TEST_TMPDIR/quarantined.raw")
	[[ "$output" == *"result     timeout after "*" ms, late success, cleanup quarantined, settled by transport_closed, settlement overdue"* ]]
}

# answer_in_pipe CHILD DAEMON: bytes wait in the pipe from CHILD's stdout
# to DAEMON (FIONREAD on it, opened through /proc).  The resume answer is
# the only message and is written at once (under PIPE_BUF).
answer_in_pipe() {
	local pipe fd
	pipe=$(readlink "/proc/$1/fd/1")
	for fd in /proc/$2/fd/*; do
		[ "$(readlink "$fd")" = "$pipe" ] || continue
		perl -MFcntl -e 'sysopen(my $f, $ARGV[0], O_RDONLY | O_NONBLOCK) or die;
		    my $n = pack("i", 0); ioctl($f, 0x541B, $n) or die;
		    exit(unpack("i", $n) > 0 ? 0 : 1)' "$fd" && return 0
	done
	return 1
}

@test "real child killed mid-restore: the daemon span alone" {
	stopped_beside_sibling
	bg_req r POST /session/$SID/load '{}'
	wait_for 20 grep -q "session $SID: load requested" "$BATS_TEST_TMPDIR/err"
	kill -KILL "$CPID"
	STOPPED=()
	bg_wait r 20
	expect 503 '.code == "acp_channel_unavailable" and .reason == "channel_closed"'
	restore_written 0
	goldens killed 0
	output=$(cat "$BATS_TEST_TMPDIR/killed.raw")
	[[ "$output" == *"child      missing (no span: the child did not finish the restore)"* ]]
}
