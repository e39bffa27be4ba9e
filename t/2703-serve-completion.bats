#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The bash completion of qwen-serve (issue 17): it offers exactly the
# options of `qwen-serve --help` and the manual, and completes their
# arguments.

load test_helper

COMP=$QWEN_TOP_SRCDIR/contrib/bash-completion/qwen-serve

# complete_words WORD...: COMPREPLY for the last word, one a line.
complete_words() {
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
	    _qwen_serve; printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP" "$@"
}

@test "the completion offers every option of --help and of the manual, and no other" {
	help=$(qwen-serve --help | grep -oE -- '--[a-z][a-z-]*' | sort -u)
	man=$(grep -E '^\.It Fl ' "$QWEN_TOP_SRCDIR/man/qwen-serve.8" |
	    grep -oE 'Fl \\?-[a-z][a-z-]*' | sed 's/^Fl \\\?-/--/' | sort -u)
	comp=$(grep -oE -- '--[a-z][a-z-]*' "$COMP" | grep -v -- '--[a-z-]*-$' | sort -u)
	[ "$help" = "$man" ]
	[ "$comp" = "$help" ]
}

@test "options and their arguments complete" {
	[ "$(complete_words qwen-serve --check)" = --check-config ]
	[ "$(complete_words qwen-serve --log-level de)" = debug ]
	mkdir -p "$BATS_TEST_TMPDIR/wsdir"
	: >"$BATS_TEST_TMPDIR/wsfile"
	[ "$(complete_words qwen-serve --workspace "$BATS_TEST_TMPDIR/ws")" = "$BATS_TEST_TMPDIR/wsdir" ]
	[ -z "$(complete_words qwen-serve --port 4)" ]
}
