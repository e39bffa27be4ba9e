#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Every program as a Unix user meets it (issue 17): --version and --help
# on stdout with exit 0, a write error (ENOSPC) exits 1 with a message, a
# closed pipe stays quiet; qwen-trace-dump says "no restores found" for an
# empty input and starts its pager only when it has output.

load test_helper
bats_require_minimum_version 1.5.0

PROGRAMS="qwen-serve qwen-acp-child qwen-restore qwen-trace-dump"

@test "--version and --help: every program, on stdout, exit 0, documented" {
	for p in $PROGRAMS; do
		run --separate-stderr "$p" --version
		[ "$status" -eq 0 ]
		[ "$output" = "$p 0.1.0" ] || [[ "$output" =~ ^$p\ [0-9]+\.[0-9]+ ]]
		run --separate-stderr "$p" --help
		[ "$status" -eq 0 ]
		[[ "$output" == "usage: $p "* ]]
		[ -z "$stderr" ]
		man=$(ls "$QWEN_TOP_SRCDIR"/man/"$p".[18])
		grep -qE '^\.It Fl \\?-version' "$man"
		grep -qE '^\.It Fl (h , )?\\?-help' "$man"
	done
}

@test "a write error exits 1 with a message: --help, --version, an export" {
	[ -w /dev/full ] || skip "no /dev/full"
	for p in $PROGRAMS; do
		for o in --help --version; do
			run --separate-stderr bash -c "'$p' $o >/dev/full"
			[ "$status" -eq 1 ]
			[[ "$stderr" == "$p: write error: No space left on device" ]]
		done
	done
	run --separate-stderr bash -c "qwen-trace-dump --format chrome '$TESTDATA/trace-dump/all.jsonl' >/dev/full"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"write error"* ]]
	run --separate-stderr bash -c "qwen-trace-dump --format json '$TESTDATA/trace-dump/all.jsonl' >/dev/full"
	[ "$status" -eq 1 ]
}

@test "qwen-restore: a write error on its answer exits 1" {
	[ -w /dev/full ] || skip "no /dev/full"
	run --separate-stderr bash -c "qwen-restore --socket /nonexistent/s.sock --json status s-1 >/dev/full"
	# The unreachable daemon's code wins; the lost JSON is still reported.
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"write error: No space left on device"* ]]
}

@test "a reader that leaves early: quiet, exit 0" {
	run --separate-stderr bash -c "set -o pipefail; qwen-trace-dump --no-pager '$TESTDATA/trace-dump/all.jsonl' | head -c 10 >/dev/null"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	run --separate-stderr bash -c "set -o pipefail; qwen-trace-dump --format chrome '$TESTDATA/trace-dump/all.jsonl' | head -c 1 >/dev/null"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}

@test "an empty input: no restores found" {
	: >"$BATS_TEST_TMPDIR/empty.jsonl"
	run --separate-stderr qwen-trace-dump --no-pager "$BATS_TEST_TMPDIR/empty.jsonl"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$stderr" = "qwen-trace-dump: no restores found" ]
	run --separate-stderr qwen-trace-dump --no-pager --session nope "$TESTDATA/trace-dump/all.jsonl"
	[ -z "$output" ]
	[ "$status" -eq 3 ]
	[ "$stderr" = "qwen-trace-dump: no restores match --session nope" ]
	# An export stays valid JSON.
	run --separate-stderr qwen-trace-dump --format chrome "$BATS_TEST_TMPDIR/empty.jsonl"
	jq -e ".traceEvents | type == \"array\"" <<<"$output" >/dev/null
}

@test "the pager starts only when there is output" {
	command -v script >/dev/null || skip "script(1) not installed"
	pager=$BATS_TEST_TMPDIR/pager
	printf '#!/bin/sh\ntouch "%s.ran"\nexec cat\n' "$pager" >"$pager"
	chmod +x "$pager"
	: >"$BATS_TEST_TMPDIR/empty.jsonl"
	PAGER=$pager run on_tty "qwen-trace-dump '$BATS_TEST_TMPDIR/missing.jsonl'"
	[ "$status" -eq 1 ]
	[ ! -e "$pager.ran" ]
	PAGER=$pager run on_tty "qwen-trace-dump '$BATS_TEST_TMPDIR/empty.jsonl'"
	[ "$status" -eq 0 ]
	[ ! -e "$pager.ran" ]
	PAGER=$pager run on_tty "qwen-trace-dump '$TESTDATA/trace-dump/all.jsonl'"
	[ "$status" -eq 0 ]
	[ -e "$pager.ran" ]
	[[ "$output" == *"restore load session"* ]]
}
