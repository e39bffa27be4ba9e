#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The real qwen-code agent's model and approval mode set through the
# daemon as upstream's does: modelServiceId on POST /session (the model
# the agent advertises, applied before the answer: the fake model sees
# its name in the next request), approvalMode on create, and
# POST /session/:id/approval-mode on a live session.

load agent_helper

setup() {
	agent_require
	fake_shell_model_start
	# Two models of the agent's own configuration, both the fake server.
	local u=http://127.0.0.1:$MODEL_PORT/v1
	AGENT_SETTINGS=$(jq -nc --arg u "$u" '{modelProviders:{openai:[
	    {id:"fake",name:"fake",baseUrl:$u,envKey:"OPENAI_API_KEY"},
	    {id:"fake-large",name:"fake-large",baseUrl:$u,envKey:"OPENAI_API_KEY"}]},
	    security:{auth:{selectedType:"openai"}},model:{name:"fake"}}')
	agent_serve_start
}

teardown() {
	agent_teardown
}

# LARGE: the modelId the agent advertises for fake-large (a load's state).
advertised_large() {
	req POST /session "{\"cwd\":\"$WS\",\"sessionScope\":\"thread\"}"
	expect 200
	req POST "/session/$(jq -r .sessionId <<<"$body")/load" "{\"cwd\":\"$WS\"}"
	expect 200
	LARGE=$(jq -r '.state.models.availableModels[] | select(.name == "fake-large") | .modelId' <<<"$body")
	[ -n "$LARGE" ]
}

# The model named in the model request that carried TEXT.
model_of_request() {
	jq -r .model "$(model_request_with "$1")"
}

@test "real agent: modelServiceId on create, modelApplied:true, model_switched, the next prompt goes to that model" {
	advertised_large
	req POST /session "$(jq -nc --arg w "$WS" --arg m "$LARGE" '{cwd:$w,sessionScope:"thread",modelServiceId:$m}')"
	expect 200 '.modelApplied == true and .attached == false'
	SID=$(jq -r .sessionId <<<"$body")
	sse_open ev "/session/$SID/events" -H 'Last-Event-ID: 0'
	sse_wait ev ".type == \"model_switched\" and .data.modelId == \"$LARGE\""
	prompt_and_wait ev "first question for the large model"
	[ "$(model_of_request "first question for the large model")" = fake-large ]
}

@test "real agent: a modelServiceId the agent does not know: modelApplied:false, model_switch_failed, the session works" {
	req POST /session "{\"cwd\":\"$WS\",\"modelServiceId\":\"no-such-model\"}"
	expect 200 '.modelApplied == false'
	SID=$(jq -r .sessionId <<<"$body")
	sse_open ev "/session/$SID/events" -H 'Last-Event-ID: 0'
	sse_wait ev '.type == "model_switch_failed" and .data.requestedModelId == "no-such-model" and (.data.error | length > 0)'
	prompt_and_wait ev "still answering"
	[ "$(model_of_request "still answering")" = fake ]
}

@test "real agent: approvalMode yolo on create, the shell command runs without a permission_request" {
	req POST /session "{\"cwd\":\"$WS\",\"approvalMode\":\"yolo\"}"
	expect 200
	SID=$(jq -r .sessionId <<<"$body")
	sse_open ev "/session/$SID/events" -H 'Last-Event-ID: 0'
	sse_wait ev ".type == \"approval_mode_changed\" and .data == {sessionId:\"$SID\",previous:\"default\",next:\"yolo\",persisted:false}"
	prompt_and_wait ev "please write the marker"
	[ "$(cat "$WS/marker.txt")" = ran ]
	run sse_has ev '.type == "permission_request"'
	[ "$status" -ne 0 ]
}

@test "real agent: POST /session/:id/approval-mode on a live session switches it; a bad mode is upstream's 400" {
	new_session
	sse_open ev "/session/$SID/events"
	req POST "/session/$SID/approval-mode" '{"mode":"yolo"}'
	expect 200 ". == {sessionId:\"$SID\",mode:\"yolo\",previous:\"default\",persisted:false}"
	sse_wait ev '.type == "approval_mode_changed" and .data.next == "yolo"'
	prompt_and_wait ev "please write the marker"
	[ "$(cat "$WS/marker.txt")" = ran ]
	run sse_has ev '.type == "permission_request"'
	[ "$status" -ne 0 ]
	req POST "/session/$SID/approval-mode" '{"mode":"plan"}'
	expect 200 '.mode == "plan" and .previous == "yolo" and .planExecutionMode == "yolo"'
	req POST "/session/$SID/approval-mode" '{"mode":"reckless"}'
	expect 400 '.code == "invalid_approval_mode" and (.allowed | length == 5)'
}
