#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: session export in upstream's formats (html by default, md,
# json, jsonl: a session_metadata line, then a message a line), streamed
# from the session's active chain (a branch left behind is not in it), an
# archived session's export under its workspace, the
# /workspaces/:ws/session/:id/ path forms of the session routes, and
# their errors.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

NOSUCH=44444444-4444-4444-8444-444444444444

# SID's transcript with markup in its prompt, a thought, a tool record,
# and a turn left behind by a rewind (b1, b2: off the active chain).
marked() {
	make_transcript
	CHATS=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
	printf '%s\n' \
	    '{"uuid":"b1","parentUuid":"a1","sessionId":"'"$SID"'","timestamp":"2026-08-01T15:01:30.000Z","type":"user","message":{"role":"user","parts":[{"text":"ABANDONED-PROMPT"}]}}' \
	    '{"uuid":"b2","parentUuid":"b1","sessionId":"'"$SID"'","timestamp":"2026-08-01T15:01:31.000Z","type":"assistant","message":{"role":"model","parts":[{"text":"ABANDONED-ANSWER"}]}}' \
	    '{"uuid":"u2","parentUuid":"a1","sessionId":"'"$SID"'","timestamp":"2026-08-01T15:02:00.000Z","type":"user","message":{"role":"user","parts":[{"text":"Is <b>bold</b> & </script> safe?"}]}}' \
	    '{"uuid":"t1","parentUuid":"u2","sessionId":"'"$SID"'","timestamp":"2026-08-01T15:02:01.000Z","type":"tool_result","toolCallResult":{"callId":"c1","args":{"path":"/x"}},"message":{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"read_file","response":{"output":"TOOL-OUTPUT"}}}]}}' \
	    '{"uuid":"a2","parentUuid":"t1","sessionId":"'"$SID"'","timestamp":"2026-08-01T15:02:02.000Z","type":"assistant","model":"qwen3-coder","usageMetadata":{"totalTokenCount":7},"message":{"role":"model","parts":[{"text":"thinking it over","thought":true},{"text":"Yes."}]}}' \
	    >>"$CHATS/$SID.jsonl"
}

@test "export jsonl: a session_metadata line, then the active chain's messages as upstream makes them" {
	serve_start
	marked
	req GET "/session/$SID/export?format=jsonl"
	[ "$code" = 200 ]
	[ "$(header Content-Type)" = "application/jsonl; charset=utf-8" ]
	[[ "$(header Content-Disposition)" =~ ^attachment\;\ filename=\"qwen-code-export-[0-9T-]+Z\.jsonl\"$ ]]
	[ "$(header Cache-Control)" = no-store ]
	[ "$(header X-Content-Type-Options)" = nosniff ]
	local f=$BATS_TEST_TMPDIR/body
	# One JSON value a line, none torn; the metadata first.
	[ "$(jq -c . "$f" | wc -l)" -eq 7 ]
	head -1 "$f" | jq -e ".type == \"session_metadata\" and .sessionId == \"$SID\""
	head -1 "$f" | jq -e '.startTime == "2026-08-01T15:01:13.619Z" and .channel == "daemon"'
	head -1 "$f" | jq -e ".cwd == \"$WS\" and .model == \"qwen3-coder\" and .promptCount == 2"
	head -1 "$f" | jq -e 'keys_unsorted | .[0:4] == ["type", "sessionId", "startTime", "exportTime"]'
	tail -n +2 "$f" | jq -s -e '[.[] | .type] == ["user", "assistant", "user", "tool_call", "assistant", "assistant"]'
	tail -n +2 "$f" | jq -s -e '[.[] | .uuid] == ["u1", "a1", "u2", "t1", "a2", "a2"]'
	tail -n +2 "$f" | jq -s -e '.[1].message == {"role": "assistant", "parts": [{"text": "Because."}]}'
	tail -n +2 "$f" | jq -s -e '.[4].message == {"role": "thinking", "parts": [{"text": "thinking it over"}]}'
	tail -n +2 "$f" | jq -s -e '.[5].message.parts == [{"text": "Yes."}] and .[5].usageMetadata.totalTokenCount == 7'
	tail -n +2 "$f" | jq -s -e '.[3].parentUuid == "u2" and .[3].toolCall.toolCallId == "c1"'
	tail -n +2 "$f" | jq -s -e '.[3].toolCall | .title == "read_file" and .status == "completed" and .kind == "other"'
	tail -n +2 "$f" | jq -s -e '.[3].toolCall | .rawInput == {"path": "/x"} and .timestamp == 1785596521000'
	tail -n +2 "$f" | jq -s -e '.[3].toolCall.content == [{"type": "content", "content": {"type": "text", "text": "TOOL-OUTPUT"}}]'
	tail -n +2 "$f" | jq -s -e "all(.[]; .sessionId == \"$SID\")"
	# The rewound turn is not on the active chain.
	run ! grep -q ABANDONED "$f"
	# No transcript text in the daemon's log.
	run ! grep -q 'bold\|loading slow\|Yes\.' "$BATS_TEST_TMPDIR/err"
}

@test "export: html by default, md and json as upstream's document" {
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
	[[ "$body" != *ABANDONED* ]]
	# One </script>: the document's own, its JSON escaped inside it.
	[ "$(grep -o '</script>' <<<"$body" | wc -l)" -eq 1 ]
	sed -n 's/.*<script type="application\/json" id="transcript-document">\(.*\)<\/script>.*/\1/p' \
	    <<<"$body" | jq -e ".sessionId == \"$SID\" and (.messages | length) == 6 and .metadata.promptCount == 2"
	req GET "/session/$SID/export?format=md"
	[ "$code" = 200 ]
	[ "$(header Content-Type)" = "text/markdown; charset=utf-8" ]
	[[ "$body" == "# Chat Session Export"* ]]
	[[ "$body" == *"- **Session ID**: \`$SID\`"* ]]
	[[ "$body" == *"- **Prompt Count**: 2"* ]]
	[[ "$body" == *$'## User\n\nIs <b>bold</b> & </script> safe?'* ]]
	[[ "$body" == *$'## Assistant\n\nthinking it over\n\n\n## Assistant\n\nYes.'* ]]
	[[ "$body" == *$'### Tool: read_file\n**Status**: completed'* ]]
	[[ "$body" != *ABANDONED* ]]
	req GET "/session/$SID/export?format=json"
	expect 200 ".sessionId == \"$SID\" and .startTime == \"2026-08-01T15:01:13.619Z\""
	[ "$(header Content-Type)" = "application/json; charset=utf-8" ]
	expect 200 '[.messages[].type] == ["user", "assistant", "user", "tool_call", "assistant", "assistant"]'
	expect 200 '.messages[0].message == {"role": "user", "parts": [{"text": "Why is loading slow?"}]}'
	expect 200 ".messages[0].uuid == \"u1\" and .messages[0].sessionId == \"$SID\""
	expect 200 ".metadata.cwd == \"$WS\" and .metadata.model == \"qwen3-coder\" and .metadata.promptCount == 2"
	expect 200 '.metadata.channel == "daemon" and (.metadata.exportTime | test("^20[0-9-]+T"))'
	expect 200 'keys_unsorted == ["sessionId", "startTime", "messages", "metadata"]'
	expect 200 '.metadata | keys_unsorted | .[0:3] == ["sessionId", "startTime", "exportTime"]'
	# As upstream's JSON.stringify(doc, null, 2): two spaces a level.
	[[ "$body" == $'{\n  "sessionId": '* ]]
	[[ "$body" == *$'\n  "messages": [\n    {\n      "uuid": "u1",'* ]]
}

@test "export: a long chain of many slices, records across the slice ends, all there, in order" {
	serve_start
	make_transcript
	CHATS=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
	# 3 MiB: 3000 records of about 1 KiB, one chain after a1.
	local pad
	pad=$(head -c 1000 /dev/zero | tr '\0' x)
	for i in $(seq 1 3000); do
		printf '{"uuid":"r%d","parentUuid":"%s","sessionId":"%s","type":"%s","message":{"role":"user","parts":[{"text":"n%d %s"}]}}\n' \
		    "$i" "$([ "$i" = 1 ] && echo a1 || echo "r$((i - 1))")" "$SID" \
		    "$([ $((i % 2)) = 1 ] && echo user || echo assistant)" "$i" "$pad"
	done >>"$CHATS/$SID.jsonl"
	[ "$(stat -c %s "$CHATS/$SID.jsonl")" -gt 3000000 ]
	for fmt in json html; do
		req GET "/session/$SID/export?format=$fmt"
		[ "$code" = 200 ]
		if [ $fmt = html ]; then
			sed -n 's/.*<script type="application\/json" id="transcript-document">\(.*\)<\/script>.*/\1/p' \
			    <<<"$body" >"$BATS_TEST_TMPDIR/body"
		fi
		jq -e '(.messages | length) == 3002 and .metadata.promptCount == 1501' "$BATS_TEST_TMPDIR/body"
		jq -e '[.messages[2:][] | .message.parts[0].text | split(" ")[0]] == [range(1; 3001) | "n\(.)"]' \
		    "$BATS_TEST_TMPDIR/body"
	done
	# A last line without its newline is still being written: not yet
	# in the chain (as a load sees it); with it, the record is there.
	printf '{"uuid":"z","parentUuid":"r3000","sessionId":"%s","type":"user","message":{"role":"user","parts":[{"text":"tail"}]}}' "$SID" \
	    >>"$CHATS/$SID.jsonl"
	req GET "/session/$SID/export?format=jsonl"
	[ "$code" = 200 ]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/body")" -eq 3002 ]
	tail -1 "$BATS_TEST_TMPDIR/body" | jq -e '.uuid == "r3000"'
	echo >>"$CHATS/$SID.jsonl"
	req GET "/session/$SID/export?format=jsonl"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/body")" -eq 3003 ]
	tail -1 "$BATS_TEST_TMPDIR/body" | jq -e '.uuid == "z" and .message.parts[0].text == "tail"'
}

@test "export: a client that does not read holds the export, not the daemon; one that leaves ends it" {
	serve_start --log-level debug
	local f sid rss0 rss1
	f=$(qwen-gen-transcript --mib 64 --seed 5 --branches 2 --data-dir "$DATA" --workspace "$WS")
	sid=$(basename "$f" .jsonl)
	rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$SERVE_PID/status")
	# A raw connection that asks and never reads.
	exec 5<>"/dev/tcp/127.0.0.1/$PORT"
	printf 'GET /session/%s/export?format=jsonl HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' \
	    "$sid" "$PORT" >&5
	wait_for 60 grep -q 'export: waiting for a slow client' "$BATS_TEST_TMPDIR/err"
	req GET /health
	expect 200
	# What waits for the client is bounded: the index (18 MiB here on
	# 4 KiB pages, more where its tables are on huge pages or the
	# thread's arena keeps what it freed) and a slice or two, not the
	# 45 MiB of the export on top of it.  Not measured under the
	# sanitizers (freed memory is kept in quarantine), nor where every
	# heap is on transparent huge pages (a touched byte is 2 MiB there).
	if [ -z "${QWEN_SANITIZED:-}" ] &&
	    ! grep -q '\[always\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
		rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/$SERVE_PID/status")
		echo "daemon RSS grew by $((rss1 - rss0)) kB" >&2
		[ $((rss1 - rss0)) -lt 36864 ]
	fi
	exec 5>&-
	wait_for 30 grep -q 'export: the client left at record' "$BATS_TEST_TMPDIR/err"
	req GET "/session/$sid/export?format=jsonl" '' -o /dev/null
	[ "$code" = 200 ]
}

@test "export: the index pass runs beside the loop: other requests are served while it is held" {
	mkfifo "$BATS_TEST_TMPDIR/gate"
	exec {gfd}<>"$BATS_TEST_TMPDIR/gate"
	QWEN_SERVE_TEST_EXPORT_GATE=$BATS_TEST_TMPDIR/gate serve_start
	marked
	curl -s --unix-socket "$SOCK" "http://localhost/session/$SID/export?format=jsonl" \
	    -o "$BATS_TEST_TMPDIR/held" 3>&- &
	local cpid=$!
	# The export waits at the gate; the daemon answers meanwhile.
	req GET /health
	expect 200
	req GET "/session/$SID/export?format=pdf"
	expect 400 '.code == "invalid_export_format"'
	[ ! -s "$BATS_TEST_TMPDIR/held" ]
	printf x >&$gfd
	wait "$cpid"
	head -1 "$BATS_TEST_TMPDIR/held" | jq -e ".type == \"session_metadata\" and .sessionId == \"$SID\""
	[ "$(wc -l <"$BATS_TEST_TMPDIR/held")" -eq 6 ]
	# A daemon stopped while an export is held exits all the same.
	threads() {
		awk '/^Threads:/ { print $2 }' "/proc/$SERVE_PID/status"
	}
	local t0
	t0=$(threads)
	curl -s --unix-socket "$SOCK" "http://localhost/session/$SID/export" -o /dev/null 3>&- &
	held() {
		[ "$(threads)" -gt "$t0" ]
	}
	wait_for 10 held
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	exec {gfd}>&-
}

@test "export: bad format 400, unknown session 404, archived 409" {
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
}

@test "archived export and title: under its workspace, from the archive only" {
	serve_start
	marked
	req GET "/workspaces/primary/session/$SID/archive/export?format=json"
	expect 404 '.code == "session_not_found"'
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	req GET "/workspaces/primary/session/$SID/archive/export?format=json"
	expect 200 ".sessionId == \"$SID\" and (.messages | length) == 6"
	req GET "/workspaces/primary/session/$SID/archive/export?format=jsonl"
	[ "$code" = 200 ]
	head -1 "$BATS_TEST_TMPDIR/body" | jq -e ".type == \"session_metadata\" and .sessionId == \"$SID\""
	[ "$(wc -l <"$BATS_TEST_TMPDIR/body")" -eq 6 ]
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
	head -1 "$BATS_TEST_TMPDIR/body" | jq -e ".type == \"session_metadata\" and .sessionId == \"$SID\""
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

# SID3's transcript with known statistics (upstream's collectSessionMetadata
# computes them from the active chain): tokens 1200 + 800 + 3000 of the
# assistant records and 100 + 50 + 25 + 25 of a task tool, 5200; the last
# assistant's window 120000, 3000 of it used, 2.5%; files written
# /w/a.txt (call c1's file_path, then again by write_file's call order),
# /w/b.txt (call c2, its arguments a JSON text, by the functionResponse's
# id), c.txt (no call: the display's fileName): 3; lines added 3 (a.txt's
# non-empty new lines) + 2 (b.txt's diffStat) + 1 (c.txt), removed 1
# (diffStat); the truncated result, the read (no content) and the
# abandoned branch's 99999 tokens and d.txt count nothing.
SID3=33333333-3333-4333-8333-333333333333
stats_fixture() {
	local dir r
	dir=$DATA/projects/$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')/chats
	mkdir -p "$dir"
	r() {	# r UUID PARENT TYPE REST
		printf '{"uuid":"%s","parentUuid":%s,"sessionId":"%s","timestamp":"2026-08-01T15:01:%02d.000Z","type":"%s","cwd":"%s",%s}\n' \
		    "$1" "$2" "$SID3" "$((n++))" "$3" "$WS" "$4"
	}
	local n=10
	{
	r u1 null user '"message":{"role":"user","parts":[{"text":"Edit the files"}]}'
	r d1 '"u1"' assistant '"model":"m","usageMetadata":{"totalTokenCount":99999},"contextWindowSize":5,"message":{"role":"model","parts":[{"text":"abandoned"}]}'
	r d2 '"d1"' tool_result '"toolCallResult":{"callId":"z","resultDisplay":{"fileName":"d.txt","newContent":"x\n"}},"message":{"role":"user","parts":[]}'
	r a1 '"u1"' assistant '"model":"m","usageMetadata":{"totalTokenCount":1200},"contextWindowSize":100000,"message":{"role":"model","parts":[{"functionCall":{"id":"c1","name":"write_file","args":{"file_path":"/w/a.txt","content":"l1"}}},{"functionCall":{"id":"c2","name":"edit","args":"{\"file_path\":\"/w/b.txt\"}"}}]}'
	r t1 '"a1"' tool_result '"toolCallResult":{"callId":"c1","resultDisplay":{"fileName":"a.txt","originalContent":null,"newContent":"l1\nl2\n\nl3\n"}},"message":{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"write_file","response":{"output":"ok"}}}]}'
	r t2 '"t1"' tool_result '"toolCallResult":{"resultDisplay":{"fileName":"b.txt","originalContent":"x\ny","newContent":"x\nz\nw","diffStat":{"model_added_lines":2,"model_removed_lines":1}}},"message":{"role":"user","parts":[{"functionResponse":{"id":"c2","name":"edit","response":{"output":"ok"}}}]}'
	r a2 '"t2"' assistant '"model":"m","usageMetadata":{"totalTokenCount":800},"contextWindowSize":100000,"message":{"role":"model","parts":[{"functionCall":{"name":"write_file","args":{"file_path":"/w/a.txt"}}}]}'
	r t3 '"a2"' tool_result '"toolCallResult":{"resultDisplay":{"fileName":"a.txt","newContent":"q\nr\n","truncatedForSession":true}},"message":{"role":"user","parts":[{"functionResponse":{"name":"write_file","response":{"output":"ok"}}}]}'
	r t4 '"t3"' tool_result '"toolCallResult":{"resultDisplay":{"type":"task_execution","executionSummary":{"inputTokens":100,"outputTokens":50,"thoughtTokens":25,"cachedTokens":25}}},"message":{"role":"user","parts":[]}'
	r t5 '"t4"' tool_result '"toolCallResult":{"resultDisplay":{"fileName":"c.txt","newContent":"only\n"}},"message":{"role":"user","parts":[]}'
	r t6 '"t5"' tool_result '"toolCallResult":{"resultDisplay":{"fileName":"r.txt"}},"message":{"role":"user","parts":[]}'
	r a3 '"t6"' assistant '"model":"m","usageMetadata":{"totalTokenCount":3000},"contextWindowSize":120000,"message":{"role":"model","parts":[{"text":"Done."}]}'
	} >"$dir/$SID3.jsonl"
}

@test "export: upstream's token and file statistics, from the active chain, in every format" {
	serve_start
	stats_fixture
	local files='["/w/a.txt","/w/b.txt","c.txt"]'
	req GET "/session/$SID3/export?format=json"
	expect 200 '.metadata.totalTokens == 5200'
	expect 200 '.metadata.contextWindowSize == 120000 and .metadata.contextUsagePercent == 2.5'
	expect 200 '.metadata.filesWritten == 3 and .metadata.linesAdded == 6 and .metadata.linesRemoved == 1'
	expect 200 ".metadata.uniqueFiles == $files"
	expect 200 '.metadata | keys_unsorted | .[6:] == ["promptCount", "contextUsagePercent", "contextWindowSize", "totalTokens", "filesWritten", "linesAdded", "linesRemoved", "uniqueFiles"]'
	req GET "/session/$SID3/export?format=jsonl"
	[ "$code" = 200 ]
	head -1 "$BATS_TEST_TMPDIR/body" | jq -e ".totalTokens == 5200 and .filesWritten == 3 and .uniqueFiles == $files"
	req GET "/session/$SID3/export?format=md"
	[ "$code" = 200 ]
	[[ "$body" == *$'- **Prompt Count**: 1\n\n- **Total Tokens**: 5200\n- **Context Window Size**: 120000\n- **Context Usage**: 2.5%\n\n- **Files Written**: 3\n- **Lines Added**: 6\n- **Lines Removed**: 1\n\n<details>\n<summary><strong>Unique Files Referenced (3)</strong></summary>\n\n- `/w/a.txt`\n- `/w/b.txt`\n- `c.txt`\n</details>\n\n---\n\n## User'* ]]
	req GET "/session/$SID3/export"
	[ "$code" = 200 ]
	[[ "$body" == *"<li>Total Tokens: 5200</li>"* ]]
	[[ "$body" == *"<li>Files Written: 3</li>"* ]]
	sed -n 's/.*<script type="application\/json" id="transcript-document">\(.*\)<\/script>.*/\1/p' \
	    <<<"$body" | jq -e '.metadata.totalTokens == 5200 and .metadata.linesAdded == 6'
	# A session without tokens or files: zeros, no window, no files block.
	make_transcript
	req GET "/session/$SID/export?format=json"
	expect 200 '.metadata.totalTokens == 0 and .metadata.filesWritten == 0 and .metadata.uniqueFiles == []'
	expect 200 '.metadata | has("contextWindowSize") or has("contextUsagePercent") | not'
	req GET "/session/$SID/export?format=md"
	[[ "$body" == *$'- **Lines Removed**: 0\n\n---\n\n## User'* ]]
}

# An independent oracle of the statistics: jq walks the active chain from
# the last record back by parentUuid and adds up what upstream's exporter
# adds (the generator's records carry usageMetadata, write_file and edit
# results with their original and new content).
stats_oracle() {
	jq -s '
	    (map(select(.uuid != null)) | map({(.uuid): .}) | add) as $m
	    | [ last.uuid | recurse(if $m[.].parentUuid then $m[.].parentUuid else empty end) ] as $chain
	    | [ $chain[] | $m[.] ] as $recs
	    | def nl: if type == "string" then [split("\n")[] | select(length > 0)] | length else 0 end;
	      [ $recs[] | select(.type == "tool_result") | .toolCallResult.resultDisplay | objects
	        | select(has("fileName") and (has("originalContent") or has("newContent"))) ] as $w
	    | { totalTokens: ([ $recs[] | select(.type == "assistant") | (.usageMetadata.totalTokenCount // 0) ] | add),
	        writes: ($w | length),
	        linesAdded: ([ $w[] | if .diffStat then (.diffStat.model_added_lines // 0) elif .truncatedForSession then 0 else (.newContent | nl) end ] | add),
	        linesRemoved: ([ $w[] | if .diffStat then (.diffStat.model_removed_lines // 0) elif .truncatedForSession then 0 else (.originalContent | nl) end ] | add) }' "$1"
}

@test "export: the statistics of a generated transcript with rewinds are the oracle's" {
	serve_start
	local f o
	f=$(qwen-gen-transcript --mib 2 --seed 13 --branches 3 --data-dir "$DATA" --workspace "$WS")
	o=$(stats_oracle "$f")
	echo "oracle: $o"
	jq -e '.totalTokens > 0 and .writes > 0 and .linesAdded > 0' <<<"$o"
	req GET "/session/$(basename "$f" .jsonl)/export?format=json"
	[ "$code" = 200 ]
	jq -e --argjson o "$o" '.metadata | .totalTokens == $o.totalTokens and .linesAdded == $o.linesAdded and .linesRemoved == $o.linesRemoved' <<<"$body"
	jq -e --argjson o "$o" '.metadata | .filesWritten > 0 and .filesWritten <= $o.writes and (.uniqueFiles | length) == .filesWritten' <<<"$body"
}
