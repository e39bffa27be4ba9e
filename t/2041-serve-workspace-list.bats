#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: GET /workspace/:ws/sessions, upstream's paged session list
# (size, cursor, archiveState, and the parentSessionId, sourceType and
# sourceId filters), through curl and the real SDK; the
# capability tags this daemon advertises, each answered by its route.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

# Three transcripts, SID the newest.
three() {
	SID=11111111-1111-4111-8111-111111111111
	make_transcript 33333333-3333-4333-8333-333333333333
	make_transcript 22222222-2222-4222-8222-222222222222
	make_transcript "$SID"
	local dir
	dir=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
	touch -d '2026-01-01 00:00:01' "$dir/33333333-3333-4333-8333-333333333333.jsonl"
	touch -d '2026-01-01 00:00:02' "$dir/22222222-2222-4222-8222-222222222222.jsonl"
	touch -d '2026-01-01 00:00:03' "$dir/$SID.jsonl"
}

enc() {
	jq -rn --arg s "$1" '$s | @uri'
}

@test "GET /workspace/:ws/sessions: pages newest first with a cursor, by cwd or workspace id" {
	serve_start
	three
	req GET "/workspace/$(enc "$WS")/sessions?size=2"
	expect 200 ".sessions | length == 2"
	expect 200 ".sessions[0].sessionId == \"$SID\" and .sessions[0].workspaceCwd == \"$WS\""
	expect 200 '.sessions[0].displayName == "Why is loading slow?"'
	expect 200 '.sessions[0].updatedAt == "2026-01-01T00:00:03.000Z"'
	expect 200 '.nextCursor == "2"'
	req GET "/workspace/$(enc "$WS")/sessions?size=2&cursor=2"
	expect 200 '.sessions | length == 1'
	expect 200 '.sessions[0].sessionId == "33333333-3333-4333-8333-333333333333"'
	expect 200 'has("nextCursor") | not'
	req GET "/workspace/primary/sessions"
	expect 200 '.sessions | length == 3'
	expect 200 'has("nextCursor") | not'
	req GET "/workspace/primary/sessions?cursor=9"
	expect 200 '.sessions == []'
	req GET "/workspace/primary/sessions?archiveState=archived"
	expect 200 '.sessions == []'
}

@test "GET /workspace/:ws/sessions: bad workspace, size, cursor and filters refused" {
	serve_start
	three
	req GET "/workspace/$(enc /etc)/sessions"
	expect 400 '.code == "workspace_mismatch"'
	req GET "/workspace/nope/sessions"
	expect 400 '.code == "workspace_mismatch"'
	req GET "/workspace/primary/sessions?size=0"
	expect 400 '.code == "bad_request"'
	req GET "/workspace/primary/sessions?size=1001"
	expect 400 '.code == "bad_request"'
	req GET "/workspace/primary/sessions?cursor=-1"
	expect 400 '.code == "bad_request"'
	req GET "/workspace/primary/sessions?archiveState=both"
	expect 400 '.code == "invalid_archive_state"'
	req GET "/workspace/primary/sessions?group=pinned"
	expect 400 '.code == "invalid_session_group_filter"'
	req GET "/workspace/primary/sessions?view=flat"
	expect 400 '.code == "invalid_session_view"'
	req GET "/workspace/primary/sessions?view=organized&group=nope"
	expect 404 '.code == "group_not_found"'
	req GET "/workspace/primary/sessions?parentSessionId="
	expect 400 '.code == "invalid_parent_session_id"'
	req GET "/workspace/primary/sessions?view=organized&parentSessionId=$SID"
	expect 400 '.code == "invalid_parent_session_filter"'
	for q in 'sourceType=Bad' 'sourceType=' 'sourceId=x' 'sourceType=9x' \
	    "sourceType=side_task&sourceId=" "sourceType=cli&sourceId=a%01b" \
	    "sourceType=cli&sourceId=$(head -c 257 /dev/zero | tr '\0' x)" \
	    "sourceType=$(head -c 65 /dev/zero | tr '\0' x)"; do
		req GET "/workspace/primary/sessions?$q"
		expect 400 '.code == "invalid_session_source"'
	done
	req GET "/workspace/primary/sessions?sourceType=cli&sourceId=$(head -c 256 /dev/zero | tr '\0' x)"
	expect 200 '.sessions == []'
	req POST "/workspace/primary/sessions" '{}'
	expect 405
}

# A session_source or parent_session record appended to id's transcript.
tag() {
	local id=$1 sub=$2 payload=$3 dir
	dir=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
	printf '{"uuid":"%s-%s","parentUuid":"a1","sessionId":"%s","timestamp":"2026-08-01T15:02:00.000Z","type":"system","subtype":"%s","systemPayload":%s}\n' \
	    "$sub" "$id" "$id" "$sub" "$payload" >>"$dir/$id.jsonl"
}

@test "GET /workspace/:ws/sessions: parentSessionId, sourceType and sourceId keep their sessions, paged" {
	serve_start
	three
	local s2=22222222-2222-4222-8222-222222222222 s3=33333333-3333-4333-8333-333333333333
	local dir
	dir=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
	tag "$s2" parent_session "{\"parentSessionId\":\"$SID\"}"
	tag "$s2" session_source '{"sourceType":"side_task","sourceId":"t-1"}'
	tag "$s3" parent_session "{\"parentSessionId\":\"$SID\"}"
	tag "$s3" session_source '{"sourceType":"side_task","sourceId":"t-2"}'
	tag "$SID" session_source '{"sourceType":"qwen-live"}'
	touch -d '2026-01-01 00:00:01' "$dir/$s3.jsonl"
	touch -d '2026-01-01 00:00:02' "$dir/$s2.jsonl"
	req GET "/workspace/primary/sessions?parentSessionId=$SID"
	expect 200 "[.sessions[].sessionId] == [\"$s2\", \"$s3\"]"
	expect 200 ".sessions[0].parentSessionId == \"$SID\" and .sessions[0].sourceType == \"side_task\""
	expect 200 '.sessions[0].sourceId == "t-1"'
	expect 200 'has("nextCursor") | not'
	# Paged: the cursor counts the matches.
	req GET "/workspace/primary/sessions?parentSessionId=$SID&size=1"
	expect 200 "[.sessions[].sessionId] == [\"$s2\"] and .nextCursor == \"1\""
	req GET "/workspace/primary/sessions?parentSessionId=$SID&size=1&cursor=1"
	expect 200 "[.sessions[].sessionId] == [\"$s3\"] and (has(\"nextCursor\") | not)"
	req GET "/workspace/primary/sessions?parentSessionId=$s2"
	expect 200 '.sessions == []'
	req GET "/workspace/primary/sessions?sourceType=side_task&sourceId=t-2"
	expect 200 "[.sessions[].sessionId] == [\"$s3\"]"
	req GET "/workspace/primary/sessions?sourceType=side_task"
	expect 200 '.sessions | length == 2'
	# default: no source, or qwen-live's, as upstream's.
	req GET "/workspace/primary/sessions?sourceType=default"
	expect 200 "[.sessions[].sessionId] == [\"$SID\"] and .sessions[0].sourceType == \"qwen-live\""
	req GET "/workspace/primary/sessions?sourceType=qwen-live"
	expect 200 "[.sessions[].sessionId] == [\"$SID\"]"
	# The last record wins.
	tag "$s3" session_source '{"sourceType":"cli"}'
	req GET "/workspace/primary/sessions?sourceType=side_task"
	expect 200 "[.sessions[].sessionId] == [\"$s2\"]"
	req GET "/workspace/primary/sessions"
	expect 200 '.sessions | length == 3'
}

@test "capabilities: first-responder policy; each advertised management tag answers its route" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start
	three
	req GET /capabilities
	expect 200 '.policy.permission == "first-responder"'
	local tags
	tags=$(jq -r '.features[]' <<<"$body")
	for t in session_list workspace_session_list daemon_status session_branch \
	    session_status session_transcript session_permission_vote permission_mediation; do
		grep -qx "$t" <<<"$tags"
	done
	req GET "/workspace/primary/sessions"
	expect 200 '.sessions | length == 3'
	req GET /workspace/sessions
	expect 200 '.sessions | length == 3'
	req GET /daemon/status
	expect 200 '.status == "ok"'
	req GET "/session/$SID/transcript"
	expect 200 '.events | length > 0'
	req POST "/session/$SID/branch" '{"name":"b","atRecordId":"u1"}'
	[ "$code" -ge 200 ]
	[ "$code" -lt 300 ]
	req POST /session '{}'
	expect 200
	local id
	id=$(jq -r .sessionId <<<"$body")
	req GET "/session/$id/status"
	expect 200 '.isWaitingForPermission == false'
	req POST "/session/$id/permission/no-such" '{"outcome":{"outcome":"cancelled"}}'
	expect 404
	# An agent-level route is passed to the agent, which (qwen-acp-child)
	# lacks the method: its JSON-RPC error at once, never a hang.
	req GET "/session/$id/context"
	expect 500 '.code == -32601'
	# No tag upstream's registry lacks (delete, search and the groups
	# have none there; fork and continue neither).
	for t in session_delete session_search \
	    session_groups session_fork session_continue; do
		run ! grep -qx "$t" <<<"$tags"
	done
}

@test "SDK: listWorkspaceSessionsPage pages and listWorkspaceSessions" {
	command -v node >/dev/null || skip "node not installed"
	serve_start
	three
	sdk_run list
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - no archived sessions"* ]]
}
