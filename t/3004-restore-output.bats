#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore: exit codes, error lines, --json, --retry, the progress line
# and the state files' modes.

load restore_helper

@test "exit 0: success" {
	fake_start <<<'GET /session/s-1/status 200 {"sessionId":"s-1","clientCount":1}'
	run qwen-restore --json status s-1
	[ "$status" -eq 0 ]
	[ "$(jq -r .clientCount <<<"$output")" = 1 ]
}

@test "exit 1: a failure" {
	fake_start <<<'POST /session/s-1/load 500 {"error":"Authentication required","code":-32000,"data":{"authMethods":[]}}'
	run qwen-restore load s-1
	[ "$status" -eq 1 ]
	[ "$output" = "qwen-restore: load s-1: Authentication required" ]
}

@test "exit 2: usage errors" {
	run qwen-restore
	[ "$status" -eq 2 ]
	run qwen-restore frobnicate
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown command 'frobnicate'"* ]]
	run qwen-restore load
	[ "$status" -eq 2 ]
	run qwen-restore load a b
	[ "$status" -eq 2 ]
	run qwen-restore load ../etc
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid session ID"* ]]
	run qwen-restore --bogus status s-1
	[ "$status" -eq 2 ]
	run qwen-restore --socket /x --url http://localhost:1 status s-1
	[ "$status" -eq 2 ]
	run qwen-restore --url ftp://x status s-1
	[ "$status" -eq 2 ]
	run qwen-restore --retry 1000 status s-1
	[ "$status" -eq 2 ]
	run qwen-restore --cwd /does/not/exist status s-1
	[ "$status" -eq 2 ]
	run qwen-restore --help
	[ "$status" -eq 0 ]
	[[ "$output" == usage:* ]]
}

@test "exit 3: session not found" {
	fake_start <<EOF
POST /session/s-1/load 404 $NOT_FOUND
GET /session/s-1/status 404 $NOT_FOUND
EOF
	run qwen-restore load s-1
	[ "$status" -eq 3 ]
	[ "$output" = 'qwen-restore: load s-1: No session with id "s-1"' ]
	run qwen-restore status s-1
	[ "$status" -eq 3 ]
}

@test "exit 69: the daemon is unreachable" {
	run qwen-restore --socket "$BATS_TEST_TMPDIR/nobody.sock" status s-1
	[ "$status" -eq 69 ]
	[[ "$output" == "qwen-restore: status s-1: cannot reach the daemon"* ]]
	run qwen-restore --url http://127.0.0.1:1 capabilities
	[ "$status" -eq 69 ]
}

@test "exit 75: retryable with Retry-After" {
	fake_start <<'EOF'
POST /session 503 retry-after=5 {"error":"Session limit reached","code":"session_limit_exceeded","limit":1,"scope":"workspace"}
POST /session/s-1/load 409 retry-after=5 {"error":"busy","code":"restore_in_progress","reason":"restore_in_progress","retryable":true,"sessionId":"s-1","activeAction":"resume","requestedAction":"load"}
EOF
	run qwen-restore new
	[ "$status" -eq 75 ]
	[ "$output" = "qwen-restore: new: Session limit reached (retry in 5 s)" ]
	run qwen-restore load s-1
	[ "$status" -eq 75 ]
	[ "$output" = "qwen-restore: load s-1: busy (retry in 5 s)" ]
}

@test "--json: the daemon's body on stdout, nothing on stderr" {
	body='{"error":"AcpSessionBridge session/resume timed out after 60000ms","code":"session_restore_timeout","errorKind":"restore_timeout","retryable":true,"sessionId":"s-1","action":"resume","timeoutMs":60000}'
	fake_start <<<"POST /session/s-1/resume 504 retry-after=60 $body"
	run --separate-stderr qwen-restore --json resume s-1
	[ "$status" -eq 75 ]
	[ "$(jq -c . <<<"$output")" = "$(jq -c . <<<"$body")" ]
	[ -z "$stderr" ]
}

@test "--json: a client-side failure gets a synthesised body" {
	run --separate-stderr qwen-restore --json --socket "$BATS_TEST_TMPDIR/none.sock" load s-1
	[ "$status" -eq 69 ]
	[ "$(jq -r .code <<<"$output")" = daemon_unreachable ]
	[ "$(jq -r .retryable <<<"$output")" = false ]
	fake_start <<<"POST /session/s-1/load 200 delay=3000 $LOADED"
	run --separate-stderr qwen-restore --json --timeout-ms 200 load s-1
	[ "$status" -eq 1 ]
	[ "$(jq -r .code <<<"$output")" = client_timeout ]
	[ "$(jq -r .retryable <<<"$output")" = true ]
}

@test "--json: success prints the whole answer" {
	fake_start <<<"POST /session/s-1/load 200 $LOADED"
	run qwen-restore --json load s-1
	[ "$status" -eq 0 ]
	[ "$(jq -r .clientId <<<"$output")" = client-9 ]
	run qwen-restore load s-1
	[ "$output" = s-1 ]
}

@test "--retry honours Retry-After, at most N times" {
	fake_start <<EOF
POST /session/s-1/load 503 retry-after=1 {"error":"Session limit reached","code":"session_limit_exceeded","limit":1,"scope":"workspace"}
POST /session/s-1/load 200 $LOADED
EOF
	t0=$(now_ms)
	run qwen-restore -v --retry 2 load s-1
	t1=$(now_ms)
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = s-1 ]
	[[ "$output" == *"session_limit_exceeded: retrying in 1 s (retry 1 of 2)"* ]]
	[ "$(count POST /session/s-1/load)" -eq 2 ]
	# It waited the Retry-After second.
	[ $((t1 - t0)) -ge 1000 ]
}

@test "--retry: gives up after N retries; 0 (the default) never retries" {
	fake_start <<'EOF'
POST /session/s-1/load 503 retry-after=1 {"error":"full","code":"session_limit_exceeded","limit":1,"scope":"workspace"}
EOF
	run qwen-restore --retry 1 load s-1
	[ "$status" -eq 75 ]
	[ "$(count POST /session/s-1/load)" -eq 2 ]
	run qwen-restore load s-1
	[ "$status" -eq 75 ]
	[ "$(count POST /session/s-1/load)" -eq 3 ]
}

@test "--retry never retries what is not retryable" {
	fake_start <<EOF
POST /session/s-1/load 404 $NOT_FOUND
POST /session/s-1/resume 500 {"error":"nope","code":"internal"}
EOF
	run qwen-restore --retry 3 load s-1
	[ "$status" -eq 3 ]
	run qwen-restore --retry 3 resume s-1
	[ "$status" -eq 1 ]
	[ "$(count POST /session/s-1/load)" -eq 1 ]
	[ "$(count POST /session/s-1/resume)" -eq 1 ]
}

@test "--retry on the prompt admission (prompt_queue_full)" {
	fake_start <<'EOF'
POST /session/s-1/prompt 503 retry-after=1 {"error":"full","code":"prompt_queue_full","sessionId":"s-1","limit":5,"pendingCount":5}
POST /session/s-1/prompt 202 {"promptId":"p-9","lastEventId":1}
EOF
	run qwen-restore --retry 1 prompt --no-wait s-1 hi
	[ "$status" -eq 0 ]
	[ "$output" = p-9 ]
	[ "$(count POST /session/s-1/prompt)" -eq 2 ]
}

@test "progress line: on a terminal only" {
	command -v script >/dev/null || skip "script(1) not installed"
	fake_start <<<"POST /session/s-1/load 200 delay=600 $LOADED"
	# stderr is not a terminal here: no progress line.
	run --separate-stderr qwen-restore load s-1
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	# Under a pseudo-terminal it shows elapsed against the deadline.
	script -qec "qwen-restore --timeout-ms 9000 load s-1" "$BATS_TEST_TMPDIR/tty.log" >/dev/null
	grep -q 'load s-1: restoring, [0-9.]* s of 9.0 s' "$BATS_TEST_TMPDIR/tty.log"
	# -q silences it.
	script -qec "qwen-restore -q load s-1" "$BATS_TEST_TMPDIR/tty2.log" >/dev/null
	! grep -q restoring "$BATS_TEST_TMPDIR/tty2.log" || false
}

@test "state files are 0600 in 0700 directories" {
	fake_start <<<"POST /session/s-1/load 200 $LOADED"
	umask 022
	qwen-restore load s-1
	d=$(daemon_state_dir)
	[ "$(stat -c %a "$d/sessions/s-1.json")" = 600 ]
	[ "$(stat -c %a "$d/sessions")" = 700 ]
	[ "$(stat -c %a "$d")" = 700 ]
	[ "$(stat -c %a "$XDG_STATE_HOME/qwen-restore")" = 700 ]
	[ "$(stored_client s-1)" = client-9 ]
}

@test "state dir: --state-dir, then XDG_STATE_HOME, then ~/.local/state" {
	fake_start <<<"POST /session/s-1/load 200 $LOADED"
	qwen-restore --state-dir "$BATS_TEST_TMPDIR/st" load s-1
	ls "$BATS_TEST_TMPDIR"/st/daemons/*/sessions/s-1.json
	HOME="$BATS_TEST_TMPDIR/home" XDG_STATE_HOME= qwen-restore load s-1
	ls "$BATS_TEST_TMPDIR"/home/.local/state/qwen-restore/daemons/*/sessions/s-1.json
	[ "$(stat -c %a "$(ls "$BATS_TEST_TMPDIR"/home/.local/state/qwen-restore/daemons/*/sessions/s-1.json)")" = 600 ]
}

@test "capability cache file is 0600" {
	fake_start <<<'GET /capabilities 200 {"limits":{"sessionRestoreTimeoutMs":60000}}'
	qwen-restore capabilities >/dev/null
	[ "$(stat -c %a "$(daemon_state_dir)/capabilities.json")" = 600 ]
}

@test "a corrupt state file is ignored, not fatal" {
	fake_start <<<"POST /session/s-1/load 200 $LOADED"
	store_client s-1 c1
	echo 'not json{' >"$(daemon_state_dir)/sessions/s-1.json"
	echo '[1,2' >"$(daemon_state_dir)/capabilities.json"
	run qwen-restore -v load s-1
	[ "$status" -eq 0 ]
	[[ "$output" == *"load timeout 70000 ms (default)"* ]]
	[ "$(requests POST /session/s-1/load | jq -r .clientId)" = null ]
	[ "$(stored_client s-1)" = client-9 ]
}
