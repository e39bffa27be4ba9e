#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a live session's prompt queue as upstream shows it:
# GET /session/:id/pending-prompts and DELETE .../pending-prompts/:promptId.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

# The queue's first entry is prompt $1, running.
running() {
	req GET /session/$SID/pending-prompts
	jq -e ".pendingPrompts[0].promptId == \"$1\" and .pendingPrompts[0].state == \"running\"" \
	    >/dev/null <<<"$body"
}

@test "pending prompts: running then queued, a queued one removed" {
	FAKE_CHILD=hang=session/prompt serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"first"}]}'
	local first=$PROMPT_ID
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"second"}]}'
	local second=$PROMPT_ID
	wait_for 5 running "$first"
	req GET /session/$SID/pending-prompts
	expect 200 '.pendingPrompts | length == 2'
	expect 200 ".pendingPrompts[0].promptId == \"$first\" and .pendingPrompts[0].state == \"running\""
	expect 200 ".pendingPrompts[1].promptId == \"$second\" and .pendingPrompts[1].state == \"queued\""
	expect 200 '.pendingPrompts[1].text == "second" and (.pendingPrompts[1].queuedAt | type) == "number"'
	expect 200 '.pendingPrompts[1].content == [{"type":"text","text":"second"}]'
	req DELETE /session/$SID/pending-prompts/$second
	expect 200 '.removed == true'
	req DELETE /session/$SID/pending-prompts/$second
	expect 200 '.removed == false'
	# The running prompt is cancelled, not removed.
	req DELETE /session/$SID/pending-prompts/$first
	expect 200 '.removed == false'
	req GET /session/$SID/pending-prompts
	expect 200 ".pendingPrompts | length == 1 and .[0].promptId == \"$first\""
	req GET /session/$SID/status
	expect 200 '.pendingPrompts == 1'
}

@test "pending prompts: empty once the prompt settles; unknown session 404" {
	serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	sse_open a /session/$SID/events
	prompt_post "$SID"
	sse_wait a ".type == \"turn_complete\" and .data.promptId == \"$PROMPT_ID\""
	req GET /session/$SID/pending-prompts
	expect 200 '.pendingPrompts == []'
	req GET /session/00000000-0000-4000-8000-000000000000/pending-prompts
	expect 404 '.code == "session_not_found"'
}
