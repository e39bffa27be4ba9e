#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child's index cache directory: opened once and used through
# its descriptor; pruning removes only the names the cache itself makes
# (tx-<16 hex>.idx, and .tx-<6 characters> staging files), so a foreign
# file or a link that merely looks like a neighbour survives.
load test_helper

setup() {
	command -v jq >/dev/null || skip "jq not installed"
	CACHE="$BATS_TEST_TMPDIR/cache"
}

# gen SEED: a small generated transcript; prints its path.
gen() {
	qwen-gen-transcript --mib 0.2 --seed "$1" --out "$BATS_TEST_TMPDIR/g$1"
}

# index_state FILE [ARGS...]: "index reason" of a load through the cache.
index_state() {
	local f=$1
	shift
	qwen-inspect --cache-dir "$CACHE" "$@" "$f" | jq -r '"\(.index) \(.indexReason)"'
}

@test "prune touches only the cache's own names: foreign files and links survive" {
	a=$(gen 1)
	b=$(gen 2)
	mkdir -m 700 "$CACHE"
	echo victim >"$BATS_TEST_TMPDIR/victim"
	# Names like a neighbour's, all older than any index.
	echo notes >"$CACHE/tx-notes.idx"
	echo short >"$CACHE/tx-0123abcd.idx"
	echo upper >"$CACHE/tx-0123456789ABCDEF.idx"
	echo keep >"$CACHE/.tx-keep-me"
	ln -s "$BATS_TEST_TMPDIR/victim" "$CACHE/tx-00000000000000ff.idx"
	ln -s "$BATS_TEST_TMPDIR/victim" "$CACHE/.tx-LINK01"
	touch -h -d '3 hours ago' "$CACHE"/tx-* "$CACHE"/.tx-*
	[ "$(index_state "$a" --cache-files 1)" = "cold null" ]
	[ "$(index_state "$b" --cache-files 1)" = "cold null" ]
	# Our least recently used index went; nothing else did.
	[ "$(index_state "$a" --cache-files 1)" = "cold null" ]
	[ "$(find "$CACHE" -regextype posix-extended -regex '.*/tx-[0-9a-f]{16}[.]idx' -type f | wc -l)" -eq 1 ]
	[ -f "$CACHE/tx-notes.idx" ]
	[ -f "$CACHE/tx-0123abcd.idx" ]
	[ -f "$CACHE/tx-0123456789ABCDEF.idx" ]
	[ -f "$CACHE/.tx-keep-me" ]
	[ -L "$CACHE/tx-00000000000000ff.idx" ]
	[ -L "$CACHE/.tx-LINK01" ]
	[ "$(cat "$BATS_TEST_TMPDIR/victim")" = victim ]
	# An old staging file of ours is cleaned up.
	echo crashed >"$CACHE/.tx-AbC123"
	touch -d '2 hours ago' "$CACHE/.tx-AbC123"
	index_state "$b" >/dev/null
	[ ! -e "$CACHE/.tx-AbC123" ]
}

@test "a cache directory that is a link, or that others may write, is neither read nor written" {
	f=$(gen 3)
	mkdir -m 700 "$BATS_TEST_TMPDIR/real"
	ln -s "$BATS_TEST_TMPDIR/real" "$CACHE"
	run --separate-stderr qwen-inspect --cache-dir "$CACHE" "$f"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"index cache $CACHE is not a directory (symlinks are refused): not private, not used"* ]]
	[ "$(ls -A "$BATS_TEST_TMPDIR/real")" = "" ]
	rm "$CACHE"
	mkdir -m 1777 "$CACHE"
	run --separate-stderr qwen-inspect --cache-dir "$CACHE" "$f"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"index cache $CACHE is writable by others (mode 1777)"* ]]
	[ "$(ls -A "$CACHE")" = "" ]
	chmod 700 "$CACHE"
	[ "$(index_state "$f")" = "cold null" ]
	[ "$(index_state "$f")" = "warm null" ]
}
