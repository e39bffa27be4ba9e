#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: session export in upstream's formats (html by default, md,
# json rendered from the transcript; jsonl as on disk), an archived
# session's export under its workspace, the /workspaces/:ws/session/:id/
# path forms of the session routes, and their errors.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

NOSUCH=44444444-4444-4444-8444-444444444444

# SID's transcript with markup in its prompt, a thought and a tool record.
marked() {
	make_transcript
	CHATS=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
	printf '%s\n' \
	    '{"uuid":"u2","parentUuid":"a1","sessionId":"'"$SID"'","timestamp":"2026-08-01T15:02:00.000Z","type":"user","message":{"role":"user","parts":[{"text":"Is <b>bold</b> & </script> safe?"}]}}' \
	    '{"uuid":"t1","parentUuid":"u2","sessionId":"'"$SID"'","timestamp":"2026-08-01T15:02:01.000Z","type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"x","response":{"output":"TOOL-OUTPUT"}}}]}}' \
	    '{"uuid":"a2","parentUuid":"t1","sessionId":"'"$SID"'","timestamp":"2026-08-01T15:02:02.000Z","type":"assistant","model":"qwen3-coder","message":{"role":"model","parts":[{"text":"thinking it over","thought":true},{"text":"Yes."}]}}' \
	    >>"$CHATS/$SID.jsonl"
}

@test "export: html by default, md and json as upstream's document, jsonl as on disk" {
	serve_start
	marked
	req GET "/session/$SID/export"
	[ "$code" = 200 ]
	[ "$(header Content-Type)" = "text/html; charset=utf-8" ]
	[[ "$(header Content-Disposition)" =~ ^attachment\;\ filename=\"qwen-code-export-[0-9T-]+Z\.html\"$ ]]
	[ "$(header X-Content-Type-Options)" = nosniff ]
	[[ "$body" == "<!doctype html>"* ]]
	[[ "$body" == *"Why is loading slow?"* ]]
	[[ "$body" == *"Is &lt;b&gt;bold&lt;/b&gt; &amp; &lt;/script&gt; safe?"* ]]
	[[ "$body" != *"<b>bold"* ]]
	# One </script>: the document's own, its JSON escaped inside it.
	[ "$(grep -o '</script>' <<<"$body" | wc -l)" -eq 1 ]
	sed -n 's/.*<script type="application\/json" id="transcript-document">\(.*\)<\/script>.*/\1/p' \
	    <<<"$body" | jq -e ".sessionId == \"$SID\" and (.messages | length) == 4"
	req GET "/session/$SID/export?format=md"
	[ "$code" = 200 ]
	[ "$(header Content-Type)" = "text/markdown; charset=utf-8" ]
	[[ "$body" == "# Chat Session Export"* ]]
	[[ "$body" == *"- **Session ID**: \`$SID\`"* ]]
	[[ "$body" == *"- **Prompt Count**: 2"* ]]
	[[ "$body" == *$'## User\n\nIs <b>bold</b> & </script> safe?'* ]]
	[[ "$body" == *$'## Assistant\n\nthinking it over\nYes.'* ]]
	[[ "$body" != *TOOL-OUTPUT* ]]
	req GET "/session/$SID/export?format=json"
	expect 200 ".sessionId == \"$SID\" and .startTime == \"2026-08-01T15:01:13.619Z\""
	[ "$(header Content-Type)" = "application/json; charset=utf-8" ]
	expect 200 '[.messages[].type] == ["user", "assistant", "user", "assistant"]'
	expect 200 '.messages[0].message == {"role": "user", "parts": [{"text": "Why is loading slow?"}]}'
	expect 200 ".messages[0].uuid == \"u1\" and .messages[0].sessionId == \"$SID\""
	expect 200 '.messages[3].message.parts == [{"text": "thinking it over", "thought": true}, {"text": "Yes."}]'
	expect 200 ".metadata.cwd == \"$WS\" and .metadata.model == \"qwen3-coder\" and .metadata.promptCount == 2"
	expect 200 '.metadata.channel == "daemon" and (.metadata.exportTime | test("^20[0-9-]+T"))'
	expect 200 'keys_unsorted == ["sessionId", "startTime", "messages", "metadata"]'
	expect 200 '.metadata | keys_unsorted | .[0:3] == ["sessionId", "startTime", "exportTime"]'
	req GET "/session/$SID/export?format=jsonl"
	[ "$code" = 200 ]
	cmp "$BATS_TEST_TMPDIR/body" "$CHATS/$SID.jsonl"
	# No transcript text in the daemon's log.
	run ! grep -q 'bold\|loading slow\|Yes\.' "$BATS_TEST_TMPDIR/err"
}

@test "export: a transcript of many slices, records across the slice ends, all there" {
	serve_start
	make_transcript
	CHATS=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
	# 3 MiB: 3000 records of about 1 KiB, so lines cross every 1 MiB slice.
	local pad
	pad=$(head -c 1000 /dev/zero | tr '\0' x)
	for i in $(seq 1 3000); do
		printf '{"uuid":"r%d","sessionId":"%s","type":"%s","message":{"role":"user","parts":[{"text":"n%d %s"}]}}\n' \
		    "$i" "$SID" "$([ $((i % 2)) = 1 ] && echo user || echo assistant)" "$i" "$pad"
	done >>"$CHATS/$SID.jsonl"
	[ "$(stat -c %s "$CHATS/$SID.jsonl")" -gt 3000000 ]
	req GET "/session/$SID/export?format=json"
	expect 200 '(.messages | length) == 3002 and .metadata.promptCount == 1501'
	expect 200 '[.messages[2:][] | .message.parts[0].text | split(" ")[0]] == [range(1; 3001) | "n\(.)"]'
	# The last line without its newline is a record too.
	printf '{"uuid":"z","sessionId":"%s","type":"user","message":{"role":"user","parts":[{"text":"tail"}]}}' "$SID" \
	    >>"$CHATS/$SID.jsonl"
	req GET "/session/$SID/export?format=json"
	expect 200 '(.messages | length) == 3003 and .messages[-1].message.parts[0].text == "tail"'
}

@test "export: bad format 400, unknown session 404, archived 409, over the bound 413" {
	serve_start
	marked
	req GET "/session/$SID/export?format=pdf"
	expect 400 '.code == "invalid_export_format" and .format == "pdf"'
	expect 400 '.allowedFormats == ["html", "md", "json", "jsonl"]'
	req GET "/session/$SID/export?format="
	expect 400 '.code == "invalid_export_format"'
	req GET "/session/$NOSUCH/export"
	expect 404 ".code == \"session_not_found\" and .sessionId == \"$NOSUCH\""
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".archived == [\"$SID\"]"
	req GET "/session/$SID/export?format=md"
	expect 409 '.code == "session_archived"'
	# Over 32 MiB a rendered export is refused; jsonl is still sent.
	req POST /sessions/unarchive "{\"sessionIds\":[\"$SID\"]}"
	truncate -s 33M "$CHATS/$SID.jsonl"
	req GET "/session/$SID/export?format=json"
	expect 413 ".code == \"export_too_large\" and .sessionId == \"$SID\""
	req GET "/session/$SID/export?format=jsonl" '' -o /dev/null
	[ "$code" = 200 ]
}

@test "archived export and title: under its workspace, from the archive only" {
	serve_start
	marked
	req GET "/workspaces/primary/session/$SID/archive/export?format=json"
	expect 404 '.code == "session_not_found"'
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	req GET "/workspaces/primary/session/$SID/archive/export?format=json"
	expect 200 ".sessionId == \"$SID\" and (.messages | length) == 4"
	req GET "/workspaces/primary/session/$SID/archive/export?format=jsonl"
	[ "$code" = 200 ]
	cmp "$BATS_TEST_TMPDIR/body" "$CHATS/archive/$SID.jsonl"
	req GET "/workspaces/primary/session/$SID/archive/export?format=doc"
	expect 400 '.code == "invalid_export_format"'
	req GET "/workspaces/primary/session/$SID/export?format=json"
	expect 409 '.code == "session_archived"'
	# Not a route of its own outside a workspace.
	req GET "/session/$SID/archive/export"
	expect 404 '.code == "not_found"'
	# An archived session's title: under its workspace only, in the
	# archive's copy, as upstream's qualified metadata route.
	req PATCH "/session/$SID/metadata" '{"displayName":"Kept apart"}'
	expect 409 '.code == "session_archived"'
	req PATCH "/workspaces/primary/session/$SID/metadata" '{"displayName":"Kept apart"}'
	expect 200 ". == {\"sessionId\": \"$SID\", \"displayName\": \"Kept apart\"}"
	tail -1 "$CHATS/archive/$SID.jsonl" | jq -e '.subtype == "custom_title" and .parentUuid == "a2"'
	[ ! -e "$CHATS/$SID.jsonl" ]
	req GET "/workspace/primary/sessions?archiveState=archived"
	expect 200 ".sessions[0].sessionId == \"$SID\" and .sessions[0].displayName == \"Kept apart\""
}

@test "workspace-qualified session routes: the workspace must hold the session" {
	WSB=$BATS_TEST_TMPDIR/wsb
	mkdir -p "$WSB"
	WSB=$(cd "$WSB" && pwd -P)
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start --workspace "$BATS_TEST_TMPDIR/ws" \
	    --workspace "$WSB"
	marked
	local enc
	enc=$(jq -rn --arg p "$WS" '$p | @uri')
	req GET "/workspaces/$enc/session/$SID/export?format=jsonl"
	[ "$code" = 200 ]
	cmp "$BATS_TEST_TMPDIR/body" "$CHATS/$SID.jsonl"
	req GET "/workspaces/primary/session/$SID/transcript?limit=2"
	expect 200 ".sessionId == \"$SID\" and (.events | type) == \"array\""
	req GET "/workspaces/primary/session/$SID/turn-index"
	expect 200 ".sessionId == \"$SID\" and .totalTurns >= 1"
	req PATCH "/workspaces/primary/session/$SID/metadata" '{"displayName":"Qualified"}'
	expect 200 '.displayName == "Qualified"'
	req PATCH "/workspaces/primary/session/$SID/organization" '{"isPinned":true}'
	expect 200 ".sessionId == \"$SID\" and .isPinned == true"
	# The other workspace does not hold it: 404, nothing changed.
	local wsb
	wsb=$(jq -rn --arg p "$WSB" '$p | @uri')
	for p in export transcript turn-index archive/export; do
		req GET "/workspaces/$wsb/session/$SID/$p"
		expect 404 ".code == \"session_not_found\" and .sessionId == \"$SID\""
	done
	req PATCH "/workspaces/$wsb/session/$SID/metadata" '{"displayName":"Elsewhere"}'
	expect 404 '.code == "session_not_found"'
	run ! grep -q Elsewhere "$CHATS/$SID.jsonl"
	req GET "/workspaces/primary/session/$NOSUCH/export"
	expect 404 '.code == "session_not_found"'
	req GET "/workspaces/%2Fnot%2Fours/session/$SID/export"
	expect 400 '.code == "workspace_mismatch"'
	# Only upstream's qualified session routes are rewritten.
	req POST "/workspaces/primary/session/$SID/prompt" '{}'
	expect 404 '.code == "not_found"'
	req GET "/workspaces/primary/session/$SID/export/x"
	expect 404 '.code == "not_found"'
}
