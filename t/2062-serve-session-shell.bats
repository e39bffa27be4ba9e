#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: POST /session/:id/shell, upstream's direct session shell:
# off unless --enable-session-shell (403 session_shell_disabled); on, a
# registered client's {command} runs under /bin/sh -c in the session's
# workspace, its output and result on the session's event stream
# (user_shell_command, shell_output updates, user_shell_result), the
# agent told through qwen/control/session/shell_history, and the answer
# {exitCode, output, aborted}.

load serve_helper

teardown() {
	sse_stop_all
	serve_teardown
}

# shell_ready [qwen-serve args...]: SID loaded, its client in $CID.
shell_ready() {
	serve_loaded "$@"
	CID=$(jq -r .clientId <<<"$body")
	[ -n "$CID" ]
}

# spin_start: a command that runs until killed, asked by a client in the
# background ($CLIENT); its shell's pid in $BATS_TEST_TMPDIR/pid.
spin_start() {
	curl -s --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' \
	    -H "X-Qwen-Client-Id: $CID" \
	    -d "{\"command\":\"echo \$\$ >$BATS_TEST_TMPDIR/pid; while :; do sleep 0.05; done\"}" \
	    "http://localhost/session/$SID/shell" >/dev/null 3>&- &
	CLIENT=$!
	wait_for 5 test -s "$BATS_TEST_TMPDIR/pid"
}

@test "off by default: 403 session_shell_disabled, nothing run" {
	shell_ready
	req POST "/session/$SID/shell" "{\"command\":\"touch $BATS_TEST_TMPDIR/ran\"}" \
	    -H "X-Qwen-Client-Id: $CID"
	expect 403 '.code == "session_shell_disabled" and .errorKind == "session_shell_disabled"'
	[ "$(jq -r .error <<<"$body")" = "Direct session shell is disabled for this daemon" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	req GET /capabilities
	expect 200 '(.features | index("session_shell_command")) == null'
	# A session that is not live is 404 first, as upstream's.
	req POST "/session/$SID2/shell" '{"command":"true"}'
	expect 404 '.code == "session_not_found"'
}

@test "on: the command runs in the workspace, its result answered" {
	FAKE_CHILD="log=$BATS_TEST_TMPDIR/log" shell_ready --enable-session-shell
	req GET /capabilities
	expect 200 '.features | index("session_shell_command") != null'
	req POST "/session/$SID/shell" '{"command":"  pwd; echo oops >&2; exit 3  "}' \
	    -H "X-Qwen-Client-Id: $CID"
	expect 200
	jq -e --arg ws "$WS" '. == {exitCode: 3, output: "\($ws)\noops\n", aborted: false}' <<<"$body"
	req POST "/session/$SID/shell" '{"command":"printf \"a\\377b\""}' \
	    -H "X-Qwen-Client-Id: $CID"
	expect 200 '.exitCode == 0 and .output == "a\ufffdb"'
	# The agent is told each, as upstream tells it.
	[ "$(grep -c " qwen/control/session/shell_history $SID " "$BATS_TEST_TMPDIR/log")" -eq 2 ]
}

@test "on: the session's stream gets the command, its output and its result" {
	shell_ready --enable-session-shell
	sse_open ev "/session/$SID/events"
	req POST "/session/$SID/shell" '{"command":"echo one"}' -H "X-Qwen-Client-Id: $CID"
	expect 200 '.output == "one\n"'
	sse_wait ev '.type == "user_shell_result"'
	sse_data ev | jq -e -s --arg s "$SID" --arg ws "$WS" '
	    (map(select(.type == "user_shell_command"))[0].data == {sessionId: $s, command: "echo one", cwd: $ws}) and
	    (map(select(.type == "session_update" and .data.update.sessionUpdate == "shell_output"))
	        | map(.data.update.output) | add == "one\n") and
	    (map(select(.type == "session_update" and .data.update.sessionUpdate == "shell_output"))[0]
	        .data.update._meta.source == "user-shell") and
	    (map(select(.type == "user_shell_result"))[0].data
	        | .exitCode == 0 and .aborted == false and .signal == null and .sessionId == $s)'
	# The command, the output and the result come in that order.
	sse_data ev | jq -e -s '[.[] | select(.type == "user_shell_command" or .type == "user_shell_result"
	    or .data.update.sessionUpdate? == "shell_output") | .type] | . == ["user_shell_command", "session_update", "user_shell_result"]'
}

@test "on: a client that goes away before the answer aborts its command, as upstream's" {
	shell_ready --enable-session-shell
	sse_open ev "/session/$SID/events"
	spin_start
	local client=$CLIENT
	kill "$client"
	wait "$client" || true
	sse_wait ev '.type == "user_shell_result"'
	sse_data ev | jq -e -s 'map(select(.type == "user_shell_result"))[0].data
	    | .aborted == true and .exitCode == null and .signal == 9'
	wait_for 5 bash -c "! kill -0 $(cat "$BATS_TEST_TMPDIR/pid") 2>/dev/null"
	# The connection's next client is served as before.
	req POST "/session/$SID/shell" '{"command":"echo again"}' -H "X-Qwen-Client-Id: $CID"
	expect 200 '.output == "again\n" and .aborted == false'
}

@test "on: a daemon stopped while a command runs kills it and exits cleanly" {
	shell_ready --enable-session-shell
	spin_start
	local client=$CLIENT
	# The run is freed before its connection: its client's watch must
	# go with it (under the sanitizers a use after free shows here).
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	run ! grep -E 'Sanitizer|runtime error:' "$BATS_TEST_TMPDIR/err"
	wait_for 5 bash -c "! kill -0 $(cat "$BATS_TEST_TMPDIR/pid") 2>/dev/null"
	wait "$client" || true
}

@test "on: upstream's refusals, nothing run" {
	shell_ready --enable-session-shell
	req POST "/session/$SID/shell" "{\"command\":\"touch $BATS_TEST_TMPDIR/ran\"}"
	expect 403 '.code == "client_id_required" and .errorKind == "client_id_required"'
	req POST "/session/$SID/shell" '{"command":"   "}' -H "X-Qwen-Client-Id: $CID"
	expect 400 '.error == "`command` is required and must be a non-empty string"'
	req POST "/session/$SID/shell" '{"command":7}' -H "X-Qwen-Client-Id: $CID"
	expect 400
	req POST "/session/$SID/shell" "{\"command\":\"$(head -c 65537 /dev/zero | tr '\0' ':')\"}" \
	    -H "X-Qwen-Client-Id: $CID"
	expect 400 '.error | test("longer than")'
	req POST "/session/$SID/shell" "{\"command\":\"touch $BATS_TEST_TMPDIR/ran\"}" \
	    -H "X-Qwen-Client-Id: client_unknown"
	expect 400 '.code == "invalid_client_id"'
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "on: at most eight at once; the ninth is 429 shell_limit_exceeded" {
	shell_ready --enable-session-shell
	local i pids=()
	for i in 1 2 3 4 5 6 7 8; do
		curl -s -m 20 --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' \
		    -H "X-Qwen-Client-Id: $CID" \
		    -d "{\"command\":\"touch $BATS_TEST_TMPDIR/up.$i; while [ ! -e $BATS_TEST_TMPDIR/go ]; do sleep 0.05; done\"}" \
		    "http://localhost/session/$SID/shell" >"$BATS_TEST_TMPDIR/r$i" 3>&- &
		pids+=($!)
	done
	wait_for 5 bash -c "[ \$(ls $BATS_TEST_TMPDIR | grep -c '^up\.') -eq 8 ]"
	req POST "/session/$SID/shell" '{"command":"true"}' -H "X-Qwen-Client-Id: $CID"
	expect 429 '.code == "shell_limit_exceeded"'
	touch "$BATS_TEST_TMPDIR/go"
	wait "${pids[@]}"
	for i in 1 2 3 4 5 6 7 8; do
		jq -e '.exitCode == 0' "$BATS_TEST_TMPDIR/r$i"
	done
	req POST "/session/$SID/shell" '{"command":"true"}' -H "X-Qwen-Client-Id: $CID"
	expect 200 '.exitCode == 0'
}
