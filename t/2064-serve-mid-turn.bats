#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a live session's mid-turn messages, upstream's queue: POST
# /session/:id/mid-turn-message while a turn runs, the agent's drain of
# it (craft/drainMidTurnQueue, a request of the agent's the daemon
# answers), what is left promoted to a prompt of its own once the last
# turn ends, GET .../mid-turn-messages and DELETE .../:messageId.

load serve_helper

teardown() {
	sse_stop_all
	serve_teardown
}

# mid_ready [FAKE_CHILD knobs]: SID loaded, its client in $CID.
mid_ready() {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/log${1:+,$1}" serve_loaded
	CID=$(jq -r .clientId <<<"$body")
	[ -n "$CID" ]
}

mid() {
	req POST "/session/$SID/mid-turn-message" "$1" -H "X-Qwen-Client-Id: $CID"
}

@test "an idle session refuses it: session_idle, nothing queued" {
	mid_ready
	mid '{"message":"hello"}'
	expect 200 '. == {accepted: false, reason: "session_idle"}'
	req GET "/session/$SID/mid-turn-messages"
	expect 200 '. == {messages: [], settledMessageIds: [], promotedMessageIds: []}'
}

@test "the agent drains what came while its turn ran" {
	mid_ready drain=1500
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	mid '{"message":"  steer left  ","messageId":"m-1"}'
	expect 200 '. == {accepted: true, messageId: "m-1"}'
	# The same again is accepted; other text under that id is not.
	mid '{"message":"steer left","messageId":"m-1"}'
	expect 200 '. == {accepted: true, messageId: "m-1"}'
	mid '{"message":"other","messageId":"m-1"}'
	expect 200 '. == {accepted: false}'
	mid '{"message":"and right"}'
	expect 200 '.accepted == true and (.messageId | test("^[0-9a-f-]{36}$"))'
	req GET "/session/$SID/mid-turn-messages"
	expect 200 '[.messages[].text] == ["steer left", "and right"] and .messages[0].messageId == "m-1"'
	sse_wait ev '.type == "turn_complete"' 20
	sse_has ev '.type == "session_update" and .data.update.content.text == "drained steer left|and right"'
	sse_data ev | jq -e -s --arg s "$SID" 'map(select(.type == "mid_turn_message_injected"))[0].data |
	    .sessionId == $s and .messages == ["steer left", "and right"] and .messageIds[0] == "m-1"'
	sse_has ev '.type == "pending_prompt_added" and .data.promptId == "m-1" and .data.text == "steer left"'
	req GET "/session/$SID/mid-turn-messages"
	expect 200 '.messages == [] and .settledMessageIds[0] == "m-1" and .promotedMessageIds == []'
	# Drained: a retry of its id is accepted, nothing queued.
	mid '{"message":"steer left","messageId":"m-1"}'
	expect 200 '.accepted == true'
	[ "$(grep -c ' session/prompt ' "$BATS_TEST_TMPDIR/log")" -eq 1 ]
}

@test "what the agent did not take runs as a prompt of its own once the turn ends" {
	mid_ready delay=session/prompt:1500
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	local first=$PROMPT_ID
	mid '{"message":"then this","messageId":"late-1"}'
	expect 200 '.accepted == true'
	sse_wait ev '.type == "turn_complete" and .promptId == "late-1"' 20
	sse_has ev ".type == \"turn_complete\" and .promptId == \"$first\""
	[ "$(grep -c ' session/prompt ' "$BATS_TEST_TMPDIR/log")" -eq 2 ]
	req GET "/session/$SID/mid-turn-messages"
	expect 200 '.messages == [] and .promotedMessageIds == ["late-1"]'
	req GET "/session/$SID/turns/late-1"
	expect 200 '.promptId == "late-1" and .state == "completed"'
}

@test "DELETE takes a queued message back" {
	mid_ready delay=session/prompt:3000
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	mid '{"message":"never mind","messageId":"gone-1"}'
	expect 200 '.accepted == true'
	req DELETE "/session/$SID/mid-turn-messages/gone-1" "" -H "X-Qwen-Client-Id: $CID"
	expect 200 '. == {removed: true}'
	req DELETE "/session/$SID/mid-turn-messages/gone-1" "" -H "X-Qwen-Client-Id: $CID"
	expect 200 '. == {removed: false}'
	sse_wait ev '.type == "pending_prompt_completed" and .data.promptId == "gone-1" and .data.state == "removed"'
	req GET "/session/$SID/mid-turn-messages"
	expect 200 '.messages == [] and .settledMessageIds == ["gone-1"]'
	sse_wait ev '.type == "turn_complete"' 20
	[ "$(grep -c ' session/prompt ' "$BATS_TEST_TMPDIR/log")" -eq 1 ]
}

@test "upstream's 400s, and at most 20 wait" {
	mid_ready hold=session/prompt
	prompt_post "$SID"
	mid '{}'
	expect 400 '.error | test("`message` must be a non-empty string")'
	mid '{"message":"   "}'
	expect 400
	mid "{\"message\":\"$(head -c 16385 /dev/zero | tr '\0' a)\"}"
	expect 400 '.error == "`message` must be at most 16384 characters"'
	mid "{\"message\":\"x\",\"messageId\":\"$(head -c 129 /dev/zero | tr '\0' a)\"}"
	expect 400 '.error | test("`messageId` must be")'
	mid '{"message":"x","eventDetailMode":"loud"}'
	expect 400 '.code == "invalid_event_detail_mode"'
	mid '{"message":"x","content":[]}'
	expect 400 '.error | test("`content` must be a non-empty array")'
	mid '{"message":"x","content":[{"type":"image","attachmentId":"a1","mimeType":"image/png"}]}'
	expect 400 '.error == "each `content` entry must be an inline content block or carry `attachmentId`, `size`, and `mimeType`"'
	mid '{"message":"x","content":[{"type":"image","attachmentId":"a1","size":3,"mimeType":"image/png"}]}'
	expect 410 '.code == "session_attachment_gone"'
	mid '{"content":[{"type":"image","data":"iVBO","mimeType":"image/png"}]}'
	expect 200 '.accepted == true'
	local i
	for i in $(seq 2 20); do
		mid "{\"message\":\"n$i\"}"
		expect 200 '.accepted == true'
	done
	mid '{"message":"one too many"}'
	expect 200 '. == {accepted: false}'
	req GET "/session/$SID/mid-turn-messages"
	expect 200 '(.messages | length) == 20 and .messages[0].content[0].type == "image"'
	req DELETE "/session/$SID/mid-turn-messages/" ""
	expect 404
}
