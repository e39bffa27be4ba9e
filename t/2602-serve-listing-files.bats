#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: GET /workspace/sessions never blocks on what sits in the
# chats directory (a FIFO, a symlink), reads only the transcripts ?limit
# keeps, and caches first prompts by (dev, inode, size, mtime).

load serve_helper

teardown() { serve_teardown; }

# inplace FILE FROM TO: rewrite FILE in place (same inode, same size when
# FROM and TO are), then give it back the mtime MTIME (epoch seconds).
inplace() {
	local text
	text=$(sed "s/$2/$3/" "$1")
	printf '%s\n' "$text" >"$1"
	touch -d "@$4" "$1"
}

chats() {
	printf '%s/projects/%s/chats' "$DATA" "$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')"
}

@test "a FIFO or a symlink among the transcripts: the listing answers at once without them" {
	serve_start
	make_transcript "$SID"
	mkfifo "$(chats)/33333333-3333-4333-8333-333333333333.jsonl"
	cp "$(chats)/$SID.jsonl" "$BATS_TEST_TMPDIR/elsewhere.jsonl"
	ln -s "$BATS_TEST_TMPDIR/elsewhere.jsonl" "$(chats)/44444444-4444-4444-8444-444444444444.jsonl"
	req GET /workspace/sessions '' --max-time 20
	expect 200 "(.sessions | length) == 1 and .sessions[0].sessionId == \"$SID\""
	expect 200 '.sessions[0].firstPrompt == "Why is loading slow?"'
	# The loop was never held: another request is answered as well.
	req GET /health '' --max-time 20
	expect 200
}

@test "first prompts are cached by inode, size and mtime" {
	serve_start
	make_transcript "$SID"
	local f=$(chats)/$SID.jsonl
	req GET /workspace/sessions
	expect 200 '.sessions[0].firstPrompt == "Why is loading slow?"'
	# Same size and mtime: the cached prompt stands (nothing is read).
	inplace "$f" 'Why is loading slow?' 'Why is loading SLOW?' 1700000000
	req GET /workspace/sessions
	expect 200 '.sessions[0].firstPrompt == "Why is loading SLOW?"'
	inplace "$f" 'Why is loading SLOW?' 'Why is loading fast?' 1700000000
	req GET /workspace/sessions
	expect 200 '.sessions[0].firstPrompt == "Why is loading SLOW?"'
	# A new mtime is a new prompt.
	touch -d @1700000001 "$f"
	req GET /workspace/sessions
	expect 200 '.sessions[0].firstPrompt == "Why is loading fast?"'
}

@test "?limit keeps the newest; the others are not read" {
	serve_start
	local i id
	for i in 1 2 3 4 5; do
		id=5555555$i-5555-4555-8555-555555555555
		make_transcript "$id"
		touch -d "@$((1700000000 + i))" "$(chats)/$id.jsonl"
	done
	req GET '/workspace/sessions?limit=2'
	expect 200 '[.sessions[].sessionId] == ["55555555-5555-4555-8555-555555555555", "55555554-5555-4555-8555-555555555555"]'
	expect 200 '[.sessions[].firstPrompt] == ["Why is loading slow?", "Why is loading slow?"]'
	# The three older ones were never read: their prompt, changed since
	# with the same size and mtime, shows once they are listed.
	for i in 1 2 3; do
		id=5555555$i-5555-4555-8555-555555555555
		inplace "$(chats)/$id.jsonl" 'Why is loading slow?' 'Why is loading SLOW?' \
		    "$((1700000000 + i))"
	done
	req GET '/workspace/sessions?limit=5'
	expect 200 '[.sessions[].firstPrompt] == ["Why is loading slow?", "Why is loading slow?", "Why is loading SLOW?", "Why is loading SLOW?", "Why is loading SLOW?"]'
}

@test "listings past the running cap wait their turn and are all answered" {
	serve_start
	local i pids=()
	for i in 1 2 3 4 5 6 7 8 9; do
		make_transcript "6666666$i-6666-4666-8666-666666666666"
	done
	for i in $(seq 1 12); do
		(curl -s --max-time 30 --unix-socket "$SOCK" http://localhost/workspace/sessions \
		    >"$BATS_TEST_TMPDIR/l$i.json" 3>&-) 3>&- &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in $(seq 1 12); do
		jq -e '(.sessions | length) == 9' "$BATS_TEST_TMPDIR/l$i.json" >/dev/null
	done
}
