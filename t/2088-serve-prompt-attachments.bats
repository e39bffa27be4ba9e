#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: prompt content blocks naming a session's attachments
# (attachments-ref.c), as upstream's daemon takes them: checked against
# the store when the prompt is posted (400
# invalid_session_attachment_reference, 410 session_attachment_gone) and
# replaced, as the prompt goes to the agent, by the block upstream makes
# of the file (an image with base64 data, an embedded resource with its
# text or a base64 blob).

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

# up NAME TYPE FILE: POST the file as the attachment; its reference in $body.
up() {
	code=$(curl -s -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' --unix-socket "$SOCK" \
	    -X POST -H "Content-Type: $2" --data-binary "@$3" \
	    "http://localhost/session/$SID/attachments?name=$1")
	body=$(cat "$BATS_TEST_TMPDIR/body")
}

# got N: wait until the agent has been sent N prompts; the Nth in $got.
got() {
	local i
	for i in $(seq 1 100); do
		[ "$(wc -l <"$BATS_TEST_TMPDIR/prompts" 2>/dev/null || echo 0)" -ge "$1" ] && break
		sleep 0.1
	done
	got=$(sed -n "${1}p" "$BATS_TEST_TMPDIR/prompts")
	[ -n "$got" ]
}

start() {
	FAKE_CHILD="prompts=$BATS_TEST_TMPDIR/prompts" serve_loaded
	printf 'hello\n' >"$BATS_TEST_TMPDIR/a.txt"
	printf '\x89PNG\r\n\x1a\n0000' >"$BATS_TEST_TMPDIR/p.png"
	printf 'a\0b\377' >"$BATS_TEST_TMPDIR/b.bin"
	up 'my%20notes.txt' text/plain "$BATS_TEST_TMPDIR/a.txt"
	expect 201
	TXT=$body
	up shot.png image/png "$BATS_TEST_TMPDIR/p.png"
	expect 201
	PNG=$body
	up raw.bin application/octet-stream "$BATS_TEST_TMPDIR/b.bin"
	expect 201
	BIN=$body
}

@test "prompt attachments: references reach the agent as the files' content" {
	start
	req POST /session/$SID/prompt "{\"prompt\":[{\"type\":\"text\",\"text\":\"look\"},$TXT,$PNG,$BIN]}"
	expect 202
	got 1
	[ "$(jq -c '.[0]' <<<"$got")" = '{"type":"text","text":"look"}' ]
	[ "$(jq -c '.[1]' <<<"$got")" = '{"type":"resource","resource":{"uri":"attachment:///my%20notes.txt","mimeType":"text/plain","text":"hello\n"}}' ]
	[ "$(jq -r '.[2].type' <<<"$got")" = image ]
	[ "$(jq -r '.[2].mimeType' <<<"$got")" = image/png ]
	[ "$(jq -r '.[2].data' <<<"$got")" = "$(base64 -w0 "$BATS_TEST_TMPDIR/p.png")" ]
	run -0 jq -e '.[2] | has("attachmentId") | not' <<<"$got"
	[ "$(jq -r '.[3].resource.uri' <<<"$got")" = attachment:///raw.bin ]
	[ "$(jq -r '.[3].resource.blob' <<<"$got")" = "$(base64 -w0 "$BATS_TEST_TMPDIR/b.bin")" ]
	run -0 jq -e '.[3].resource | has("text") | not' <<<"$got"
}

@test "prompt attachments: a removed or changed one is 410, a malformed or repeated one 400" {
	start
	req DELETE "/session/$SID/attachments/my%20notes.txt"
	expect 200 '.removed == true'
	req POST /session/$SID/prompt "{\"prompt\":[$TXT]}"
	expect 410 '.code == "session_attachment_gone" and .error == "Unknown or unavailable session attachment: my notes.txt"'
	# A size, type or kind other than the stored file's is gone too.
	req POST /session/$SID/prompt "{\"prompt\":[$(jq -c '.size = 13' <<<"$PNG")]}"
	expect 410 '.code == "session_attachment_gone"'
	req POST /session/$SID/prompt "{\"prompt\":[$(jq -c '.mimeType = "image/jpeg"' <<<"$PNG")]}"
	expect 410 '.code == "session_attachment_gone"'
	req POST /session/$SID/prompt "{\"prompt\":[$(jq -c '.type = "resource"' <<<"$PNG")]}"
	expect 410 '.code == "session_attachment_gone"'
	# No id to leave the session's directory by.
	req POST /session/$SID/prompt '{"prompt":[{"type":"resource","attachmentId":"../x","mimeType":"text/plain","size":1}]}'
	expect 410 '.code == "session_attachment_gone"'
	req POST /session/$SID/prompt "{\"prompt\":[$(jq -c '.type = "text"' <<<"$PNG")]}"
	expect 400 '.code == "invalid_session_attachment_reference" and .error == "Invalid session attachment reference"'
	req POST /session/$SID/prompt "{\"prompt\":[$(jq -c 'del(.size)' <<<"$PNG")]}"
	expect 400 '.code == "invalid_session_attachment_reference"'
	req POST /session/$SID/prompt "{\"prompt\":[$PNG,$PNG]}"
	expect 400 '.code == "invalid_session_attachment_reference" and .error == "Session attachment referenced more than once: shot.png"'
	# None of them reached the agent; a good one still does.
	run ! test -s "$BATS_TEST_TMPDIR/prompts"
	req POST /session/$SID/prompt "{\"prompt\":[$PNG]}"
	expect 202
	got 1
	[ "$(jq -r '.[0].type' <<<"$got")" = image ]
}

mid() {
	req POST "/session/$SID/mid-turn-message" "$1" -H "X-Qwen-Client-Id: $CID"
}

# start_mid KNOBS: start with the fake child's KNOBS too; $CID the client.
start_mid() {
	FAKE_CHILD="prompts=$BATS_TEST_TMPDIR/prompts,$1" serve_loaded
	CID=$(jq -r .clientId <<<"$body")
	printf 'hello\n' >"$BATS_TEST_TMPDIR/a.txt"
	printf '\x89PNG\r\n\x1a\n0000' >"$BATS_TEST_TMPDIR/p.png"
	up a.txt text/plain "$BATS_TEST_TMPDIR/a.txt"
	expect 201
	TXT=$body
	up shot.png image/png "$BATS_TEST_TMPDIR/p.png"
	expect 201
	PNG=$body
}

@test "prompt attachments: a mid-turn message's, checked when posted, expanded when drained" {
	start_mid drain=1500
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	mid "{\"message\":\"see\",\"messageId\":\"m-1\",\"content\":[$(jq -c '.extra = 1' <<<"$PNG"),$TXT]}"
	expect 200 '. == {accepted: true, messageId: "m-1"}'
	mid "{\"message\":\"x\",\"content\":[$PNG,$PNG]}"
	expect 400 '.code == "invalid_session_attachment_reference"'
	mid "{\"message\":\"x\",\"content\":[$(jq -c '.size = 99' <<<"$TXT")]}"
	expect 410 '.code == "session_attachment_gone"'
	sse_wait ev '.type == "turn_complete"' 20
	got 2
	run -0 jq -e '.drained | length == 1' <<<"$got"
	[ "$(jq -c '.drained[0].content[0]' <<<"$got")" = '{"type":"text","text":"see"}' ]
	[ "$(jq -r '.drained[0].content[1].data' <<<"$got")" = "$(base64 -w0 "$BATS_TEST_TMPDIR/p.png")" ]
	[ "$(jq -r '.drained[0].content[2].resource.text' <<<"$got")" = hello ]
	# The references it kept, as upstream keeps them (only their four members).
	[ "$(jq -c '.drained[0].attachmentReferences' <<<"$got")" = "[$PNG,$TXT]" ]
}

@test "prompt attachments: one attachment in two messages of a drain is the first's only, as upstream's" {
	start_mid drain=1500
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	mid "{\"message\":\"one\",\"content\":[$PNG]}"
	expect 200 '.accepted == true'
	mid "{\"message\":\"two\",\"content\":[$PNG,$TXT]}"
	expect 200 '.accepted == true'
	sse_wait ev '.type == "turn_complete"' 20
	got 2
	run -0 jq -e '.drained | length == 2' <<<"$got"
	[ "$(jq -r '.drained[0].content[1].type' <<<"$got")" = image ]
	[ "$(jq -c '.drained[1].content[0]' <<<"$got")" = '{"type":"text","text":"two\n[Attachment is no longer available]"}' ]
	[ "$(jq -r '.drained[1].content[1].resource.text' <<<"$got")" = hello ]
	[ "$(jq '.drained[1].content | length' <<<"$got")" = 2 ]
	[ "$(jq -c '.drained[1].attachmentReferences' <<<"$got")" = "[$TXT]" ]
}

@test "prompt attachments: a promoted mid-turn message whose attachment went degrades as upstream's" {
	start_mid delay=session/prompt:1500
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	mid "{\"message\":\"look\",\"messageId\":\"late-1\",\"content\":[$PNG,$TXT]}"
	expect 200 '.accepted == true'
	req DELETE /session/$SID/attachments/shot.png
	expect 200 '.removed == true'
	sse_wait ev '.type == "turn_complete" and .promptId == "late-1"' 20
	got 2
	[ "$(jq -c '.[0]' <<<"$got")" = '{"type":"text","text":"look\n[Attachment is no longer available]"}' ]
	[ "$(jq -r '.[1].resource.text' <<<"$got")" = hello ]
	[ "$(jq 'length' <<<"$got")" = 2 ]
}

@test "prompt attachments: ACP session/prompt goes the same way" {
	command -v ws-client >/dev/null || skip "no ws-client"
	start
	local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
	ws-client -t 20 -u "$SOCK" >"$BATS_TEST_TMPDIR/a.ws" 2>"$BATS_TEST_TMPDIR/a.err" 3>&- <<EOS
text $init
wait 1
text {"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"$SID","cwd":"$WS","mcpServers":[]}}
wait 2
text {"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"$SID","prompt":[$PNG]}}
wait 3
text {"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"$SID","prompt":[$PNG,$PNG]}}
wait 4
EOS
	cut -c1-300 "$BATS_TEST_TMPDIR/a.ws"
	jq -e -s 'any(.[]; .id == 3 and .result.stopReason == "end_turn")' "$BATS_TEST_TMPDIR/a.ws"
	jq -e -s 'any(.[]; .id == 4 and .error.code == -32602 and .error.message == "Session attachment referenced more than once: shot.png")' "$BATS_TEST_TMPDIR/a.ws"
	got 1
	[ "$(jq -r '.[0].data' <<<"$got")" = "$(base64 -w0 "$BATS_TEST_TMPDIR/p.png")" ]
}

@test "prompt attachments: one removed while its prompt waits ends that turn with session_attachment_gone" {
	FAKE_CHILD="prompts=$BATS_TEST_TMPDIR/prompts,delay=session/prompt:1500" serve_loaded
	printf '\x89PNG\r\n\x1a\n0000' >"$BATS_TEST_TMPDIR/p.png"
	up shot.png image/png "$BATS_TEST_TMPDIR/p.png"
	expect 201
	PNG=$body
	sse_open ev "/session/$SID/events"
	prompt_post "$SID"
	prompt_post "$SID" "{\"prompt\":[$PNG]}"
	local second=$PROMPT_ID
	req DELETE /session/$SID/attachments/shot.png
	expect 200 '.removed == true'
	sse_wait ev ".type == \"turn_error\" and .data.promptId == \"$second\" and .data.code == \"session_attachment_gone\" and .data.message == \"Unknown or unavailable session attachment: shot.png\"" 20
	# Only the first reached the agent.
	[ "$(wc -l <"$BATS_TEST_TMPDIR/prompts")" = 1 ]
}
