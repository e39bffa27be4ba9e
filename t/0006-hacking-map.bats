#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# HACKING.md tells the truth (scripts/check-map): its file map names every
# source file and only files that exist, every test number lies in a range
# of its table, and every bats file is in Makefile.am's BATS_TESTS.

load test_helper

CHECK="$QWEN_TOP_SRCDIR/scripts/check-map"

# A tree under $BATS_TEST_TMPDIR/tree whose HACKING.md is true.
mini_tree() {
	T=$BATS_TEST_TMPDIR/tree
	mkdir -p "$T/bin/prog" "$T/lib" "$T/t"
	cat >"$T/HACKING.md" <<'H'
# Hacking

## File map
**lib/** (the library)
- `x.c` x things

**bin/prog/** (prog; `prog.h`)
- `main.c` options; `run.c` the loop, `run-int.h`

## Tests
  | range | area |
  |---|---|
  | 0000-0099 | lint |
  | 2001-2099 | prog |
H
	printf 'BATS_TESTS = \\\n\tt/0001-lint.bats \\\n\tt/2001-prog.bats\n\nOTHER = t/2002-prog-more.bats\n' \
	    >"$T/Makefile.am"
	local f
	for f in lib/x.c lib/x.h bin/prog/prog.h bin/prog/main.c \
	    bin/prog/run.c bin/prog/run-int.h t/0001-lint.bats t/2001-prog.bats; do
		echo '/* SPDX-License-Identifier: ISC */' >"$T/$f"
	done
	echo 'ISC' >"$T/LICENSE"
}

@test "check-map: HACKING.md's map and test table match the tree" {
	run "$CHECK" "$QWEN_TOP_SRCDIR"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "check-map: a tree that matches its map passes" {
	mini_tree
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "check-map: a source file without an SPDX line, or no LICENSE, is caught" {
	mini_tree
	printf '/* x */\n' >"$T/bin/prog/run.c"
	rm "$T/LICENSE"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bin/prog/run.c: no SPDX-License-Identifier line"* ]]
	[[ "$output" == *"LICENSE: missing"* ]]
}

@test "check-map: a source file without a line in the map is caught" {
	mini_tree
	echo '/* SPDX-License-Identifier: ISC */' >"$T/bin/prog/new.c"
	echo '/* SPDX-License-Identifier: ISC */' >"$T/lib/y.h"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no line for bin/prog/new.c"* ]]
	[[ "$output" == *"no line for lib/y.h"* ]]
}

@test "check-map: a mapped file that is gone is caught" {
	mini_tree
	rm "$T/bin/prog/run.c"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"names bin/prog/run.c, which does not exist"* ]]
}

@test "check-map: a test outside every range, or not run, is caught" {
	mini_tree
	touch "$T/t/1001-stray.bats" "$T/t/2002-prog-more.bats"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"1001-stray.bats lies in no range"* ]]
	[[ "$output" == *"t/2002-prog-more.bats: not in Makefile.am's BATS_TESTS"* ]]
	[[ "$output" != *"2001-prog.bats"* ]]
}

@test "check-map: a room's files are mapped under its own heading" {
	mini_tree
	mkdir -p "$T/bin/prog/room"
	for f in walk.c walk.h stray.c; do
		echo '/* SPDX-License-Identifier: ISC */' >"$T/bin/prog/room/$f"
	done
	printf '\n**bin/prog/room/** (a room)\n- `walk.c` walking; `gone.c` gone\n' >"$BATS_TEST_TMPDIR/room"
	sed -i "/^- \`main.c\` options/r $BATS_TEST_TMPDIR/room" "$T/HACKING.md"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no line for bin/prog/room/stray.c"* ]]
	[[ "$output" == *"names bin/prog/room/gone.c, which does not exist"* ]]
	[[ "$output" != *"room/walk"* ]]
	[[ "$output" != *"bin/prog/walk.c"* ]]
}
