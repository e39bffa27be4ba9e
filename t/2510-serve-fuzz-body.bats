#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the JSON-body fuzz harness (t/fuzz/fuzz-body.c) reaches the
# real request path: its kept corpus, replayed without libFuzzer, gets
# the routes' own answers (a prompt taken, bodies refused 400 by the
# route, 413 json_too_complex from the value budget), not the guard's
# 503; with no live session no body is parsed at all.

bats_require_minimum_version 1.5.0

setup() {
	REPLAY=$QWEN_TOP_BUILDDIR/t/fuzz/body-replay
	CORPUS=$QWEN_TOP_SRCDIR/t/fuzz/corpus/body
	OUT=$BATS_TEST_TMPDIR/status
}

# answers ROUTE STATUS: how many inputs to ROUTE got STATUS.
answers() {
	grep -c "^/session/[^/]*/$1 $2\$" "$OUT" || true
}

@test "the corpus on a live session: prompts taken, 400 from the routes, 413 from the budget, never 503" {
	FUZZ_BODY_CHILD=$QWEN_TOP_BUILDDIR/t/helper/fake-child FUZZ_BODY_STATUS=1 \
	    "$REPLAY" "$CORPUS" >"$OUT"
	# Every input was answered.
	[ "$(wc -l <"$OUT")" -eq "$(find "$CORPUS" -type f | wc -l)" ]
	run -1 grep -E ' (0|503)$' "$OUT"
	[ "$(answers prompt 202)" -eq 2 ]
	[ "$(answers prompt 413)" -eq 2 ]
	[ "$(answers prompt 400)" -eq 3 ]
	[ "$(answers branch 400)" -eq 2 ]
	[ "$(answers branch 201)" -eq 1 ]
	[ "$(answers model 200)" -eq 1 ]
	[ "$(answers model 400)" -eq 1 ]
}

@test "the corpus with no live session: 404 before any body is read, over budget or not" {
	FUZZ_BODY_STATUS=1 "$REPLAY" "$CORPUS" >"$OUT"
	[ "$(answers prompt 404)" -eq 7 ]
	[ "$(answers model 404)" -eq 2 ]
	run -1 grep -E ' 413$' "$OUT"
}

@test "the 413 is json_too_complex, for values and for nesting" {
	FUZZ_BODY_CHILD=$QWEN_TOP_BUILDDIR/t/helper/fake-child FUZZ_HTTP_ECHO=1 \
	    "$REPLAY" "$CORPUS/prompt-many-values" "$CORPUS/prompt-deep" 2>"$OUT"
	[ "$(grep -c '"code":"json_too_complex"' "$OUT")" -eq 2 ]
}
