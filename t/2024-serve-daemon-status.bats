#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the capability fields upstream clients read (policy,
# workspaces[], supportedLanguages, sessionLiveStatePollIntervalMs) and
# GET /daemon/status, by curl and through the real SDK.

load serve_helper

teardown() {
	serve_teardown
}

@test "capabilities: policy, workspaces[], supportedLanguages, sessionLiveStatePollIntervalMs" {
	serve_start
	req GET /capabilities
	expect 200 '.policy.permission == "first-responder" and .supportedLanguages == ["en"] and .sessionLiveStatePollIntervalMs == 5000'
	expect 200 ".workspaces | length == 1"
	expect 200 ".workspaces[0] == {id: \"primary\", cwd: \"$WS\", displayName: \"ws\", primary: true, trusted: true, workflowsEnabled: false, removable: false}"
	# No qwen-code runs here: no qwenCodeVersion to report.
	expect 200 'has("qwenCodeVersion") | not'
}

@test "GET /daemon/status: the report, its limits and counters; detail=full; 400 invalid_detail" {
	FAKE_CHILD=hang=session/prompt serve_start --prompt-deadline-ms 90000 --writer-idle-timeout-ms 7000 --max-sessions 9
	req GET /daemon/status
	expect 200 ".v == 1 and .detail == \"summary\" and .status == \"ok\" and .issues == [] and .daemon.workspaceCwd == \"$WS\" and .daemon.mode == \"http-bridge\""
	expect 200 ".daemon.pid == $SERVE_PID and .daemon.uptimeMs >= 0 and (.generatedAt | test(\"^20[0-9-]+T\"))"
	expect 200 '.limits.promptDeadlineMs == 90000 and .limits.writerIdleTimeoutMs == 7000 and .limits.maxSessions == 9 and .limits.eventRingSize == 8000'
	expect 200 '(.security.tokenConfigured | type) == "boolean" and .security.requireAuth == false and .security.loopbackBind == true'
	expect 200 '(.capabilities.features | index("prompt_absolute_deadline")) != null and .capabilities.protocolVersions.current == "v1"'
	expect 200 ".workspaces[0].cwd == \"$WS\" and .runtime.sessions.active == 0 and .runtime.channel.live == false and .runtime.transport.restSseActive == 0"
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	sse_open a /session/$SID/events
	req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"x"}]}'
	expect 202
	wait_for 5 bash -c "curl -s --unix-socket '$SOCK' http://localhost/daemon/status | jq -e '.runtime.sessions.activePrompts == 1' >/dev/null"
	req GET /daemon/status
	expect 200 '.runtime.sessions.active == 1 and .runtime.channel.live == true and .runtime.transport.restSseActive == 1'
	req GET '/daemon/status?detail=full'
	expect 200 '.detail == "full"'
	req GET '/daemon/status?detail=verbose'
	expect 400 '.code == "invalid_detail"'
}

@test "SDK: capability fields and daemonStatus()" {
	serve_start
	sdk_run status
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - daemonStatus('full')"* ]]
}
