#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A fork that fails (RLIMIT_NPROC, memory) while starting a child or an
# agent: libpipeline would end the process; the request gets a retryable
# error instead, and the daemon and the child live on.
# t/helper/failfork.so makes fork() fail while $FAILFORK_FILE exists.
load serve_helper

SHIM=$QWEN_TOP_BUILDDIR/t/helper/failfork.so

setup() {
	FAIL=$BATS_TEST_TMPDIR/fail
	# The shim comes before a sanitizer runtime; tell it that is fine.
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
}

teardown() { serve_teardown; }

@test "the daemon: starting a child fails to fork, the load gets 503 with Retry-After, the daemon lives" {
	SERVE_WRAP="env LD_PRELOAD=$SHIM FAILFORK_FILE=$FAIL" serve_start
	make_transcript
	touch "$FAIL"
	req POST /session/$SID/load '{}'
	expect 503 '.retryable == true'
	[ -n "$(header Retry-After)" ]
	grep -q "cannot start .*: fork: Resource temporarily unavailable" "$BATS_TEST_TMPDIR/err"
	req GET /health
	expect 200
	rm "$FAIL"
	req POST /session/$SID/load '{}'
	expect 200
}

# A placeholder fork followed by pipeline_start() only narrows the window:
# the fork after a good one is libpipeline's, and its failure ends the
# process.  Here only the second fork fails; no fork may be fatal.
@test "the daemon: only the second fork fails (libpipeline's in a placeholder design): 503, the daemon lives, the next start works" {
	SERVE_WRAP="env LD_PRELOAD=$SHIM FAILFORK_FILE=$FAIL" serve_start
	make_transcript
	echo 2 >"$FAIL"
	req POST /session/$SID/load '{}'
	expect 200
	local old
	old=$(child_pid)
	kill -KILL "$old"
	# The exit status is still ours to report.
	wait_for 10 grep -q "child $old exited (signal 9)" "$BATS_TEST_TMPDIR/err"
	req POST /session/$SID/load '{}'
	expect 503 '.retryable == true'
	[ -n "$(header Retry-After)" ]
	kill -0 "$SERVE_PID"
	req GET /health
	expect 200
	req POST /session/$SID/load '{}'
	expect 200
	[ "$(child_pid)" != "$old" ]
}
