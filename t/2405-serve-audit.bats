#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve --audit-log: one durable JSON record a state-changing
# request (who, what, which session, outcome), written as it is answered.

load serve_helper

teardown() {
	serve_teardown
}

AUDIT() { printf '%s' "$BATS_TEST_TMPDIR/audit.log"; }

# audit_has JQ-CONDITION: some record satisfies it.
audit_has() {
	jq -e -s "any(.[]; $1)" "$(AUDIT)" >/dev/null
}

@test "--audit-log: create, load, prompt, permission, delete; all there after a SIGKILL" {
	FAKE_CHILD=ask serve_start --audit-log "$(AUDIT)"
	[ "$(stat -c %a "$(AUDIT)")" = 600 ]
	make_transcript
	req POST /session '{}'
	expect 200
	req POST /session/$SID/load '{}'
	expect 200
	sse_open ev /session/$SID/events
	prompt_post $SID '{"prompt":[{"type":"text","text":"secret prompt words"}]}'
	sse_wait ev '.type == "permission_request"'
	rid=$(sse_data ev | jq -r 'select(.type == "permission_request") | .data.requestId' | head -1)
	req POST "/session/$SID/permission/$rid" \
	    '{"outcome":{"outcome":"selected","optionId":"proceed_once"}}'
	expect 200
	sse_wait ev '.type == "turn_complete"'
	req DELETE /session/$SID '' -H 'X-Request-Id: nightly-7'
	code_delete=$code
	# A read is not a change: not recorded.
	req GET /session/$SID2/status
	kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" || true
	SERVE_PID=
	# Every line is one JSON object with the fields; nothing answered is lost.
	jq -e -s 'length == 5' "$(AUDIT)"
	jq -e -s 'all(.[]; (.time | test("^20")) and .who == "uid:'"$(id -u)"'" and
	    .listener == "unix" and (.status | type == "number") and
	    (.outcome == "ok" or .outcome == "error") and
	    (.requestId | test("^[A-Za-z0-9._:-]{1,64}$")))' "$(AUDIT)"
	# The request's id, the one its answer and the JSON log carry.
	audit_has '.what == "DELETE /session/:id" and .requestId == "nightly-7"'
	audit_has '.what == "POST /session" and .status == 200 and .sessionId == null'
	audit_has '.what == "POST /session/:id/load" and .sessionId == "'$SID'" and .outcome == "ok"'
	audit_has '.what == "POST /session/:id/prompt" and .status == 202'
	audit_has '.what == "POST /session/:id/permission/:requestId" and .status == 200'
	audit_has '.what == "DELETE /session/:id" and .status == '"$code_delete"
	run ! grep -q '/status' "$(AUDIT)"
	# No prompt text, no body.
	run ! grep -q "secret prompt" "$(AUDIT)"
}

@test "--audit-log: refused requests are recorded as errors; SIGHUP reopens the file" {
	serve_start --audit-log "$(AUDIT)"
	req POST /session/$SID/load '{}'
	audit_has '.what == "POST /session/:id/load" and .outcome == "error" and .status == 404'
	mv "$(AUDIT)" "$(AUDIT).1"
	kill -HUP "$SERVE_PID"
	wait_for 5 test -e "$BATS_TEST_TMPDIR/audit.log"
	req POST /session/$SID2/load '{}'
	jq -e -s 'length == 1 and .[0].sessionId == "'$SID2'"' "$(AUDIT)"
	jq -e -s 'length == 1 and .[0].sessionId == "'$SID'"' "$(AUDIT).1"
}

@test "--audit-log: an unwritable file fails the start" {
	run qwen-serve --audit-log /nonexistent/dir/audit --no-tcp \
	    --socket "$BATS_TEST_TMPDIR/s.sock" --child "$FAKE_CHILD_BIN"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--audit-log /nonexistent/dir/audit: No such file or directory"* ]]
}
