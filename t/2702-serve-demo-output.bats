#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# scripts/demo writes terminal escapes only to a terminal, and never with
# NO_COLOR (issue 17).  A copy of the demo whose scripts/setup fails right
# away shows its first heading and stops, without building anything.

load test_helper
bats_require_minimum_version 1.5.0

setup() {
	command -v script >/dev/null || skip "script(1) not installed"
	COPY=$BATS_TEST_TMPDIR/copy
	mkdir -p "$COPY/scripts"
	cp "$QWEN_TOP_SRCDIR/scripts/demo" "$COPY/scripts/demo"
	printf '#!/bin/sh\necho setup stopped here\nexit 3\n' >"$COPY/scripts/setup"
	chmod +x "$COPY/scripts/demo" "$COPY/scripts/setup"
}

@test "demo into a file: plain headings" {
	run sh -c "sh '$COPY/scripts/demo' >'$BATS_TEST_TMPDIR/log' 2>&1"
	[ "$status" -eq 3 ]
	grep -q '^== building' "$BATS_TEST_TMPDIR/log"
	grep -q 'setup stopped here' "$BATS_TEST_TMPDIR/log"
	run ! grep -q "$(printf '\033')" "$BATS_TEST_TMPDIR/log"
}

@test "demo on a terminal: bold headings, none with NO_COLOR" {
	run script -qec "sh '$COPY/scripts/demo'" /dev/null </dev/null
	[[ "$output" == *$'\033[1m== building'* ]]
	NO_COLOR=1 run script -qec "sh '$COPY/scripts/demo'" /dev/null </dev/null
	[[ "$output" == *"== building"* ]]
	[[ "$output" != *$'\033'* ]]
}
