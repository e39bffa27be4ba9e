#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a live session's sources (routes-sources.c, sources.c) go
# to its agent as upstream's qwen/session/sources/{list,upsert,remove},
# the source checked and normalized first as upstream checks it; changes
# need a registered client id; the agent's sourceError is upstream's
# error of its code; our own child lacks the methods (500 -32601).

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

# A loaded session with echo-ext, its client id in $CID.
loaded() {
	FAKE_CHILD="echo-ext${1:+,$1}" serve_loaded
	CID=$(jq -r .clientId <<<"$body")
	[ -n "$CID" ]
}

# src BODY: POST it as the client.
src() {
	req POST /session/$SID/sources "$1" -H "X-Qwen-Client-Id: $CID"
}

@test "sources: list, upsert and remove reach the agent by upstream's names" {
	loaded
	req GET /session/$SID/sources
	expect 200 ".method == \"qwen/session/sources/list\" and .params == {sessionId: \"$SID\"}"
	src '{"title":"  Spec  ","description":"the spec","locator":{"type":"workspace_file","workspacePath":"docs/./a/../spec.md"}}'
	expect 200 '.method == "qwen/session/sources/upsert"'
	jq -e --arg s "$SID" '.params == {sessionId: $s, input: {title: "Spec", description: "the spec",
	    locator: {type: "workspace_file", workspacePath: "docs/spec.md"}}}' <<<"$body"
	src '{"title":"Site","locator":{"type":"url","url":"HTTPS://Example.COM"}}'
	expect 200 '.params.input.locator == {type: "url", url: "https://example.com/"}'
	req DELETE /session/$SID/sources/abc123 '' -H "X-Qwen-Client-Id: $CID"
	expect 200 ".method == \"qwen/session/sources/remove\" and .params == {sessionId: \"$SID\", sourceId: \"abc123\"}"
	req GET "/workspaces/primary/session/$SID/sources"
	expect 200 '.method == "qwen/session/sources/list"'
}

@test "sources: a change needs the session's client id" {
	loaded
	req POST /session/$SID/sources '{"title":"t","locator":{"type":"url","url":"https://a/"}}'
	expect 403 '.code == "client_id_required"'
	req DELETE /session/$SID/sources/x
	expect 403 '.code == "client_id_required"'
	req POST /session/$SID/sources '{}' -H 'X-Qwen-Client-Id: client_nobody'
	expect 400 '.code == "invalid_client_id"'
	req GET /session/33333333-3333-4333-8333-333333333333/sources
	expect 404 '.code == "session_not_found"'
}

@test "sources: upstream's checks, nothing asked" {
	loaded "log=$BATS_TEST_TMPDIR/log"
	local b
	while IFS='|' read -r b want; do
		src "$b"
		expect 400 ".code == \"invalid_source\" and .error == \"$want\""
	done <<'BAD'
{"title":"t","locator":{"type":"url","url":"https://a/"},"x":1}|Unknown source field
{"locator":{"type":"url","url":"https://a/"}}|Invalid title
{"title":"   ","locator":{"type":"url","url":"https://a/"}}|Invalid title length (maximum 200)
{"title":"a\u0000b","locator":{"type":"url","url":"https://a/"}}|Invalid title
{"title":"a\u200bb","locator":{"type":"url","url":"https://a/"}}|Invalid title
{"title":"t"}|Source must be an object
{"title":"t","locator":{"type":"disk"}}|Unknown source locator type
{"title":"t","locator":{"type":"url","url":"https://a/","attachmentId":"x"}}|Unknown source field
{"title":"t","locator":{"type":"workspace_file","workspacePath":"/etc/passwd"}}|Workspace path must be relative
{"title":"t","locator":{"type":"workspace_file","workspacePath":"C:/x"}}|Workspace path must be relative
{"title":"t","locator":{"type":"workspace_file","workspacePath":"a/../../x"}}|Workspace path escapes its root
{"title":"t","locator":{"type":"workspace_file","workspacePath":"..\\x"}}|Workspace path escapes its root
{"title":"t","locator":{"type":"workspace_file","workspacePath":"./."}}|Workspace path must identify a file
{"title":"t","locator":{"type":"url","url":"ftp://a/"}}|Invalid source URL
{"title":"t","locator":{"type":"url","url":"https://u:p@a/"}}|Source URL must be HTTP(S) without credentials
BAD
	src "{\"title\":\"$(printf 'x%.0s' $(seq 201))\",\"locator\":{\"type\":\"url\",\"url\":\"https://a/\"}}"
	expect 400 '.error == "Invalid title length (maximum 200)"'
	# An attachment locator must name one of the session's attachments.
	src '{"title":"t","locator":{"type":"attachment","attachmentId":"none.txt"}}'
	expect 404 '.code == "source_attachment_not_found"'
	run ! grep -q 'sources/upsert' "$BATS_TEST_TMPDIR/log"
	curl -s -o /dev/null --unix-socket "$SOCK" -X POST -H 'Content-Type: text/plain' \
	    --data-binary x "http://localhost/session/$SID/attachments?name=have.txt"
	src '{"title":"t","locator":{"type":"attachment","attachmentId":"have.txt"}}'
	expect 200 '.params.input.locator == {type: "attachment", attachmentId: "have.txt"}'
}

@test "sources: our own child lacks them: 500 with its -32601, never a hang" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_loaded
	CID=$(jq -r .clientId <<<"$body")
	req GET /session/$SID/sources
	expect 500 '.code == -32601'
	src '{"title":"t","locator":{"type":"url","url":"https://a/"}}'
	expect 500 '.code == -32601'
}

@test "sources: the agent's sourceError is upstream's error of its code" {
	local c st
	for c in invalid_source:400 source_attachment_not_found:404 \
	    source_limit_reached:409 source_persistence_unavailable:503 other_code:500; do
		loaded "source-error=${c%%:*}"
		st=${c#*:}
		src '{"title":"t","locator":{"type":"url","url":"https://a/"}}'
		expect "$st" '.error == "the agent'"'"'s source error"'
		if [ "$st" != 500 ]; then
			[ "$(jq -r .code <<<"$body")" = "${c%%:*}" ]
		fi
		req GET /session/$SID/sources
		[ "$code" = "$st" ]
		serve_stop
	done
}
