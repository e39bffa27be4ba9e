#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore: a session's model and approval mode (model ID MODEL,
# mode ID MODE, new --model-service/--approval-mode, load and resume
# --approval-mode), against the daemon and its fake child (models fake-a
# and fake-b, upstream's five modes).

load serve_helper
bats_require_minimum_version 1.5.0

setup() {
	export XDG_STATE_HOME=$BATS_TEST_TMPDIR/state
	unset QWEN_SERVE_URL QWEN_SERVER_TOKEN QWEN_FETCH_TIMEOUT_MS
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log,replay=0,known=$SID" serve_start
	export QWEN_SERVE_SOCKET=$SOCK
	cd "$WS"
}

teardown() {
	serve_teardown
}

# How many times the child was asked METHOD for session ID.
asked() {
	grep -c " $1 $2 " "$BATS_TEST_TMPDIR/child.log" || true
}

@test "new --model-service --approval-mode: modelApplied in --json, the mode applied" {
	run -0 qwen-restore --json attach --model-service fake-b --approval-mode yolo
	jq -e '.modelApplied == true' <<<"$output"
	local sid
	sid=$(jq -r .sessionId <<<"$output")
	[ "$(asked session/set_model "$sid")" -eq 1 ]
	[ "$(asked qwen/control/session/approval_mode "$sid")" -eq 1 ]
	# Into the default session: an attach, a best-effort switch.
	run -0 qwen-restore --json attach --model-service fake-a
	jq -e '.attached == true and (has("modelApplied") | not)' <<<"$output"
	[ "$(jq -r .sessionId <<<"$output")" = "$sid" ]
	[ "$(asked session/set_model "$sid")" -eq 2 ]
	# A model the agent refuses: still a new session, modelApplied false,
	# and the command fails saying so.
	run --separate-stderr qwen-restore --json new --session-id "$SID2" --model-service nothing-like-it
	[ "$status" -eq 1 ]
	jq -e '.modelApplied == false and .attached == false' <<<"$output"
	[[ "$stderr" == *"new: model nothing-like-it was not applied (the session is $SID2)"* ]]
}

@test "new is new every time; attach joins the default session" {
	run -0 qwen-restore new
	local a=$output
	run -0 qwen-restore new
	[ "$output" != "$a" ]
	run -0 qwen-restore attach
	local d=$output
	run -0 qwen-restore attach
	[ "$output" = "$d" ]
	[ "$d" != "$a" ]
}

@test "model ID MODEL and mode ID MODE switch a live session; the answers and errors" {
	run -0 qwen-restore new
	local sid=$output
	run -0 qwen-restore --json mode "$sid" plan
	jq -e ". == {sessionId:\"$sid\",mode:\"plan\",previous:\"default\",persisted:false}" <<<"$output"
	run -0 qwen-restore mode "$sid" auto-edit
	[[ "$output" == *previous*plan* ]]
	[[ "$output" == *mode*auto-edit* ]]
	run -0 qwen-restore --json model "$sid" fake-b
	[ "$output" = '{}' ]
	[ "$(asked session/set_model "$sid")" -eq 1 ]
	# A model the agent does not advertise: its error, a failing exit.
	run qwen-restore model "$sid" gpt-99
	[ "$status" -ne 0 ]
	# Usage errors never reach the daemon.
	run -2 qwen-restore mode "$sid" reckless
	[[ "$output" == *"plan|default|auto-edit|auto|yolo"* ]]
	run -2 qwen-restore mode "$sid"
	run -2 qwen-restore model "$sid"
	run -2 qwen-restore model "$sid" a b
	[ "$(asked qwen/control/session/approval_mode "$sid")" -eq 2 ]
	[ "$(asked session/set_model "$sid")" -eq 2 ]
	# Not live: the daemon's 404.
	run -3 qwen-restore mode "$SID2" yolo
}

@test "load and resume --approval-mode apply the mode after the restore; other commands refuse the flag" {
	run -0 qwen-restore --json load "$SID" --approval-mode yolo
	jq -e '.attached == false' <<<"$output"
	[ "$(asked qwen/control/session/approval_mode "$SID")" -eq 1 ]
	run -0 qwen-restore --json resume "$SID" --approval-mode plan
	jq -e '.attached == true' <<<"$output"
	[ "$(asked qwen/control/session/approval_mode "$SID")" -eq 2 ]
	run -0 qwen-restore --json status "$SID"
	run -2 qwen-restore status "$SID" --approval-mode yolo
	[[ "$output" == *"--approval-mode: only with new attach load resume"* ]]
	run -2 qwen-restore model "$SID" fake-a --model-service fake-b
}
