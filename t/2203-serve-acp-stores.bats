#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a session's attachments and artifacts through ACP over
# HTTP, under upstream's methods (_qwen/session/attachments,
# _qwen/session/artifacts, .../add, .../remove), run through the REST
# routes as the connection's own client.

load serve_acp_helper

teardown() {
	rteardown
}

@test "ACP: attachments listed, artifacts added, listed and removed as the connection's client" {
	serve_start
	make_transcript
	acp_init
	acp_open c0
	acp_call 1 session/load "{\"sessionId\":\"$SID\",\"cwd\":\"$WS\",\"mcpServers\":[]}"
	acp_open conn "$SID"
	acp_wait_answer conn 1
	jq -e '(.result._meta.qwen.clientId | startswith("client_"))' <<<"$answer"
	local cid
	cid=$(jq -r .result._meta.qwen.clientId <<<"$answer")
	curl -s -o /dev/null --unix-socket "$SOCK" -X POST -H 'Content-Type: text/plain' \
	    --data-binary x "http://localhost/session/$SID/attachments?name=a.txt"
	acp_call 2 _qwen/session/attachments "{\"sessionId\":\"$SID\"}"
	acp_wait_answer conn 2
	jq -e '.result.attachments == [{type: "resource", attachmentId: "a.txt", mimeType: "text/plain", size: 1}]' <<<"$answer"
	acp_call 3 _qwen/session/artifacts/add "{\"sessionId\":\"$SID\",\"title\":\"Site\",\"url\":\"https://example.com/\"}"
	acp_wait_answer conn 3
	jq -e '.result.changes[0].action == "created"' <<<"$answer"
	local aid
	aid=$(jq -r '.result.changes[0].artifactId' <<<"$answer")
	# Owned by the connection's client: another client may not remove it.
	req DELETE /session/$SID/artifacts/$aid '' -H 'X-Qwen-Client-Id: client_other'
	expect 400 '.code == "invalid_client_id"'
	acp_call 4 _qwen/session/artifacts "{\"sessionId\":\"$SID\"}"
	acp_wait_answer conn 4
	jq -e --arg a "$aid" '.result.artifacts[0].id == $a' <<<"$answer"
	acp_call 5 _qwen/session/artifacts/add "{\"sessionId\":\"$SID\",\"title\":\"<b>\",\"url\":\"https://example.com/\"}"
	acp_wait_answer c0 5
	jq -e '.error.code == -32602 and .error.message == "title contains unsafe markup" and
	    .error.data == {code: "VALIDATION_FAILED", field: "title"}' <<<"$answer"
	acp_call 6 _qwen/session/artifacts/remove "{\"sessionId\":\"$SID\",\"artifactId\":\"$aid\"}"
	acp_wait_answer conn 6
	jq -e --arg a "$aid" '.result.changes[0].action == "removed" and .result.changes[0].artifactId == $a' <<<"$answer"
	acp_call 7 _qwen/session/artifacts/remove "{\"sessionId\":\"$SID\"}"
	acp_wait_answer c0 7
	jq -e '.error.code == -32602 and .error.data.field == "artifactId"' <<<"$answer"
	[ -n "$cid" ]
}
