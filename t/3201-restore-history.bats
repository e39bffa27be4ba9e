#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore: transcript and branch, and the flags for what the daemon
# accepts: load --page-size/--replay-mode, prompt --deadline-ms,
# new --session-id/--approval-mode/--model-service.

load serve_helper
bats_require_minimum_version 1.5.0

setup() {
	export XDG_STATE_HOME=$BATS_TEST_TMPDIR/state
	unset QWEN_SERVE_URL QWEN_SERVER_TOKEN QWEN_FETCH_TIMEOUT_MS
}

teardown() {
	serve_teardown
}

# A generated transcript and the real child.
gen() {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start "$@"
	export QWEN_SERVE_SOCKET=$SOCK
	qwen-gen-transcript --mib 1 --seed 5 --data-dir "$DATA" --workspace "$WS" \
	    --session-id "$SID" >/dev/null
	cd "$WS"
}

# The distinct source record ids of NDJSON events on stdin.
ids() {
	jq -r '.data._meta.qwenTranscript.sourceRecordIds // [] | .[]' | uniq
}

@test "transcript: NDJSON of the whole history, oldest first; --limit one page; --before" {
	gen
	run -0 qwen-restore --json transcript "$SID"
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/all"
	jq -e -s 'length > 300 and all(.[]; .v == 1 and .type == "session_update")' "$BATS_TEST_TMPDIR/all" >/dev/null
	# The same events the route gives page by page.
	req GET "/session/$SID/transcript?limit=500"
	expect 200
	[ "$(head -n "$(jq '.events | length' <<<"$body")" "$BATS_TEST_TMPDIR/all" | jq -s -c .)" = "$(jq -c .events <<<"$body")" ]
	run -0 qwen-restore --json transcript "$SID" --limit 3
	[ "$(printf '%s\n' "$output" | ids | wc -l)" -le 3 ]
	[ "$(printf '%s\n' "$output" | head -1)" = "$(head -1 "$BATS_TEST_TMPDIR/all")" ]
	local rec
	rec=$(ids <"$BATS_TEST_TMPDIR/all" | sed -n 60p)
	run -0 qwen-restore --json transcript "$SID" --before "$rec"
	printf '%s\n' "$output" | ids >"$BATS_TEST_TMPDIR/before"
	ids <"$BATS_TEST_TMPDIR/all" | head -59 | cmp - "$BATS_TEST_TMPDIR/before"
}

@test "transcript and branch errors: exit 3 for an unknown session, 2 for a bad record or flag, 1 for a bad branch point" {
	gen
	run -3 qwen-restore transcript "$SID2"
	[[ "$output" == *"No session with id"* ]]
	run -2 qwen-restore transcript "$SID" --before no-such-record
	run -2 qwen-restore transcript "$SID" --limit 0
	run -2 qwen-restore transcript "$SID" --limit 501
	run -2 qwen-restore load "$SID" --limit 3
	[[ "$output" == *"--limit: only with transcript"* ]]
	run -2 qwen-restore prompt "$SID" x --page-size 3
	run -1 qwen-restore branch "$SID" --at no-such-record
	[[ "$output" == *"not a record"* ]]
	run -3 qwen-restore branch "$SID2"
}

@test "branch: prints the new id; --at ends it there; --json the whole answer; the branch loads" {
	gen
	local rec new
	rec=$(qwen-restore --json transcript "$SID" | ids | sed -n 20p)
	run -0 qwen-restore branch "$SID" --at "$rec" --name "from cli"
	new=$output
	[[ "$new" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}- ]]
	[ "$(qwen-restore --json transcript "$new" | ids | tail -1)" = "$rec" ]
	run -0 qwen-restore --json branch "$SID" --name other
	jq -e ".displayName == \"other\" and .forkedFrom.sessionId == \"$SID\"" <<<"$output" >/dev/null
	run -0 qwen-restore load "$new"
	[ "$output" = "$new" ]
}

@test "load --page-size and --replay-mode reach the daemon" {
	gen
	run -0 qwen-restore --json load "$SID" --page-size 10 --replay-mode summary
	jq -e '.historyHasMore == true and (.historyAnchorRecordId | type) == "string"' <<<"$output" >/dev/null
	run -2 qwen-restore load "$SID" --replay-mode tiny
	run -2 qwen-restore load "$SID" --page-size 0
}

@test "prompt --deadline-ms: the daemon ends a prompt the agent never answers, exit 1" {
	FAKE_CHILD=hang=session/prompt,hang=session/cancel serve_start
	export QWEN_SERVE_SOCKET=$SOCK
	make_transcript
	cd "$WS"
	run -0 qwen-restore load "$SID"
	run -1 qwen-restore prompt "$SID" "never answered" --deadline-ms 300
	[[ "$output" == *"deadline"* ]]
	grep -q 'prompt exceeded its 300 ms deadline' "$BATS_TEST_TMPDIR/err"
	run -2 qwen-restore prompt "$SID" x --deadline-ms 0
}

@test "new --session-id, --approval-mode, --model-service" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log" serve_start
	export QWEN_SERVE_SOCKET=$SOCK
	cd "$WS"
	# A model the fake agent does not know: created, but the command fails.
	run -1 --separate-stderr qwen-restore new --session-id "$SID2" --approval-mode plan --model-service svc-1
	[ "$output" = "$SID2" ]
	[[ "$stderr" == *"model svc-1 was not applied"* ]]
	grep -q "session/new $SID2" "$BATS_TEST_TMPDIR/child.log"
	run -2 qwen-restore new --session-id "$SID" --approval-mode sometimes
	[[ "$output" == *"Invalid approvalMode"* ]]
	run -2 qwen-restore new --session-id not-a-uuid
	run -2 qwen-restore status "$SID2" --session-id "$SID"
}

@test "--cwd picks the workspace of transcript, branch and load in a daemon with two" {
	local b=$BATS_TEST_TMPDIR/wsb
	mkdir -p "$b"
	b=$(cd "$b" && pwd -P)
	WS=$BATS_TEST_TMPDIR/ws
	mkdir -p "$WS"
	WS=$(cd "$WS" && pwd -P)
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start --workspace "$WS" --workspace "$b"
	export QWEN_SERVE_SOCKET=$SOCK
	qwen-gen-transcript --mib 1 --seed 5 --data-dir "$DATA" --workspace "$b" \
	    --session-id "$SID2" >/dev/null
	cd "$WS"
	run -3 qwen-restore transcript "$SID2" --limit 2
	run -0 qwen-restore --cwd "$b" transcript "$SID2" --limit 2
	[ -n "$output" ]
	run -0 qwen-restore --cwd "$b" branch "$SID2"
	run -0 qwen-restore --cwd "$b" --json load "$output"
	jq -e ".workspaceCwd == \"$b\"" <<<"$output" >/dev/null
}
