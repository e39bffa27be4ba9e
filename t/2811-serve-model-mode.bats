#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A session's model and approval mode as upstream's daemon sets them, with
# the fake child (which advertises the models fake-a and fake-b and
# upstream's five approval modes): modelServiceId on POST /session
# (session/set_model before the answer, modelApplied; on an attach a
# best-effort switch), approvalMode on create, load and resume
# (qwen/control/session/approval_mode, or ACP session/set_mode for an agent
# without it), and POST /session/:id/approval-mode.

load serve_helper

teardown() {
	serve_teardown
}

# The methods the child read, in order ("<method> <sessionId>" a line).
child_methods() {
	awk '{print $2, $3}' "$BATS_TEST_TMPDIR/child.log"
}

start() {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log${1:+,$1}" serve_start
}

@test "modelServiceId on a new session: session/set_model before the answer, modelApplied:true, model_switched" {
	start hold=session/set_model
	curl -s --unix-socket "$SOCK" -o "$BATS_TEST_TMPDIR/create" -X POST \
	    -H 'Content-Type: application/json' \
	    --data-binary "{\"cwd\":\"$WS\",\"modelServiceId\":\"fake-b\"}" \
	    http://localhost/session 3>&- &
	local curl_pid=$!
	wait_for 10 grep -q ' session/set_model ' "$BATS_TEST_TMPDIR/child.log"
	# The switch is held by the child: the create has not answered.
	[ ! -s "$BATS_TEST_TMPDIR/create" ]
	kill -USR1 "$(child_pid)"
	wait "$curl_pid"
	body=$(cat "$BATS_TEST_TMPDIR/create")
	jq -e '.modelApplied == true and .attached == false' <<<"$body"
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	[ "$(child_methods | grep -c "session/set_model $sid")" -eq 1 ]
	# The event is in the ring: a subscriber from id 0 sees it.
	sse_open ev "/session/$sid/events" -H 'Last-Event-ID: 0'
	sse_wait ev ".type == \"model_switched\" and .data.modelId == \"fake-b\" and .data.sessionId == \"$sid\""
}

@test "modelServiceId the agent refuses: the session is still created, modelApplied:false, model_switch_failed" {
	start
	req POST /session "{\"cwd\":\"$WS\",\"modelServiceId\":\"no-such-model\"}"
	expect 200 '.modelApplied == false and (.sessionId | length > 0)'
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	req GET "/session/$sid/status"
	expect 200
	sse_open ev "/session/$sid/events" -H 'Last-Event-ID: 0'
	sse_wait ev '.type == "model_switch_failed" and .data.requestedModelId == "no-such-model" and (.data.error | contains("Invalid model"))'
	run sse_has ev '.type == "model_switched"'
	[ "$status" -ne 0 ]
}

@test "without modelServiceId (absent, empty, not a string) no switch is sent and modelApplied is absent" {
	start
	req POST /session "{\"cwd\":\"$WS\",\"sessionScope\":\"thread\"}"
	expect 200 'has("modelApplied") | not'
	req POST /session "{\"cwd\":\"$WS\",\"sessionScope\":\"thread\",\"modelServiceId\":\"\"}"
	expect 200 'has("modelApplied") | not'
	req POST /session "{\"cwd\":\"$WS\",\"sessionScope\":\"thread\",\"modelServiceId\":7}"
	expect 200 'has("modelApplied") | not'
	run grep -c ' session/set_model ' "$BATS_TEST_TMPDIR/child.log"
	[ "$output" = 0 ]
}

@test "attach with modelServiceId: a best-effort switch, no modelApplied, failures only on the event stream" {
	start
	req POST /session "{\"cwd\":\"$WS\"}"
	expect 200 '.attached == false'
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	sse_open ev "/session/$sid/events"
	req POST /session "{\"cwd\":\"$WS\",\"modelServiceId\":\"fake-b\"}"
	expect 200 ".attached == true and .sessionId == \"$sid\" and (has(\"modelApplied\") | not)"
	sse_wait ev '.type == "model_switched" and .data.modelId == "fake-b"'
	req POST /session "{\"cwd\":\"$WS\",\"modelServiceId\":\"bogus\"}"
	expect 200 ".attached == true and (has(\"modelApplied\") | not)"
	sse_wait ev '.type == "model_switch_failed" and .data.requestedModelId == "bogus"'
}

@test "approvalMode on a new session: the extension method, approval_mode_changed, current_mode_update passes through" {
	start
	req POST /session "{\"cwd\":\"$WS\",\"approvalMode\":\"yolo\",\"modelServiceId\":\"fake-a\"}"
	expect 200 '.modelApplied == true'
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	# Model first, then the mode, both before the answer.
	[ "$(child_methods | grep -v '^initialize' | awk '{print $1}' | tr '\n' ' ')" = \
	    "session/new session/set_model qwen/control/session/approval_mode " ]
	sse_open ev "/session/$sid/events" -H 'Last-Event-ID: 0'
	sse_wait ev ".type == \"approval_mode_changed\" and .data == {sessionId:\"$sid\",previous:\"default\",next:\"yolo\",persisted:false}"
	sse_wait ev '.type == "session_update" and .data.update.sessionUpdate == "current_mode_update" and .data.update.currentModeId == "yolo"'
}

@test "approvalMode the agent refuses on a new session: the error, and the session is closed again" {
	start fail=qwen/control/session/approval_mode:-32603
	req POST /session "{\"cwd\":\"$WS\",\"approvalMode\":\"plan\"}"
	expect 500 '.error == "Injected failure" and .code == -32603'
	local sid
	sid=$(child_methods | awk '$1 == "qwen/control/session/approval_mode" {print $2}')
	[ -n "$sid" ]
	req GET "/session/$sid/status"
	expect 404
	wait_for 10 grep -q "qwen/control/session/close $sid" "$BATS_TEST_TMPDIR/child.log"
	# The next create spawns afresh (the default session was not kept).
	req POST /session "{\"cwd\":\"$WS\"}"
	expect 200 '.attached == false'
}

@test "an agent without the extension (-32601) gets ACP session/set_mode with the mode id" {
	start fail=qwen/control/session/approval_mode:-32601
	req POST /session "{\"cwd\":\"$WS\",\"approvalMode\":\"auto-edit\"}"
	expect 200
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	grep -q "session/set_mode $sid" "$BATS_TEST_TMPDIR/child.log"
	sse_open ev "/session/$sid/events" -H 'Last-Event-ID: 0'
	sse_wait ev '.type == "approval_mode_changed" and .data.previous == "default" and .data.next == "auto-edit"'
	req POST "/session/$sid/approval-mode" '{"mode":"plan"}'
	expect 200 ".sessionId == \"$sid\" and .mode == \"plan\" and .previous == \"auto-edit\" and .persisted == false"
}

@test "POST /session/:id/approval-mode: the answer, the event to every subscriber, upstream's 400s and 404" {
	start
	req GET /capabilities
	expect 200 '(.features | index("session_approval_mode_control")) and (.features | index("session_set_model"))'
	req POST /session "{\"cwd\":\"$WS\"}"
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	sse_open ev "/session/$sid/events"
	req POST "/session/$sid/approval-mode" '{"mode":"plan"}' -H 'X-Qwen-Client-Id: cli-1'
	expect 400 '.code == "invalid_client_id"'
	req POST "/session/$sid/approval-mode" '{"mode":"plan","persist":true}'
	expect 200 ". == {sessionId:\"$sid\",mode:\"plan\",previous:\"default\",persisted:false}"
	sse_wait ev ".type == \"approval_mode_changed\" and .data.next == \"plan\" and .data.previous == \"default\""
	req POST "/session/$sid/approval-mode" '{"mode":"auto-edit","planMode":true}'
	expect 200 '.mode == "auto-edit" and .previous == "plan"'
	req POST "/session/$sid/approval-mode" '{"mode":"sloppy"}'
	expect 400 '.code == "invalid_approval_mode" and .allowed == ["plan","default","auto-edit","auto","yolo"]'
	req POST "/session/$sid/approval-mode" '{}'
	expect 400 '.code == "invalid_approval_mode"'
	req POST "/session/$sid/approval-mode" '{"mode":"yolo","persist":"yes"}'
	expect 400 '.code == "invalid_persist_flag"'
	req POST "/session/$sid/approval-mode" '{"mode":"plan","planMode":true}'
	expect 400 '.code == "invalid_plan_mode"'
	req POST "/session/$sid/approval-mode" '{"mode":"yolo","planMode":1}'
	expect 400 '.code == "invalid_plan_mode"'
	req POST "/session/$SID2/approval-mode" '{"mode":"yolo"}'
	expect 404 '.code == "session_not_found"'
	# Nothing invalid reached the agent.
	[ "$(grep -c ' qwen/control/session/approval_mode ' "$BATS_TEST_TMPDIR/child.log")" -eq 2 ]
}

@test "a mode switch whose answer never comes: 504 init_timeout, no event" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log,hang=qwen/control/session/approval_mode" \
	    serve_start --initialize-timeout-ms 300
	req POST /session "{\"cwd\":\"$WS\"}"
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	sse_open ev "/session/$sid/events"
	req POST "/session/$sid/approval-mode" '{"mode":"yolo"}'
	expect 504 '.code == "init_timeout"'
	run sse_has ev '.type == "approval_mode_changed"'
	[ "$status" -ne 0 ]
}

@test "approvalMode on load and resume is applied after the restore, before the answer" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log,replay=0,known=$SID,known=$SID2" serve_start
	req POST "/session/$SID/load" '{"approvalMode":"yolo"}'
	expect 200 '.attached == false'
	[ "$(child_methods | grep " $SID\$" | awk '{print $1}' | tr '\n' ' ')" = \
	    "session/load qwen/control/session/approval_mode " ]
	sse_open ev "/session/$SID/events" -H 'Last-Event-ID: 0'
	sse_wait ev '.type == "approval_mode_changed" and .data.next == "yolo"'
	req POST "/session/$SID2/resume" '{"approvalMode":"plan"}'
	expect 200
	[ "$(child_methods | grep " $SID2\$" | awk '{print $1}' | tr '\n' ' ')" = \
	    "session/resume qwen/control/session/approval_mode " ]
	# An attach to the live session applies its approvalMode too.
	req POST "/session/$SID/load" '{"approvalMode":"auto"}'
	expect 200 '.attached == true'
	sse_wait ev '.type == "approval_mode_changed" and .data.previous == "yolo" and .data.next == "auto"'
}

@test "an attach whose approvalMode fails gets the error and its registration back; the session lives on" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/child.log,fail=qwen/control/session/approval_mode@$SID:-32603" \
	    serve_start
	req POST /session "{\"cwd\":\"$WS\",\"sessionId\":\"$SID\"}"
	expect 200
	req GET "/session/$SID/status"
	local clients
	clients=$(jq .clientCount <<<"$body")
	req POST "/session/$SID/load" '{"approvalMode":"yolo"}' -H 'X-Qwen-Client-Id: late-1'
	expect 500 '.code == -32603'
	req GET "/session/$SID/status"
	expect 200 ".clientCount == $clients"
}

@test "the echo child (qwen-acp-child) advertises its model and modes, accepts those, refuses others" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start
	req POST /session "{\"cwd\":\"$WS\",\"sessionScope\":\"thread\",\"modelServiceId\":\"echo\",\"approvalMode\":\"yolo\"}"
	expect 200 '.modelApplied == true'
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	sse_open ev "/session/$sid/events" -H 'Last-Event-ID: 0'
	sse_wait ev '.type == "model_switched" and .data.modelId == "echo"'
	sse_wait ev '.type == "approval_mode_changed" and .data.previous == "default" and .data.next == "yolo"'
	sse_wait ev '.type == "session_update" and .data.update == {sessionUpdate:"current_mode_update",currentModeId:"yolo"}'
	req POST "/session/$sid/approval-mode" '{"mode":"plan"}'
	expect 200 '.previous == "yolo" and .mode == "plan"'
	req POST "/session/$sid/model" '{"modelId":"gpt-99"}'
	[ "$code" -ge 400 ]
	sse_wait ev '.type == "model_switch_failed" and .data.requestedModelId == "gpt-99" and (.data.error | contains("Unknown model"))'
	req POST /session "{\"cwd\":\"$WS\",\"sessionScope\":\"thread\",\"modelServiceId\":\"gpt-99\"}"
	expect 200 '.modelApplied == false'
	# A turn still runs after the switches.
	req POST "/session/$sid/prompt" '{"prompt":[{"type":"text","text":"hi"}]}'
	expect 202
	sse_wait ev '.type == "turn_complete"' 20
	# Load and resume answers advertise the same, and take approvalMode.
	make_transcript
	req POST "/session/$SID/load" '{"approvalMode":"auto-edit"}'
	expect 200 '.state.models.currentModelId == "echo" and (.state.modes.availableModes | map(.id)) == ["plan","default","auto-edit","auto","yolo"]'
	req POST "/session/$SID/approval-mode" '{"mode":"default"}'
	expect 200 '.previous == "auto-edit" and .mode == "default"'
}

@test "the delegating child (--agent-acp) advertises nothing and refuses switches its agent would not see" {
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start --agent-acp /bin/false
	req POST /session "{\"cwd\":\"$WS\",\"sessionScope\":\"thread\",\"modelServiceId\":\"echo\"}"
	expect 200 '.modelApplied == false'
	local sid
	sid=$(jq -r .sessionId <<<"$body")
	sse_open ev "/session/$sid/events" -H 'Last-Event-ID: 0'
	sse_wait ev '.type == "model_switch_failed" and (.data.error | contains("--agent-acp"))'
	req POST "/session/$sid/approval-mode" '{"mode":"yolo"}'
	[ "$code" -ge 400 ]
	run sse_has ev '.type == "approval_mode_changed"'
	[ "$status" -ne 0 ]
	make_transcript
	req POST "/session/$SID/load" '{}'
	expect 200 '(.state | has("models") | not) and (.state | has("modes") | not)'
}
