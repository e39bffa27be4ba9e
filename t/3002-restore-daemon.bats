#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore against the real qwen-serve, end to end:
# (1) a daemon restart between two prompts: the second prompt succeeds
#     through auto-resume, with exactly one resume;
# (2) a daemon restart after which a second client resumes the session: the
#     first client's stale id is healed (invalid_client_id), with exactly one
#     resume of its own.
# Skips cleanly until qwen-serve and its fake ACP child are built.

load test_helper
bats_require_minimum_version 1.5.0

SID=33333333-3333-4333-8333-333333333333

setup() {
	command -v qwen-serve >/dev/null || skip "qwen-serve not built"
	FAKE_CHILD_BIN=$(command -v fake-child) || skip "t/helper/fake-child not built"
	WS=$BATS_TEST_TMPDIR/ws
	DATA=$BATS_TEST_TMPDIR/data
	SOCK=$BATS_TEST_TMPDIR/s.sock
	mkdir -p "$WS" "$DATA"
	WS=$(cd "$WS" && pwd -P)
	export QWEN_SERVE_SOCKET=$SOCK
	export XDG_STATE_HOME=$BATS_TEST_TMPDIR/state-a
	unset QWEN_SERVE_URL QWEN_SERVER_TOKEN QWEN_FETCH_TIMEOUT_MS
	SERVE_PID=
	cd "$WS"
}

teardown() {
	serve_stop
}

# serve_start: the daemon on a private socket, data dir and workspace.
serve_start() {
	: >"$BATS_TEST_TMPDIR/out"
	(cd "$WS" && exec qwen-serve --socket "$SOCK" --no-tcp \
	    --child "$FAKE_CHILD_BIN" --data-dir "$DATA" \
	    >>"$BATS_TEST_TMPDIR/out" 2>>"$BATS_TEST_TMPDIR/err" 3>&-) 3>&- &
	SERVE_PID=$!
	wait_for 10 grep -q '^qwen-serve: ready' "$BATS_TEST_TMPDIR/out" || {
		cat "$BATS_TEST_TMPDIR/err" >&2
		return 1
	}
}

serve_stop() {
	[ -n "${SERVE_PID:-}" ] || return 0
	kill -TERM "$SERVE_PID" 2>/dev/null || true
	wait "$SERVE_PID" 2>/dev/null || true
	SERVE_PID=
}

# The daemon went away and came back: its clients and live sessions are gone.
serve_restart() {
	serve_stop
	serve_start
}

# A persisted transcript of SID (what the ACP child restores from).
make_transcript() {
	local san dir
	san=$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')
	dir=$DATA/projects/$san/chats
	mkdir -p "$dir"
	cat >"$dir/$SID.jsonl" <<EOF
{"uuid":"u1","parentUuid":null,"sessionId":"$SID","timestamp":"2026-08-01T15:01:13.619Z","type":"user","cwd":"$WS","version":"0.24.4","message":{"role":"user","parts":[{"text":"first question"}]}}
{"uuid":"a1","parentUuid":"u1","sessionId":"$SID","timestamp":"2026-08-01T15:01:20.678Z","type":"assistant","cwd":"$WS","version":"0.24.4","message":{"role":"model","parts":[{"text":"first answer"}]}}
EOF
}

# The stored clientId of SID in the state dir of $XDG_STATE_HOME.
stored_id() {
	cat "$XDG_STATE_HOME"/qwen-restore/daemons/*/sessions/"$SID".json |
		jq -r .clientId
}

@test "daemon restart between two prompts: auto-resume, exactly one resume" {
	make_transcript
	serve_start
	run qwen-restore load "$SID"
	[ "$status" -eq 0 ]
	[ "$output" = "$SID" ]
	run --separate-stderr qwen-restore prompt "$SID" "before the restart"
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	serve_restart
	run --separate-stderr qwen-restore -v prompt "$SID" "after the restart"
	echo "$stderr" >&2
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	[ "$(grep -c 'prompt rejected (session_not_found): reattaching' <<<"$stderr")" -eq 1 ]
	[ "$(grep -c 'resume without a client id' <<<"$stderr")" -eq 1 ]
	[[ "$stderr" == *"resumes sent: 1"* ]]
	# A third prompt needs no reattach at all.
	run --separate-stderr qwen-restore -v prompt "$SID" "once more"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"resumes sent: 0"* ]]
}

@test "daemon restart, another client resumes: the stale id heals, one resume" {
	make_transcript
	serve_start
	qwen-restore load "$SID" >/dev/null
	old=$(stored_id)
	[ -n "$old" ]
	serve_restart
	# A second client, with its own state, brings the session back.
	XDG_STATE_HOME=$BATS_TEST_TMPDIR/state-b run qwen-restore resume "$SID"
	[ "$status" -eq 0 ]
	# The first client still holds the pre-restart id: invalid_client_id.
	[ "$(stored_id)" = "$old" ]
	run --separate-stderr qwen-restore -v prompt "$SID" "with a stale id"
	echo "$stderr" >&2
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	[ "$(grep -c 'prompt rejected (invalid_client_id): reattaching' <<<"$stderr")" -eq 1 ]
	[[ "$stderr" == *"resumes sent: 1"* ]]
	[ "$(stored_id)" != "$old" ]
}

@test "restore timeout order against the daemon's published budget" {
	serve_start
	run --separate-stderr qwen-restore -v --json capabilities
	[ "$status" -eq 0 ]
	budget=$(jq -r .limits.sessionRestoreTimeoutMs <<<"$output")
	[ "$budget" -gt 0 ]
	make_transcript
	run --separate-stderr qwen-restore -v load "$SID"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"load timeout $((budget + 10000)) ms (cached capability + 10000 ms)"* ]]
}

@test "list shows the persisted session; status, heartbeat, detach and close work" {
	make_transcript
	serve_start
	run qwen-restore --json list
	[ "$status" -eq 0 ]
	jq -e --arg s "$SID" '.sessions | map(.sessionId) | index($s) != null' <<<"$output"
	qwen-restore load "$SID" >/dev/null
	run qwen-restore --json status "$SID"
	[ "$status" -eq 0 ]
	[ "$(jq -r .sessionId <<<"$output")" = "$SID" ]
	run qwen-restore heartbeat "$SID"
	[ "$status" -eq 0 ]
	run qwen-restore close "$SID"
	[ "$status" -eq 0 ]
	run qwen-restore status "$SID"
	[ "$status" -eq 3 ]
}
