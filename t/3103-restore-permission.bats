#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore answers a permission request that another client's prompt
# raised, on a session loaded with history: the request comes from the
# session's status (pendingInteractions), never from a replay of the
# event ring, so the answer neither hangs nor waits for the ring.

load serve_helper

setup() {
	FAKE_CHILD=ask serve_loaded
}

teardown() {
	serve_teardown
}

restore() {
	qwen-restore --socket "$SOCK" --cwd "$WS" --state-dir "$BATS_TEST_TMPDIR/state" "$@" 3>&-
}

waiting() {
	req GET "/session/$SID/status"
	jq -e '.pendingInteractionCount == 1' >/dev/null <<<"$body"
}

# A prompt that waits for a permission; REQ_ID is the request's id.
prompt_asks() {
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	wait_for 10 waiting
	REQ_ID=$(jq -r '.pendingInteractions[0].requestId' <<<"$body")
	[[ "$REQ_ID" =~ ^[0-9a-f-]{36}$ ]]
}

@test "status shows a pending permission in upstream's shape, with its options and action" {
	prompt_asks
	jq -e '.isWaitingForPermission == true and .isWaitingForUserQuestion == false' <<<"$body"
	jq -e '.pendingInteractions[0].kind == "permission"' <<<"$body"
	jq -e '.pendingInteractions[0].action == {type: "edit", title: "write the marker", input: {file_path: "marker.txt"}}' <<<"$body"
	jq -e '[.pendingInteractions[0].options[].kind] == ["allow_once", "allow_always", "reject_once"]' <<<"$body"
	jq -e '.pendingInteractions[0].options[0] == {optionId: "proceed_once", label: "proceed_once", kind: "allow_once"}' <<<"$body"
	jq -e '.pendingInteractions[0].createdAt | test("^20[0-9-]+T")' <<<"$body"
	run restore status "$SID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"pending permission $REQ_ID: write the marker (edit)"* ]]
	[[ "$output" == *"answer: qwen-restore permission $SID $REQ_ID allow|deny"* ]]
}

@test "permission allow on a session loaded with history: answered, the turn goes on" {
	prompt_asks
	run timeout 20 qwen-restore --socket "$SOCK" --cwd "$WS" --state-dir "$BATS_TEST_TMPDIR/state" \
	    --timeout-ms 5000 permission "$SID" "$REQ_ID" allow
	[ "$status" -eq 0 ]
	sse_wait ev ".type == \"turn_complete\" and .promptId == \"$PROMPT_ID\"" 10
	sse_has ev '.type == "session_update" and .data.update.content.text == "permission proceed_once"'
	req GET "/session/$SID/status"
	expect 200 '.pendingInteractions == [] and .isWaitingForPermission == false'
	# Answered: a second answer finds nothing (exit 3).
	run restore permission "$SID" "$REQ_ID" deny
	[ "$status" -eq 3 ]
}

@test "permission deny picks the reject option" {
	prompt_asks
	run restore permission "$SID" "$REQ_ID" deny
	[ "$status" -eq 0 ]
	sse_wait ev '.type == "session_update" and .data.update.content.text == "permission cancel"' 10
}

@test "permission of an unknown request exits 3 at once, naming it" {
	run restore permission "$SID" 00000000-0000-4000-8000-000000000000 allow
	[ "$status" -eq 3 ]
	[[ "$output" == *"no pending permission request 00000000-0000-4000-8000-000000000000"* ]]
}
