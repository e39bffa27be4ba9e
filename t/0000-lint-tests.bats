#!/usr/bin/env bats
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

@test "lint-tests: a mid-test '!' line is reported, run ! and || false are not" {
	cp "$TESTDATA/lint-tests/bang.fixture" "$F/0001-a.bats"
	run python3 "$LINT" "$F"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" == "$F/0001-a.bats:2: '!' line"* ]]
	[[ "${lines[1]}" == "$F/0001-a.bats:6: '!' line"* ]]
	[ "${lines[2]}" = "2 dead assertions, 0 duplicate test numbers" ]
}

@test "lint-tests: an && list is reported unless it is control flow or the last command" {
	cp "$TESTDATA/lint-tests/and-list.fixture" "$F/0001-a.bats"
	run python3 "$LINT" "$F"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" == "$F/0001-a.bats:2: '&&' list"* ]]
	[[ "${lines[1]}" == "$F/0001-a.bats:3: '&&' list"* ]]
	[ "${lines[2]}" = "2 dead assertions, 0 duplicate test numbers" ]
}

@test "lint-tests: heredoc bodies and multi-line quotes are not commands" {
	cp "$TESTDATA/lint-tests/heredoc.fixture" "$F/0001-a.bats"
	run python3 "$LINT" "$F"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == "$F/0001-a.bats:8: '!' line"* ]]
}

@test "lint-tests: wait_for retrying a test of a value expanded once is reported" {
	cp "$TESTDATA/lint-tests/wait.fixture" "$F/0001-a.bats"
	run python3 "$LINT" "$F"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == "$F/0001-a.bats:2: wait_for retries"* ]]
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
