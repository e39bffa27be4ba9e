#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: session management with upstream's routes: POST
# /sessions/{archive,unarchive,delete} (never a live session, never one
# whose writer lease another process holds), the archived listing,
# session-info, live-state, search and export, through curl and the SDK.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

A=22222222-2222-4222-8222-222222222222
B=33333333-3333-4333-8333-333333333333

# Three transcripts (SID with a ledger and a custom title) in $CHATS.
three() {
	SID=11111111-1111-4111-8111-111111111111
	make_transcript "$B"
	make_transcript "$A"
	make_transcript "$SID"
	CHATS=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
	printf '%s\n' '{"uuid":"s1","parentUuid":"a1","sessionId":"x","type":"system","subtype":"custom_title","systemPayload":{"customTitle":"Profiling the Loader"}}' \
	    >>"$CHATS/$SID.jsonl"
	printf '%s\n' '{"promptId":"p1"}' >"$CHATS/$SID.ledger.jsonl"
	printf '%s\n' '{"uuid":"u2","parentUuid":null,"sessionId":"b","type":"user","message":{"role":"user","parts":[{"text":"Fix the FLAKY test"}]}}' \
	    >>"$CHATS/$B.jsonl"
	touch -d '2026-01-01 00:00:01' "$CHATS/$B.jsonl"
	touch -d '2026-01-01 00:00:02' "$CHATS/$A.jsonl"
	touch -d '2026-01-01 00:00:03' "$CHATS/$SID.jsonl"
}

@test "archive, unarchive, delete: files moved whole, each id answered in its list" {
	serve_start
	three
	cp "$CHATS/$SID.jsonl" "$BATS_TEST_TMPDIR/orig"
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\",\"44444444-4444-4444-8444-444444444444\",\"../x\"]}"
	expect 200 ".archived == [\"$SID\"] and .alreadyArchived == []"
	expect 200 '.notFound == ["44444444-4444-4444-8444-444444444444"]'
	expect 200 '.errors[0].sessionId == "../x" and .errors[0].code == "invalid_session_id"'
	[ ! -e "$CHATS/$SID.jsonl" ]
	[ ! -e "$CHATS/$SID.ledger.jsonl" ]
	cmp "$CHATS/archive/$SID.jsonl" "$BATS_TEST_TMPDIR/orig"
	[ -f "$CHATS/archive/$SID.ledger.jsonl" ]
	req GET "/workspace/primary/sessions"
	expect 200 ".sessions | map(.sessionId) == [\"$A\", \"$B\"]"
	req GET "/workspace/primary/sessions?archiveState=archived"
	expect 200 ".sessions | length == 1 and .[0].sessionId == \"$SID\" and .[0].isArchived"
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".alreadyArchived == [\"$SID\"] and .archived == []"
	req GET "/session/$SID/export?format=jsonl"
	expect 409 '.code == "session_archived"'
	req POST "/session/$SID/load" '{}'
	expect 409 ".code == \"session_archived\" and .sessionId == \"$SID\""
	req POST "/session/$SID/resume" '{}'
	expect 409 '.code == "session_archived"'
	# Nor is its id taken again by a new session.
	req POST /session "{\"sessionId\":\"$SID\"}"
	expect 409 '.code == "session_id_conflict" and .conflict == "persisted"'
	req POST /sessions/unarchive "{\"sessionIds\":[\"$SID\",\"$A\"]}"
	expect 200 ".unarchived == [\"$SID\"] and .alreadyActive == [\"$A\"] and .errors == []"
	cmp "$CHATS/$SID.jsonl" "$BATS_TEST_TMPDIR/orig"
	[ -f "$CHATS/$SID.ledger.jsonl" ]
	req POST /sessions/delete "{\"sessionIds\":[\"$SID\",\"44444444-4444-4444-8444-444444444444\"]}"
	expect 200 ".removed == [\"$SID\"] and .notFound == [\"44444444-4444-4444-8444-444444444444\"]"
	[ ! -e "$CHATS/$SID.jsonl" ]
	[ ! -e "$CHATS/$SID.ledger.jsonl" ]
	[ -z "$(ls -A "$CHATS/.trash")" ]
	# An archived session is deleted from the archive.
	req POST /sessions/archive "{\"sessionIds\":[\"$A\"]}"
	req POST /sessions/delete "{\"sessionIds\":[\"$A\"]}"
	expect 200 ".removed == [\"$A\"]"
	[ ! -e "$CHATS/archive/$A.jsonl" ]
	[ -f "$CHATS/$B.jsonl" ]
}

@test "archive: a copy on both sides is a conflict, nothing overwritten" {
	serve_start
	three
	mkdir -p "$CHATS/archive"
	echo other >"$CHATS/archive/$SID.jsonl"
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".errors[0].code == \"session_conflict\" and .archived == []"
	req POST /sessions/unarchive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".errors[0].code == \"session_conflict\""
	[ "$(cat "$CHATS/archive/$SID.jsonl")" = other ]
	req POST "/session/$SID/load" '{}'
	expect 409 '.code == "session_conflict"'
	grep -q 'Why is loading slow' "$CHATS/$SID.jsonl"
}

@test "resolveConflicts: the copy of the side it goes to is kept, the other deleted" {
	serve_start
	three
	mkdir -p "$CHATS/archive"
	echo other >"$CHATS/archive/$SID.jsonl"
	cp "$CHATS/$A.jsonl" "$CHATS/archive/$A.jsonl"
	echo mine >>"$CHATS/$A.jsonl"
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"],\"resolveConflicts\":1}"
	expect 400 '.code == "bad_request"'
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"],\"resolveConflicts\":false}"
	expect 200 '.errors[0].code == "session_conflict" and .resolvedConflicts == []'
	# Archive: the archived copy stays, the active one goes with its ledger.
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\",\"$B\"],\"resolveConflicts\":true}"
	expect 200 ".archived == [\"$SID\", \"$B\"] and .resolvedConflicts == [\"$SID\"] and .errors == []"
	[ "$(cat "$CHATS/archive/$SID.jsonl")" = other ]
	[ ! -e "$CHATS/$SID.jsonl" ]
	[ ! -e "$CHATS/$SID.ledger.jsonl" ]
	[ -f "$CHATS/archive/$B.jsonl" ]
	# Unarchive: the active copy stays, the archived one goes.
	req POST /workspaces/primary/sessions/unarchive "{\"sessionIds\":[\"$A\"],\"resolveConflicts\":true}"
	expect 200 ".unarchived == [\"$A\"] and .resolvedConflicts == [\"$A\"]"
	[ "$(tail -1 "$CHATS/$A.jsonl")" = mine ]
	[ ! -e "$CHATS/archive/$A.jsonl" ]
	[ -z "$(ls -A "$CHATS/.trash")" ]
	req POST "/session/$A/load" '{}'
	expect 200
}

@test "batch routes under /workspaces/:ws/: the workspace's sessions" {
	serve_start
	three
	req POST /workspaces/primary/sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".archived == [\"$SID\"]"
	[ -f "$CHATS/archive/$SID.jsonl" ]
	req POST "/workspaces/$(jq -rn --arg s "$WS" '$s | @uri')/sessions/unarchive" "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".unarchived == [\"$SID\"]"
	req POST /workspaces/nope/sessions/delete "{\"sessionIds\":[\"$SID\"]}"
	expect 400 '.code == "workspace_mismatch"'
	req POST /workspaces/primary/sessions/delete "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".removed == [\"$SID\"]"
	[ ! -e "$CHATS/$SID.jsonl" ]
}

@test "batch routes: bad bodies refused" {
	serve_start
	req POST /sessions/delete '{}'
	expect 400 '.code == "bad_request"'
	req POST /sessions/archive '{"sessionIds":"x"}'
	expect 400 '.code == "bad_request"'
	req POST /sessions/unarchive '{"sessionIds":[1]}'
	expect 400 '.code == "bad_request"'
	req POST /sessions/delete "{\"sessionIds\":$(jq -nc '[range(1001) | "x"]')}"
	expect 400 '.code == "bad_request"'
	req POST /sessions/delete 'nope'
	expect 400
}

@test "a live session is refused: neither archived nor deleted" {
	serve_loaded
	req POST /sessions/delete "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".removed == [] and .errors[0].code == \"live_session_active\""
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".archived == [] and .errors[0].code == \"live_session_active\""
	ls "$DATA"/projects/*/chats/$SID.jsonl
	req GET /workspaces/primary/sessions/live-state
	expect 200 ".v == 1 and (.sessions | length) == 1 and .sessions[0].sessionId == \"$SID\""
	expect 200 '.sessions[0].hasActivePrompt == false and .sessions[0].isWaitingForPermission == false'
	req DELETE "/session/$SID"
	expect 204
	req POST /sessions/delete "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".removed == [\"$SID\"]"
}

@test "the writer lease of another live process is respected" {
	serve_start
	three
	mkdir -p "$DATA/tmp/session-writer-locks"
	jq -nc --arg id "$SID" --arg h "$(hostname)" --argjson pid $$ \
	    '{schema_version:2,state:"active",session_id:$id,owner_id:"other",pid:$pid,hostname:$h}' \
	    >"$DATA/tmp/session-writer-locks/$SID.lock"
	req POST /sessions/delete "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".removed == [] and .errors[0].code == \"session_writer_conflict\""
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 '.errors[0].code == "session_writer_conflict"'
	[ -f "$CHATS/$SID.jsonl" ]
	# The lock left by a dead owner does not block (and ours is released).
	jq -nc --arg id "$SID" --arg h "$(hostname)" \
	    '{schema_version:2,state:"active",session_id:$id,owner_id:"gone",pid:1073741000,hostname:$h}' \
	    >"$DATA/tmp/session-writer-locks/$SID.lock"
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200 ".archived == [\"$SID\"]"
	[ ! -e "$DATA/tmp/session-writer-locks/$SID.lock" ]
}

@test "session-info counts active, archived and live sessions" {
	serve_start
	three
	req POST /sessions/archive "{\"sessionIds\":[\"$A\"]}"
	req GET /workspaces/primary/session-info
	expect 200 '.active == 2 and .archived == 1 and .total == 3 and .live == 0'
	expect 200 '.expensive == true and .cost == "disk_scan"'
	req GET "/workspaces/$(jq -rn --arg s "$WS" '$s | @uri')/session-info"
	expect 200 '.total == 3'
	req GET /workspaces/nope/session-info
	expect 400 '.code == "workspace_mismatch"'
	req GET /workspaces/primary/sessions/live-state
	expect 200 '.sessions == [] and (.catalogVersion.generation | length) == 36'
	local rev
	rev=$(jq .catalogVersion.revision <<<"$body")
	req POST /sessions/unarchive "{\"sessionIds\":[\"$A\"]}"
	req GET /workspaces/primary/sessions/live-state
	expect 200 ".catalogVersion.revision > $rev"
}

@test "search: user and assistant text and titles, case folded, newest first, bounded" {
	serve_start
	three
	req GET "/workspace/primary/sessions/search?q=loading"
	expect 200 ".results | map(.session.sessionId) == [\"$SID\", \"$A\", \"$B\"]"
	expect 200 '.results[0].snippet == "Why is loading slow?"'
	req GET "/workspace/primary/sessions/search?q=flaky"
	expect 200 ".results | length == 1 and .[0].session.sessionId == \"$B\""
	expect 200 '.results[0].snippet == "Fix the FLAKY test"'
	req GET "/workspaces/primary/sessions/search?q=PROFILING%20the"
	expect 200 ".results | length == 1 and .[0].session.sessionId == \"$SID\""
	req GET "/workspace/primary/sessions/search?q=loading&maxResults=1"
	expect 200 ".results | length == 1 and .[0].session.sessionId == \"$SID\""
	# The assistant's words are searched too, as upstream searches them;
	# a subtyped record and a tool's output are not.
	req GET "/workspace/primary/sessions/search?q=Because"
	expect 200 ".results | map(.session.sessionId) == [\"$SID\", \"$A\", \"$B\"]"
	expect 200 '.results[0].snippet == "Because."'
	printf '%s\n' '{"uuid":"x1","parentUuid":"a1","sessionId":"b","type":"assistant","subtype":"notice","message":{"role":"model","parts":[{"text":"quokka notice"}]}}' \
	    '{"uuid":"x2","parentUuid":"x1","sessionId":"b","type":"tool_result","message":{"role":"user","parts":[{"text":"wombat output"}]}}' \
	    >>"$CHATS/$B.jsonl"
	req GET "/workspace/primary/sessions/search?q=quokka"
	expect 200 '.results == []'
	req GET "/workspace/primary/sessions/search?q=wombat"
	expect 200 '.results == []'
	# A changed file is read again.
	printf '%s\n' '{"uuid":"u3","parentUuid":null,"sessionId":"a","type":"user","message":{"role":"user","parts":[{"text":"zebra crossing"}]}}' \
	    >>"$CHATS/$A.jsonl"
	req GET "/workspace/primary/sessions/search?q=ZEBRA"
	expect 200 ".results | length == 1 and .[0].session.sessionId == \"$A\""
	req GET "/workspace/primary/sessions/search"
	expect 400 '.code == "invalid_search_query"'
	req GET "/workspace/primary/sessions/search?q=$(head -c 300 /dev/zero | tr '\0' a)"
	expect 400 '.code == "invalid_search_query"'
	req GET "/workspace/primary/sessions/search?q=x&maxResults=51"
	expect 400 '.code == "invalid_search_max_results"'
	req GET "/workspace/primary/sessions/search?q=x&maxResults=0"
	expect 400 '.code == "invalid_search_max_results"'
}

@test "export: JSONL as upstream's (a session_metadata line, then the messages) with its file name; an unknown format refused" {
	serve_start
	three
	req GET "/session/$SID/export?format=jsonl"
	expect 200
	head -1 "$BATS_TEST_TMPDIR/body" | jq -e ".type == \"session_metadata\" and .sessionId == \"$SID\""
	tail -n +2 "$BATS_TEST_TMPDIR/body" | jq -s -e 'length >= 2 and .[0].message.parts[0].text == "Why is loading slow?"'
	[ "$(header Content-Type)" = "application/jsonl; charset=utf-8" ]
	[[ "$(header Content-Disposition)" =~ ^attachment\;\ filename=\"qwen-code-export-[0-9T-]+Z\.jsonl\"$ ]]
	req GET "/session/$SID/export?format=xml"
	expect 400 '.code == "invalid_export_format"'
	req GET "/session/44444444-4444-4444-8444-444444444444/export?format=jsonl"
	expect 404 '.code == "session_not_found"'
}

@test "metadata: a persisted session's title, a custom_title record on its chain" {
	serve_start
	three
	req PATCH "/session/$SID/metadata" '{"displayName":"Renamed by PATCH"}'
	expect 200 '.displayName == "Renamed by PATCH"'
	tail -1 "$CHATS/$SID.jsonl" | jq -e '.type == "system" and .subtype == "custom_title"'
	tail -1 "$CHATS/$SID.jsonl" | jq -e '.parentUuid == "s1" and .systemPayload.customTitle == "Renamed by PATCH"'
	tail -1 "$CHATS/$SID.jsonl" | jq -e ".sessionId == \"$SID\" and (.uuid | length) == 36"
	req GET "/workspace/primary/sessions"
	expect 200 ".sessions[0].sessionId == \"$SID\" and .sessions[0].displayName == \"Renamed by PATCH\""
	expect 200 '.sessions[0].titleSource == "manual" and .sessions[0].firstPrompt == "Why is loading slow?"'
	req GET "/workspace/primary/sessions/search?q=by%20patch"
	expect 200 ".results | length == 1 and .[0].session.sessionId == \"$SID\""
	req PATCH "/session/$SID/metadata" '{"displayName":""}'
	expect 400 '.code == "invalid_metadata" and .field == "displayName"'
	req PATCH "/session/$SID/metadata" '{"displayName":"a\nb"}'
	expect 400 '.code == "invalid_metadata"'
	req PATCH "/session/$SID/metadata" '{"pr":{"number":1}}'
	expect 400 '.code == "invalid_metadata" and .field == "pr"'
	req PATCH "/session/44444444-4444-4444-8444-444444444444/metadata" '{"displayName":"x"}'
	expect 404 '.code == "session_not_found"'
	req POST /sessions/archive "{\"sessionIds\":[\"$A\"]}"
	req PATCH "/session/$A/metadata" '{"displayName":"x"}'
	expect 409 '.code == "session_archived"'
	mkdir -p "$DATA/tmp/session-writer-locks"
	jq -nc --arg id "$B" --arg h "$(hostname)" --argjson pid $$ \
	    '{schema_version:2,state:"active",session_id:$id,owner_id:"other",pid:$pid,hostname:$h}' \
	    >"$DATA/tmp/session-writer-locks/$B.lock"
	req PATCH "/session/$B/metadata" '{"displayName":"x"}'
	expect 409 '.code == "session_writer_conflict"'
	run ! grep -q '"customTitle":"x"' "$CHATS/$B.jsonl"
}

@test "metadata: a live session's title is appended by its child, on its tail, and announced" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_loaded
	sse_open ev "/session/$SID/events"
	req PATCH "/session/$SID/metadata" '{"displayName":"Live title"}'
	expect 200 '.displayName == "Live title"'
	local f tid
	f=$(ls "$DATA"/projects/*/chats/$SID.jsonl)
	tail -1 "$f" | jq -e '.subtype == "custom_title" and .systemPayload.customTitle == "Live title"'
	tail -1 "$f" | jq -e '.parentUuid == "a1"'
	tid=$(tail -1 "$f" | jq -r .uuid)
	sse_wait ev ".type == \"session_metadata_updated\" and .data.displayName == \"Live title\""
	# The next prompt's first record hangs from the title.
	prompt_turn ev2 "$SID"
	jq -s -e --arg t "$tid" 'map(select(.parentUuid == $t)) | length == 1 and .[0].type == "user"' "$f"
	req PATCH "/session/$SID/metadata" '{"displayName":""}'
	expect 400 '.code == "invalid_metadata"'
}

# A transcript with a dead end, a tool result and a scheduled turn.
turns_fixture() {
	SID=11111111-1111-4111-8111-111111111111
	local san dir
	san=$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')
	dir=$DATA/projects/$san/chats
	mkdir -p "$dir"
	cat >"$dir/$SID.jsonl" <<EOF
{"uuid":"u1","parentUuid":null,"sessionId":"$SID","timestamp":"2026-08-01T15:00:00.000Z","type":"user","cwd":"$WS","message":{"role":"user","parts":[{"text":"first\\nprompt"}]}}
{"uuid":"a1","parentUuid":"u1","sessionId":"$SID","timestamp":"2026-08-01T15:00:01.000Z","type":"assistant","cwd":"$WS","message":{"role":"model","parts":[{"text":"ok"}]}}
{"uuid":"ux","parentUuid":"a1","sessionId":"$SID","timestamp":"2026-08-01T15:00:02.000Z","type":"user","cwd":"$WS","message":{"role":"user","parts":[{"text":"dead end"}]}}
{"uuid":"u2","parentUuid":"a1","sessionId":"$SID","timestamp":"2026-08-01T15:00:03.000Z","type":"user","cwd":"$WS","message":{"role":"user","parts":[{"text":"second"}]}}
{"uuid":"t2","parentUuid":"u2","sessionId":"$SID","timestamp":"2026-08-01T15:00:04.000Z","type":"tool_result","cwd":"$WS","message":{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"x","response":{"output":"y"}}}]}}
{"uuid":"a2","parentUuid":"t2","sessionId":"$SID","timestamp":"2026-08-01T15:00:05.000Z","type":"assistant","cwd":"$WS","message":{"role":"model","parts":[{"text":"done"}]}}
{"uuid":"u3","parentUuid":"a2","sessionId":"$SID","timestamp":"2026-08-01T15:00:06.000Z","type":"user","subtype":"cron","cwd":"$WS","message":{"role":"user","parts":[{"text":"nightly"}]}}
{"uuid":"a3","parentUuid":"u3","sessionId":"$SID","timestamp":"2026-08-01T15:00:07.000Z","type":"assistant","cwd":"$WS","message":{"role":"model","parts":[{"text":"ran"}]}}
EOF
}

@test "turn-index: the prompts of the active history, paged, from the child's index" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start
	turns_fixture
	req GET "/session/$SID/turn-index"
	expect 200 ".v == 1 and .sessionId == \"$SID\" and .totalTurns == 3 and .start == 0"
	expect 200 '.turns | map(.turnId) == ["u1", "u2", "u3"]'
	expect 200 '.turns | map(.kind) == ["prompt", "prompt", "scheduled"]'
	expect 200 '.turns[0].label == "first prompt" and .turns[0].ordinal == 0'
	expect 200 '.turns[1].timestamp == "2026-08-01T15:00:03.000Z"'
	expect 200 '.snapshot | startswith("v1.")'
	local snap
	snap=$(jq -r .snapshot <<<"$body")
	req GET "/session/$SID/turn-index?start=1&limit=1&snapshot=$snap"
	expect 200 '.totalTurns == 3 and .start == 1 and (.turns | length) == 1'
	expect 200 '.turns[0].ordinal == 1 and .turns[0].turnId == "u2" and .turns[0].label == "second"'
	req GET "/session/$SID/turn-index?start=9"
	expect 200 '.turns == [] and .totalTurns == 3'
	# A turn's id is a branch point.
	req POST "/session/$SID/branch" '{"atRecordId":"u2"}'
	[ "$code" -ge 200 ]
	[ "$code" -lt 300 ]
	req GET "/session/$SID/turn-index?limit=0"
	expect 400 '.code == "invalid_transcript_limit"'
	req GET "/session/$SID/turn-index?start=-1"
	expect 400 '.code == "bad_request"'
	req GET "/session/44444444-4444-4444-8444-444444444444/turn-index"
	expect 404 '.code == "session_not_found"'
}

@test "capabilities advertise the management tags served" {
	serve_start
	req GET /capabilities
	for t in session_info session_archive session_export workspace_session_live_state \
	    session_metadata session_organization; do
		jq -e --arg t "$t" '.features | index($t)' >/dev/null <<<"$body"
	done
}

@test "SDK: getSessionTurnIndexPage" {
	command -v node >/dev/null || skip "node not installed"
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start
	turns_fixture
	sdk_run turns
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - getSessionTurnIndexPage pages"* ]]
}

@test "SDK: search, info, live state, export, archive, unarchive, delete" {
	command -v node >/dev/null || skip "node not installed"
	serve_start
	three
	sdk_run manage
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - deleteSessionsData removes it"* ]]
}
