#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: upstream's standalone (projectless) sessions, each in its
# own private working directory <data-dir>/standalone/<id>.

load serve_helper
bats_require_minimum_version 1.5.0

SA=33333333-3333-4333-8333-333333333333

teardown() {
	serve_teardown
}

# Standalone directories as the daemon makes them (0700).
sa_dirs() {
	mkdir -p -m 700 "$DATA/standalone"
	for id; do mkdir -m 700 "$DATA/standalone/$id"; done
}

# A transcript for id in the standalone directory's workspace.
sa_transcript() {
	local id=$1 wd=$DATA/standalone/$1 san dir
	san=$(printf '%s' "$wd" | sed 's/[^A-Za-z0-9]/-/g')
	dir=$DATA/projects/$san/chats
	mkdir -p "$dir"
	cat >"$dir/$id.jsonl" <<EOT
{"uuid":"u1","parentUuid":null,"sessionId":"$id","timestamp":"2026-08-01T15:01:13.619Z","type":"user","cwd":"$wd","version":"0.24.4","message":{"role":"user","parts":[{"text":"Alone?"}]}}
{"uuid":"a1","parentUuid":"u1","sessionId":"$id","timestamp":"2026-08-01T15:01:20.678Z","type":"assistant","cwd":"$wd","version":"0.24.4","message":{"role":"model","parts":[{"text":"Yes."}]}}
EOT
}

@test "standalone: create makes a private directory and a live session there" {
	real_child_serve
	req POST /standalone/sessions "{\"sessionId\":\"$SA\"}"
	echo "$body"
	expect 200 ".sessionId == \"$SA\" and .sourceType == \"standalone\""
	expect 200 '.context.kind == "standalone" and .workingDirectory.state == "ready"'
	expect 200 ".projectlessOutputDirectory == \"$DATA/standalone/$SA\""
	expect 200 ".workspaceCwd == \"$DATA/standalone/$SA\""
	[ -d "$DATA/standalone/$SA" ]
	[ "$(stat -c %a "$DATA/standalone/$SA")" = 700 ]
	[ "$(stat -c %a "$DATA/standalone")" = 700 ]
	# The same id again is a conflict.
	req POST /standalone/sessions "{\"sessionId\":\"$SA\"}"
	expect 409 '.code == "standalone_session_conflict"'
	# A live one is refused by delete, and stays.
	req POST /standalone/sessions/delete "{\"sessionIds\":[\"$SA\"]}"
	echo "$body"
	expect 200 '.removed == [] and (.errors | length) == 1'
	[ -d "$DATA/standalone/$SA" ]
}

@test "standalone: create refuses bad bodies" {
	serve_start
	req POST /standalone/sessions '{}'
	expect 400 '.code == "invalid_request" and .errorKind == "invalid_request"'
	req POST /standalone/sessions '{"sessionId":"../../etc"}'
	expect 400 '.code == "invalid_request"'
	req POST /standalone/sessions "{\"sessionId\":\"$SA\",\"cwd\":\"/tmp\"}"
	expect 400 '.error == "The request body contains unknown fields."'
	req POST /standalone/sessions "{\"sessionId\":\"$SA\",\"modelServiceId\":\"\"}"
	expect 400 '.code == "invalid_request"'
	req POST /standalone/sessions "{\"sessionId\":\"$SA\",\"approvalMode\":\"nope\"}"
	expect 400
	[ ! -e "$DATA/standalone/$SA" ]
	# A workspace session's id is not a standalone one.
	make_transcript
	req POST /standalone/sessions "{\"sessionId\":\"$SID\"}"
	expect 409 '.code == "standalone_session_conflict"'
}

@test "standalone: a create that failed leaves its id free: made again, not a conflict" {
	FAKE_CHILD="fail-first=session/new:-32603" serve_start
	req POST /standalone/sessions "{\"sessionId\":\"$SA\"}"
	echo "$body"
	[ "$code" -ge 500 ]
	[ -d "$DATA/standalone/$SA" ]
	# Each standalone session has a child of its own, which fails its
	# first session/new: the next daemon's children do not.
	serve_stop
	serve_start
	req POST /standalone/sessions "{\"sessionId\":\"$SA\"}"
	echo "$body"
	expect 200 ".sessionId == \"$SA\" and .sourceType == \"standalone\""
	[ -d "$DATA/standalone/$SA" ]
	# A live one is still a conflict.
	req POST /standalone/sessions "{\"sessionId\":\"$SA\"}"
	expect 409 '.code == "standalone_session_conflict"'
}

@test "standalone: list, get and export reuse the listing and export" {
	serve_start
	sa_dirs "$SA"
	sa_transcript "$SA"
	make_transcript		# a workspace session is not listed
	req GET /standalone/sessions
	echo "$body"
	expect 200 ".sessions | length == 1 and .[0].sessionId == \"$SA\""
	expect 200 '.sessions[0].sourceType == "standalone" and .sessions[0].context.kind == "standalone"'
	expect 200 ".sessions[0].workspaceCwd == \"$DATA/standalone/$SA\""
	req GET "/standalone/sessions/$SA"
	expect 200 ".sessionId == \"$SA\" and .sourceType == \"standalone\" and .firstPrompt == \"Alone?\""
	req GET "/standalone/sessions/$SID"
	expect 404 '.code == "standalone_session_not_found"'
	req GET "/standalone/sessions/..%2f..%2fetc"
	[ "$code" -ge 400 ]
	[ "$code" -lt 500 ]
	req GET '/standalone/sessions?size=0'
	expect 400 '.code == "invalid_request"'
	req GET '/standalone/sessions?archiveState=gone'
	expect 400
	req GET '/standalone/sessions?cursor=x'
	expect 400 '.code == "invalid_cursor"'
	req GET '/standalone/sessions?what=1'
	expect 400 '.error == "The request query contains unknown fields."'
	req GET "/standalone/sessions/$SA/export?format=md"
	expect 200
	[[ "$body" == *"Alone?"* ]]
	req GET "/standalone/sessions/$SA/export?format=pdf"
	expect 400
	req GET "/standalone/sessions/$SID/export"
	expect 404 '.code == "standalone_session_not_found"'
}

@test "standalone: list pages newest first with a cursor" {
	serve_start
	local a=44444444-4444-4444-8444-444444444444
	sa_dirs "$SA" "$a"
	sa_transcript "$SA"
	sa_transcript "$a"
	touch -d '2026-01-01' "$DATA"/projects/*"$SA"/chats/"$SA".jsonl
	req GET '/standalone/sessions?size=1'
	echo "$body"
	expect 200 ".sessions[0].sessionId == \"$a\" and .nextCursor == \"1\""
	req GET '/standalone/sessions?size=1&cursor=1'
	expect 200 ".sessions[0].sessionId == \"$SA\" and (has(\"nextCursor\") | not)"
}

@test "standalone: metadata, archive, unarchive, delete" {
	serve_start
	sa_dirs "$SA"
	sa_transcript "$SA"
	req PATCH "/standalone/sessions/$SA/metadata" '{"displayName":"Alone"}'
	expect 200 ".sessionId == \"$SA\" and .displayName == \"Alone\""
	req GET "/standalone/sessions/$SA"
	expect 200 '.displayName == "Alone"'
	req PATCH "/standalone/sessions/$SA/metadata" '{"displayName":1}'
	expect 400 '.code == "invalid_request"'
	req PATCH "/standalone/sessions/$SA/metadata" '{"displayName":"a","pr":1}'
	expect 400 '.code == "invalid_request"'
	req PATCH "/standalone/sessions/$SID/metadata" '{"displayName":"x"}'
	expect 404 '.code == "standalone_session_not_found"'
	req POST /standalone/sessions/archive "{\"sessionIds\":[\"$SA\",\"$SID\"]}"
	echo "$body"
	expect 200 ".archived == [\"$SA\"] and .notFound == [\"$SID\"] and .errors == []"
	req POST /standalone/sessions/archive "{\"sessionIds\":[\"$SA\"]}"
	expect 200 ".alreadyArchived == [\"$SA\"]"
	req GET /standalone/sessions
	expect 200 '.sessions == []'
	req GET '/standalone/sessions?archiveState=archived'
	expect 200 ".sessions[0].sessionId == \"$SA\" and .sessions[0].isArchived == true"
	req POST /standalone/sessions/unarchive "{\"sessionIds\":[\"$SA\"]}"
	expect 200 ".unarchived == [\"$SA\"]"
	req POST /standalone/sessions/unarchive "{\"sessionIds\":[\"$SA\"]}"
	expect 200 ".alreadyActive == [\"$SA\"]"
	req POST /standalone/sessions/delete '{"sessionIds":[]}'
	expect 400 '.code == "invalid_request"'
	req POST /standalone/sessions/delete '{"sessionIds":[1]}'
	expect 400
	req POST /standalone/sessions/delete "{\"sessionIds\":[\"$SA\",\"../x\"]}"
	echo "$body"
	expect 200 ".removed == [\"$SA\"] and .notFound == [\"../x\"] and .fileCleanupPending == []"
	[ ! -e "$DATA/standalone/$SA" ]
	[ ! -e "$DATA"/projects/*"$SA"/chats/"$SA".jsonl ]
	req GET "/standalone/sessions/$SA"
	expect 404
}

@test "standalone: repair-directory and load remake a missing directory" {
	real_child_serve
	sa_dirs "$SA"
	sa_transcript "$SA"
	req POST "/standalone/sessions/$SA/repair-directory" '{}'
	expect 200 ".sessionId == \"$SA\" and .workingDirectory.state == \"ready\""
	rmdir "$DATA/standalone/$SA"
	# Still a standalone session: listed and found by its transcript.
	req GET /standalone/sessions
	expect 200 ".sessions[0].sessionId == \"$SA\""
	req GET "/standalone/sessions/$SA"
	expect 200 ".sessionId == \"$SA\""
	req POST "/standalone/sessions/$SA/repair-directory" '{"x":1}'
	expect 400 '.code == "invalid_request"'
	req POST "/standalone/sessions/$SA/repair-directory" '{}'
	echo "$body"
	expect 200 ".workingDirectory.state == \"recreated\" and (.workingDirectory.warnings | length) == 1"
	expect 200 ".projectlessOutputDirectory == \"$DATA/standalone/$SA\""
	[ "$(stat -c %a "$DATA/standalone/$SA")" = 700 ]
	req POST "/standalone/sessions/$SID/repair-directory" '{}'
	expect 404 '.code == "standalone_session_not_found"'
	# A directory somebody else may write into is refused.
	chmod 777 "$DATA/standalone/$SA"
	req POST "/standalone/sessions/$SA/repair-directory" '{}'
	expect 409 '.code == "working_directory_compromised"'
	chmod 700 "$DATA/standalone/$SA"
	rmdir "$DATA/standalone/$SA"
	req POST "/standalone/sessions/$SA/load" '{"bogus":1}'
	expect 400 '.code == "invalid_request"'
	req POST "/standalone/sessions/$SA/load" '{}'
	echo "$body"
	expect 200 ".sessionId == \"$SA\" and .sourceType == \"standalone\" and .workingDirectory.state == \"recreated\""
	expect 200 '(.compactedReplay | length) > 0 and (.state | type) == "object"'
	[ -d "$DATA/standalone/$SA" ]
	req POST "/standalone/sessions/$SA/resume" '{}'
	expect 200 ".sessionId == \"$SA\" and .workingDirectory.state == \"ready\""
	req POST "/standalone/sessions/$SID/resume" '{}'
	expect 404 '.code == "standalone_session_not_found"'
	req POST /standalone/sessions/delete "{\"sessionIds\":[\"$SA\"]}"
	expect 200 '.removed == [] and .errors[0].sessionId != null'
}
