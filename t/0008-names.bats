#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# One prefix per concept (scripts/check-names): every exported name of
# lib/ and bin/ carries its file's name, but for the short alias list.

load test_helper

CHECK="$QWEN_TOP_SRCDIR/scripts/check-names"

# mini SRC BODY: a tree with one file bin/prog/SRC.c holding BODY,
# compiled in place.
mini() {
	T=$BATS_TEST_TMPDIR/tree
	mkdir -p "$T/bin/prog" "$T/lib"
	printf '%s\n' "$2" >"$T/bin/prog/$1.c"
	cc -c -o "$T/bin/prog/$1.o" "$T/bin/prog/$1.c"
}

@test "check-names: the built tree's exported names carry their file's prefix" {
	[ -f "$QWEN_TOP_BUILDDIR/lib/log.o" ] || skip "no objects in the build tree"
	run "$CHECK" "$QWEN_TOP_SRCDIR" "$QWEN_TOP_BUILDDIR"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[${#lines[@]}-1]}" = "check-names: 0 names off their file's prefix" ]
}

@test "check-names: a name off its file's prefix is reported" {
	mini conn-input 'int conn_input_read(void) { return 0; } int guard_read(void) { return 1; }'
	run "$CHECK" "$T" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "bin/prog/conn-input.c: guard_read" ]
	[ "${lines[1]}" = "check-names: 1 names off their file's prefix" ]
}

@test "check-names: the first word, its singular and static names pass" {
	mini routes-session 'int route_a(void) { return 0; } int routes_b(void) { return 0; } int routes_session_c(void) { return 0; } static int other(void) { return 0; } int d(void) { return other(); }'
	run "$CHECK" "$T" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "bin/prog/routes-session.c: d" ]
	[ "${#lines[@]}" -eq 2 ]
}

@test "check-names: an alias covers only its own file" {
	# lib/errors*.c may use qerr_; bin/prog/errors.c may not.
	mini errors 'int qerr_new(void) { return 0; }'
	run "$CHECK" "$T" "$T"
	[ "$status" -eq 1 ]
	mkdir -p "$T/lib"
	mv "$T/bin/prog/errors.c" "$T/bin/prog/errors.o" "$T/lib/"
	run "$CHECK" "$T" "$T"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "check-names: a sanitizer build's own symbols are not names" {
	T=$BATS_TEST_TMPDIR/tree
	mkdir -p "$T/bin/prog" "$T/lib"
	printf 'int prog_count = 1;\nint prog_get(void) { return prog_count; }\n' >"$T/bin/prog/prog.c"
	cc -fsanitize=address -c -o "$T/bin/prog/prog.o" "$T/bin/prog/prog.c" 2>/dev/null ||
	    skip "no -fsanitize=address"
	nm -P -g --defined-only "$T/bin/prog/prog.o" | grep -q '^__' ||
	    skip "the compiler adds no symbol of its own"
	run "$CHECK" "$T" "$T"
	echo "$output"
	[ "$status" -eq 0 ]
}
