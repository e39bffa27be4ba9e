#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: archive and delete under SIGKILL.  The daemon is held
# (QWEN_SERVE_TEST_MANAGE_HOLD, a FIFO) right after the transcript's
# rename, killed there, and restarted: every session is then whole or
# gone, its ledger beside it, the trash empty.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

A=22222222-2222-4222-8222-222222222222

setup_two() {
	SID=11111111-1111-4111-8111-111111111111
	serve_start
	make_transcript "$A"
	make_transcript "$SID"
	CHATS=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
	printf '%s\n' '{"promptId":"p1"}' >"$CHATS/$SID.ledger.jsonl"
	cp "$CHATS/$SID.jsonl" "$BATS_TEST_TMPDIR/sid.orig"
	cp "$CHATS/$A.jsonl" "$BATS_TEST_TMPDIR/a.orig"
	serve_stop
	HOLD=$BATS_TEST_TMPDIR/hold
	mkfifo "$HOLD"
}

# Start held, send the batch in the background, SIGKILL at the hold point
# (kill_mid ROUTE [EXTRA-MEMBERS]).
kill_mid() {
	QWEN_SERVE_TEST_MANAGE_HOLD=$HOLD serve_start
	curl -s --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' \
	    --data-binary "{\"sessionIds\":[\"$SID\"]${2:-}}" "http://localhost/sessions/$1" \
	    >/dev/null 3>&- &
	local cpid=$!
	wait_for 10 test -e "$HOLD.reached"
	kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" || true
	SERVE_PID=
	wait "$cpid" || true
}

@test "SIGKILL mid-delete: the session is gone, its ledger too after the restart" {
	setup_two
	kill_mid delete
	[ ! -e "$CHATS/$SID.jsonl" ]
	[ -n "$(ls -A "$CHATS/.trash")" ]
	serve_start
	[ -z "$(ls -A "$CHATS/.trash")" ]
	[ ! -e "$CHATS/$SID.ledger.jsonl" ]
	cmp "$CHATS/$A.jsonl" "$BATS_TEST_TMPDIR/a.orig"
	req GET /workspace/primary/sessions
	expect 200 ".sessions | map(.sessionId) == [\"$A\"]"
}

@test "SIGKILL mid-archive: the session is whole in the archive, its ledger beside it" {
	setup_two
	kill_mid archive
	cmp "$CHATS/archive/$SID.jsonl" "$BATS_TEST_TMPDIR/sid.orig"
	[ -f "$CHATS/$SID.ledger.jsonl" ]
	serve_start
	[ ! -e "$CHATS/$SID.ledger.jsonl" ]
	[ -f "$CHATS/archive/$SID.ledger.jsonl" ]
	cmp "$CHATS/archive/$SID.jsonl" "$BATS_TEST_TMPDIR/sid.orig"
	cmp "$CHATS/$A.jsonl" "$BATS_TEST_TMPDIR/a.orig"
	req POST /sessions/unarchive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".unarchived == [\"$SID\"]"
	cmp "$CHATS/$SID.jsonl" "$BATS_TEST_TMPDIR/sid.orig"
	[ -f "$CHATS/$SID.ledger.jsonl" ]
}

@test "SIGKILL mid-unarchive: the session is whole back in chats, its ledger follows" {
	setup_two
	serve_start
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".archived == [\"$SID\"]"
	serve_stop
	kill_mid unarchive
	cmp "$CHATS/$SID.jsonl" "$BATS_TEST_TMPDIR/sid.orig"
	[ -f "$CHATS/archive/$SID.ledger.jsonl" ]
	serve_start
	[ -f "$CHATS/$SID.ledger.jsonl" ]
	[ ! -e "$CHATS/archive/$SID.ledger.jsonl" ]
	[ ! -e "$CHATS/archive/$SID.jsonl" ]
}

@test "SIGKILL mid-resolveConflicts: the kept copy whole, the other gone after the restart" {
	setup_two
	mkdir -p "$CHATS/archive"
	echo other >"$CHATS/archive/$SID.jsonl"
	kill_mid archive ',"resolveConflicts":true'
	[ "$(cat "$CHATS/archive/$SID.jsonl")" = other ]
	[ ! -e "$CHATS/$SID.jsonl" ]
	serve_start
	[ -z "$(ls -A "$CHATS/.trash")" ]
	[ ! -e "$CHATS/$SID.ledger.jsonl" ]
	[ "$(cat "$CHATS/archive/$SID.jsonl")" = other ]
	req GET "/workspace/primary/sessions?archiveState=archived"
	expect 200 ".sessions | map(.sessionId) == [\"$SID\"]"
	cmp "$CHATS/$A.jsonl" "$BATS_TEST_TMPDIR/a.orig"
}
