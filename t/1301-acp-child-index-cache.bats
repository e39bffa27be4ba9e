#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child's persistent transcript index (--cache-dir): an index kept
# by a previous run is used and the transcript is not read again (the
# loader's read counter, bytesRead), bytes appended since are indexed on
# top, and a truncated, replaced, rewritten or damaged case is found and
# indexed again, answering what a fresh pass and the independent reference
# loader (../shared/tools/gen-transcript, when present) answer.
load test_helper
load index_helper

setup() {
	index_setup
}

@test "a kept index is used: the transcript is not read again" {
	f=$(gen 1 --torn-tail)
	size=$(stat -c %s "$f")
	cached_is "cold null" "$f"
	# The whole file, then the chat_compression checkpoints.
	checkpoints=$(($(jq .bytesRead <<<"$o") - size))
	[ "$checkpoints" -ge 0 ]
	idx=$(one_index)
	[ "$(stat -c %a "$CACHE")" = 700 ]
	[ "$(stat -c %a "$idx")" = 600 ]
	for run in 1 2; do
		cached_is "warm null" "$f"
		# 8 KiB of digests and at most the checkpoints (the summary's
		# own count; the chain and model history are kept).
		[ "$(jq .bytesRead <<<"$o")" -ge 8192 ]
		[ "$(jq .bytesRead <<<"$o")" -le "$((checkpoints + 8192))" ]
	done
	# An unchanged index is not written again.
	[ "$(one_index)" = "$idx" ]
}

@test "a load from a kept index reads its page and answers what a fresh pass answers" {
	f=$(gen 2)
	size=$(stat -c %s "$f")
	want=$(qwen-inspect --replay --page-size 6 "$f")
	o=$(cached --replay --page-size 6 "$f")
	[ "$(jq -r .index <<<"$o")" = cold ]
	[ "$(jq -c 'del(.index, .indexReason, .bytesRead, .indexBytesChecked)' <<<"$o")" = "$want" ]
	# The cold pass read the file once, then the page and the checkpoint.
	sent=$(($(jq .bytesRead <<<"$o") - size))
	[ "$sent" -lt "$size" ]
	o=$(cached --replay --page-size 6 "$f")
	[ "$(jq -r .index <<<"$o")" = warm ]
	[ "$(jq -c 'del(.index, .indexReason, .bytesRead, .indexBytesChecked)' <<<"$o")" = "$want" ]
	[ "$(jq '.updates | length' <<<"$o")" -gt 0 ]
	# The warm one only those, and 8 KiB of digests.
	[ "$(jq .bytesRead <<<"$o")" -le "$((sent + 8192))" ]
	# The default window too (the whole chain of a small file).
	want=$(qwen-inspect --replay --max-bytes 65536 "$f")
	o=$(cached --replay --max-bytes 65536 "$f")
	[ "$(jq -c 'del(.index, .indexReason, .bytesRead, .indexBytesChecked)' <<<"$o")" = "$want" ]
}

@test "appended bytes are indexed on top of the kept index" {
	full=$(gen 3)
	name=$(basename "$full")
	size=$(stat -c %s "$full")
	lines=$(wc -l <"$full")
	keep=$((lines * 3 / 4))
	mkdir "$BATS_TEST_TMPDIR/grow"
	f="$BATS_TEST_TMPDIR/grow/$name"
	head -n "$keep" "$full" >"$f"
	cached_is "cold null" "$f"
	# qwen-code appends: a torn last line first, then the rest.
	rest=$(tail -n +"$((keep + 1))" "$full")
	before=$(stat -c %s "$f")
	printf '%s' "${rest:0:100}" >>"$f"
	cached_is "warm null" "$f"
	[ "$(jq .tornTailBytes <<<"$o")" -eq 100 ]
	printf '%s\n' "${rest:100}" >>"$f"
	cmp "$f" "$full"
	cached_is "warm null" "$f"
	grown=$o
	# What was appended is kept too: the next run reads only the
	# checkpoints and the digests, and the one before read that plus the
	# appended bytes (the torn line's among them) and the last checkpoint
	# (its chain was walked again), not the file.
	cached_is "warm null" "$f"
	[ "$(jq .bytesRead <<<"$grown")" -ge "$(($(jq .bytesRead <<<"$o") + size - before))" ]
	[ "$(jq .bytesRead <<<"$grown")" -lt "$(($(jq .bytesRead <<<"$o") + size - before + size / 4))" ]
}

@test "a truncated, replaced or rewritten transcript is indexed again" {
	f=$(gen 4)
	cached "$f" >/dev/null
	# Replaced (a new inode with the same bytes): qwen-code's rewrite.
	cp "$f" "$f.new"
	mv "$f.new" "$f"
	cached_is "rescan replaced" "$f"
	# Rewritten in place, same size: the last record becomes blanks, so
	# the stale index would answer the old leaf.
	old_leaf=$(jq -r .leafUuid <<<"$o")
	last=$(tail -n 1 "$f" | wc -c)
	{ head -c "$(($(stat -c %s "$f") - last))" "$f"
	  printf '%*s\n' "$((last - 1))" ''; } >"$BATS_TEST_TMPDIR/blank"
	dd if="$BATS_TEST_TMPDIR/blank" of="$f" conv=notrunc status=none
	cached_is "rescan digest" "$f"
	[ "$(jq -r .leafUuid <<<"$o")" != "$old_leaf" ]
	# Truncated below what was indexed (mid-line: a torn tail).
	truncate -s "$(($(stat -c %s "$f") / 2))" "$f"
	cached_is "rescan truncated" "$f"
	cached_is "warm null" "$f"
}

@test "a damaged kept index is found and the transcript indexed again" {
	f=$(gen 5 --torn-tail)
	cached "$f" >/dev/null
	idx=$(one_index)
	isize=$(stat -c %s "$idx")
	damage() {
		case $1 in
		# A record in the middle: the summary walks the chain through it
		# (a block no restore uses is not checked, t/1303).
		flip)	flip_byte "$idx" "$(qwen-inspect --index-layout "$idx" |
			    jq '.sections.records[0] + (.sections.records[1] / 2 | floor)')" ;;
		short)	truncate -s "$((isize - 8))" "$idx" ;;
		version) flip_byte "$idx" 8 ;;
		garbage) head -c 4096 /dev/urandom >"$idx" ;;
		empty)	: >"$idx" ;;
		esac
	}
	for how in flip short version garbage empty; do
		damage "$how"
		echo "damage: $how"
		want="rescan format"
		[ "$how" != flip ] || want="rescan checksum"
		cached_is "$want" "$f"
		# Written again whole.
		cached_is "warm null" "$f"
		isize=$(stat -c %s "$idx")
	done
}

@test "kept indexes are pruned, least recently used first, within the bounds" {
	a=$(gen 6)
	b=$(gen 7)
	c=$(gen 8)
	cached --cache-files 2 "$a" >/dev/null
	cached --cache-files 2 "$b" >/dev/null
	# Using a refreshes it: b is now the least recently used.
	[ "$(jq -r .index <<<"$(cached --cache-files 2 "$a")")" = warm ]
	cached --cache-files 2 "$c" >/dev/null
	[ "$(find "$CACHE" -name 'tx-*.idx' | wc -l)" -eq 2 ]
	[ "$(jq -r .index <<<"$(cached --cache-files 2 "$a")")" = warm ]
	[ "$(jq -r .index <<<"$(cached --cache-files 2 "$c")")" = warm ]
	[ "$(jq -r .index <<<"$(cached --cache-files 2 "$b")")" = cold ]
	# A byte bound keeps the index just written only.
	cached --cache-max 1 "$a" >/dev/null
	cached --cache-max 1 "$c" >/dev/null
	[ "$(jq -r .index <<<"$(cached --cache-max 1 "$a")")" = cold ]
	[ "$(find "$CACHE" -name 'tx-*.idx' | wc -l)" -eq 1 ]
	# A crashed save's temporary is left alone while young.
	touch "$CACHE/.tx-AAAAAA"
	cached "$b" >/dev/null
	[ -e "$CACHE/.tx-AAAAAA" ]
	touch -d '2 hours ago' "$CACHE/.tx-AAAAAA"
	[ "$(jq -r .index <<<"$(cached "$c")")" = cold ]
	[ ! -e "$CACHE/.tx-AAAAAA" ]
}

@test "a cache directory others may write to is not used" {
	f=$(gen 10)
	cached "$f" >/dev/null
	chmod 777 "$CACHE"
	run --separate-stderr qwen-inspect --cache-dir "$CACHE" "$f"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"not private"* ]]
	[ "$(state "$output")" = "rescan unsafe" ]
	fresh_agrees "$f" "$output"
	chmod 700 "$CACHE"
	[ "$(state "$(cached "$f")")" = "warm null" ]
}

@test "an unwritable cache directory costs a full pass, not an answer" {
	f=$(gen 9)
	: >"$BATS_TEST_TMPDIR/notadir"
	run --separate-stderr qwen-inspect --cache-dir "$BATS_TEST_TMPDIR/notadir/cache" "$f"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"index cache"*"Not a directory"* ]]
	[ "$(state "$output")" = "cold null" ]
	fresh_agrees "$f" "$output"
}

@test "the kept index is written without a sync: a crash costs a full pass" {
	command -v strace >/dev/null || skip "strace not installed"
	f=$(gen 1)
	# LeakSanitizer cannot run under ptrace: off for this one run.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    strace -f -o "$BATS_TEST_TMPDIR/st" -e trace=fsync,fdatasync,sync_file_range,syncfs \
	    qwen-inspect --cache-dir "$CACHE" --replay --page-size 20 "$f" >/dev/null
	idx=$(one_index)
	[ -s "$idx" ]
	run grep -E 'fsync|fdatasync|sync_file_range|syncfs' "$BATS_TEST_TMPDIR/st"
	echo "$output"
	[ "$status" -eq 1 ]
	# A kept file cut short, as a crash may leave it, is found and the
	# transcript indexed again.
	truncate -s 100 "$idx"
	cached_is "rescan format" "$f"
}
