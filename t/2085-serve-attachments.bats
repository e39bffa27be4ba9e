#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a live session's attachments (routes-attachments.c,
# attachments.c): uploaded as a raw body, listed, read back as they are,
# removed; names checked and made unique, ids that try to leave the
# session's directory refused, the bounds enforced, the store private, kept
# across a restart and an archive, gone with a deleted session.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

# up NAME TYPE FILE [extra curl args]: POST the file as the attachment.
up() {
	local name=$1 type=$2 file=$3
	shift 3
	code=$(curl -s -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' --unix-socket "$SOCK" \
	    -X POST -H "Content-Type: $type" --data-binary "@$file" "$@" \
	    "http://localhost/session/$SID/attachments?name=$name")
	body=$(cat "$BATS_TEST_TMPDIR/body")
}

# The attachments directory of the test's workspace.
adir() {
	printf '%s/tmp/%s/attachments' "$DATA" "$(printf '%s' "$WS" | sha256sum | cut -d' ' -f1)"
}

@test "attachments: upload, list, read back, remove" {
	serve_loaded
	printf 'hello\n' >"$BATS_TEST_TMPDIR/a.txt"
	printf '\x89PNG\r\n\x1a\n0000' >"$BATS_TEST_TMPDIR/p.png"
	up notes.txt 'text/plain; charset=utf-8' "$BATS_TEST_TMPDIR/a.txt"
	expect 201 '.type == "resource" and .attachmentId == "notes.txt" and .mimeType == "text/plain" and .size == 6'
	up shot.png image/png "$BATS_TEST_TMPDIR/p.png"
	expect 201 '.type == "image" and .attachmentId == "shot.png" and .mimeType == "image/png" and .size == 12'
	# The same name again is the next free one.
	up notes.txt text/plain "$BATS_TEST_TMPDIR/a.txt"
	expect 201 '.attachmentId == "notes (1).txt"'
	req GET /session/$SID/attachments
	expect 200 '[.attachments[].attachmentId] | sort == ["notes (1).txt", "notes.txt", "shot.png"]'
	req GET /session/$SID/attachments/shot.png
	expect 200
	cmp "$BATS_TEST_TMPDIR/body" "$BATS_TEST_TMPDIR/p.png"
	[ "$(header Content-Type)" = image/png ]
	[ "$(header X-Content-Type-Options)" = nosniff ]
	[ "$(header Content-Disposition)" = attachment ]
	req GET "/session/$SID/attachments/notes%20(1).txt"
	expect 200
	[ "$body" = hello ]
	req DELETE /session/$SID/attachments/notes.txt
	expect 200 '.removed == true'
	req DELETE /session/$SID/attachments/notes.txt
	expect 200 '.removed == false'
	req GET /session/$SID/attachments/notes.txt
	expect 404 '.error == "session attachment not found"'
	req GET /session/$SID/attachments
	expect 200 '.attachments | length == 2'
	# The store is private.
	[ "$(stat -c %a "$(adir)")" = 700 ]
	[ "$(stat -c %a "$(adir)/session-$SID")" = 700 ]
	# A workspace-qualified path reaches the same store.
	req GET "/workspaces/primary/session/$SID/attachments"
	expect 200 '.attachments | length == 2'
}

@test "attachments: bad input is a 400, never stored" {
	serve_loaded
	printf 'x' >"$BATS_TEST_TMPDIR/x"
	: >"$BATS_TEST_TMPDIR/empty"
	# No name, no Content-Type.
	code=$(curl -s -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' --unix-socket "$SOCK" \
	    -X POST -H 'Content-Type: text/plain' --data-binary x \
	    "http://localhost/session/$SID/attachments")
	[ "$code" = 400 ]
	code=$(curl -s -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' --unix-socket "$SOCK" \
	    -X POST -H 'Content-Type:' --data-binary x \
	    "http://localhost/session/$SID/attachments?name=a.txt")
	[ "$code" = 400 ]
	# Names that are no name.
	for n in '' . .. 'a.' 'con' 'nul.txt' 'a%3Cb' 'a%01b' '%2E%2E%2F'; do
		up "$n" text/plain "$BATS_TEST_TMPDIR/x"
		expect 400
	done
	# A name and a type that disagree about being an image.
	up a.png text/plain "$BATS_TEST_TMPDIR/x"
	expect 400 '.error == "Attachment name and Content-Type do not match"'
	up a.txt image/png "$BATS_TEST_TMPDIR/x"
	expect 400
	up empty.png image/png "$BATS_TEST_TMPDIR/empty"
	expect 400 '.error == "Image attachments cannot be empty"'
	# 255 bytes is the most; a taken long name is cut before its " (1)".
	local long
	long=$(printf 'a%.0s' $(seq 251)).txt
	up "$long" text/plain "$BATS_TEST_TMPDIR/x"
	expect 201 ".attachmentId == \"$long\""
	up "$long" text/plain "$BATS_TEST_TMPDIR/x"
	expect 201 ".attachmentId == \"$(printf 'a%.0s' $(seq 247)) (1).txt\""
	up "a$long" text/plain "$BATS_TEST_TMPDIR/x"
	expect 400
	req DELETE "/session/$SID/attachments/$long"
	expect 200 '.removed == true'
	req DELETE "/session/$SID/attachments/$(printf 'a%.0s' $(seq 247))%20(1).txt"
	expect 200 '.removed == true'
	# A path is cut to its last segment, never followed.
	up '..%2F..%2Fescape.txt' text/plain "$BATS_TEST_TMPDIR/x"
	expect 201 '.attachmentId == "escape.txt"'
	[ ! -e "$DATA/tmp/escape.txt" ]
	req GET /session/$SID/attachments
	expect 200 '[.attachments[].attachmentId] == ["escape.txt"]'
}

@test "attachments: ids that try ../ and links are refused" {
	serve_loaded
	mkdir -p "$(adir)/session-$SID"
	chmod 700 "$(adir)" "$(adir)/session-$SID"
	echo secret >"$BATS_TEST_TMPDIR/secret"
	ln -s "$BATS_TEST_TMPDIR/secret" "$(adir)/session-$SID/link.txt"
	echo other >"$(adir)/outside.txt"
	for p in '..%2Foutside.txt' '%2E%2E%2Foutside.txt' 'link.txt' '..' '.'; do
		req GET "/session/$SID/attachments/$p"
		[ "$code" = 404 ] || [ "$code" = 400 ]
		req DELETE "/session/$SID/attachments/$p"
		[ "$code" != 500 ]
	done
	[ -e "$(adir)/outside.txt" ]
	[ -L "$(adir)/session-$SID/link.txt" ]
	req GET /session/$SID/attachments
	expect 200 '.attachments == []'
}

@test "attachments: a file over 8 MiB is a 413; a full session too" {
	serve_loaded
	head -c $((8 * 1024 * 1024 + 1)) /dev/zero >"$BATS_TEST_TMPDIR/big"
	up big.bin application/octet-stream "$BATS_TEST_TMPDIR/big"
	expect 413
	head -c $((8 * 1024 * 1024)) /dev/urandom >"$BATS_TEST_TMPDIR/max"
	up max.bin application/octet-stream "$BATS_TEST_TMPDIR/max"
	expect 201 '.size == 8388608'
	req GET /session/$SID/attachments/max.bin
	expect 200
	cmp "$BATS_TEST_TMPDIR/body" "$BATS_TEST_TMPDIR/max"
	# 64 MiB a session: the ninth 8 MiB file does not fit.
	for i in 1 2 3 4 5 6 7; do
		up "m$i.bin" application/octet-stream "$BATS_TEST_TMPDIR/max"
		expect 201
	done
	up m8.bin application/octet-stream "$BATS_TEST_TMPDIR/max"
	expect 413 '.error | startswith("Session attachments are full")'
	req GET /session/$SID/attachments
	expect 200 '.attachments | length == 8'
	# The count: 256 files a session.
	req DELETE /session/$SID/attachments/max.bin
	expect 200 '.removed == true'
	printf 'x' >"$BATS_TEST_TMPDIR/x"
	for i in $(seq 1 248); do : >"$(adir)/session-$SID/f$i.txt"; done
	up last.txt text/plain "$BATS_TEST_TMPDIR/x"
	expect 201
	up over.txt text/plain "$BATS_TEST_TMPDIR/x"
	expect 413 '.error == "Session attachments are full (max 256)"'
}

@test "attachments: an unknown or unloaded session is a 404" {
	serve_start
	make_transcript
	printf 'x' >"$BATS_TEST_TMPDIR/x"
	up a.txt text/plain "$BATS_TEST_TMPDIR/x"
	expect 404 '.code == "session_not_found"'
	req GET /session/$SID/attachments
	expect 404 '.code == "session_not_found"'
	req GET /session/33333333-3333-4333-8333-333333333333/attachments/a.txt
	expect 404 '.code == "session_not_found"'
	req GET '/session/..%2F..%2Fetc/attachments'
	expect 400 '.code == "invalid_session_id"'
	[ ! -e "$(adir)" ]
}

@test "attachments: a client id must be the session's" {
	serve_loaded
	req GET /session/$SID/attachments '' -H 'X-Qwen-Client-Id: client_nobody'
	expect 400 '.code == "invalid_client_id"'
}

@test "attachments: kept across a restart and an archive, gone with the session" {
	serve_loaded
	printf 'kept' >"$BATS_TEST_TMPDIR/k"
	up kept.md text/markdown "$BATS_TEST_TMPDIR/k"
	expect 201 '.mimeType == "text/markdown"'
	serve_stop
	serve_start
	req POST /session/$SID/load '{}'
	expect 200
	req GET /session/$SID/attachments/kept.md
	expect 200
	[ "$body" = kept ]
	req DELETE /session/$SID
	expect 204
	wait_for 10 cond '[ "$(curl -s -o /dev/null -w "%{http_code}" --unix-socket "$SOCK" http://localhost/session/$SID/status)" = 404 ]'
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200
	[ -f "$(adir)/session-$SID/kept.md" ]
	req POST /sessions/delete "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".removed == [\"$SID\"]"
	[ ! -e "$(adir)/session-$SID" ]
	[ -d "$(adir)" ]
}
