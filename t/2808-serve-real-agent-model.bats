#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Model switches the real qwen-code agent advertises, through the daemon:
# POST /session/:id/model → ACP session/set_model; model_switched or
# model_switch_failed on the event stream.

load agent_helper

setup() {
	agent_require
	fake_model_start '[]'
	agent_serve_start
}

teardown() {
	agent_teardown
}

@test "real agent: POST /session/:id/model to an advertised model, model_switched; to an unknown one, model_switch_failed" {
	new_session
	local model
	model=$(jq -r '.state.models.availableModels[0].modelId // .models.availableModels[0].modelId // empty' <<<"$body")
	if [ -z "$model" ]; then
		req POST "/session/$SID/load" "{\"cwd\":\"$WS\"}"
		model=$(jq -r '.state.models.availableModels[0].modelId' <<<"$body")
	fi
	[ -n "$model" ]
	sse_open ev "/session/$SID/events"
	req POST "/session/$SID/model" "$(jq -nc --arg m "$model" '{modelId:$m}')"
	expect 200
	sse_wait ev ".type == \"model_switched\" and .data.modelId == \"$model\" and .data.sessionId == \"$SID\"" 60
	req POST "/session/$SID/model" '{"modelId":"no-such-model"}'
	[ "$code" -ge 400 ]
	sse_wait ev '.type == "model_switch_failed" and .data.requestedModelId == "no-such-model" and (.data.error | length > 0)' 60
	req POST "/session/$SID/model" '{}'
	expect 400
}
