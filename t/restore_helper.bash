# SPDX-License-Identifier: ISC
# restore_helper.bash: the scripted fake daemon for the qwen-restore tests.

load test_helper
bats_require_minimum_version 1.5.0

# Each test gets its own daemon, state and workspace.
setup() {
	FAKE_SOCK="$BATS_TEST_TMPDIR/d.sock"
	FAKE_LOG="$BATS_TEST_TMPDIR/requests.log"
	FAKE_SCRIPT="$BATS_TEST_TMPDIR/script"
	FAKE_PID=
	export XDG_STATE_HOME="$BATS_TEST_TMPDIR/state"
	export QWEN_SERVE_SOCKET="$FAKE_SOCK"
	unset QWEN_SERVE_URL QWEN_SERVER_TOKEN QWEN_FETCH_TIMEOUT_MS
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$WS"
	cd "$WS"
}

teardown() {
	fake_stop
}

# fake_start: the script comes on stdin (see t/helper/fake-daemon.c).
fake_start() {
	cat >"$FAKE_SCRIPT"
	: >"$FAKE_LOG"
	rm -f "$FAKE_SOCK"
	fake-daemon --socket "$FAKE_SOCK" --script "$FAKE_SCRIPT" \
		--log "$FAKE_LOG" "$@" 3>&- &
	FAKE_PID=$!
	wait_for 10 test -S "$FAKE_SOCK"
}

fake_stop() {
	if [ -n "$FAKE_PID" ]; then
		kill "$FAKE_PID" 2>/dev/null || true
		wait "$FAKE_PID" 2>/dev/null || true
		FAKE_PID=
	fi
}

# requests METHOD PATH: the logged requests of a route, one JSON per line.
requests() {
	jq -c --arg m "$1" --arg p "$2" \
		'select(.method == $m and .path == $p)' "$FAKE_LOG"
}

# count METHOD PATH
count() {
	requests "$1" "$2" | wc -l
}

# The state directory qwen-restore uses for a daemon address.
daemon_state_dir() {
	local addr=${1:-unix:$FAKE_SOCK} safe hash
	safe=$(printf '%s' "${addr:0:64}" | tr -c 'A-Za-z0-9.-' '_')
	hash=$(printf '%s' "$addr" | sha256sum | cut -c1-16)
	echo "$XDG_STATE_HOME/qwen-restore/daemons/$safe-$hash"
}

# store_client SID ID: what an earlier load would have stored.
store_client() {
	local d
	d="$(daemon_state_dir)/sessions"
	mkdir -p "$d"
	printf '{"clientId":"%s"}\n' "$2" >"$d/$1.json"
	chmod 600 "$d/$1.json"
}

# stored_client SID: the stored clientId, or nothing.
stored_client() {
	jq -r '.clientId' "$(daemon_state_dir)/sessions/$1.json" 2>/dev/null
}

# Canned bodies.
INVALID_C1='{"error":"Client id \"c1\" is not registered for session s-1","code":"invalid_client_id","sessionId":"s-1","clientId":"c1"}'
NOT_FOUND='{"error":"No session with id \"s-1\"","code":"session_not_found","sessionId":"s-1"}'
RESUMED='{"sessionId":"s-1","workspaceCwd":"/w","attached":false,"clientId":"client-2","lastEventId":5,"eventEpoch":"e1"}'
LOADED='{"sessionId":"s-1","workspaceCwd":"/w","attached":false,"clientId":"client-9","lastEventId":0}'

# caps MS: a capabilities body publishing restore budget MS.
caps() {
	printf '{"v":1,"features":["session_load"],"limits":{"sessionRestoreTimeoutMs":%s}}' "$1"
}

# cached_budget MS LOAD_KNOBS...: the fake daemon publishes budget MS,
# then answers one load of s-1 per LOAD_KNOBS (such as delay=300 or hold;
# "" for none); qwen-restore has cached the budget.
cached_budget() {
	local ms=$1 k
	shift
	{
		echo "GET /capabilities 200 $(caps "$ms")"
		for k in "$@"; do
			echo "POST /session/s-1/load 200 ${k:+$k }$LOADED"
		done
	} >"$BATS_TEST_TMPDIR/budget.in"
	fake_start <"$BATS_TEST_TMPDIR/budget.in"
	qwen-restore capabilities >/dev/null
}

# heal_lines RESUME_KNOBS PROMPT_ID...: the script of a clientId
# self-heal of s-1: the prompt with the stale id c1 gets
# invalid_client_id, the resume (RESUME_KNOBS such as delay=300; "" for
# none) answers client-2, then one prompt of client-2 admitted per id.
heal_lines() {
	local knobs=$1 p
	shift
	echo "POST /session/s-1/prompt 400 if-client=c1 $INVALID_C1"
	echo "POST /session/s-1/resume 200 ${knobs:+$knobs }$RESUMED"
	for p in "$@"; do
		printf 'POST /session/s-1/prompt 202 if-client=client-2 {"promptId":"%s","lastEventId":5}\n' "$p"
	done
}

# sse_frames PROMPT_ID TEXT...: chunks then turn_complete, ids from 6.
sse_frames() {
	local pid=$1 id=6 t
	shift
	for t in "$@"; do
		printf '> {"id":%d,"v":1,"type":"session_update","promptId":"%s","data":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}\n' \
			"$id" "$pid" "$t"
		id=$((id + 1))
	done
	printf '> {"id":%d,"v":1,"type":"turn_complete","promptId":"%s","data":{"sessionId":"s-1","stopReason":"end_turn","promptId":"%s"}}\n' \
		"$id" "$pid" "$pid"
}

# now_ms: monotonic-enough wall clock in ms for elapsed-time checks.
now_ms() {
	echo $(( $(date +%s%N) / 1000000 ))
}
