#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve with several workspaces (--workspace repeatable): one child
# per workspace, started on demand; cwd picks the workspace; errors;
# per-workspace and total capacity; a restore timed out in one workspace
# while the other loads, prompts and restores normally.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

# Two workspaces: $WS (primary) and $WSB.
two() {
	WS=$BATS_TEST_TMPDIR/ws
	WSB=$BATS_TEST_TMPDIR/wsb
	mkdir -p "$WS" "$WSB"
	WS=$(cd "$WS" && pwd -P)
	WSB=$(cd "$WSB" && pwd -P)
	serve_start --workspace "$WS" --workspace "$WSB" --workspace "$WS" "$@"
}

# The pids of the children started so far, one per line.
child_pids() {
	sed -n 's/.*started .* (pid \([0-9]*\)) for .*/\1/p' "$BATS_TEST_TMPDIR/err"
}

@test "capabilities list both (primary first, named twice is once); cwd picks the workspace; one child each" {
	two
	req GET /capabilities
	expect 200 ".workspaces | length == 2 and .[0].cwd == \"$WS\" and .[0].primary and .[1].cwd == \"$WSB\" and (.[1].primary | not)"
	expect 200 '(.features | index("multi_workspace_sessions")) != null'
	req POST /session '{}'
	expect 200 ".workspaceCwd == \"$WS\" and .attached == false"
	local a b
	a=$(jq -r .sessionId <<<"$body")
	req POST /session "{\"cwd\":\"$WSB\"}"
	expect 200 ".workspaceCwd == \"$WSB\" and .attached == false"
	b=$(jq -r .sessionId <<<"$body")
	[ "$a" != "$b" ]
	# Each workspace keeps its own default session.
	req POST /session "{\"cwd\":\"$WSB/.\"}"
	expect 200 ".sessionId == \"$b\" and .attached == true"
	req GET /session/$b/status
	expect 200 ".workspaceCwd == \"$WSB\""
	[ "$(child_pids | sort -u | wc -l)" = 2 ]
	grep -q "started .* for $WSB\$" "$BATS_TEST_TMPDIR/err"
	req POST /session "{\"cwd\":\"$BATS_TEST_TMPDIR\"}"
	expect 400 ".code == \"workspace_mismatch\" and .workspaceCount == 2 and .boundWorkspace == \"$WS\""
	req GET "/workspace/sessions?cwd=$WSB"
	expect 200 ".workspaceCwd == \"$WSB\""
}

@test "load and resume in a workspace; 409 session_workspace_conflict from the other; the transcripts stay apart" {
	two
	WS=$WSB make_transcript "$SID2"
	req POST /session/$SID2/load '{}'
	expect 404 '.code == "session_not_found"'
	req POST /session/$SID2/load "{\"cwd\":\"$WSB\"}"
	expect 200 ".workspaceCwd == \"$WSB\" and .attached == false"
	req POST /session/$SID2/resume "{\"cwd\":\"$WS\"}"
	expect 409 ".code == \"session_workspace_conflict\" and .sessionId == \"$SID2\" and .liveWorkspaceCwd == \"$WSB\" and .workspaceCwd == \"$WS\""
	req POST /session/$SID2/resume "{\"cwd\":\"$WSB\"}"
	expect 200 '.attached == true'
	# A caller-chosen id that exists in any workspace is taken.
	req POST /session "{\"sessionId\":\"$SID2\"}"
	expect 409 '.code == "session_id_conflict"'
}

@test "capacity: --max-sessions per workspace, --max-total-sessions across them" {
	two --max-sessions 1 --max-total-sessions 3
	req POST /session '{"sessionScope":"thread"}'
	expect 200
	req POST /session '{"sessionScope":"thread"}'
	expect 503 '.code == "session_limit_exceeded" and .scope == "workspace" and .limit == 1'
	req POST /session "{\"sessionScope\":\"thread\",\"cwd\":\"$WSB\"}"
	expect 200
	serve_stop
	two --max-sessions 5 --max-total-sessions 1
	req POST /session '{"sessionScope":"thread"}'
	expect 200
	req POST /session "{\"sessionScope\":\"thread\",\"cwd\":\"$WSB\"}"
	expect 503 '.code == "session_limit_exceeded" and .scope == "total" and .limit == 1'
}

@test "a restore timed out in workspace A while workspace B loads, prompts and restores normally" {
	# Only A's session hangs on load; both children run the same fake.
	FAKE_CHILD="hang=session/load@$SID,chunks=3" two --session-restore-timeout-ms 1500
	make_transcript "$SID"
	WS=$WSB make_transcript "$SID2"
	curl -s --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' -d '{}' \
	    -o "$BATS_TEST_TMPDIR/a.body" -w '%{http_code}' http://localhost/session/$SID/load \
	    >"$BATS_TEST_TMPDIR/a.code" 3>&- &
	local a=$!
	wait_for 10 grep -q "session $SID: load requested" "$BATS_TEST_TMPDIR/err"
	# A's load hangs: B loads, prompts and resumes meanwhile.
	req POST /session/$SID2/load "{\"cwd\":\"$WSB\"}"
	expect 200 ".workspaceCwd == \"$WSB\""
	prompt_turn b "$SID2"
	[ "$(cat "$BATS_TEST_TMPDIR/a.code" 2>/dev/null)" = "" ]
	wait "$a"
	[ "$(cat "$BATS_TEST_TMPDIR/a.code")" = 504 ]
	jq -e ".code == \"session_restore_timeout\" and .sessionId == \"$SID\"" "$BATS_TEST_TMPDIR/a.body" >/dev/null
	local bpid
	bpid=$(sed -n "s/.*started .* (pid \([0-9]*\)) for ${WSB//\//\\/}\$/\1/p" "$BATS_TEST_TMPDIR/err" | tail -1)
	kill -0 "$bpid"
	# After A's timeout, B still restores and prompts (closing its last
	# session may end its child: a fresh one serves the resume).
	req DELETE /session/$SID2
	expect 204
	req POST /session/$SID2/resume "{\"cwd\":\"$WSB\"}"
	expect 200 '.attached == false'
	prompt_turn b2 "$SID2"
}

@test "transcript pages and branches in the second workspace (real child)" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child two
	qwen-gen-transcript --mib 1 --seed 3 --data-dir "$DATA" --workspace "$WSB" \
	    --session-id "$SID2" >/dev/null
	req GET "/session/$SID2/transcript?limit=5"
	expect 404 '.code == "session_not_found"'
	req GET "/session/$SID2/transcript?limit=5&cwd=$WSB"
	expect 200 '(.events | length) > 0 and .hasMore == true'
	req POST /session/$SID2/branch "{\"cwd\":\"$WSB\"}"
	expect 201 ".forkedFrom.sessionId == \"$SID2\" and .workspaceCwd == \"$WSB\""
	local new
	new=$(jq -r .sessionId <<<"$body")
	ls "$DATA"/projects/*/chats/"$new".jsonl | grep -qF -- "$(printf '%s' "$WSB" | sed 's/[^A-Za-z0-9]/-/g')"
	req POST /session/$new/load "{\"cwd\":\"$WSB\"}"
	expect 200 ".workspaceCwd == \"$WSB\""
}

@test "SDK: createOrAttach in each workspace through workspaceCwd, 400 workspace_mismatch" {
	two
	sdk_run workspaces "$WSB"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - 400 workspace_mismatch"* ]]
}

@test "/workspaces/:w/acp: ACP over HTTP and WebSocket bound to a workspace; unknown workspace 404" {
	two
	WS=$WSB make_transcript "$SID2"
	# By id.
	req POST /workspaces/ws1/acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
	expect 200 ".result.agentCapabilities._meta.qwen.workspaceCwd == \"$WSB\""
	local conn
	conn=$(header Acp-Connection-Id)
	sse_open c /workspaces/ws1/acp -H "Acp-Connection-Id: $conn" -H 'Accept: text/event-stream'
	req POST /workspaces/ws1/acp '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"mcpServers":[]}}' \
	    -H "Acp-Connection-Id: $conn"
	expect 202
	sse_wait c '.id == 1 and (.result.sessionId | type) == "string"' 10
	local sid
	sid=$(sse_data c | jq -r 'select(.id == 1) | .result.sessionId')
	req GET /session/$sid/status
	expect 200 ".workspaceCwd == \"$WSB\""
	# By the encoded cwd; the primary by its id.
	req POST "/workspaces/$(jq -rn --arg p "$WSB" '$p | @uri')/acp" '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
	expect 200 ".result.agentCapabilities._meta.qwen.workspaceCwd == \"$WSB\""
	req POST /workspaces/primary/acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
	expect 200 ".result.agentCapabilities._meta.qwen.workspaceCwd == \"$WS\""
	req POST /workspaces/nope/acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
	expect 404
	# WebSocket: a load without cwd finds the session in the bound workspace.
	printf '%s\n' 'text {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}' \
	    'wait 0' "text {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$SID2\",\"mcpServers\":[]}}" \
	    'wait 2' | ws-client -t 20 -u "$SOCK" -p /workspaces/ws1/acp >"$BATS_TEST_TMPDIR/w.out" 3>&-
	jq -e -s "any(.[]; .id == 0 and .result.agentCapabilities._meta.qwen.workspaceCwd == \"$WSB\")" "$BATS_TEST_TMPDIR/w.out" >/dev/null
	jq -e -s 'any(.[]; .id == 2 and has("result"))' "$BATS_TEST_TMPDIR/w.out" >/dev/null
}
