# SPDX-License-Identifier: ISC
# serve_helper.bash: start/stop qwen-serve and talk to it over either
# listener.  TRANSPORT=unix (default) or tcp picks the listener for req().

load test_helper

FAKE_CHILD_BIN=${FAKE_CHILD_BIN:-$(command -v fake-child)}
SID=11111111-1111-4111-8111-111111111111
SID2=22222222-2222-4222-8222-222222222222

# serve_start [qwen-serve args...]: private socket, --port 0, fake child,
# data dir and workspace in $BATS_TEST_TMPDIR; waits for "ready".
# SERVE_WRAP: a launcher that execs the daemon (e.g. the sockact helper).
serve_start() {
	WS=$BATS_TEST_TMPDIR/ws
	DATA=$BATS_TEST_TMPDIR/data
	SOCK=$BATS_TEST_TMPDIR/s.sock
	mkdir -p "$WS" "$DATA"
	WS=$(cd "$WS" && pwd -P)
	# A restart must not see the previous daemon's "ready" (or port).
	rm -f "$BATS_TEST_TMPDIR/out"
	# SERVE_CHILD_COMMAND: any ACP agent (--child-command) instead.
	local child=(--child "${SERVE_CHILD:-$FAKE_CHILD_BIN}")
	[ -z "${SERVE_CHILD_COMMAND:-}" ] || child=(--child-command "$SERVE_CHILD_COMMAND")
	(cd "$WS" && exec ${SERVE_WRAP:-} qwen-serve --socket "$SOCK" --port 0 \
	    "${child[@]}" --data-dir "$DATA" "$@" \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&-) 3>&- &
	SERVE_PID=$!
	wait_for 10 grep -q '^qwen-serve: ready' "$BATS_TEST_TMPDIR/out" || {
		cat "$BATS_TEST_TMPDIR/err" >&2
		return 1
	}
	PORT=$(sed -n 's|^qwen-serve: listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$BATS_TEST_TMPDIR/out")
}

# serve_stop: SIGTERM and wait; the exit status is in $SERVE_STATUS.
serve_stop() {
	[ -n "${SERVE_PID:-}" ] || return 0
	kill -TERM "$SERVE_PID" 2>/dev/null || true
	SERVE_STATUS=0
	wait "$SERVE_PID" || SERVE_STATUS=$?
	SERVE_PID=
}

# Stop everything; a daemon that did not exit 0 on SIGTERM, or that a
# sanitizer complained about, fails the test.
serve_teardown() {
	local was=${SERVE_PID:-}
	sse_stop_all
	serve_stop
	if [ -n "$was" ] && [ "${SERVE_STATUS:-0}" != 0 ]; then
		echo "qwen-serve exited with status $SERVE_STATUS" >&2
		tail -20 "$BATS_TEST_TMPDIR/err" >&2
		return 1
	fi
	if [ -f "$BATS_TEST_TMPDIR/err" ] &&
	    grep -E 'Sanitizer|runtime error:' "$BATS_TEST_TMPDIR/err" >&2; then
		return 1
	fi
}

# A transcript for SID in the data dir (what qwen-acp-child would load).
make_transcript() {
	local id=${1:-$SID} san dir
	san=$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')
	dir=$DATA/projects/$san/chats
	mkdir -p "$dir"
	cat >"$dir/$id.jsonl" <<EOF
{"uuid":"u1","parentUuid":null,"sessionId":"$id","timestamp":"2026-08-01T15:01:13.619Z","type":"user","cwd":"$WS","version":"0.24.4","message":{"role":"user","parts":[{"text":"Why is loading slow?"}]}}
{"uuid":"a1","parentUuid":"u1","sessionId":"$id","timestamp":"2026-08-01T15:01:20.678Z","type":"assistant","cwd":"$WS","version":"0.24.4","message":{"role":"model","parts":[{"text":"Because."}]}}
EOF
}

# req METHOD PATH [BODY [curl args...]]: $code, $body, $hdrs.
req() {
	local m=$1 p=$2 d=${3-}
	shift 2
	[ $# -gt 0 ] && shift
	local args=(-s -X "$m" -o "$BATS_TEST_TMPDIR/body" -D "$BATS_TEST_TMPDIR/hdrs"
	    -w '%{http_code}' --path-as-is)
	[ -n "$d" ] && args+=(--data-binary "$d" -H 'Content-Type: application/json')
	if [ "${TRANSPORT:-unix}" = tcp ]; then
		code=$(curl "${args[@]}" "$@" "http://127.0.0.1:$PORT$p")
	else
		code=$(curl "${args[@]}" --unix-socket "$SOCK" "$@" "http://localhost$p")
	fi
	body=$(cat "$BATS_TEST_TMPDIR/body")
	hdrs=$(tr -d '\r' <"$BATS_TEST_TMPDIR/hdrs")
}

# expect CODE [JQ-CONDITION]: check the last req().
expect() {
	if [ "$code" != "$1" ]; then
		echo "expected HTTP $1, got $code: $body" >&2
		return 1
	fi
	if [ $# -gt 1 ] && ! jq -e "$2" >/dev/null <<<"$body"; then
		echo "body does not satisfy $2: $body" >&2
		return 1
	fi
}

header() {
	sed -n "s/^$1: //Ip" <<<"$hdrs" | head -1
}

# sse_open NAME PATH [curl args...]: stream into $BATS_TEST_TMPDIR/NAME.sse.
sse_open() {
	local name=$1 p=$2
	shift 2
	if [ "${TRANSPORT:-unix}" = tcp ]; then
		curl -s -N "$@" "http://127.0.0.1:$PORT$p" >"$BATS_TEST_TMPDIR/$name.sse" 3>&- &
	else
		curl -s -N --unix-socket "$SOCK" "$@" "http://localhost$p" \
		    >"$BATS_TEST_TMPDIR/$name.sse" 3>&- &
	fi
	echo $! >>"$BATS_TEST_TMPDIR/sse.pids"
	wait_for 5 grep -q '^retry: 3000' "$BATS_TEST_TMPDIR/$name.sse"
}

sse_stop_all() {
	[ -f "$BATS_TEST_TMPDIR/sse.pids" ] || return 0
	while read -r p; do kill "$p" 2>/dev/null || true; done <"$BATS_TEST_TMPDIR/sse.pids"
	rm -f "$BATS_TEST_TMPDIR/sse.pids"
}

# sse_has NAME JQ-CONDITION: some data line of NAME satisfies the condition.
# sse_data NAME: the complete data lines of NAME, one JSON value each (the
# stream may be mid-write: a torn last line is left for the next look).
sse_data() {
	sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/$1.sse" | jq -R -c 'fromjson? // empty'
}

sse_has() {
	sse_data "$1" | jq -e -s "any(.[]; $2)" >/dev/null
}

sse_wait() {
	wait_for "${3:-5}" sse_has "$1" "$2"
}

# The envelopes of NAME as a JSON array.
sse_events() {
	sse_data "$1" | jq -c -s .
}

# serve_loaded [qwen-serve args...]: serve_start, then SID's transcript
# loaded.
serve_loaded() {
	serve_start "$@"
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
}

# prompts_read N: the fake child (FAKE_CHILD=log=$BATS_TEST_TMPDIR/child.log)
# has read at least N session/prompt requests.
prompts_read() {
	[ "$(grep -c ' session/prompt ' "$BATS_TEST_TMPDIR/child.log" 2>/dev/null)" -ge "$1" ]
}

# prompt_post ID [BODY]: POST BODY (default: one text block) to session
# ID's prompt, which must be admitted (202); its promptId in $PROMPT_ID.
prompt_post() {
	local b=${2-}
	[ -n "$b" ] || b='{"prompt":[{"type":"text","text":"hello"}]}'
	req POST "/session/$1/prompt" "$b"
	expect 202 || return 1
	PROMPT_ID=$(jq -r .promptId <<<"$body")
}

# prompt_turn NAME ID [BODY]: subscribe NAME to session ID's events, post
# a prompt and wait for its turn_complete.
prompt_turn() {
	sse_open "$1" "/session/$2/events"
	prompt_post "$2" "${3-}" || return 1
	sse_wait "$1" ".type == \"turn_complete\" and .promptId == \"$PROMPT_ID\"" 20
}

# sdk_run STEP [ARG]: run t/helper/sdk-drive.mjs STEP against the daemon
# with the real SDK (installed once from npm); skips without node or
# the npm registry.  $status and $output as from run.
sdk_run() {
	command -v node >/dev/null || skip "node not installed"
	local dir=${QWEN_SDK_DIR:-$QWEN_TOP_BUILDDIR/t/sdk}
	npm_cached "$dir" @qwen-code/sdk 0.1.14 --foreground-scripts
	run node "$QWEN_TOP_SRCDIR/t/helper/sdk-drive.mjs" "$dir" "http://127.0.0.1:$PORT" \
	    "$WS" "$SID" "$@" 3>&-
	echo "$output"
}

# child_pid: the pid of the child the daemon started last (from its log).
child_pid() {
	sed -n 's/.*started .* (pid \([0-9]*\)).*/\1/p' "$BATS_TEST_TMPDIR/err" | tail -1
}

# delegating_serve [FAKE_CHILD knobs]: the delegating child (qwen-acp-child
# --agent-acp) with fake-child as its agent (its log in $ALOG), $SID
# loaded.
delegating_serve() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	ALOG=$BATS_TEST_TMPDIR/agent.log
	SERVE_CHILD=$REAL FAKE_CHILD="log=$ALOG,known=$SID${1:+,$1}" \
	    serve_start --agent-acp "$FAKE_CHILD_BIN"
	make_transcript "$SID"
	req POST /session/$SID/load '{}'
	expect 200
}

# real_child_serve [SERVE-ARGS...]: the daemon with the real qwen-acp-child
# ($REAL, the build tree's by default) and transcripts for $SID and $SID2.
real_child_serve() {
	REAL=${REAL:-$QWEN_TOP_BUILDDIR/bin/qwen-acp-child}
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	SERVE_CHILD=$REAL serve_start "$@"
	make_transcript "$SID"
	make_transcript "$SID2"
}
