#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a live session's turn status as upstream polls it:
# GET /session/:id/turns/current and GET /session/:id/turns/:promptId.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

# turn_is ID STATE: GET .../turns/ID answers STATE.
turn_is() {
	req GET "/session/$SID/turns/$1"
	[ "$code" = 200 ] || return 1
	jq -e --arg s "$2" '.state == $s' >/dev/null <<<"$body"
}

@test "turns: idle, running, queued, then completed with its times" {
	FAKE_CHILD="hold=session/prompt,log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	req GET /session/$SID/turns/current
	expect 200 ". == {\"sessionId\":\"$SID\",\"state\":\"idle\"}"
	prompt_post "$SID" '{"prompt":[{"type":"text","text":""},{"type":"text","text":"first"},{"type":"text","text":"more"}]}'
	local first=$PROMPT_ID
	wait_for 5 prompts_read 1
	prompt_post "$SID" '{"prompt":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}'
	local second=$PROMPT_ID
	req GET /session/$SID/turns/current
	expect 200 ".state == \"running\" and .promptId == \"$first\" and .sessionId == \"$SID\""
	# The first non-empty text block, as upstream's pending-prompt text.
	expect 200 '.promptText == "first" and (.queuedAt | type) == "number" and (.startedAt | type) == "number"'
	expect 200 '(has("endedAt") | not) and (has("promptTextTruncated") | not)'
	req GET /session/$SID/turns/$second
	expect 200 ".state == \"queued\" and .promptText == \"[image]\" and (has(\"startedAt\") | not)"
	kill -USR1 "$(child_pid)"
	wait_for 5 turn_is "$first" completed
	req GET /session/$SID/turns/$first
	expect 200 '.stopReason == "end_turn" and .endedAt >= .startedAt and .startedAt >= .queuedAt'
	# The second runs now: current is the running one, not the settled one.
	wait_for 5 prompts_read 2
	req GET /session/$SID/turns/current
	expect 200 ".state == \"running\" and .promptId == \"$second\""
	kill -USR1 "$(child_pid)"
	wait_for 5 turn_is "$second" completed
	# Nothing pending: current is the newest settled turn.
	req GET /session/$SID/turns/current
	expect 200 ".state == \"completed\" and .promptId == \"$second\""
}

@test "turns: an error, a removed prompt and a cancelled one settle as such" {
	FAKE_CHILD="hold=session/prompt,fail=session/prompt:-32603,log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	prompt_post "$SID"
	local failed=$PROMPT_ID
	wait_for 5 prompts_read 1
	prompt_post "$SID"
	local removed=$PROMPT_ID
	req DELETE /session/$SID/pending-prompts/$removed
	expect 200 '.removed == true'
	req GET /session/$SID/turns/$removed
	expect 200 '.state == "cancelled" and (.endedAt | type) == "number" and (has("stopReason") | not)'
	kill -USR1 "$(child_pid)"
	wait_for 5 turn_is "$failed" error
	req GET /session/$SID/turns/$failed
	expect 200 '.error.code == "-32603" and (.error.message | length) > 0 and (has("stopReason") | not)'
	expect 200 '(.error | has("messageTruncated") | not)'
}

@test "turns: a prompt the child ends as cancelled is cancelled" {
	# Its answer is far off; the cancel brings it now, as "cancelled".
	FAKE_CHILD="delay=session/prompt:600000,log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	prompt_post "$SID"
	wait_for 5 prompts_read 1
	req POST /session/$SID/cancel '{}'
	wait_for 5 turn_is "$PROMPT_ID" cancelled
	req GET /session/$SID/turns/current
	expect 200 ".promptId == \"$PROMPT_ID\" and .stopReason == \"cancelled\""
}

@test "turns: a prompt past its deadline is an error of prompt_deadline_exceeded" {
	FAKE_CHILD="hang=session/prompt,log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"slow"}],"deadlineMs":1}'
	wait_for 5 turn_is "$PROMPT_ID" error
	req GET /session/$SID/turns/$PROMPT_ID
	expect 200 '.error.code == "prompt_deadline_exceeded"'
}

@test "turns: promptText capped at 32768 UTF-16 units, flagged only then" {
	FAKE_CHILD="hang=session/prompt,log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	# 32767 ASCII then one non-BMP character (2 units): it does not fit.
	local text
	text="$(head -c 32767 /dev/zero | tr '\0' a)😀tail"
	prompt_post "$SID" "$(jq -cn --arg t "$text" '{prompt:[{type:"text",text:$t}]}')"
	req GET /session/$SID/turns/$PROMPT_ID
	expect 200 '.promptTextTruncated == true and (.promptText | length) == 32767'
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"short"}]}'
	req GET /session/$SID/turns/$PROMPT_ID
	expect 200 '.promptText == "short" and (has("promptTextTruncated") | not)'
}

@test "turns: the last 64 settled turns are kept, the oldest dropped" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log" serve_loaded \
	    --max-pending-prompts-per-session 100
	local ids=() i
	for i in $(seq 65); do
		prompt_post "$SID"
		ids+=("$PROMPT_ID")
	done
	wait_for 10 turn_is "${ids[64]}" completed
	req GET /session/$SID/turns/${ids[0]}
	expect 404 ".code == \"prompt_not_found\" and .promptId == \"${ids[0]}\" and (.error | contains(\"${ids[0]}\"))"
	req GET /session/$SID/turns/${ids[1]}
	expect 200 '.state == "completed"'
}

@test "turns: unknown prompt 404 prompt_not_found; unknown session, bad client" {
	serve_loaded
	req GET /session/$SID/turns/00000000-0000-4000-8000-00000000abcd
	expect 404 '.code == "prompt_not_found"'
	req GET /session/00000000-0000-4000-8000-000000000000/turns/current
	expect 404 '.code == "session_not_found"'
	req GET /session/$SID/turns/current '' -H 'X-Qwen-Client-Id: nobody'
	expect 400 '.code == "invalid_client_id"'
}

@test "turns: the agent's persisted turn_result: alone by id and current; with a kept status it adds resultText" {
	local rec=$BATS_TEST_TMPDIR/turn.json
	FAKE_CHILD="turn-status=$rec,log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	# A turn of an earlier daemon: only the agent's transcript has it.
	cat >"$rec" <<'JSON'
{"promptId":"p-old","state":"completed","stopReason":"end_turn","startedAt":1,"endedAt":2,"promptText":"before","resultText":"an answer"}
JSON
	req GET /session/$SID/turns/p-old
	expect 200 ".sessionId == \"$SID\" and .state == \"completed\" and .promptText == \"before\" and .resultText == \"an answer\" and .endedAt == 2"
	req GET /session/$SID/turns/p%2Dold
	expect 200 '.promptId == "p-old"'
	req GET /session/$SID/turns/p-other
	expect 404 '.code == "prompt_not_found"'
	req GET /session/$SID/turns/current
	expect 200 '.promptId == "p-old"'
	grep -q ' qwen/control/session/turn_status ' "$BATS_TEST_TMPDIR/child.log"
	# A turn of this daemon: its outcome stands, the record adds its text.
	prompt_post "$SID"
	wait_for 5 turn_is "$PROMPT_ID" completed
	jq -cn --arg p "$PROMPT_ID" '{promptId:$p,state:"error",endedAt:3,resultText:"the reply",resultTruncated:true,resultCode:"RESULT_TEXT_TRUNCATED"}' >"$rec"
	req GET /session/$SID/turns/$PROMPT_ID
	expect 200 '.state == "completed" and .stopReason == "end_turn" and .endedAt > 3 and (has("error") | not)'
	expect 200 '.resultText == "the reply" and .resultTruncated == true and .resultCode == "RESULT_TEXT_TRUNCATED"'
	# current: the kept turn ended after the record of another prompt.
	jq -cn '{promptId:"p-old",state:"completed",endedAt:2}' >"$rec"
	req GET /session/$SID/turns/current
	expect 200 ".promptId == \"$PROMPT_ID\""
	# ... and a record that ended later wins; a cancelled stop is cancelled.
	jq -cn '{promptId:"p-new",state:"completed",stopReason:"cancelled",endedAt:9999999999999}' >"$rec"
	req GET /session/$SID/turns/current
	expect 200 '.promptId == "p-new" and .state == "cancelled"'
}

@test "turns: an agent without turn_status (-32601) leaves the daemon's own answer" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	prompt_post "$SID"
	wait_for 5 turn_is "$PROMPT_ID" completed
	grep -q ' qwen/control/session/turn_status ' "$BATS_TEST_TMPDIR/child.log"
	req GET /session/$SID/turns/current
	expect 200 ".promptId == \"$PROMPT_ID\" and .state == \"completed\" and (has(\"resultText\") | not)"
}
