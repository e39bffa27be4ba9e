#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A directory inside a workspace names that workspace (the deepest one,
# as git finds a repository upwards), so qwen-restore works from any
# subdirectory of a project; a directory in no workspace is still a
# workspace mismatch.

load serve_helper

setup() {
	serve_start
	mkdir -p "$WS/src/deep" "$BATS_TEST_TMPDIR/elsewhere"
}

teardown() {
	serve_teardown
}

restore() {
	qwen-restore --socket "$SOCK" --state-dir "$BATS_TEST_TMPDIR/state" "$@" 3>&-
}

@test "from a subdirectory of the workspace: list, new and load use the workspace" {
	make_transcript
	cd "$WS/src/deep"
	run restore --json list
	[ "$status" -eq 0 ]
	jq -e --arg s "$SID" '[.sessions[].sessionId] | index($s) != null' <<<"$output"
	run restore load "$SID"
	[ "$status" -eq 0 ]
	run restore new
	[ "$status" -eq 0 ]
	local sid=$output
	req GET "/session/$sid/status"
	expect 200 ".workspaceCwd == \"$WS\""
	# The daemon's rule, as every client sees it.
	req POST /session "{\"cwd\":\"$WS/src\"}"
	expect 200
}

@test "outside every workspace: workspace mismatch, as before" {
	cd "$BATS_TEST_TMPDIR/elsewhere"
	run restore new
	[ "$status" -eq 2 ]
	[[ "$output" == *"orkspace"* ]]
	# A parent of the workspace is not in it, nor is a name that only starts like it.
	mkdir -p "${WS}x"
	req POST /session "{\"cwd\":\"${WS}x\"}"
	expect 400 '.code == "workspace_mismatch"'
	req POST /session "{\"cwd\":\"$BATS_TEST_TMPDIR\"}"
	expect 400 '.code == "workspace_mismatch"'
}

@test "nested workspaces: the deepest one that holds the directory wins" {
	serve_stop
	mkdir -p "$WS/sub/x"
	serve_start --workspace "$WS" --workspace "$WS/sub"
	cd "$WS/sub/x"
	run restore new
	[ "$status" -eq 0 ]
	req GET "/session/$output/status"
	expect 200 ".workspaceCwd == \"$WS/sub\""
	cd "$WS/src"
	run restore new
	[ "$status" -eq 0 ]
	req GET "/session/$output/status"
	expect 200 ".workspaceCwd == \"$WS\""
}
