#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The suite's own hygiene: assertions that can fail, unique test numbers,
# man pages that lint clean.  scripts/lint-tests does the bats checks.
load test_helper

LINT=$QWEN_TOP_SRCDIR/scripts/lint-tests
: "${TESTDATA:=$QWEN_TOP_SRCDIR/t/data}"

setup() {
	command -v python3 >/dev/null || skip "python3 not installed"
	F=$BATS_TEST_TMPDIR/t
	mkdir -p "$F"
}

@test "every bats assertion can fail and every test number is used once" {
	run python3 "$LINT" "$QWEN_TOP_SRCDIR/t"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "0 dead assertions, 0 duplicate test numbers" ]
}

# lint_fixture NAME FINDING...: lint-tests on t/data/lint-tests/NAME.fixture
# reports exactly these findings ("LINE: start of the reason"), in order.
lint_fixture() {
	local name=$1 i=0 want
	shift
	cp "$TESTDATA/lint-tests/$name.fixture" "$F/0001-a.bats"
	run python3 "$LINT" "$F"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq $(($# + 1)) ]
	for want in "$@"; do
		[[ "${lines[$i]}" == "$F/0001-a.bats:$want"* ]]
		i=$((i + 1))
	done
	[ "${lines[$i]}" = "$# dead assertions, 0 duplicate test numbers" ]
}

@test "lint-tests: a mid-test '!' line is reported, run ! and || false are not" {
	lint_fixture bang "2: '!' line" "6: '!' line"
}

@test "lint-tests: an && list is reported unless it is control flow or the last command" {
	lint_fixture and-list "2: '&&' list" "3: '&&' list"
}

@test "lint-tests: heredoc bodies and multi-line quotes are not commands" {
	lint_fixture heredoc "8: '!' line"
}

@test "lint-tests: wait_for retrying a test of a value expanded once is reported" {
	lint_fixture wait "2: wait_for retries"
}

@test "lint-tests: a test number used by two files is reported" {
	printf '@%s "x" {\n\ttrue\n}\n' test >"$F/3001-a.bats"
	cp "$F/3001-a.bats" "$F/3001-b.bats"
	cp "$F/3001-a.bats" "$F/3002-c.bats"
	run python3 "$LINT" "$F"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "test number 3001 used by 3001-a.bats 3001-b.bats" ]
	[ "${lines[1]}" = "0 dead assertions, 1 duplicate test numbers" ]
}

@test "every man page lints clean (mandoc -Tlint -Wwarning)" {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	local n=0 m
	for m in "$QWEN_TOP_SRCDIR"/man/*.[1-8]; do
		mandoc -Tlint -Wwarning "$m"
		n=$((n + 1))
	done
	[ "$n" -ge 4 ]
}
