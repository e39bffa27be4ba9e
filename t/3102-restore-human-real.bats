#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore's human output against the real qwen-serve (issue 17):
# list as a table with local times and the first prompt, status as
# key/value lines, and --json beside them.

load serve_helper
bats_require_minimum_version 1.5.0

setup() {
	export XDG_STATE_HOME=$BATS_TEST_TMPDIR/state
	unset QWEN_SERVE_URL QWEN_SERVER_TOKEN QWEN_FETCH_TIMEOUT_MS
	serve_start --no-tcp
	export QWEN_SERVE_SOCKET=$SOCK
	cd "$WS"
}

teardown() {
	serve_teardown
}

@test "list: a table of the workspace's sessions; --json: the answer" {
	make_transcript "$SID"
	make_transcript "$SID2"
	touch -d '2026-01-02 03:04' "$DATA"/projects/*/chats/"$SID2".jsonl
	qwen-restore resume "$SID"
	run --separate-stderr qwen-restore list
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" =~ ^ID\ +SIZE\ MODIFIED\ +LIVE\ FIRST\ PROMPT$ ]]
	[[ "${lines[1]}" =~ ^$SID\ +[0-9]+\ [0-9-]+\ [0-9:]+\ +yes\ +Why\ is\ loading\ slow\?$ ]]
	[[ "${lines[2]}" =~ ^$SID2\ +[0-9]+\ 2026-01-02\ 03:04\ +no\ +Why\ is\ loading\ slow\?$ ]]
	run --separate-stderr qwen-restore --json list
	[ "$(jq -r '.sessions | map(.live) | join(",")' <<<"$output")" = "true,false" ]
}

@test "status: key/value lines" {
	make_transcript "$SID"
	qwen-restore resume "$SID"
	run --separate-stderr qwen-restore status "$SID"
	[ "$status" -eq 0 ]
	[[ "$output" =~ (^|$'\n')sessionId\ +$SID($'\n'|$) ]]
	run ! grep -q '[{}]' <<<"$output"
}
