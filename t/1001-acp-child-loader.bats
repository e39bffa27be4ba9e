#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child loader: fixtures and generated transcripts against the
# independent reference loader of ../shared/tools/gen-transcript, the
# project's own generator, the replay window and --inspect's exit codes.
load test_helper
load oracle_helper

FIXTURES="$TESTDATA/transcripts"

setup() {
	command -v jq >/dev/null || skip "jq not installed"
}
ORACLE="$SHARED_DIR/tools/gen-transcript"

@test "inspect: usage is exit 2, an unreadable file exit 1 with a message" {
	run qwen-inspect
	[ "$status" -eq 2 ]
	run qwen-inspect "$BATS_TEST_TMPDIR/nope.jsonl"
	[ "$status" -eq 1 ]
	[[ "$output" == *"nope.jsonl"*"No such file"* ]]
	run qwen-inspect "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
}

@test "inspect: fixture summaries (leaf, chain, gaps, cycles, recovery)" {
	run qwen-inspect "$FIXTURES/branched.jsonl"
	[ "$status" -eq 0 ]
	[ "$(jq -r .leafUuid <<<"$output")" = A4-UPPER ]
	[ "$(jq .activeChainLength <<<"$output")" = 7 ]
	[ "$(jq .deadRecords <<<"$output")" = 3 ]
	run qwen-inspect "$FIXTURES/gap.jsonl"
	[ "$(jq .gaps <<<"$output")" = 1 ]
	run qwen-inspect "$FIXTURES/cycle.jsonl"
	[ "$(jq .cycles <<<"$output")" = 1 ]
	run qwen-inspect "$FIXTURES/glued.jsonl"
	[ "$(jq .malformedLines <<<"$output")" = 3 ]
	[ "$(jq .recoveredRecords <<<"$output")" = 3 ]
	run qwen-inspect "$FIXTURES/compression.jsonl"
	[ "$(jq -c .compressions <<<"$output")" = '["00000000-0000-4000-8000-000000000003"]' ]
	[ "$(jq -r .lastActiveCompressionUuid <<<"$output")" = 00000000-0000-4000-8000-000000000003 ]
	run qwen-inspect "$FIXTURES/linear.jsonl"
	[ "$(jq .lastActiveCompressionUuid <<<"$output")" = null ]
	[ "$(jq .bytes <<<"$output")" = "$(stat -c %s "$FIXTURES/linear.jsonl")" ]
}

@test "oracle: every fixture agrees with the reference loader" {
	require_shared
	for f in "$FIXTURES"/*.jsonl; do
		# the reference loader does not check sessionId against the file name
		[ "$(basename "$f")" = bad-session.jsonl ] && continue
		o=$(qwen-inspect "$f")
		m=$("$ORACLE" --verify "$f")
		agree "$o" "$m" || { echo "fixture $f"; false; }
	done
}

@test "oracle: manifests of seeds with rewinds, compressions, glued records, torn tails" {
	require_shared
	for args in "--seed 1 --mib 1 --branches 2 --compressions 1 --glued 2 --torn-tail" \
	    "--seed 2 --mib 2 --branches 4 --compressions 3 --glued 3" \
	    "--seed 3 --mib 1.5 --branches 1 --compressions 2 --torn-tail" \
	    "--seed 4 --mib 1 --branches 3 --glued 1 --no-title"; do
		dir="$BATS_TEST_TMPDIR/oracle-$RANDOM"
		# shellcheck disable=SC2086
		"$ORACLE" $args --out "$dir/" >/dev/null
		f=$(ls "$dir"/*.jsonl)
		agree "$(qwen-inspect "$f")" "$(cat "$f.manifest.json")" ||
			{ echo "oracle args: $args"; false; }
	done
}

@test "generator: deterministic per seed, prints the path" {
	run qwen-gen-transcript --mib 0.5 --seed 9 --branches 1 --compressions 1 --out "$BATS_TEST_TMPDIR/a"
	[ "$status" -eq 0 ]
	a=$output
	[ -s "$a" ]
	b=$(qwen-gen-transcript --mib 0.5 --seed 9 --branches 1 --compressions 1 --out "$BATS_TEST_TMPDIR/b")
	cmp "$a" "$b"
	c=$(qwen-gen-transcript --mib 0.5 --seed 10 --out "$BATS_TEST_TMPDIR/c")
	! cmp -s "$a" "$c" || false
	run qwen-gen-transcript --mib 1
	[ "$status" -eq 2 ]
}

@test "scripts/gen-transcript runs the generator from the build tree" {
	run "$QWEN_TOP_SRCDIR/scripts/gen-transcript" --mib 0.1 --seed 3 --out "$BATS_TEST_TMPDIR/w"
	[ "$status" -eq 0 ]
	[ -s "$output" ]
	cmp "$output" "$(qwen-gen-transcript --mib 0.1 --seed 3 --out "$BATS_TEST_TMPDIR/w2")"
}

@test "generator: --data-dir/--workspace writes the qwen-code layout" {
	run qwen-gen-transcript --mib 0.2 --seed 5 --data-dir "$BATS_TEST_TMPDIR/home" \
	    --workspace "/home/dev/my proj.v2" --session-id 6ca613de-dd80-4a4b-a95c-b6f902cad22f
	[ "$status" -eq 0 ]
	[ "$output" = "$BATS_TEST_TMPDIR/home/projects/-home-dev-my-proj-v2/chats/6ca613de-dd80-4a4b-a95c-b6f902cad22f.jsonl" ]
	[ "$(head -n1 "$output" | jq -r .cwd)" = "/home/dev/my proj.v2" ]
	[ "$(qwen-inspect "$output" | jq .records)" -gt 10 ]
}

@test "generator: the reference loader accepts our output and agrees with us" {
	require_shared
	for args in "--seed 11 --mib 2 --branches 3 --compressions 2 --glued 2 --torn-tail" \
	    "--seed 12 --mib 1 --branches 5 --compressions 4" \
	    "--seed 13 --mib 1 --glued 3 --no-title"; do
		# shellcheck disable=SC2086
		f=$(qwen-gen-transcript $args --out "$BATS_TEST_TMPDIR/gen-$RANDOM")
		m=$("$ORACLE" --verify "$f")
		[ "$(jq .physicalRecords <<<"$m")" -gt 100 ]
		agree "$(qwen-inspect "$f")" "$m" || { echo "generator args: $args"; false; }
	done
}

@test "oracle: a deleted chain record is a gap, agreed with the reference loader" {
	require_shared
	f=$(qwen-gen-transcript --seed 21 --mib 1 --branches 1 --out "$BATS_TEST_TMPDIR/g")
	victim=$(qwen-inspect --chain "$f" | tail -n 101 | head -n 1)
	grep -v "\"uuid\":\"$victim\"" "$f" >"$f.new"
	mv "$f.new" "$f"
	o=$(qwen-inspect "$f")
	[ "$(jq .gaps <<<"$o")" = 1 ]
	[ "$(jq .activeChainLength <<<"$o")" = 100 ]
	agree "$o" "$("$ORACLE" --verify "$f")"
}

@test "oracle: a parent cycle stops cleanly, agreed with the reference loader" {
	require_shared
	f=$(qwen-gen-transcript --seed 22 --mib 0.5 --out "$BATS_TEST_TMPDIR/c")
	root=$(qwen-inspect --chain "$f" | head -n 1)
	mid=$(qwen-inspect --chain "$f" | sed -n 50p)
	sed -i "1s/\"parentUuid\":null/\"parentUuid\":\"$mid\"/" "$f"
	[ "$(head -n1 "$f" | jq -r .uuid)" = "$root" ]
	o=$(qwen-inspect "$f")
	[ "$(jq .cycles <<<"$o")" = 1 ]
	agree "$o" "$("$ORACLE" --verify "$f")"
}

@test "replay: bulk window within max bytes, aligned to a turn, says what it dropped" {
	f=$(qwen-gen-transcript --seed 31 --mib 2 --branches 1 --compressions 1 --out "$BATS_TEST_TMPDIR/r")
	run qwen-inspect --replay --max-bytes 300000 "$f"
	[ "$status" -eq 0 ]
	[ "$(jq .bytes <<<"$output")" -le 300000 ]
	[ "$(jq -r '.updates[0].sessionUpdate' <<<"$output")" = user_message_chunk ]
	[ "$(jq .partial <<<"$output")" = true ]
	[ "$(jq .hasMore <<<"$output")" = true ]
	[ "$(jq '.truncatedRecords + .records' <<<"$output")" = \
	    "$(qwen-inspect "$f" | jq .activeChainLength)" ]
	[ "$(jq -c '.updates | length' <<<"$output")" -gt 10 ]
	[ "$(jq '[.updates[] | select(._meta.qwenTranscript.sourceRecordIds | length == 1)] | length' <<<"$output")" = \
	    "$(jq '.updates | length' <<<"$output")" ]
	run qwen-inspect --replay --max-updates 50 "$f"
	[ "$(jq '.updates | length' <<<"$output")" -le 50 ]
	run qwen-inspect --replay "$f"
	[ "$(jq .bytes <<<"$output")" -le 4194304 ]
}
