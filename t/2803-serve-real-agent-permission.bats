#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The real qwen-code agent asks before running a shell command (approval
# mode "default"): permission_request on SSE, answered over REST (allowed,
# denied), or cancelled when nobody answers in time.

load agent_helper

setup() {
	agent_require
	fake_shell_model_start
}

teardown() {
	agent_teardown
}

# Prompt, then wait for the permission_request; REQ_ID, OPTIONS are its.
prompt_until_permission() {
	new_session
	sse_open ev "/session/$SID/events"
	req POST "/session/$SID/prompt" '{"prompt":[{"type":"text","text":"please write the marker"}]}'
	expect 202
	PROMPT_ID=$(jq -r .promptId <<<"$body")
	sse_wait ev '.type == "permission_request"' 180
	local ev
	ev=$(sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/ev.sse" | jq -c 'select(.type == "permission_request")' | head -1)
	REQ_ID=$(jq -r .data.requestId <<<"$ev")
	OPTIONS=$(jq -c .data.options <<<"$ev")
	[[ "$REQ_ID" =~ ^[0-9a-f-]{36}$ ]]
	jq -e --arg s "$SID" --arg p "$PROMPT_ID" '.data.sessionId == $s and .promptId == $p' <<<"$ev"
	jq -e '.data.toolCall.toolCallId | length > 0' <<<"$ev"
}

option_of_kind() {
	jq -r --arg k "$1" 'map(select(.kind == $k)) | .[0].optionId' <<<"$OPTIONS"
}

turn_ended() {
	sse_wait ev ".type == \"turn_complete\" and .promptId == \"$PROMPT_ID\"" 180
}

@test "real agent permission: allowed over REST, the tool runs, the turn ends; first answer wins" {
	agent_serve_start
	prompt_until_permission
	req GET "/session/$SID/status"
	expect 200 '.isWaitingForPermission == true and .pendingInteractionCount == 1'
	req POST "/session/$SID/permission/$REQ_ID" '{"outcome":{"outcome":"maybe"}}'
	expect 400
	req POST "/session/$SID/permission/$REQ_ID" '{"outcome":{"outcome":"selected","optionId":"no-such-option"}}'
	expect 400 '.code == "invalid_option_id"'
	local allow
	allow=$(option_of_kind allow_once)
	[ -n "$allow" ]
	[ "$allow" != null ]
	req POST "/session/$SID/permission/$REQ_ID" "{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"$allow\"}}"
	expect 200
	req POST "/session/$SID/permission/$REQ_ID" '{"outcome":{"outcome":"cancelled"}}'
	expect 404 ".requestId == \"$REQ_ID\""
	sse_has ev ".type == \"permission_resolved\" and .data.requestId == \"$REQ_ID\" and .data.outcome.optionId == \"$allow\""
	turn_ended
	[ "$(cat "$WS/marker.txt")" = ran ]
	# The agent's tool updates pass through unchanged.
	sse_has ev '.type == "session_update" and .data.update.sessionUpdate == "tool_call"'
	sse_has ev '.type == "session_update" and .data.update.sessionUpdate == "tool_call_update" and .data.update.status == "completed"'
	req GET "/session/$SID/status"
	expect 200 '.isWaitingForPermission == false'
}

@test "real agent permission: denied over REST, the command never runs and the turn ends" {
	agent_serve_start
	prompt_until_permission
	req POST "/session/$SID/permission/$REQ_ID" "{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"$(option_of_kind reject_once)\"}}"
	expect 200
	turn_ended
	[ ! -e "$WS/marker.txt" ]
}

@test "real agent permission: unanswered, cancelled after --permission-response-timeout-ms" {
	agent_serve_start --permission-response-timeout-ms 2000
	prompt_until_permission
	sse_wait ev ".type == \"permission_resolved\" and .data.requestId == \"$REQ_ID\" and .data.outcome.outcome == \"cancelled\"" 60
	turn_ended
	[ ! -e "$WS/marker.txt" ]
	req POST "/session/$SID/permission/$REQ_ID" '{"outcome":{"outcome":"cancelled"}}'
	expect 404
}

@test "real agent permission: DELETE cancels a pending request" {
	agent_serve_start
	prompt_until_permission
	req DELETE "/session/$SID"
	expect 204
	sse_has ev ".type == \"permission_resolved\" and .data.requestId == \"$REQ_ID\" and .data.outcome.outcome == \"cancelled\""
	sse_has ev '.type == "session_closed"'
	[ ! -e "$WS/marker.txt" ]
}

@test "real agent permission: an ACP client gets session/request_permission on its session stream and answers it" {
	load serve_acp_helper
	agent_serve_start
	acp_init
	acp_open conn
	acp_call 1 session/new "{\"cwd\":\"$WS\"}"
	acp_wait_answer conn 1 180
	local sid rid allow
	sid=$(jq -r .result.sessionId <<<"$answer")
	acp_open sess "$sid"
	acp_call 2 session/prompt "{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"please write the marker\"}]}"
	acp_wait sess '.method == "session/request_permission"' 180
	local ask
	ask=$(acp_msgs sess | jq -c '[.[] | select(.method == "session/request_permission")][0]')
	rid=$(jq -r .id <<<"$ask")
	jq -e --arg s "$sid" '.params.sessionId == $s and .params._meta.qwen.requestId == .id' <<<"$ask"
	allow=$(jq -r '.params.options | map(select(.kind == "allow_once"))[0].optionId' <<<"$ask")
	acp_post "{\"jsonrpc\":\"2.0\",\"id\":\"$rid\",\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"$allow\"}}}"
	[ "$code" -lt 300 ]
	acp_wait_answer sess 2 180
	jq -e '.result.stopReason == "end_turn"' <<<"$answer"
	acp_msgs sess | jq -e --arg r "$rid" 'any(.[]; .method == "_qwen/notify" and .params.kind == "permission_resolved" and .params.data.requestId == $r)'
	[ "$(cat "$WS/marker.txt")" = ran ]
}
