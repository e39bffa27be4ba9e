#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: POST /sessions/catalog, upstream's session catalog batch:
# a page of each workspace named (by id or cwd, "all"), each with its own
# cursor; per-member errors (unknown workspace, bad cursor, unknown group)
# inside a 200; the body checked as strictly as upstream's schema.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

A1=aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaa1
A2=aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaa2
A3=aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaa3
B1=bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbb1

# Two workspaces: $WS (primary: A3 newest, A2, A1) and $WSB (B1).
two() {
	WS=$BATS_TEST_TMPDIR/ws
	WSB=$BATS_TEST_TMPDIR/wsb
	mkdir -p "$WS" "$WSB"
	WS=$(cd "$WS" && pwd -P)
	WSB=$(cd "$WSB" && pwd -P)
	serve_start --workspace "$WS" --workspace "$WSB"
	local t=1 id
	for id in $A1 $A2 $A3; do
		make_transcript "$id"
		touch -d "2026-01-01 00:00:0$t" "$DATA"/projects/*/chats/"$id.jsonl"
		t=$((t + 1))
	done
	local ws=$WS
	WS=$WSB make_transcript "$B1"
	WS=$ws
}

cat_req() {
	req POST /sessions/catalog "$1"
}

@test "POST /sessions/catalog: a page of each workspace, by id and by cwd, each with its cursor" {
	two
	cat_req "{\"workspaces\":[{\"workspace\":\"primary\"},{\"workspace\":\"$WSB\"}],\"options\":{\"size\":2}}"
	expect 200 '.workspaces | length == 2'
	expect 200 ".workspaces[0].workspace == \"primary\" and .workspaces[0].workspaceId == \"primary\" and .workspaces[0].cwd == \"$WS\""
	expect 200 "[.workspaces[0].sessions[].sessionId] == [\"$A3\", \"$A2\"]"
	expect 200 ".workspaces[0].sessions[0].workspaceCwd == \"$WS\""
	expect 200 '.workspaces[0].nextCursor == "2"'
	expect 200 ".workspaces[1].workspace == \"$WSB\" and .workspaces[1].workspaceId == \"ws1\" and .workspaces[1].cwd == \"$WSB\""
	expect 200 "[.workspaces[1].sessions[].sessionId] == [\"$B1\"]"
	expect 200 ".workspaces[1].sessions[0].workspaceCwd == \"$WSB\""
	expect 200 '.workspaces[1] | has("nextCursor") | not'
	expect 200 '.workspaces[0] | has("groups") | not'
	# The next page of the first only.
	cat_req '{"workspaces":[{"workspace":"primary","cursor":"2"}],"options":{"size":2}}'
	expect 200 "[.workspaces[0].sessions[].sessionId] == [\"$A1\"]"
	expect 200 '.workspaces[0] | has("nextCursor") | not'
	# "all": every workspace in order, selected by its cwd.
	cat_req '{"workspaces":"all","includeGroups":true}'
	expect 200 "[.workspaces[].workspace] == [\"$WS\", \"$WSB\"]"
	expect 200 '.workspaces[0].sessions | length == 3'
	expect 200 '.workspaces[0].groups.groups == [] and (.workspaces[0].groups.colorOptions | length) > 0'
	# A path inside no workspace, a relative one, an id that is not ours.
	cat_req "{\"workspaces\":[{\"workspace\":\"/etc\"},{\"workspace\":\"ws9\"},{\"workspace\":\"primary\",\"cursor\":\"x\"}]}"
	expect 200 '.workspaces | length == 3'
	expect 200 '.workspaces[0] == {"workspace":"/etc","error":{"code":"workspace_not_found","message":"Workspace is not registered with this daemon.","status":404}}'
	expect 200 '.workspaces[1].error.code == "workspace_not_found"'
	expect 200 '.workspaces[2].error == {"code":"invalid_cursor","message":"Invalid cursor","status":400}'
	expect 200 '.workspaces[2].workspaceId == "primary"'
}

@test "POST /sessions/catalog: archived, organized, group and source options as the page route's" {
	two
	cat_req '{"workspaces":[{"workspace":"primary"}],"options":{"archiveState":"archived"}}'
	expect 200 '.workspaces[0].sessions == []'
	req POST /sessions/archive "{\"sessionIds\":[\"$A2\"]}"
	expect 200
	cat_req '{"workspaces":[{"workspace":"primary"}],"options":{"archiveState":"archived"}}'
	expect 200 "[.workspaces[0].sessions[].sessionId] == [\"$A2\"]"
	expect 200 '.workspaces[0].sessions[0].isArchived == true'
	req PATCH "/session/$A1/organization" '{"isPinned":true}'
	expect 200
	cat_req '{"workspaces":[{"workspace":"primary"}],"options":{"view":"organized"}}'
	expect 200 "[.workspaces[0].sessions[].sessionId] == [\"$A1\", \"$A3\"]"
	cat_req '{"workspaces":[{"workspace":"primary"}],"options":{"view":"organized","group":"pinned"}}'
	expect 200 "[.workspaces[0].sessions[].sessionId] == [\"$A1\"]"
	cat_req '{"workspaces":[{"workspace":"primary"},{"workspace":"ws1"}],"options":{"view":"organized","group":"g-nope"}}'
	expect 200 '.workspaces[0].error == {"code":"group_not_found","message":"Session group not found","status":404}'
	expect 200 '.workspaces[1].error.code == "group_not_found"'
	cat_req '{"workspaces":[{"workspace":"primary"}],"options":{"sourceType":"side_task"}}'
	expect 200 '.workspaces[0].sessions == []'
	cat_req '{"workspaces":[{"workspace":"primary"}],"options":{"sourceType":"default"}}'
	expect 200 '.workspaces[0].sessions | length == 2'
}

@test "POST /sessions/catalog: a bad body is 400 invalid_session_catalog_request" {
	two
	local bad
	local -a bodies=(
	    '{}'
	    '{"workspaces":[]}'
	    '{"workspaces":"some"}'
	    '{"workspaces":[{"workspace":""}]}'
	    '{"workspaces":[{"workspace":"primary","extra":1}]}'
	    '{"workspaces":[{"workspace":"primary","cursor":7}]}'
	    '{"workspaces":"all","extra":true}'
	    '{"workspaces":"all","includeGroups":"yes"}'
	    '{"workspaces":"all","options":[]}'
	    '{"workspaces":"all","options":{"size":0}}'
	    '{"workspaces":"all","options":{"size":101}}'
	    '{"workspaces":"all","options":{"size":2.5}}'
	    '{"workspaces":"all","options":{"pageSize":2}}'
	    '{"workspaces":"all","options":{"archiveState":"both"}}'
	    '{"workspaces":"all","options":{"view":"flat"}}'
	    '{"workspaces":"all","options":{"group":""}}'
	)
	for bad in "${bodies[@]}"; do
		cat_req "$bad"
		expect 400 '.code == "invalid_session_catalog_request" and .error == "Invalid session catalog request."'
	done
	# 21 members: over upstream's 20.
	bad=$(jq -cn '{workspaces: [range(21) | {workspace: "primary"}]}')
	cat_req "$bad"
	expect 400 '.code == "invalid_session_catalog_request"'
	bad=$(jq -cn '{workspaces: [range(20) | {workspace: "primary"}], options: {size: 1}}')
	cat_req "$bad"
	expect 200 '.workspaces | length == 20'
	# Upstream's own messages for the source and group rules.
	cat_req '{"workspaces":"all","options":{"sourceType":"Bad"}}'
	expect 400 '.code == "invalid_session_catalog_request" and (.error | startswith("`sourceType` must match"))'
	cat_req '{"workspaces":"all","options":{"group":"pinned"}}'
	expect 400 '.code == "invalid_session_catalog_request" and (.error | startswith("Group filters require organized view"))'
	cat_req "{\"workspaces\":\"all\",\"options\":{\"view\":\"organized\",\"parentSessionId\":\"$A1\"}}"
	expect 400 '.code == "invalid_session_catalog_request"'
	req POST /sessions/catalog 'not json'
	expect 400
}

@test "POST /sessions/catalog: a member's page over 512 KiB is its own 413, the others answered" {
	two
	local i id big
	# 89 sessions with an 8000-byte custom title each: 700 KB of page.
	big=$(head -c 8000 /dev/zero | tr '\0' x)
	for ((i = 10; i < 99; i++)); do
		id=cccccccc-cccc-4ccc-8ccc-0000000000$i
		make_transcript "$id"
		printf '{"uuid":"t1","parentUuid":"a1","sessionId":"%s","timestamp":"2026-08-01T15:01:21.000Z","type":"system","subtype":"custom_title","cwd":"%s","systemPayload":{"customTitle":"%s","titleSource":"manual"}}\n' \
		    "$id" "$WS" "$big" >>"$(ls "$DATA"/projects/*/chats/"$id.jsonl")"
	done
	cat_req '{"workspaces":[{"workspace":"primary"},{"workspace":"ws1"}],"options":{"size":100}}'
	expect 200 '.workspaces[0].error == {"code":"catalog_response_too_large","message":"Catalog page exceeds 512 KiB; reduce size or omit groups.","status":413}'
	expect 200 '.workspaces[0].cwd != null'
	expect 200 '.workspaces[1].sessions | length == 1'
	cat_req '{"workspaces":[{"workspace":"primary"}],"options":{"size":5}}'
	expect 200 '.workspaces[0].sessions | length == 5'
}
