#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The tree's layout rules (scripts/check-headers): header sections name the
# file that defines their prototypes, one include-guard style, config.h
# first in every .c, and which of qwen-acp-child's rooms (loader/, replay/)
# may include what.

load test_helper

CHECK="$QWEN_TOP_SRCDIR/scripts/check-headers"

# A one-program tree under $BATS_TEST_TMPDIR/tree that passes every rule.
mini_tree() {
	T=$BATS_TEST_TMPDIR/tree
	mkdir -p "$T/bin/prog" "$T/lib"
	cat >"$T/bin/prog/prog.h" <<'H'
#ifndef QWEN_PROG_H
#define QWEN_PROG_H
struct thing {
	int	(*cb)(int);
};

/* a.c */
int	a_run(int);
extern int a_count;

/* ---- b.c: the other half ---- */
struct thing	*b_new(void);
#endif
H
	printf '#include "config.h"\n\nint a_count;\n\nint\na_run(int x)\n{\n\treturn x;\n}\n' \
	    >"$T/bin/prog/a.c"
	printf '#include "config.h"\n#include <stdlib.h>\n\nstruct thing *\nb_new(void)\n{\n\treturn NULL;\n}\n' \
	    >"$T/bin/prog/b.c"
	printf '#ifndef QWEN_X_Y_H\n#define QWEN_X_Y_H\n#endif\n' >"$T/lib/x-y.h"
}

@test "check-headers: the source tree follows its layout rules" {
	run "$CHECK" "$QWEN_TOP_SRCDIR"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "check-headers: a conforming tree passes" {
	mini_tree
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "check-headers: a prototype under the wrong file's section is caught" {
	mini_tree
	sed -i 's|^/\* a.c \*/$|/* b.c */|' "$T/bin/prog/prog.h"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bin/prog/prog.h:8: a_run is not defined in b.c"* ]]
	[[ "$output" == *"a_count is not defined in b.c"* ]]
}

@test "check-headers: a section naming a missing file is caught" {
	mini_tree
	sed -i 's|b.c: the other half|c.c: gone|' "$T/bin/prog/prog.h"
	run "$CHECK" "$T"
	[ "$status" -eq 1 ]
	[[ "$output" == *"section c.c: no such file"* ]]
}

@test "check-headers: include guards and config.h first" {
	mini_tree
	sed -i 's/QWEN_X_Y_H/X_Y_H/' "$T/lib/x-y.h"
	printf '#include <stdio.h>\n#include "config.h"\n' >"$T/bin/prog/c.c"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"lib/x-y.h: include guard X_Y_H, want QWEN_X_Y_H"* ]]
	[[ "$output" == *"bin/prog/c.c: config.h is not the first include"* ]]
}

# The checkout's bin/ and lib/ sources under $BATS_TEST_TMPDIR/tree.
tree_copy() {
	T=$BATS_TEST_TMPDIR/tree
	mkdir -p "$T"
	(cd "$QWEN_TOP_SRCDIR" && find bin lib -name '*.[ch]' -print) |
	    while read -r f; do
		mkdir -p "$T/$(dirname "$f")"
		cp "$QWEN_TOP_SRCDIR/$f" "$T/$f"
	done
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "check-headers: the projection includes no loader-private header" {
	tree_copy
	sed -i 's/^#include "transcript.h"$/#include "transcript-int.h"/' \
	    "$T/bin/acp-child/replay/project.c"
	printf '#include "config.h"\n#include "cachedir.h"\n' \
	    >"$T/bin/acp-child/replay/project-x.c"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bin/acp-child/replay/project.c:"*": includes transcript-int.h, private to the loader room"* ]]
	[[ "$output" == *"bin/acp-child/replay/project-x.c:2: includes cachedir.h, private to the loader room"* ]]
}

@test "check-headers: the loader includes no program or projection header" {
	tree_copy
	printf '#include "config.h"\n#include "transcript.h"\n#include "load.h"\n#include "replay.h"\n' \
	    >"$T/bin/acp-child/loader/transcript-x.c"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bin/acp-child/loader/transcript-x.c:3: includes load.h, a program header"* ]]
	[[ "$output" == *"bin/acp-child/loader/transcript-x.c:4: includes replay.h, a projection header"* ]]
	[[ "$output" != *"includes transcript.h"* ]]
}

@test "check-headers: guards, config.h first and sections hold inside rooms" {
	tree_copy
	sed -i 's/QWEN_ACP_CHAIN_H/QWEN_CHAIN_H/' "$T/bin/acp-child/loader/chain.h"
	printf '#include <stdio.h>\n#include "config.h"\n' >"$T/bin/acp-child/replay/project-x.c"
	printf '\n/* gone.c */\nint gone_run(void);\n' >>"$T/bin/acp-child/replay/project-int.h"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bin/acp-child/loader/chain.h: include guard QWEN_CHAIN_H, want QWEN_ACP_CHAIN_H"* ]]
	[[ "$output" == *"bin/acp-child/replay/project-x.c: config.h is not the first include"* ]]
	[[ "$output" == *"bin/acp-child/replay/project-int.h:"*": section gone.c: no such file"* ]]
}

@test "check-headers: only qwen-serve's HTTP edge calls evhttp_*" {
	tree_copy
	printf '#include "config.h"\n/* evhttp_send_reply() in a comment */\nstatic void\nf(void *r)\n{\n\t(void)evhttp_find_header(r, "x");\n}\n' \
	    >"$T/bin/serve/routes-x.c"
	printf '#include "config.h"\nvoid g(void *r) { evhttp_send_reply(r, 200, 0, 0); }\n' \
	    >"$T/bin/serve/http-x.c"
	run "$CHECK" "$T"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bin/serve/routes-x.c:6: calls evhttp_* outside the HTTP edge"* ]]
	[[ "$output" == *"bin/serve/http-x.c:2: calls evhttp_* outside the HTTP edge"* ]]
	[[ "$output" != *"routes-x.c:2"* ]]
	rm "$T/bin/serve/routes-x.c" "$T/bin/serve/http-x.c"
	run "$CHECK" "$T"
	[ "$status" -eq 0 ]
}
