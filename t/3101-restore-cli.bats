#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore as a user meets it (issue 17): connection errors that name
# the socket or URL and why, the default socket lookup, human output
# (tables, key/value) against --json, NDJSON prompts, labelled --parallel
# answers and options checked per command.

load restore_helper

# stale_socket PATH: a socket file nobody listens on (connection refused).
stale_socket() {
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"
}

@test "a missing socket is named, with why and a hint (exit 69)" {
	run qwen-restore --socket "$BATS_TEST_TMPDIR/none.sock" status s-1
	[ "$status" -eq 69 ]
	[ "$output" = "qwen-restore: status s-1: cannot reach the daemon at $BATS_TEST_TMPDIR/none.sock: no such file; is qwen-serve running?" ]
}

@test "a regular file, a directory and a stale socket each say what they are" {
	: >"$BATS_TEST_TMPDIR/file"
	mkdir "$BATS_TEST_TMPDIR/dir"
	stale_socket "$BATS_TEST_TMPDIR/stale.sock"
	run qwen-restore --socket "$BATS_TEST_TMPDIR/file" list
	[ "$status" -eq 69 ]
	[[ "$output" == *"at $BATS_TEST_TMPDIR/file: not a socket" ]]
	run qwen-restore --socket "$BATS_TEST_TMPDIR/dir" list
	[ "$status" -eq 69 ]
	[[ "$output" == *"at $BATS_TEST_TMPDIR/dir: a directory, not a socket" ]]
	QWEN_SERVE_SOCKET="$BATS_TEST_TMPDIR/stale.sock" run qwen-restore list
	[ "$status" -eq 69 ]
	[[ "$output" == *"at $BATS_TEST_TMPDIR/stale.sock: connection refused; a stale socket: is qwen-serve running?" ]]
}

@test "a socket of another user: permission denied" {
	[ "$(id -u)" -ne 0 ] || skip "root connects to any socket"
	fake_start <<<'GET /session/s-1/status 200 {"sessionId":"s-1"}'
	chmod 000 "$FAKE_SOCK"
	run qwen-restore status s-1
	[ "$status" -eq 69 ]
	[[ "$output" == *"at $FAKE_SOCK: permission denied"* ]]
}

@test "an unreachable URL is named with the reason" {
	# A port that was just free: bind, note it, close.
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	run qwen-restore --url "http://127.0.0.1:$port/" status s-1
	[ "$status" -eq 69 ]
	[ "$output" = "qwen-restore: status s-1: cannot reach the daemon at http://127.0.0.1:$port: connection refused; is qwen-serve listening there?" ]
}

@test "default lookup: XDG_RUNTIME_DIR, /run/user/UID, /tmp, the system socket; all named when none exists" {
	unset QWEN_SERVE_SOCKET
	uid=$(id -u)
	for p in "/run/user/$uid/qwen-serve/qwen-serve.sock" "/tmp/qwen-serve-$uid/qwen-serve.sock" /run/qwen-serve/qwen-serve.sock; do
		[ ! -e "$p" ] || skip "$p exists on this machine"
	done
	XDG_RUNTIME_DIR="$BATS_TEST_TMPDIR/run" run qwen-restore status s-1
	[ "$status" -eq 69 ]
	[ "$output" = "qwen-restore: status s-1: cannot reach the daemon: no such file: $BATS_TEST_TMPDIR/run/qwen-serve/qwen-serve.sock, /run/user/$uid/qwen-serve/qwen-serve.sock, /tmp/qwen-serve-$uid/qwen-serve.sock, /run/qwen-serve/qwen-serve.sock; is qwen-serve running?" ]
	# Without XDG_RUNTIME_DIR (cron) the per-user runtime dir comes first.
	XDG_RUNTIME_DIR= run qwen-restore status s-1
	[ "$status" -eq 69 ]
	[[ "$output" == *": no such file: /run/user/$uid/qwen-serve/qwen-serve.sock, /tmp/"* ]]
}

@test "status and capabilities: aligned key/value lines; --json: the body" {
	fake_start <<'SCRIPT'
GET /session/s-1/status 200 {"sessionId":"s-1","hasActivePrompt":false,"clientCount":2,"lastSeenAt":1764600000000}
GET /capabilities 200 {"v":1,"features":["a","b"],"limits":{"sessionRestoreTimeoutMs":60000}}
GET /session/s-1/status 200 {"sessionId":"s-1","clientCount":2}
SCRIPT
	run qwen-restore status s-1
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "sessionId        s-1" ]
	[ "${lines[1]}" = "hasActivePrompt  no" ]
	[ "${lines[2]}" = "clientCount      2" ]
	[[ "${lines[3]}" =~ ^lastSeenAt\ {7}20[0-9][0-9]-[01][0-9]-[0-3][0-9]\ [0-9:]{8}$ ]]
	run qwen-restore capabilities
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "features                        a, b" ]
	[ "${lines[2]}" = "limits.sessionRestoreTimeoutMs  60000" ]
	run qwen-restore --json status s-1
	[ "$(jq -r .clientCount <<<"$output")" = 2 ]
}

@test "list: a table cut to the width; an empty list says so on stderr" {
	fake_start <<'SCRIPT'
GET /workspace/sessions 200 {"workspaceCwd":"/w","sessions":[{"sessionId":"s-1","size":1536,"mtime":1764600000000,"firstPrompt":"Why is\nloading so slow on big transcripts today?","live":true},{"sessionId":"s-22","size":12,"mtime":1764500000000,"firstPrompt":null,"live":false}]}
GET /workspace/sessions 200 {"workspaceCwd":"/w","sessions":[]}
SCRIPT
	COLUMNS=60 run qwen-restore list
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^ID\ +SIZE\ MODIFIED\ +LIVE\ FIRST\ PROMPT$ ]]
	[[ "${lines[1]}" =~ ^s-1\ +1\.5K\ 20[0-9-]+\ [0-9:]+\ +yes\ +Why\ is\ loading\ so ]]
	[[ "${lines[1]}" == *"…" ]]
	[ "$(printf '%s' "${lines[1]}" | wc -m)" -eq 60 ]
	[[ "${lines[2]}" =~ ^s-22\ +12\ .*\ no\ +-$ ]]
	run --separate-stderr qwen-restore list
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$stderr" = "qwen-restore: no sessions in $WS" ]
}

@test "--json prompt: one JSON event per line (NDJSON), the prompt's own only" {
	store_client s-1 c1
	{
		echo "GET /session/s-1/events 200 sse hold"
		echo '> {"id":5,"v":1,"type":"session_update","promptId":"other","data":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"not mine"}}}}'
		sse_frames p-1 "hello " "world"
		echo 'POST /session/s-1/prompt 202 {"promptId":"p-1","lastEventId":4}'
	} >"$BATS_TEST_TMPDIR/s.in"
	fake_start <"$BATS_TEST_TMPDIR/s.in"
	run --separate-stderr qwen-restore --json prompt s-1 hi
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(jq -rs 'map(.type) | join(",")' <<<"$output")" = "session_update,session_update,turn_complete" ]
	[ "$(jq -rs 'map(.promptId) | unique | join(",")' <<<"$output")" = p-1 ]
	[ "$(jq -rs 'map(.data.update.content.text // empty) | join("")' <<<"$output")" = "hello world" ]
}

@test "options are checked per command (exit 2)" {
	run qwen-restore --parallel list
	[ "$status" -eq 2 ]
	[ "$output" = "qwen-restore: --parallel: only for prompt, not list" ]
	run qwen-restore status s-1 --no-wait
	[ "$status" -eq 2 ]
	run qwen-restore load s-1 --no-auto-resume
	[ "$status" -eq 2 ]
	run qwen-restore prompt s-1 --last-event-id 3 hi
	[ "$status" -eq 2 ]
	[ "$output" = "qwen-restore: --last-event-id: only for events and follow, not prompt" ]
	run qwen-restore prompt --parallel s-1 hi
	[ "$status" -eq 2 ]
	[[ "$output" == *"--parallel reads the prompts from standard input" ]]
}

@test "--json: cancel and close print JSON too" {
	store_client s-1 c1
	fake_start <<'SCRIPT'
POST /session/s-1/cancel 204
DELETE /session/s-1 404 {"error":"No session","code":"session_not_found"}
SCRIPT
	run qwen-restore --json cancel s-1
	[ "$status" -eq 0 ]
	[ "$(jq -c . <<<"$output")" = '{"sessionId":"s-1","status":204}' ]
	run qwen-restore --json close s-1
	[ "$status" -eq 0 ]
	[ "$(jq -r .status <<<"$output")" = 404 ]
}

# complete_words WORD...: the qwen-restore completion for the last word.
complete_words() {
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
	    _qwen_restore; printf "%s\n" "${COMPREPLY[@]}"' sh \
	    "$QWEN_TOP_SRCDIR/contrib/bash-completion/qwen-restore" "$@"
}

@test "completion: global options after the command, session ids from the daemon" {
	fake_start <<'SCRIPT'
GET /workspace/sessions 200 {"sessions":[{"sessionId":"s-1"},{"sessionId":"s-22"},{"sessionId":"t-3"}]}
GET /workspace/sessions 200 {"sessions":[{"sessionId":"s-1"},{"sessionId":"s-22"},{"sessionId":"t-3"}]}
SCRIPT
	[ "$(complete_words qwen-restore status s-1 --ve)" = "--verbose
--version" ]
	[ "$(complete_words qwen-restore load --js)" = --json ]
	[ "$(complete_words qwen-restore prompt s-1 --no-w)" = --no-wait ]
	[ "$(complete_words qwen-restore --cwd "$WS" load s- | sort | tr '\n' ' ')" = "s-1 s-22 " ]
	[ "$(requests GET /workspace/sessions | jq -r .query)" = "cwd=$(jq -rn --arg c "$WS" '$c | @uri')&limit=10000" ]
	[ "$(complete_words qwen-restore --socket "$FAKE_SOCK" status t)" = t-3 ]
	# No second id, and nothing from a daemon that is not there.
	[ -z "$(complete_words qwen-restore status s-1 s)" ]
	[ -z "$(complete_words qwen-restore --socket "$BATS_TEST_TMPDIR/none" load s)" ]
}

@test "--url on loopback: the daemon's token file is looked for in the socket lookup order" {
	fake_start --port-file "$BATS_TEST_TMPDIR/port" <<<'GET /session/s-1/status 200 {"sessionId":"s-1"}'
	wait_for 5 test -s "$BATS_TEST_TMPDIR/port"
	port=$(cat "$BATS_TEST_TMPDIR/port")
	unset QWEN_SERVE_SOCKET
	mkdir -p "$BATS_TEST_TMPDIR/run/qwen-serve"
	printf 'tok-xdg\n' >"$BATS_TEST_TMPDIR/run/qwen-serve/token"
	chmod 600 "$BATS_TEST_TMPDIR/run/qwen-serve/token"
	XDG_RUNTIME_DIR="$BATS_TEST_TMPDIR/run" run qwen-restore --url "http://127.0.0.1:$port" status s-1
	[ "$status" -eq 0 ]
	# No XDG_RUNTIME_DIR and no token in the other places: none is sent.
	XDG_RUNTIME_DIR= run qwen-restore --url "http://127.0.0.1:$port" status s-1
	[ "$status" -eq 0 ]
	[ "$(jq -r .auth "$FAKE_LOG" | head -1)" = "Bearer tok-xdg" ]
	if [ ! -e "/run/user/$(id -u)/qwen-serve/token" ] && [ ! -e "/tmp/qwen-serve-$(id -u)/token" ]; then
		[ "$(jq -r .auth "$FAKE_LOG" | sed -n 2p)" = null ]
	fi
}
