#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: session groups and a session's organization (pinned, group,
# color) with upstream's routes, kept in one document per workspace that
# is replaced whole, and shown in the session list; through curl and the SDK.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

two() {
	SID=11111111-1111-4111-8111-111111111111
	make_transcript 22222222-2222-4222-8222-222222222222
	make_transcript "$SID"
	CHATS=$(dirname "$(ls "$DATA"/projects/*/chats/$SID.jsonl)")
}

@test "groups: create, list, update, delete; a session organized and listed with it" {
	serve_start
	two
	req GET /workspace/primary/session-groups
	expect 200 '.groups == [] and (.colorOptions | index("purple")) != null'
	req POST /workspace/primary/session-groups '{"name":"Work","color":"blue"}'
	expect 201 '.group.name == "Work" and .group.color == "blue" and .group.order == 0'
	local gid
	gid=$(jq -r .group.id <<<"$body")
	req POST /workspaces/primary/session-groups '{"name":"Home","color":"#12ab9F"}'
	expect 201 '.group.order == 1'
	req GET /workspaces/primary/session-groups
	expect 200 '.groups | map(.name) == ["Work", "Home"]'
	req PATCH "/workspace/primary/session-groups/$gid" '{"name":"Job","order":5}'
	expect 200 ".group.id == \"$gid\" and .group.name == \"Job\" and .group.order == 5 and .group.color == \"blue\""
	req PATCH "/session/$SID/organization" "{\"isPinned\":true,\"groupId\":\"$gid\",\"color\":\"red\"}"
	expect 200 ".sessionId == \"$SID\" and .isPinned == true and .groupId == \"$gid\" and .color == \"red\""
	expect 200 '(.pinnedAt | length) > 0 and (.updatedAt | length) > 0'
	req GET /workspace/primary/sessions
	expect 200 ".sessions[] | select(.sessionId == \"$SID\") | .isPinned == true and .groupId == \"$gid\" and .color == \"red\""
	# Deleting the group ungroups its sessions.
	req DELETE "/workspace/primary/session-groups/$gid"
	expect 200 '.deleted == true'
	req GET /workspace/primary/sessions
	expect 200 ".sessions[] | select(.sessionId == \"$SID\") | .groupId == null and .isPinned == true"
	req PATCH "/session/$SID/organization" '{"isPinned":false,"color":null}'
	expect 200 '.isPinned == false and .color == null and (has("pinnedAt") | not)'
	jq -e '.v == 1 and (.groups | length) == 1' "$CHATS/.qwen-serve-organization.json"
	[ -z "$(ls "$CHATS"/.org.*.tmp 2>/dev/null)" ]
}

@test "view=organized: pinned first, then newest; group filters all, pinned, ungrouped, a group" {
	serve_start
	local a=aaaaaaaa-0000-4000-8000-000000000001 b=bbbbbbbb-0000-4000-8000-000000000002
	local c=cccccccc-0000-4000-8000-000000000003 d=dddddddd-0000-4000-8000-000000000004 gid
	make_transcript "$a"
	make_transcript "$b"
	make_transcript "$c"
	make_transcript "$d"
	CHATS=$(dirname "$(ls "$DATA"/projects/*/chats/$a.jsonl)")
	touch -d '2026-01-01 00:00:01' "$CHATS/$a.jsonl"
	touch -d '2026-01-01 00:00:02' "$CHATS/$b.jsonl"
	touch -d '2026-01-01 00:00:03' "$CHATS/$c.jsonl"
	touch -d '2026-01-01 00:00:04' "$CHATS/$d.jsonl"
	req POST /workspace/primary/session-groups '{"name":"Work","color":"blue"}'
	gid=$(jq -r .group.id <<<"$body")
	req PATCH "/session/$a/organization" '{"isPinned":true}'
	expect 200
	req PATCH "/session/$b/organization" "{\"groupId\":\"$gid\"}"
	expect 200
	req PATCH "/session/$c/organization" '{"color":"red"}'
	expect 200
	req GET "/workspace/primary/sessions"
	expect 200 ".sessions | map(.sessionId) == [\"$d\", \"$c\", \"$b\", \"$a\"]"
	req GET "/workspace/primary/sessions?view=organized"
	expect 200 ".sessions | map(.sessionId) == [\"$a\", \"$d\", \"$c\", \"$b\"]"
	req GET "/workspace/primary/sessions?view=organized&group=all&size=2"
	expect 200 "(.sessions | map(.sessionId)) == [\"$a\", \"$d\"] and .nextCursor == \"2\""
	req GET "/workspace/primary/sessions?view=organized&group=all&size=2&cursor=2"
	expect 200 "(.sessions | map(.sessionId)) == [\"$c\", \"$b\"] and (has(\"nextCursor\") | not)"
	req GET "/workspace/primary/sessions?view=organized&group=pinned"
	expect 200 ".sessions | map(.sessionId) == [\"$a\"]"
	# Ungrouped: neither a group nor a color (a pinned session counts).
	req GET "/workspace/primary/sessions?view=organized&group=ungrouped"
	expect 200 ".sessions | map(.sessionId) == [\"$a\", \"$d\"]"
	req GET "/workspaces/primary/sessions?view=organized&group=$gid"
	expect 200 "(.sessions | map(.sessionId)) == [\"$b\"] and .sessions[0].groupId == \"$gid\""
	req GET "/workspace/primary/sessions?view=organized&group=nope"
	expect 404 '.code == "group_not_found"'
	req GET "/workspace/primary/sessions?group=pinned"
	expect 400 '.code == "invalid_session_group_filter"'
	# Archived sessions are organized the same way.
	req POST /sessions/archive "{\"sessionIds\":[\"$a\",\"$d\"]}"
	req GET "/workspace/primary/sessions?view=organized&archiveState=archived"
	expect 200 ".sessions | map(.sessionId) == [\"$a\", \"$d\"]"
}

@test "groups: bad input refused, unknown groups and sessions 404" {
	serve_start
	two
	req POST /workspace/primary/session-groups '{"name":"x"}'
	expect 400 '.code == "bad_request"'
	req POST /workspace/primary/session-groups '{"name":"x","color":"pink"}'
	expect 400 '.code == "bad_request"'
	req POST /workspace/primary/session-groups "{\"name\":\"$(head -c 65 /dev/zero | tr '\0' n)\",\"color\":\"red\"}"
	expect 400 '.code == "bad_request"'
	req PATCH /workspace/primary/session-groups/nope '{"name":"y"}'
	expect 404 '.code == "group_not_found"'
	req DELETE /workspace/primary/session-groups/nope
	expect 404 '.code == "group_not_found"'
	req PATCH "/session/$SID/organization" '{"groupId":"nope"}'
	expect 404 '.code == "group_not_found"'
	req PATCH "/session/$SID/organization" '{"isPinned":"yes"}'
	expect 400 '.code == "invalid_session_organization"'
	req PATCH "/session/$SID/organization" '{"color":"#123456"}'
	expect 400 '.code == "invalid_session_organization"'
	req PATCH /session/44444444-4444-4444-8444-444444444444/organization '{"isPinned":true}'
	expect 404 '.code == "session_not_found"'
	req GET /workspace/nope/session-groups
	expect 400 '.code == "workspace_mismatch"'
	for i in $(seq 100); do
		req POST /workspace/primary/session-groups "{\"name\":\"g$i\",\"color\":\"red\"}"
		expect 201
	done
	req POST /workspace/primary/session-groups '{"name":"one more","color":"red"}'
	expect 400 '.code == "bad_request"'
}

@test "groups: a damaged document is never overwritten" {
	serve_start
	two
	echo '{"v":1,"groups":[' >"$CHATS/.qwen-serve-organization.json"
	req POST /workspace/primary/session-groups '{"name":"Work","color":"blue"}'
	expect 500
	req PATCH "/session/$SID/organization" '{"isPinned":true}'
	expect 500
	[ "$(cat "$CHATS/.qwen-serve-organization.json")" = '{"v":1,"groups":[' ]
	req GET /workspace/primary/sessions
	expect 200 '.sessions | length == 2'
}

@test "SDK: session groups and updateSessionOrganization" {
	command -v node >/dev/null || skip "node not installed"
	serve_start
	two
	sdk_run groups
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - deleteSessionGroup"* ]]
}
