#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: POST /session/:id/branch with the real qwen-acp-child: the
# new transcript (forkedFrom on every record, re-parented linearly,
# written whole and atomically), loadable at once and with
# hideInheritedHistory; 201, and without atRecordId live and attached;
# its errors; the real SDK's branchSession.  POST /session/:id/side-task,
# the same branch asked of the agent as qwen/control/session/side_task.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

gen() {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start "$@"
	qwen-gen-transcript --mib 1 --seed 11 --data-dir "$DATA" --workspace "$WS" \
	    --session-id "$SID" >/dev/null
	CHATS=$(dirname "$(ls "$DATA"/projects/*/chats/"$SID".jsonl)")
}

# The source record ids of every event of a session's history, in order.
history_ids() {
	local q="?limit=500" out=""
	while :; do
		req GET "/session/$1/transcript$q"
		[ "$code" = 200 ] || return 1
		out+=$(jq -r '.events[].data._meta.qwenTranscript.sourceRecordIds // [] | .[]' <<<"$body")$'\n'
		[ "$(jq -r .hasMore <<<"$body")" = true ] || break
		q="?limit=500&cursor=$(jq -r .nextCursor <<<"$body")"
	done
	printf '%s' "$out" | sed '/^$/d' | uniq
}

@test "branch at a record: forkedFrom on every record, linear parents, the prefix of the history, one file" {
	gen
	history_ids "$SID" >"$BATS_TEST_TMPDIR/src"
	local at
	at=$(sed -n 40p "$BATS_TEST_TMPDIR/src")
	req POST /session/$SID/branch "{\"atRecordId\":\"$at\",\"name\":\"try this\"}"
	expect 201 ".displayName == \"try this\" and .forkedFrom.sessionId == \"$SID\" and .sessionId != \"$SID\""
	NEW=$(jq -r .sessionId <<<"$body")
	local f=$CHATS/$NEW.jsonl
	[ -f "$f" ]
	[ "$(stat -c %a "$f")" = 600 ]
	# Nothing staged is left behind.
	[ "$(find "$CHATS" -name '.*.tmp' | wc -l)" = 0 ]
	jq -e -s --arg s "$SID" --arg n "$NEW" --arg ws "$WS" 'all(.[]; .sessionId == $n and .cwd == $ws and .forkedFrom.sessionId == $s and .forkedFrom.messageUuid == .uuid)' "$f" >/dev/null
	jq -e -s '.[0].parentUuid == null and ([range(1; length) as $i | .[$i].parentUuid == .[$i - 1].uuid] | all)' "$f" >/dev/null
	jq -e -s --arg at "$at" '.[-1].uuid == $at' "$f" >/dev/null
	run ! jq -e -s 'any(.[]; .subtype == "session_source" or .subtype == "parent_session" or .subtype == "turn_result")' "$f"
	# Its history is the source's, up to and including the branch point.
	history_ids "$NEW" >"$BATS_TEST_TMPDIR/new"
	head -40 "$BATS_TEST_TMPDIR/src" | cmp - "$BATS_TEST_TMPDIR/new"
}

@test "a branch loads at once; with hideInheritedHistory only its own turns replay" {
	gen
	req POST /session/$SID/branch '{}'
	expect 201 '.displayName | startswith("Branch of ")'
	NEW=$(jq -r .sessionId <<<"$body")
	# Without atRecordId: the whole active history.
	history_ids "$SID" >"$BATS_TEST_TMPDIR/src"
	history_ids "$NEW" | cmp "$BATS_TEST_TMPDIR/src" -
	# It came back live (resumed, no replay): closed, a load replays it.
	req DELETE /session/$NEW
	expect 204
	req POST /session/$NEW/load '{}'
	expect 200 ".sessionId == \"$NEW\" and (.compactedReplay | length) > 0"
	prompt_turn a "$NEW" '{"prompt":[{"type":"text","text":"on the branch"}]}'
	req DELETE /session/$NEW
	expect 204
	req POST /session/$NEW/load '{"hideInheritedHistory":true}'
	expect 200
	jq -e '[.compactedReplay[] | select(.type == "session_update")] | length > 0 and all(.[]; (.data.update._meta.qwenTranscript.sourceRecordIds // []) as $ids | true)' <<<"$body" >/dev/null
	jq -e 'any(.compactedReplay[]; .data.update.sessionUpdate == "user_message_chunk" and .data.update.content.text == "on the branch")' <<<"$body" >/dev/null
	# Nothing inherited from the source replays.
	local inherited
	inherited=$(jq -r '.compactedReplay[].data.update._meta.qwenTranscript.sourceRecordIds // [] | .[]' <<<"$body" | grep -cxF -f "$BATS_TEST_TMPDIR/src" || true)
	[ "$inherited" = 0 ]
	# The source is untouched.
	req GET /session/$SID/transcript?limit=1
	expect 200
}

@test "201: without atRecordId the branch is live and attached; at a record it is only persisted" {
	gen
	req POST /session/$SID/branch '{"name":"live one"}' -H 'X-Qwen-Client-Id: client_mine'
	expect 201 ".sessionId != \"$SID\" and .displayName == \"live one\" and .forkedFrom.sessionId == \"$SID\""
	expect 201 ".attached == false and (.clientId | type) == \"string\" and .workspaceCwd == \"$WS\" and (.state | type) == \"object\" and (.eventEpoch | type) == \"string\""
	NEW=$(jq -r .sessionId <<<"$body")
	local cid
	cid=$(jq -r .clientId <<<"$body")
	req GET /session/$NEW/status
	expect 200 ".sessionId == \"$NEW\" and .clientCount == 1"
	# Its client is registered: a heartbeat with it is accepted, and
	# prompts run on it at once.
	req POST /session/$NEW/heartbeat '{}' -H "X-Qwen-Client-Id: $cid"
	expect 200 ".clientId == \"$cid\""
	prompt_turn a "$NEW"
	# The source is not touched.
	req GET /session/$SID/status
	expect 404
	local at
	at=$(history_ids "$SID" | sed -n 5p)
	req POST /session/$SID/branch "{\"atRecordId\":\"$at\"}"
	expect 201 '(has("clientId") | not) and (has("attached") | not)'
	NEW=$(jq -r .sessionId <<<"$body")
	req GET /session/$NEW/status
	expect 404 '.code == "session_not_found"'
}

@test "errors: unknown session, bad record, bad body" {
	gen
	req POST /session/$SID2/branch '{}'
	expect 404 ".code == \"session_not_found\" and .sessionId == \"$SID2\""
	req POST /session/$SID/branch '{"atRecordId":"no-such-record"}'
	expect 409 ".code == \"branch_point_invalid\" and .sessionId == \"$SID\""
	for b in '{"atRecordId":""}' '{"atRecordId":7}' "{\"atRecordId\":\"$(printf 'x%.0s' $(seq 201))\"}"; do
		req POST /session/$SID/branch "$b"
		expect 400 '.code == "invalid_turn_anchor"'
	done
	req POST /session/$SID/branch '{"name":5}'
	expect 400
	[ "$(ls "$CHATS" | wc -l)" = 1 ]
}

@test "409 branch_while_prompt_active while a prompt runs or waits; allowed once it ends" {
	FAKE_CHILD=delay=session/prompt:1500 serve_loaded
	sse_open a /session/$SID/events
	prompt_post "$SID" '{"prompt":[{"type":"text","text":"x"}]}'
	req POST /session/$SID/branch '{}'
	expect 409 ".code == \"branch_while_prompt_active\" and .sessionId == \"$SID\""
	sse_wait a '.type == "turn_complete"' 10
	req POST /session/$SID/branch '{}'
	run ! test "$code" = 409
}

@test "SDK: branchSession at a record, the branch loads, 409 branch_point_invalid" {
	gen
	local at
	at=$(history_ids "$SID" | sed -n 10p)
	sdk_run branch "$at"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - the branch loads at once"* ]]
	NEW=$(sed -n 's/^NEW=//p' <<<"$output")
	jq -e -s --arg at "$at" '.[-1].uuid == $at' "$CHATS/$NEW.jsonl" >/dev/null
}

@test "fork: through the session's agent, its answer or its error as it is; 400 without a directive" {
	serve_loaded
	req POST /session/$SID/fork '{"directive":"look at the tests"}'
	expect 200 '. == {"sessionId":"33333333-3333-4333-8333-333333333333","description":"look at the tests","launched":true}'
	for b in '{}' '{"directive":""}' '{"directive":5}'; do
		req POST /session/$SID/fork "$b"
		expect 400 '.code == "bad_request"'
	done
	req POST /session/$SID2/fork '{"directive":"x"}'
	expect 404 '.code == "session_not_found"'
	serve_stop
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_loaded
	req POST /session/$SID/fork '{"directive":"x"}'
	expect 500 '.code == -32601 and (.error | test("fork_agent"))'
}

@test "side-task: a live session's branch through qwen/control/session/side_task, 201 live and attached" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log" serve_loaded
	req POST /session/$SID/side-task '{"name":"aside"}'
	expect 201 ".sessionId != \"$SID\" and .displayName == \"aside\" and (.clientId | type) == \"string\""
	# Upstream's answer: the branch's, its forkedFrom replaced by parentSessionId.
	expect 201 ".parentSessionId == \"$SID\""
	expect 201 'has("forkedFrom") | not'
	expect 201 '.attached == false'
	NEW=$(jq -r .sessionId <<<"$body")
	grep -q " qwen/control/session/side_task $SID " "$BATS_TEST_TMPDIR/child.log"
	run ! grep -q ' qwen/control/session/branch ' "$BATS_TEST_TMPDIR/child.log"
	req GET /session/$NEW/status
	expect 200 ".sessionId == \"$NEW\" and .clientCount == 1"
	req POST /session/$SID/side-task '{}'
	expect 201 ".displayName == \"Side task of ${SID:0:8}\""
	# As upstream's: a name that is no string is no name; controls (C0,
	# DEL, C1) go; the first 200 characters are kept.
	req POST /session/$SID/side-task '{"name":5}'
	expect 201 ".displayName == \"Side task of ${SID:0:8}\""
	req POST /session/$SID/side-task '{"name":"a\u0001b\u007fc\u0085d\u00e9"}'
	expect 201 '.displayName == "abcd\u00e9"'
	req POST /session/$SID/side-task "{\"name\":\"$(printf '\u00e9%.0s' {1..300})\"}"
	expect 201 '(.displayName | length) == 200'
	req POST /session/$SID/side-task '{"name":"\u0001"}'
	expect 201 ".displayName == \"Side task of ${SID:0:8}\""
	# Only of a live session.
	make_transcript "$SID2"
	req POST /session/$SID2/side-task '{}'
	expect 404 '.code == "session_not_found"'
}

@test "side-task: qwen-acp-child has no side_task: 500 and its -32601" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_loaded
	req POST /session/$SID/side-task '{}'
	expect 500 '.code == -32601 and (.error | test("side_task"))'
}

@test "a branch gets a copy of the source's attachments, as upstream's" {
	gen
	req POST /session/$SID/load '{}'
	expect 200
	printf 'hello\n' >"$BATS_TEST_TMPDIR/a.txt"
	printf '\x89PNG\r\n\x1a\n0000' >"$BATS_TEST_TMPDIR/p.png"
	local f
	for f in a.txt p.png; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" -X POST \
		    -H "Content-Type: $([ $f = p.png ] && echo image/png || echo text/plain)" \
		    --data-binary "@$BATS_TEST_TMPDIR/$f" "http://localhost/session/$SID/attachments?name=$f")
		[ "$code" = 201 ]
	done
	req GET /session/$SID/attachments
	expect 200
	local src
	src=$(jq -c '[.attachments[] | {attachmentId, size, type}] | sort_by(.attachmentId)' <<<"$body")
	req POST /session/$SID/branch '{}'
	expect 201
	NEW=$(jq -r .sessionId <<<"$body")
	req GET /session/$NEW/attachments
	expect 200
	[ "$(jq -c '[.attachments[] | {attachmentId, size, type}] | sort_by(.attachmentId)' <<<"$body")" = "$src" ]
	req GET /session/$NEW/attachments/p.png
	expect 200
	cmp "$BATS_TEST_TMPDIR/body" "$BATS_TEST_TMPDIR/p.png"
	# A copy: removed from the branch, the source keeps it.
	req DELETE /session/$NEW/attachments/a.txt
	expect 200 '.removed == true'
	req GET /session/$SID/attachments/a.txt
	expect 200
	[ "$body" = hello ]
}
