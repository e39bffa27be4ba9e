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

@test "pending_prompt_added / _started / _completed for a prompt that waits; none for one that runs at once" {
	FAKE_CHILD="hold=session/prompt,log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	sse_open a /session/$SID/events
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"first"}]}'
	local first=$PROMPT_ID
	wait_for 5 prompts_read 1
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"second"}]}'
	local second=$PROMPT_ID
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"third"}]}'
	local third=$PROMPT_ID
	sse_wait a ".type == \"pending_prompt_added\" and .data.promptId == \"$third\""
	sse_has a ".type == \"pending_prompt_added\" and .data.promptId == \"$second\" and .data.text == \"second\" and .data.sessionId == \"$SID\" and (.data.queuedAt | type) == \"number\" and (.id | type) == \"number\""
	run ! sse_has a "(.type | startswith(\"pending_prompt\")) and .data.promptId == \"$first\""
	# A queued one taken out: completed, state removed; it never starts.
	req DELETE /session/$SID/pending-prompts/$third
	expect 200 '.removed == true'
	sse_wait a ".type == \"pending_prompt_completed\" and .data.promptId == \"$third\" and .data.state == \"removed\""
	# The first ends: the second starts, runs, completes.
	kill -USR1 "$(child_pid)"
	sse_wait a ".type == \"pending_prompt_started\" and .data.promptId == \"$second\" and .data.text == \"second\""
	wait_for 5 prompts_read 2
	kill -USR1 "$(child_pid)"
	sse_wait a ".type == \"pending_prompt_completed\" and .data.promptId == \"$second\" and .data.state == \"completed\""
	# In order: added, started, turn_complete, completed.
	sse_events a | jq -e --arg p "$second" '[.[] | select(.data.promptId == $p) | .type] == ["pending_prompt_added","pending_prompt_started","turn_complete","pending_prompt_completed"]' >/dev/null
	run ! sse_has a ".type == \"pending_prompt_started\" and .data.promptId == \"$third\""
}

@test "status: activeWorkState, hasTurnError and turnError until the next prompt starts" {
	FAKE_CHILD="hold=session/prompt,fail=session/prompt:-32603,log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	req GET /session/$SID/status
	expect 200 '.activeWorkState == "idle" and .hasTurnError == false and (has("turnError") | not)'
	sse_open a /session/$SID/events
	prompt_post "$SID"
	wait_for 5 prompts_read 1
	req GET /session/$SID/status
	expect 200 '.activeWorkState == "active" and .hasTurnError == false'
	kill -USR1 "$(child_pid)"
	sse_wait a ".type == \"turn_error\" and .data.promptId == \"$PROMPT_ID\""
	req GET /session/$SID/status
	expect 200 '.activeWorkState == "idle" and .hasTurnError == true and .turnError.code == "-32603" and (.turnError.message | length) > 0'
	prompt_post "$SID"
	wait_for 5 running "$PROMPT_ID"
	req GET /session/$SID/status
	expect 200 '.activeWorkState == "active" and .hasTurnError == false'
}

@test "?snapshot=1 sends session_snapshot (model, approval mode) after the replay; without it none" {
	serve_loaded
	sse_open a "/session/$SID/events?snapshot=1" -H 'Last-Event-ID: 0'
	sse_wait a ".type == \"session_snapshot\""
	sse_has a ".type == \"session_snapshot\" and .data.sessionId == \"$SID\" and .data.currentApprovalMode == \"default\" and .data.recordingDegraded == false and (.data | has(\"currentModelId\")) and (has(\"id\") | not)"
	sse_events a | jq -e '[.[].type] | index("replay_complete") < index("session_snapshot")' >/dev/null
	req POST /session/$SID/model '{"modelId":"fake-b"}'
	expect 200
	sse_open b "/session/$SID/events?snapshot=1"
	sse_wait b ".type == \"session_snapshot\" and .data.currentModelId == \"fake-b\""
	sse_open c "/session/$SID/events"
	prompt_turn d "$SID"
	run ! sse_has c '.type == "session_snapshot"'
}

# A transcript ($1) whose prompts came from a daemon: p1 answered, p2
# ended by its turn_result alone; with "cut", p3 after them, with nothing
# after it.
daemon_transcript() {
	local id=$1 san dir
	san=$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')
	dir=$DATA/projects/$san/chats
	mkdir -p "$dir"
	cat >"$dir/$id.jsonl" <<JSONL
{"uuid":"u1","parentUuid":null,"sessionId":"$id","timestamp":"2026-08-01T15:01:13.619Z","type":"user","cwd":"$WS","version":"0.24.4","daemonPromptId":"p1","message":{"role":"user","parts":[{"text":"one"}]}}
{"uuid":"a1","parentUuid":"u1","sessionId":"$id","timestamp":"2026-08-01T15:01:14.619Z","type":"assistant","cwd":"$WS","version":"0.24.4","message":{"role":"model","parts":[{"text":"One."}]}}
{"uuid":"u2","parentUuid":"a1","sessionId":"$id","timestamp":"2026-08-01T15:01:15.619Z","type":"user","cwd":"$WS","version":"0.24.4","daemonPromptId":"p2","message":{"role":"user","parts":[{"text":"two"}]}}
{"uuid":"s2","parentUuid":"u2","sessionId":"$id","timestamp":"2026-08-01T15:01:16.619Z","type":"system","subtype":"turn_result","cwd":"$WS","version":"0.24.4","systemPayload":{"promptId":"p2","state":"cancelled","endedAt":"2026-08-01T15:01:16.619Z"}}
JSONL
	[ "${2-}" = cut ] || return 0
	cat >>"$dir/$id.jsonl" <<JSONL
{"uuid":"u3","parentUuid":"s2","sessionId":"$id","timestamp":"2026-08-01T15:01:17.619Z","type":"user","cwd":"$WS","version":"0.24.4","daemonPromptId":"p3","message":{"role":"user","parts":[{"text":"three"}]}}
JSONL
}

@test "load: promptTerminals for the daemon's prompts of the history; none without them" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start
	daemon_transcript "$SID"
	daemon_transcript "$SID2" cut
	local done='"terminal":"completed","stopReason":"reconstructed_from_transcript"'
	req POST /session/$SID/load '{}'
	expect 200 '.promptTerminals | length == 2'
	expect 200 ".promptTerminals[0] == {\"promptId\":\"p1\",$done}"
	expect 200 ".promptTerminals[1] == {\"promptId\":\"p2\",$done}"
	req POST /session/$SID2/load '{}'
	expect 200 '.promptTerminals | length == 3'
	expect 200 ".promptTerminals[1] == {\"promptId\":\"p2\",$done}"
	expect 200 '.promptTerminals[2] == {"promptId":"p3","terminal":"interrupted","code":"daemon_lost"}'
	req DELETE /session/$SID
	expect 204
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200 '(has("promptTerminals") | not) and (.compactedReplay | length) > 0'
}

# The records of session $1's transcript, one JSON object a line.
records() {
	cat "$DATA"/projects/*/chats/"$1".jsonl
}

@test "continue: a cut-off prompt is answered once, with no second user record; else accepted false" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start
	daemon_transcript "$SID2" cut
	daemon_transcript "$SID"
	req POST /session/$SID2/load '{}'
	expect 200
	sse_open a /session/$SID2/events
	req POST /session/$SID2/continue '{}'
	expect 200 '.accepted == true and .interruption == "interrupted_prompt" and (.promptId | type) == "string" and (.lastEventId | type) == "number" and (.eventEpoch | type) == "string"'
	local pid
	pid=$(jq -r .promptId <<<"$body")
	sse_wait a ".type == \"turn_complete\" and .data.promptId == \"$pid\""
	# One assistant record answers u3; no user record was added.
	[ "$(records "$SID2" | jq -s '[.[] | select(.type == "user")] | length')" = 3 ]
	records "$SID2" | jq -e -s '.[-1].type == "assistant" and .[-1].parentUuid == "u3"' >/dev/null
	req POST /session/$SID2/continue '{}'
	expect 200 '. == {"accepted":false,"interruption":"none"}'
	# A history that ended cleanly has nothing to continue.
	req POST /session/$SID/load '{}'
	expect 200
	req POST /session/$SID/continue '{}'
	expect 200 '.accepted == false and .interruption == "none"'
	# A client cannot mark its own prompt as a continuation.
	prompt_turn b "$SID" '{"prompt":[{"type":"text","text":"mine"}],"_meta":{"qwen.daemon.continueLastTurn":true}}'
	records "$SID" | jq -e -s 'any(.[]; .type == "user" and .message.parts[0].text == "mine")' >/dev/null
	req POST /session/00000000-0000-4000-8000-000000000000/continue '{}'
	expect 404 '.code == "session_not_found"'
}

@test "continue: an agent without the method answers its error as upstream's daemon does (500, -32601), never a hang" {
	serve_loaded
	req POST /session/$SID/continue '{}'
	expect 500 '.code == -32601 and (.error | type) == "string"'
}
