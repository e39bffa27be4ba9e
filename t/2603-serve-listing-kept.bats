#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the listing's per-file cache (first prompt, title, source,
# searchable text) is kept on disk (<cache>/listing/sessions.kept), so a
# restarted daemon answers its first listing and search without reading
# the transcripts; a grown transcript is read from its old end only, a
# rewritten one again, and a bad kept file is ignored and rebuilt.  The
# bytes read are the user-visible qwen_serve_listing_bytes_read_total.

load serve_helper

teardown() { serve_teardown; }

chats() {
	printf '%s/projects/%s/chats' "$DATA" "$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')"
}

kept() { printf '%s/cache/listing/sessions.kept' "$BATS_TEST_TMPDIR"; }

start() { serve_start --cache-dir "$BATS_TEST_TMPDIR/cache"; }

# metric NAME{LABELS}: one sample of a fresh scrape.
metric() {
	req GET /metrics
	awk -v k="$1" '$1 == k { print $2 }' <<<"$body"
}

# written N: the kept file was written at least N times.
written() { [ "$(metric 'qwen_serve_listing_kept_total{event="written"}')" -ge "$1" ]; }

# record ID UUID TYPE TEXT: one user or assistant line.
record() {
	local role=user
	[ "$3" = user ] || role=model
	printf '{"uuid":"%s","parentUuid":null,"sessionId":"%s","timestamp":"2026-08-01T15:01:13.619Z","type":"%s","cwd":"%s","message":{"role":"%s","parts":[{"text":"%s"}]}}\n' \
	    "$2" "$1" "$3" "$WS" "$role" "$4"
}

# sessions N: N transcripts, the 100th holding a rare word.
sessions() {
	local i id f
	mkdir -p "$(chats)"
	for ((i = 0; i < $1; i++)); do
		id=$(printf '5e550000-0000-4000-8000-%012d' "$i")
		f=$(chats)/$id.jsonl
		record "$id" u1 user "first prompt of session $i" >"$f"
		record "$id" a1 assistant "an answer about the loader and its index" >>"$f"
		# One whose search text is full (16 KiB): it is kept too.
		[ "$i" != 50 ] ||
			record "$id" u3 user "$(head -c 20000 /dev/zero | tr '\0' w)" >>"$f"
		if [ "$i" = 100 ]; then
			record "$id" u2 user "and the xylophone" >>"$f"
		else
			record "$id" u2 user "and the drums" >>"$f"
		fi
	done
}

# big ID LINES: a transcript of LINES tool results of 1 KiB each (not
# searchable text: the search text stays small).
big() {
	local f=$(chats)/$1.jsonl pad i
	mkdir -p "$(chats)"
	pad=$(head -c 1000 /dev/zero | tr '\0' p)
	record "$1" u0 user "the big one" >"$f"
	for ((i = 0; i < $2; i++)); do
		printf '{"uuid":"r%s","parentUuid":null,"sessionId":"%s","type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"%s"}}}]}}\n' "$i" "$1" "$pad"
	done >>"$f"
}

# failed N: a write of the kept file failed at least N times.
failed() { [ "$(metric 'qwen_serve_listing_kept_total{event="failed"}')" -ge "$1" ]; }

# keep_and_restart: wait for the kept file, stop, start again.
keep_and_restart() {
	wait_for 10 written 1
	serve_stop
	[ -f "$(kept)" ]
	start
}

@test "restarted over 200 sessions: the first search and listing read no transcript" {
	start
	sessions 200
	req GET '/workspace/primary/sessions/search?q=XYLOPHONE&maxResults=50'
	expect 200 '(.results | length) == 1'
	req GET '/workspace/sessions?limit=1000'
	expect 200 '(.sessions | length) == 200'
	[ "$(metric qwen_serve_listing_bytes_read_total)" -gt 40000 ]
	keep_and_restart
	# Private: the file 0600 in a directory 0700.
	[ "$(stat -c %a "$(kept)")" = 600 ]
	[ "$(stat -c %a "$(dirname "$(kept)")")" = 700 ]
	req GET '/workspace/primary/sessions/search?q=XYLOPHONE&maxResults=50'
	expect 200 '(.results | length) == 1'
	expect 200 '.results[0].session.sessionId == "5e550000-0000-4000-8000-000000000100"'
	expect 200 '.results[0].snippet == "and the xylophone"'
	req GET '/workspace/sessions?limit=1000'
	expect 200 '(.sessions | length) == 200'
	expect 200 '[.sessions[] | select(.sessionId == "5e550000-0000-4000-8000-000000000007")][0].firstPrompt == "first prompt of session 7"'
	[ "$(metric qwen_serve_listing_bytes_read_total)" = 0 ]
	[ "$(metric 'qwen_serve_listing_kept_total{event="loaded"}')" = 1 ]
	# Nothing changed: nothing to write again.
	sleep 1.5
	[ "$(metric 'qwen_serve_listing_kept_total{event="written"}')" = 0 ]
}

@test "a grown transcript is read from its old end, kept or not" {
	start
	local id=b1600000-0000-4000-8000-000000000001 before after size
	big "$id" 300
	size=$(stat -c %s "$(chats)/$id.jsonl")
	req GET '/workspace/primary/sessions/search?q=nothing-like-it'
	expect 200 '(.results | length) == 0'
	# In memory: the appended line only (and the 4 KiB digested at each end).
	before=$(metric qwen_serve_listing_bytes_read_total)
	[ "$before" -ge "$size" ]
	record "$id" u1 user "the zebra arrives" >>"$(chats)/$id.jsonl"
	req GET '/workspace/primary/sessions/search?q=zebra'
	expect 200 '(.results | length) == 1'
	expect 200 '.results[0].snippet == "the zebra arrives"'
	expect 200 '.results[0].session.firstPrompt == "the big one"'
	after=$(metric qwen_serve_listing_bytes_read_total)
	[ $((after - before)) -lt 20000 ]
	# Across a restart: the kept file's entry grows the same way.
	keep_and_restart
	printf '{"uuid":"t1","parentUuid":null,"sessionId":"%s","type":"system","subtype":"custom_title","systemPayload":{"customTitle":"Giraffe notes","titleSource":"manual"}}\n' "$id" >>"$(chats)/$id.jsonl"
	record "$id" u2 user "then a giraffe" >>"$(chats)/$id.jsonl"
	req GET '/workspace/primary/sessions/search?q=giraffe'
	expect 200 '(.results | length) == 1'
	expect 200 '.results[0].session.displayName == "Giraffe notes"'
	req GET '/workspace/primary/sessions/search?q=zebra'
	expect 200 '(.results | length) == 1'
	[ "$(metric qwen_serve_listing_bytes_read_total)" -lt 20000 ]
}

@test "a rewritten transcript is read again, in place or replaced" {
	start
	sessions 3
	local f=$(chats)/5e550000-0000-4000-8000-000000000001.jsonl id
	id=5e550000-0000-4000-8000-000000000001
	req GET '/workspace/sessions?limit=10'
	expect 200 '(.sessions | length) == 3'
	keep_and_restart
	# Same inode, longer, but its start changed: not an append.
	{ sed 's/first prompt of session 1/REWRITTEN prompt of session 1/' "$f"
	  record "$id" a2 assistant "and more"; } >"$f.new"
	[ "$(stat -c %s "$f.new")" -gt "$(stat -c %s "$f")" ]
	cat "$f.new" >"$f"
	req GET '/workspace/sessions?limit=10'
	expect 200 '[.sessions[] | select(.sessionId == "'"$id"'")][0].firstPrompt == "REWRITTEN prompt of session 1"'
	# Replaced by a rename: another inode.
	f=$(chats)/5e550000-0000-4000-8000-000000000002.jsonl
	id=5e550000-0000-4000-8000-000000000002
	record "$id" u1 user "RENAMED prompt" >"$f.tmp"
	mv "$f.tmp" "$f"
	req GET '/workspace/sessions?limit=10'
	expect 200 '[.sessions[] | select(.sessionId == "'"$id"'")][0].firstPrompt == "RENAMED prompt"'
	req GET '/workspace/sessions?limit=10'
	expect 200 '[.sessions[] | select(.sessionId == "5e550000-0000-4000-8000-000000000000")][0].firstPrompt == "first prompt of session 0"'
}

@test "a corrupt, truncated, foreign or linked kept file is ignored, logged and rebuilt" {
	start
	sessions 20
	req GET '/workspace/sessions?limit=100'
	expect 200 '(.sessions | length) == 20'
	wait_for 10 written 1
	serve_stop
	cp "$(kept)" "$BATS_TEST_TMPDIR/good"
	local off
	# One byte of a kept prompt changed: the checksum refuses it all.
	off=$(grep -abo 'first prompt of session 7' "$(kept)" | head -1 | cut -d: -f1)
	[ -n "$off" ]
	printf 'F' | dd of="$(kept)" bs=1 seek="$off" conv=notrunc status=none
	start
	req GET '/workspace/sessions?limit=100'
	expect 200 '[.sessions[] | select(.sessionId == "5e550000-0000-4000-8000-000000000007")][0].firstPrompt == "first prompt of session 7"'
	grep -q 'kept file sessions.kept ignored (checksum); rebuilt' "$BATS_TEST_TMPDIR/err"
	run ! grep -q 'first prompt' "$BATS_TEST_TMPDIR/err"
	[ "$(metric 'qwen_serve_listing_kept_total{event="rejected"}')" = 1 ]
	[ "$(metric qwen_serve_listing_bytes_read_total)" -gt 0 ]
	# Rebuilt: the next restart reads nothing.
	keep_and_restart
	req GET '/workspace/sessions?limit=100'
	expect 200 '(.sessions | length) == 20'
	[ "$(metric qwen_serve_listing_bytes_read_total)" = 0 ]
	serve_stop
	# Truncated.
	head -c "$(($(stat -c %s "$BATS_TEST_TMPDIR/good") / 2))" "$BATS_TEST_TMPDIR/good" >"$(kept)"
	start
	req GET '/workspace/sessions?limit=100'
	expect 200 '[.sessions[].firstPrompt] | length == 20'
	grep -q 'ignored (truncated)' "$BATS_TEST_TMPDIR/err"
	serve_stop
	# Readable by others.
	cp "$BATS_TEST_TMPDIR/good" "$(kept)"
	chmod 644 "$(kept)"
	start
	req GET '/workspace/sessions?limit=100'
	expect 200 '(.sessions | length) == 20'
	grep -q 'ignored (not ours or not private (0600))' "$BATS_TEST_TMPDIR/err"
	[ "$(metric qwen_serve_listing_bytes_read_total)" -gt 0 ]
	serve_stop
	# A symbolic link to a good copy.
	cp "$BATS_TEST_TMPDIR/good" "$BATS_TEST_TMPDIR/cache/elsewhere"
	rm -f "$(kept)"
	ln -s "$BATS_TEST_TMPDIR/cache/elsewhere" "$(kept)"
	start
	req GET '/workspace/sessions?limit=100'
	expect 200 '(.sessions | length) == 20'
	grep -q 'ignored (a symbolic link)' "$BATS_TEST_TMPDIR/err"
	[ "$(metric qwen_serve_listing_bytes_read_total)" -gt 0 ]
	# Not a kept listing at all.
	serve_stop
	rm -f "$(kept)"
	head -c 5000 /dev/urandom >"$(kept)"
	chmod 600 "$(kept)"
	start
	req GET '/workspace/sessions?limit=100'
	expect 200 '(.sessions | length) == 20'
	grep -q 'ignored (not a kept listing)' "$BATS_TEST_TMPDIR/err"
}

@test "a kept file's directory others may read: not used, said once, listings as before" {
	mkdir -p "$BATS_TEST_TMPDIR/cache/listing"
	chmod 700 "$BATS_TEST_TMPDIR/cache"
	chmod 755 "$BATS_TEST_TMPDIR/cache/listing"
	start
	sessions 5
	req GET '/workspace/sessions?limit=100'
	expect 200 '(.sessions | length) == 5'
	grep -q 'listing: no kept file: listing: not ours or not private (0700)' "$BATS_TEST_TMPDIR/err"
	[ "$(metric 'qwen_serve_listing_kept_total{event="rejected"}')" = 1 ]
	wait_for 10 failed 1
	touch "$(chats)/5e550000-0000-4000-8000-000000000001.jsonl"
	req GET '/workspace/sessions?limit=100'
	expect 200 '(.sessions | length) == 5'
	wait_for 10 failed 2
	[ "$(grep -c 'listing: no kept file' "$BATS_TEST_TMPDIR/err")" = 2 ]
	[ ! -e "$(kept)" ]
}

@test "a removed transcript's entry leaves the kept file after eight writes without it" {
	start
	sessions 3
	local gone=5e550000-0000-4000-8000-000000000002 n
	req GET '/workspace/sessions?limit=10'
	expect 200 '(.sessions | length) == 3'
	wait_for 10 written 1
	grep -aq 'first prompt of session 2' "$(kept)"
	rm "$(chats)/$gone.jsonl"
	# Each change (a touched transcript) makes a write.
	for n in 2 3 4 5 6 7 8; do
		touch -d "@$((1700000000 + n))" "$(chats)/5e550000-0000-4000-8000-000000000000.jsonl"
		req GET '/workspace/sessions?limit=10'
		expect 200 '(.sessions | length) == 2'
		wait_for 10 written "$n"
		grep -aq 'first prompt of session 2' "$(kept)"
	done
	touch -d @1700000009 "$(chats)/5e550000-0000-4000-8000-000000000000.jsonl"
	req GET '/workspace/sessions?limit=10'
	wait_for 10 written 9
	run ! grep -aq 'first prompt of session 2' "$(kept)"
	grep -aq 'first prompt of session 1' "$(kept)"
}
