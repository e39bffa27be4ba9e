#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: upstream's legacy POST /permission/:requestId, a permission
# answer without its session: found in whichever live session holds the
# request, first answer wins, the same errors as the session's route.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

@test "POST /permission/:requestId answers the session holding it, once" {
	FAKE_CHILD=ask serve_start
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	local cid rid
	cid=$(jq -r .clientId <<<"$body")
	sse_open ev /session/$SID/events
	prompt_post $SID '{"prompt":[{"type":"text","text":"write it"}]}'
	sse_wait ev '.type == "permission_request"'
	rid=$(sse_data ev | jq -r 'select(.type == "permission_request") | .data.requestId' | head -1)
	req POST "/permission/no-such-request" '{"outcome":{"outcome":"cancelled"}}'
	expect 404 '.error == "No pending permission request" and .requestId == "no-such-request"'
	req POST "/permission/$rid" '{"outcome":{"outcome":"maybe"}}'
	expect 400 ".requestId == \"$rid\""
	req POST "/permission/$rid" '{"outcome":{"outcome":"selected","optionId":"nope"}}'
	expect 400 '.code == "invalid_option_id" and .optionId == "nope"'
	# A client named must be one of the session's.
	req POST "/permission/$rid" '{"outcome":{"outcome":"selected","optionId":"proceed_once"}}' \
	    -H 'X-Qwen-Client-Id: client_00000000-0000-4000-8000-000000000000'
	expect 400 '.code == "invalid_client_id"'
	req POST "/permission/$rid" '{"outcome":{"outcome":"selected","optionId":"proceed_once"}}' \
	    -H "X-Qwen-Client-Id: $cid"
	expect 200 '. == {}'
	sse_wait ev '.type == "permission_resolved"'
	sse_wait ev '.type == "turn_complete"'
	# Answered: the second answer finds nothing.
	req POST "/permission/$rid" '{"outcome":{"outcome":"cancelled"}}'
	expect 404
	req POST /permission/x 'nope'
	expect 400 '.code == "invalid_json"'
	req GET /permission/x
	expect 405
}
