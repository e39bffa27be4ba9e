#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# scripts/link-cycles: the objects of a program that link in a cycle.

load test_helper

CYCLES="$QWEN_TOP_SRCDIR/scripts/link-cycles"

# obj NAME BODY: DIR/NAME.c holding BODY, compiled to DIR/NAME.o (or to
# DIR/$OBJ when OBJ is set: a test program's copy of the same source).
obj() {
	D=$BATS_TEST_TMPDIR/prog
	mkdir -p "$D"
	printf '%s\n' "$2" >"$D/$1.c"
	cc -c -o "$D/${OBJ:-$1.o}" "$D/$1.c"
}

@test "link-cycles: two objects calling each other are one cycle" {
	obj a 'int b(void); int a(void) { return b(); }'
	obj b 'int a(void); int b(void) { return a(); }'
	obj c 'int a(void); int c(void) { return a(); }'
	run "$CYCLES" "$D"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[${#lines[@]}-1]}" = "largest cycle: 2 of 3 objects" ]
}

@test "link-cycles: a test program's copy of an object does not replace it" {
	obj a 'int b(void); int a(void) { return b(); }'
	obj b 'int a(void); int b(void) { return a(); }'
	# The fuzz build of b.c (other flags): here it calls nothing.
	OBJ=t_fuzz_x-b.o obj b 'int b(void) { return 0; }'
	printf '%s\n' 'int a(void); int b(void) { return a(); }' >"$D/b.c"
	run "$CYCLES" "$D"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[${#lines[@]}-1]}" = "largest cycle: 2 of 2 objects" ]
}
