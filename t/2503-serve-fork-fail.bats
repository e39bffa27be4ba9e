#!/usr/bin/env bats
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
