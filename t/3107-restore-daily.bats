#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore in daily use: the history and the events as a conversation
# (show, follow; transcript and events without --json), load saying what
# it restored, list --limit/--all/--no-header with a "more" line and
# columns by display width, session ids by unique prefix, and a streamed
# prompt that ^C cancels and --max-time bounds.

load serve_helper
bats_require_minimum_version 1.5.0

setup() {
	export XDG_STATE_HOME=$BATS_TEST_TMPDIR/state
	unset QWEN_SERVE_URL QWEN_SERVER_TOKEN QWEN_FETCH_TIMEOUT_MS COLUMNS
}

teardown() {
	serve_teardown
}

# The real child (it serves transcript pages) and SID's transcript.
real() {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start "$@"
	export QWEN_SERVE_SOCKET=$SOCK
	make_transcript "$SID"
	cd "$WS"
}

# transcript ID FIRST-PROMPT [MTIME]: a persisted session of ID whose first
# prompt is FIRST-PROMPT, modified at MTIME (touch -d).
transcript() {
	local san dir
	san=$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')
	dir=$DATA/projects/$san/chats
	mkdir -p "$dir"
	jq -c -n --arg id "$1" --arg t "$2" --arg ws "$WS" '{uuid: "u1",
	    parentUuid: null, sessionId: $id, timestamp: "2026-08-01T15:01:13.619Z",
	    type: "user", cwd: $ws, version: "0.24.4",
	    message: {role: "user", parts: [{text: $t}]}}' >"$dir/$1.jsonl"
	touch -d "${3:-2026-08-01 12:00}" "$dir/$1.jsonl"
}

@test "show and transcript: the history as a conversation; --json is NDJSON as before" {
	real
	run -0 qwen-restore show "$SID"
	[ "${lines[0]}" = "you> Why is loading slow?" ]
	[ "${lines[1]}" = "agent> Because." ]
	run -0 qwen-restore transcript "$SID"
	[ "${lines[0]}" = "you> Why is loading slow?" ]
	run -0 qwen-restore --json transcript "$SID"
	jq -e -s 'length > 0 and all(.[]; .type == "session_update")' <<<"$output" >/dev/null
}

@test "ids by unique prefix; an ambiguous prefix is a usage error naming the candidates" {
	real
	transcript aaaa1111-1111-4111-8111-111111111111 one
	transcript aaaa2222-1111-4111-8111-111111111111 two
	run -0 qwen-restore show 1111
	[ "${lines[0]}" = "you> Why is loading slow?" ]
	run -0 qwen-restore show aaaa1
	[ "$output" = "you> one" ]
	run -2 qwen-restore show aaaa
	[[ "$output" == *"session ID 'aaaa' is ambiguous: 2 sessions start with it (aaaa"* ]]
	run -3 qwen-restore show bbbb
	[[ "$output" == *"no session of $WS starts with 'bbbb'" ]]
	# Not hex, or too short: sent as typed, for the daemon to judge.
	run -2 qwen-restore show abc
	[[ "$output" == *'Invalid session id "abc"'* ]]
	run -0 qwen-restore load 11111111
	[ "$output" = "$SID" ]
}

@test "load -v: what was restored and what to do next, standard output still the id" {
	real
	run -0 --separate-stderr qwen-restore -v load "$SID"
	[ "$output" = "$SID" ]
	[[ "$stderr" == *"loaded $SID, 2 history events"* ]]
	[[ "$stderr" == *"next: qwen-restore show $SID"* ]]
	run -0 --separate-stderr qwen-restore load "$SID"
	[ "$output" = "$SID" ]
	[ -z "$stderr" ]
}

@test "list: --limit N with a more line, --all, --no-header; --limit and --all exclusive" {
	real
	transcript 33333333-1111-4111-8111-111111111111 three "2030-08-01 13:00"
	transcript 44444444-1111-4111-8111-111111111111 four "2030-08-01 14:00"
	run -0 --separate-stderr qwen-restore list --limit 2
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[1]}" == 44444444-* ]]
	[ "$stderr" = "qwen-restore: more sessions than the 2 shown (--limit N or --all for more)" ]
	run -0 --separate-stderr qwen-restore list --all --no-header
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" == 44444444-* ]]
	[ -z "$stderr" ]
	run -0 --separate-stderr qwen-restore list --limit 3
	[ -z "$stderr" ]
	run -2 qwen-restore list --limit 2 --all
	run -2 qwen-restore show "$SID" --all
	run -0 qwen-restore --json list --limit 1
	[ "$(jq '.sessions | length' <<<"$output")" -eq 1 ]
}

@test "list: columns by display width, CJK titles cut at the terminal's edge" {
	real
	transcript 55555555-1111-4111-8111-111111111111 "漢字のタイトルはとても長いのでここで切られます" "2030-08-01 15:00"
	COLUMNS=80 run -0 qwen-restore list --limit 1 --no-header
	# 36 id + 1 + 6 + 1 + 16 + 1 + 4 + 1 = 66 columns, 14 left: 6 wide
	# characters (12 columns) and the cut mark (13), not 13 of them.
	[[ "$output" == *" 漢字のタイト…" ]]
	COLUMNS=80 run -0 --separate-stderr qwen-restore list --limit 1 --no-header
	width=$(printf '%s' "$output" | python3 -c 'import sys, unicodedata
print(sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in sys.stdin.read()))')
	[ "$width" -le 80 ]
}

# A slow turn: 400 chunks 50 ms apart (20 s) from the fake child.
slow() {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log,chunks=400,chunk-delay=50" serve_start
	export QWEN_SERVE_SOCKET=$SOCK
	make_transcript "$SID"
	cd "$WS"
	qwen-restore load "$SID" >/dev/null
}

@test "prompt: ^C cancels the running turn and exits 130" {
	slow
	qwen-restore prompt "$SID" hello >"$BATS_TEST_TMPDIR/p.out" 2>"$BATS_TEST_TMPDIR/p.err" 3>&- &
	pid=$!
	wait_for 10 test -s "$BATS_TEST_TMPDIR/p.out"
	kill -INT "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 130 ]
	grep -q "^qwen-restore: ^C: cancelling the turn" "$BATS_TEST_TMPDIR/p.err"
	grep -q " session/cancel " "$BATS_TEST_TMPDIR/child.log"
}

@test "prompt: --max-time bounds a streamed answer (cancelled, exit 124); not with --no-wait" {
	slow
	run -124 --separate-stderr qwen-restore prompt "$SID" hello --max-time 0.5
	[[ "$stderr" == *"--max-time 0.5 s passed: cancelling the turn"* ]]
	grep -q " session/cancel " "$BATS_TEST_TMPDIR/child.log"
	run -2 qwen-restore prompt "$SID" hello --max-time 1 --no-wait
	run -2 qwen-restore prompt "$SID" hello --max-time 0
	run -2 qwen-restore list --max-time 1
}

@test "follow and events: live events as text; --json envelopes" {
	FAKE_CHILD="chunks=2" serve_start
	export QWEN_SERVE_SOCKET=$SOCK
	make_transcript "$SID"
	cd "$WS"
	qwen-restore load "$SID" >/dev/null
	qwen-restore follow "$SID" >"$BATS_TEST_TMPDIR/f.out" 3>&- &
	fpid=$!
	qwen-restore --json events "$SID" >"$BATS_TEST_TMPDIR/e.out" 3>&- &
	epid=$!
	subscribed() {
		[ "$(curl -s --unix-socket "$SOCK" "http://localhost/session/$SID/status" |
		    jq .subscriberCount)" -ge 2 ]
	}
	wait_for 10 subscribed
	run -0 qwen-restore prompt "$SID" hello
	wait_for 10 grep -q '^\[turn complete\]' "$BATS_TEST_TMPDIR/f.out"
	grep -q '^agent> ' "$BATS_TEST_TMPDIR/f.out"
	wait_for 10 grep -q '"turn_complete"' "$BATS_TEST_TMPDIR/e.out"
	kill "$fpid" "$epid"
	wait "$fpid" "$epid" || true
}
