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
