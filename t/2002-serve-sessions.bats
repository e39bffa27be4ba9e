#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: session routes, client ids (seed 001), codes and bodies.

load serve_helper

teardown() {
	serve_teardown
}

P='{"prompt":[{"type":"text","text":"hello"}]}'

@test "POST /session: fresh, then attach to the default session, on both listeners" {
	serve_start
	TRANSPORT=unix req POST /session '{}'
	expect 200 '.attached == false and (.clientId | startswith("client_")) and .workspaceCwd != null'
	local id=$(jq -r .sessionId <<<"$body") c1=$(jq -r .clientId <<<"$body")
	TRANSPORT=tcp req POST /session "{\"cwd\":\"$WS\"}"
	expect 200 ".attached == true and .sessionId == \"$id\" and .clientId != \"$c1\""
	# A registered header id is reused.
	req POST /session '{}' -H "X-Qwen-Client-Id: $c1"
	expect 200 ".clientId == \"$c1\""
	req GET /session/$id/status
	expect 200 '.clientCount == 2 and .attachCount == 3'
	# The minimal valid JSON forms are accepted.
	req POST /session '{"a":1e5,"b":[true,false,null],"c":"it'"'"'s"}'
	expect 200
}

@test "POST /session: concurrent cold calls coalesce onto one spawn" {
	FAKE_CHILD='delay=session/new:300' serve_start
	local pids=()
	for i in 1 2 3; do
		curl -s --unix-socket "$SOCK" -X POST http://localhost/session -d '{}' \
		    >"$BATS_TEST_TMPDIR/c$i" 3>&- &
		pids+=($!)
	done
	wait "${pids[@]}"
	[ "$(cat "$BATS_TEST_TMPDIR"/c? | jq -r .sessionId | sort -u | wc -l)" = 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR"/c? | jq -r 'select(.attached == false)' | jq -s length)" = 1 ]
}

@test "POST /session: thread scope and caller-supplied ids" {
	serve_start
	req POST /session '{"sessionScope":"thread"}'
	expect 200 '.attached == false'
	local a=$(jq -r .sessionId <<<"$body")
	req POST /session '{"sessionScope":"thread"}'
	expect 200 ".attached == false and .sessionId != \"$a\""
	req POST /session '{"sessionId":"AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA"}'
	expect 200 '.sessionId == "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa" and .attached == false'
	req POST /session '{"sessionId":"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"}'
	expect 409 '.code == "session_id_conflict" and .conflict == "live"'
	make_transcript "$SID2"
	req POST /session "{\"sessionId\":\"$SID2\"}"
	expect 409 '.code == "session_id_conflict" and .conflict == "persisted"'
	for bad in '"nope"' '"../../etc/passwd"' '42' '"11111111-1111-6111-8111-111111111111"'; do
		req POST /session "{\"sessionId\":$bad}"
		expect 400 '.code == "invalid_session_id"'
	done
	req POST /session '{"sessionScope":"forever"}'
	expect 400 '.code == "invalid_session_scope"'
}

@test "POST /session: the child not honouring the id is 500 session_id_not_honored" {
	FAKE_CHILD=wrong-id serve_start
	req POST /session "{\"sessionId\":\"$SID2\"}"
	expect 500 ".code == \"session_id_not_honored\" and .sessionId == \"$SID2\""
	req GET /session/$SID2/status
	expect 404
}

@test "workspace_mismatch for a foreign or relative cwd" {
	serve_start
	make_transcript
	for path in /session /session/$SID/load /session/$SID/resume; do
		req POST $path '{"cwd":"/etc"}'
		expect 400 ".code == \"workspace_mismatch\" and .boundWorkspace == \"$WS\" and .requestedWorkspace == \"/etc\""
		req POST $path '{"cwd":"relative/dir"}'
		expect 400 '.code == "workspace_mismatch"'
		req POST $path '{"cwd":7}'
		expect 400 '.code == "workspace_mismatch"'
	done
	req POST /session/$SID/load "{\"cwd\":\"$WS/.\"}"
	expect 200
}

@test "session_limit_exceeded with Retry-After 5; attaches are free" {
	serve_start --max-sessions 1
	req POST /session '{}'
	expect 200
	req POST /session '{}'
	expect 200 '.attached == true'
	req POST /session '{"sessionScope":"thread"}'
	expect 503 '.code == "session_limit_exceeded" and .limit == 1 and .scope == "workspace" and .retryable == true'
	[ "$(header Retry-After)" = 5 ]
	make_transcript
	req POST /session/$SID/load '{}'
	expect 503 '.code == "session_limit_exceeded"'
}

@test "the child's own cap (--child-max-sessions) answers a filled session_limit_exceeded" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start --max-sessions 10 \
	    --child-max-sessions 2
	req POST /session '{"sessionScope":"thread"}'
	expect 200
	req POST /session '{"sessionScope":"thread"}'
	expect 200
	req POST /session '{"sessionScope":"thread"}'
	expect 503 '.code == "session_limit_exceeded" and .retryable == true'
	expect 503 '.error == "Session limit reached (2 per workspace child)"'
	expect 503 '.limit == 2 and .scope == "workspace child"'
}

@test "load: state, compactedReplay with bus ids, cursor, clientId; second load attaches" {
	serve_start
	make_transcript
	for TRANSPORT in unix tcp; do
		req POST /session/$SID/load '{}'
		if [ $TRANSPORT = unix ]; then
			expect 200 '.attached == false and .state.modes.currentModeId == "default"'
			expect 200 '[.compactedReplay[].id] == [1,2,3] and .lastEventId == 3 and .liveJournal == []'
			expect 200 '.compactedReplay[0].type == "session_update" and .compactedReplay[0].data.update.sessionUpdate == "user_message_chunk"'
			expect 200 "(.clientId | startswith(\"client_\")) and (.eventEpoch | length) == 36 and .sessionId == \"$SID\""
		else
			expect 200 '.attached == true and .lastEventId == 3 and (.compactedReplay | length) == 3'
		fi
	done
	req GET /session/$SID/status
	expect 200 '.clientCount == 2 and .attachCount == 2'
}

@test "load of an unknown session is 404 session_not_found; bad ids are 400" {
	serve_start
	for TRANSPORT in unix tcp; do
		req POST /session/$SID/load '{}'
		expect 404 ". == {\"error\":\"No session with id \\\"$SID\\\"\",\"code\":\"session_not_found\",\"sessionId\":\"$SID\"}"
		for bad in '..%2F..%2Fetc%2Fpasswd' '..' '.hidden' 'a%20b' 'a%00b' "$(printf 'x%.0s' $(seq 129))" '%2Fetc'; do
			req POST "/session/$bad/load" '{}'
			expect 400 '.code == "invalid_session_id"'
			req GET "/session/$bad/status"
			expect 400 '.code == "invalid_session_id"'
		done
	done
	[ ! -e /etc/passwd.jsonl ]
}

@test "load options are validated before anything happens" {
	serve_start
	make_transcript
	for v in 0 501 '"10"' 1.5; do
		req POST /session/$SID/load "{\"historyPageSize\":$v}"
		expect 400 '.code == "invalid_transcript_limit" and .maxLimit == 500'
	done
	req POST /session/$SID/load '{"liveReplayMode":"all"}'
	expect 400 '.code == "invalid_live_replay_mode"'
	req POST /session/$SID/resume '{"compactedReplayMode":3}'
	expect 400 '.code == "invalid_compacted_replay_mode"'
	req GET /session/$SID/status
	expect 404
	req POST /session/$SID/load '{"historyPageSize":500,"liveReplayMode":"summary","compactedReplayMode":"full"}'
	expect 200
}

@test "load: compactedReplay is bounded and led by a history_truncated marker" {
	FAKE_CHILD=replay=50,replay-bytes=400 serve_start --compacted-replay-max-bytes 4096
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200 '.compactedReplay[0] | (.type == "history_truncated" and (has("id") | not) and .data.reason == "replay_window_exceeded" and .data.fullTranscriptAvailable)'
	expect 200 '(.compactedReplay[0].data.truncatedEvents + .compactedReplay[0].data.retainedEvents) == 50'
	expect 200 '(.compactedReplay | length) == .compactedReplay[0].data.retainedEvents + 1 and .compactedReplay[0].data.retainedEvents > 0'
	expect 200 '(.compactedReplay | tostring | length) < 8192 and .lastEventId == .compactedReplay[-1].id'
}

@test "resume: no replay arrays, same cursor fields; unknown is 404" {
	serve_start
	make_transcript
	req POST /session/$SID/resume '{}'
	expect 200 '.attached == false and (has("compactedReplay") | not) and .lastEventId == 0 and (.state | type) == "object"'
	req POST /session/$SID/resume '{}'
	expect 200 '.attached == true'
	req POST /session/$SID2/resume '{}'
	expect 404 '.code == "session_not_found"'
}

@test "invalid_client_id: malformed header is 400 before any side effect" {
	serve_start
	make_transcript
	req POST /session/$SID/load '{}' -H 'X-Qwen-Client-Id: bad id!'
	expect 400 ".code == \"invalid_client_id\" and .clientId == \"bad id!\" and .sessionId == \"$SID\""
	req GET /session/$SID/status
	expect 404
	req POST /session '{}' -H "X-Qwen-Client-Id: $(printf 'c%.0s' $(seq 129))"
	expect 400 '.code == "invalid_client_id"'
	req GET '/health?deep=1'
	expect 200 '.sessions == 0'
	# Empty means absent; an unknown well-formed id gets a fresh one.
	req POST /session/$SID/load '{}' -H 'X-Qwen-Client-Id:' -H 'X-Qwen-Client-Id: client_stale'
	expect 200 '.clientId != "client_stale" and (.clientId | startswith("client_"))'
}

@test "prompt: 202 with promptId and cursor; unregistered client is 400 and never runs" {
	serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	local cid=$(jq -r .clientId <<<"$body")
	sse_open a /session/$SID/events -H 'Last-Event-ID: 3'
	for TRANSPORT in unix tcp; do
		req POST /session/$SID/prompt "$P" -H 'X-Qwen-Client-Id: client_stale'
		expect 400 ".code == \"invalid_client_id\" and .sessionId == \"$SID\" and .clientId == \"client_stale\" and (has(\"promptId\") | not)"
	done
	req GET /session/$SID/status
	expect 200 '.pendingPrompts == 0 and .lastEventId == 3'
	req POST /session/$SID/prompt "$P" -H "X-Qwen-Client-Id: $cid"
	expect 202 '(.promptId | length) == 36 and .lastEventId == 3 and (.eventEpoch | length) == 36'
	local pid=$(jq -r .promptId <<<"$body")
	sse_wait a ".type == \"turn_complete\" and .data.promptId == \"$pid\" and .data.stopReason == \"end_turn\" and .originatorClientId == \"$cid\""
	sse_has a ".type == \"session_update\" and .promptId == \"$pid\" and .id == 4"
	! sse_has a '.type == "session_update" and .promptId == null' || false
	# No header at all is fine too.
	TRANSPORT=tcp req POST /session/$SID/prompt "$P"
	expect 202
}

@test "prompt: body validation and 404" {
	serve_start
	make_transcript
	req POST /session/$SID/prompt "$P"
	expect 404 '.code == "session_not_found"'
	req POST /session/$SID/load '{}'
	for b in '{}' '{"prompt":[]}' '{"prompt":"hi"}' '{"prompt":[1]}'; do
		req POST /session/$SID/prompt "$b"
		expect 400 '.code == "bad_request"'
	done
	req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"x"}],"deadlineMs":0}'
	expect 400 '.code == "invalid_deadline_ms"'
	req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"x"}],"eventDetailMode":"loud"}'
	expect 400 '.code == "invalid_event_detail_mode"'
	req GET /session/$SID/status
	expect 200 '.pendingPrompts == 0 and .lastEventId == 3'
}

@test "prompt: per-session FIFO" {
	# p1 is held by the child until the test releases it, so p2 is
	# certainly queued behind it (not merely posted after it ended).
	FAKE_CHILD="hold=session/prompt,log=$BATS_TEST_TMPDIR/child.log" serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	sse_open a /session/$SID/events
	prompt_post "$SID" "$P"
	local p1=$PROMPT_ID
	wait_for 5 prompts_read 1
	prompt_post "$SID" "$P"
	local p2=$PROMPT_ID
	sse_wait a ".type == \"pending_prompt_added\" and .data.promptId == \"$p2\""
	# p2 is not sent to the child while p1 runs.
	run ! prompts_read 2
	kill -USR1 "$(child_pid)"
	wait_for 5 prompts_read 2
	kill -USR1 "$(child_pid)"
	sse_wait a ".type == \"turn_complete\" and .data.promptId == \"$p2\""
	# p1's turn events all come before p2's (its queue events aside).
	sse_events a | jq -e --arg a "$p1" --arg b "$p2" '
	    [.[] | select(.promptId != null and (.type | startswith("pending_prompt") | not)) | .promptId] as $o |
	    ($o | index($a)) != null and ($o | index($b)) > ($o | rindex($a))' >/dev/null
	req GET /session/$SID/status
	expect 200 '.pendingPrompts == 0 and .hasActivePrompt == false'
}

@test "prompt: prompt_queue_full counts the running and the queued prompts" {
	FAKE_CHILD=hang=session/prompt serve_start --max-pending-prompts-per-session 2
	make_transcript
	req POST /session/$SID/load '{}'
	req POST /session/$SID/prompt "$P"
	expect 202
	req POST /session/$SID/prompt "$P"
	expect 202
	req POST /session/$SID/prompt "$P"
	expect 503 ".code == \"prompt_queue_full\" and .sessionId == \"$SID\" and .limit == 2 and .pendingCount == 2"
	[ "$(header Retry-After)" = 5 ]
	req GET /session/$SID/status
	expect 200 '.pendingPrompts == 2 and .hasActivePrompt == true'
}

@test "cancel: 204, prompt_cancelled, turn ends cancelled; queued prompts still run" {
	FAKE_CHILD=chunks=5,chunk-delay=5000 serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	sse_open a /session/$SID/events
	req POST /session/$SID/prompt "$P"
	local p1=$(jq -r .promptId <<<"$body")
	req POST /session/$SID/prompt "$P"
	local p2=$(jq -r .promptId <<<"$body")
	sse_wait a ".type == \"session_update\" and .promptId == \"$p1\""
	TRANSPORT=tcp req POST /session/$SID/cancel '{}'
	expect 204
	sse_wait a ".type == \"prompt_cancelled\" and .data.promptId == \"$p1\""
	sse_wait a ".type == \"turn_complete\" and .data.promptId == \"$p1\" and .data.stopReason == \"cancelled\""
	sse_wait a ".type == \"session_update\" and .promptId == \"$p2\""
	req POST /session/$SID2/cancel '{}'
	expect 404
	req POST /session/$SID/cancel '{}' -H 'X-Qwen-Client-Id: client_stale'
	expect 400 '.code == "invalid_client_id"'
}

@test "heartbeat: 200 with lastSeenAt; unregistered 400; unknown session 404" {
	serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	local cid=$(jq -r .clientId <<<"$body")
	for TRANSPORT in unix tcp; do
		req POST /session/$SID/heartbeat '{}' -H "X-Qwen-Client-Id: $cid"
		expect 200 ".sessionId == \"$SID\" and .clientId == \"$cid\" and .lastSeenAt > 1700000000000"
		req POST /session/$SID/heartbeat ''
		expect 200 '(has("clientId") | not)'
		req POST /session/$SID/heartbeat '{}' -H 'X-Qwen-Client-Id: client_nope'
		expect 400 '.code == "invalid_client_id" and .clientId == "client_nope"'
		req POST /session/$SID2/heartbeat '{}'
		expect 404 '.code == "session_not_found"'
	done
}

@test "detach: 204; the last detach closes with last_client_detached" {
	serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	local c1=$(jq -r .clientId <<<"$body")
	req POST /session/$SID/load '{}'
	local c2=$(jq -r .clientId <<<"$body")
	req POST /session/$SID/detach '' -H "X-Qwen-Client-Id: $c1"
	expect 204
	req GET /session/$SID/status
	expect 200 '.clientCount == 1 and .attachCount == 1'
	# Unknown ids and sessions are a silent 204.
	req POST /session/$SID/detach '' -H 'X-Qwen-Client-Id: client_nope'
	expect 204
	req POST /session/$SID2/detach '' -H "X-Qwen-Client-Id: $c1"
	expect 204
	TRANSPORT=tcp req POST /session/$SID/detach '' -H "X-Qwen-Client-Id: $c2"
	expect 204
	req GET /session/$SID/status
	expect 404
	grep -q "session $SID: closed (last_client_detached)" "$BATS_TEST_TMPDIR/err"
}

@test "detach keeps a session that an SSE subscriber still holds" {
	serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	local c1=$(jq -r .clientId <<<"$body")
	sse_open a /session/$SID/events
	req POST /session/$SID/detach '' -H "X-Qwen-Client-Id: $c1"
	expect 204
	req GET /session/$SID/status
	expect 200 '.clientCount == 0 and .subscriberCount == 1'
}

@test "DELETE: 204, terminal session_closed, then 404; transcript stays loadable" {
	serve_start
	make_transcript
	for TRANSPORT in unix tcp; do
		req POST /session/$SID/load '{}'
		expect 200 '.attached == false'
		local cid=$(jq -r .clientId <<<"$body")
		sse_open a$TRANSPORT /session/$SID/events
		req DELETE /session/$SID '' -H 'X-Qwen-Client-Id: client_stale'
		expect 400 '.code == "invalid_client_id"'
		req DELETE /session/$SID '' -H "X-Qwen-Client-Id: $cid"
		expect 204
		sse_wait a$TRANSPORT ".type == \"session_closed\" and .data.reason == \"client_close\" and .data.closedBy == \"$cid\""
		req DELETE /session/$SID
		expect 404 '.code == "session_not_found"'
		req GET /session/$SID/status
		expect 404
	done
}

@test "idle reaping closes sessions nobody uses (idle_timeout)" {
	serve_start --session-idle-timeout-ms 300 --session-reap-interval-ms 50
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	wait_for 5 bash -c "! curl -sf --unix-socket '$SOCK' http://localhost/session/$SID/status >/dev/null"
	grep -q "session $SID: closed (idle_timeout)" "$BATS_TEST_TMPDIR/err"
}

@test "heartbeats keep a session from being reaped" {
	# The idle timeout leaves room for a slow curl on a loaded machine;
	# the loop outlives it twice over.
	serve_start --session-idle-timeout-ms 1500 --session-reap-interval-ms 50
	make_transcript
	req POST /session/$SID/load '{}'
	local cid=$(jq -r .clientId <<<"$body") t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 4 ]; do
		req POST /session/$SID/heartbeat '{}' -H "X-Qwen-Client-Id: $cid"
		expect 200
		sleep 0.1
	done
	req GET /session/$SID/status
	expect 200
	wait_for 5 bash -c "! curl -sf --unix-socket '$SOCK' http://localhost/session/$SID/status >/dev/null"
}

@test "GET /workspace/sessions lists persisted transcripts with their first prompt" {
	serve_start
	make_transcript "$SID"
	make_transcript "$SID2"
	local chats=$DATA/projects/$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')/chats
	# Newest first: the order is set, not left to the clock's resolution.
	touch -d '2026-01-01 10:00:00' "$chats/$SID.jsonl"
	touch -d '2026-01-01 10:00:01' "$chats/$SID2.jsonl"
	touch "$chats/.hidden.jsonl"
	req POST /session/$SID/load '{}'
	for TRANSPORT in unix tcp; do
		req GET /workspace/sessions
		expect 200 "(.sessions | length) == 2 and .workspaceCwd == \"$WS\""
		expect 200 ".sessions[0].sessionId == \"$SID2\" and .sessions[0].live == false"
		expect 200 ".sessions[1].sessionId == \"$SID\" and .sessions[1].live == true"
		expect 200 '.sessions[0].firstPrompt == "Why is loading slow?" and .sessions[0].size > 100 and .sessions[0].mtime > 1700000000000'
		req GET '/workspace/sessions?limit=1'
		expect 200 '(.sessions | length) == 1'
		req GET '/workspace/sessions?cwd=/etc'
		expect 400 '.code == "workspace_mismatch"'
		req GET '/workspace/sessions?limit=0'
		expect 400 '.code == "bad_request"'
	done
}
