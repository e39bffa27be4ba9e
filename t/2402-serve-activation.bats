#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve under a service manager: socket activation (LISTEN_FDS) and
# the readiness protocol (NOTIFY_SOCKET), with the sockact and notify-recv
# helpers standing in for systemd, and systemd-socket-activate when present.

load serve_helper

teardown() {
	[ -z "${NOTIFY_PID:-}" ] || kill "$NOTIFY_PID" 2>/dev/null || true
	serve_teardown
}

# act_start [sockact args...] -- [qwen-serve args...]: serve_start under
# the sockact helper (which execs the daemon: same pid).  The passed
# listeners replace serve_start's --socket and --port.
act_start() {
	local pre=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do pre+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	SERVE_WRAP="sockact ${pre[*]} --" serve_start "$@"
	PORT=$(sed -n 's/^sockact: tcp port //p' "$BATS_TEST_TMPDIR/out")
}

# act_refused [sockact args...] -- [qwen-serve args...]: the daemon exits 1
# before serving; $output holds its stderr.
act_refused() {
	local pre=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do pre+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	run sockact "${pre[@]}" -- qwen-serve --child "$FAKE_CHILD_BIN" \
	    --data-dir "$BATS_TEST_TMPDIR" "$@"
	[ "$status" -eq 1 ]
	[[ "$output" != *"qwen-serve: ready"* ]]
}

# notify_start NAME [CMD]: a NOTIFY_SOCKET receiver at NAME; lines in $NOTES.
notify_start() {
	NOTES=$BATS_TEST_TMPDIR/notes
	if [ $# -gt 1 ]; then
		notify-recv -c "$2" "$1" "$NOTES" 3>&- &
	else
		notify-recv "$1" "$NOTES" 3>&- &
	fi
	NOTIFY_PID=$!
	wait_for 5 test -e "$NOTES"
	export NOTIFY_SOCKET=$1
}

# The pids of qwen-serve's children.
children_of() {
	grep -l "^PPid:[[:space:]]*$1\$" /proc/[0-9]*/status 2>/dev/null |
	    sed 's|/proc/\([0-9]*\)/status|\1|'
}

# child_env_lacks REGEX: load a session (starting a child), then check the
# child's environment has no variable matching REGEX; $child is its pid.
child_env_lacks() {
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	child=$(children_of "$SERVE_PID" | head -1)
	[ -n "$child" ]
	! tr '\0' '\n' <"/proc/$child/environ" | grep -E "$1" || false
}

@test "socket activation: the Unix socket and the TCP port come from LISTEN_FDS" {
	act_start -n api:http -l "unix:$BATS_TEST_TMPDIR/s.sock" -l tcp:127.0.0.1:0
	grep -qx "qwen-serve: listening on unix:$SOCK (from systemd)" "$BATS_TEST_TMPDIR/out"
	grep -qx "qwen-serve: listening on http://127.0.0.1:$PORT (from systemd)" "$BATS_TEST_TMPDIR/out"
	req GET /capabilities
	expect 200 '.v == 1'
	TRANSPORT=tcp req GET /capabilities
	expect 200 '.v == 1'
	# The loopback gates still apply to the adopted TCP listener.
	TRANSPORT=tcp req GET /capabilities '' -H 'Host: evil.example:80'
	expect 403
	# No lock file of ours: systemd owns the socket.
	[ ! -e "$SOCK.lock" ]
	# The child inherits neither the variables nor the listeners.
	child_env_lacks '^(LISTEN_(PID|FDS|FDNAMES)|NOTIFY_SOCKET)='
	for fd in 3 4; do
		l=$(readlink "/proc/$SERVE_PID/fd/$fd")
		[[ "$l" == socket:* ]]
		! ls -l "/proc/$child/fd" | grep -qF "$l" || false
	done
	serve_stop
	[ "$SERVE_STATUS" -eq 0 ]
	# The socket is systemd's: left in place for the next activation.
	[ -S "$SOCK" ]
}

@test "socket activation: only the passed listeners are served" {
	act_start -l "unix:$BATS_TEST_TMPDIR/s.sock" -- --port 0
	grep -q 'listening on unix:' "$BATS_TEST_TMPDIR/out"
	! grep -q 'listening on http' "$BATS_TEST_TMPDIR/out" || false
	req GET /health
	expect 200
}

@test "socket activation: a TCP-only activation serves no Unix socket" {
	act_start -l tcp:127.0.0.1:0 -- --socket "$BATS_TEST_TMPDIR/unused.sock"
	[ ! -e "$BATS_TEST_TMPDIR/unused.sock" ]
	TRANSPORT=tcp req GET /capabilities
	expect 200
}

@test "socket activation: bad descriptors are refused before serving" {
	act_refused -l udp:127.0.0.1:0
	[[ "$output" == *"fd 3 (unnamed): not a listening stream socket"* ]]

	act_refused -l "bound-unix:$BATS_TEST_TMPDIR/b.sock"
	[[ "$output" == *"fd 3 (unnamed): not a listening stream socket"* ]]

	: >"$BATS_TEST_TMPDIR/f"
	act_refused -n api -l "file:$BATS_TEST_TMPDIR/f"
	[[ "$output" == *"fd 3 (api): not a socket"* ]]

	act_refused -n a:b -l "unix:$BATS_TEST_TMPDIR/1.sock" -l "unix:$BATS_TEST_TMPDIR/2.sock"
	[[ "$output" == *"fd 4 (b): a second Unix listener"* ]]
}

@test "socket activation: a non-loopback TCP listener needs a token" {
	act_refused -l tcp:0.0.0.0:0
	[[ "$output" == *"TCP listener on 0.0.0.0 port "*" is not loopback and no token is set"* ]]
	# No token is generated (it would land in the journal).
	[[ "$output" != *"token:"* ]]

	QWEN_SERVER_TOKEN=0123456789abcdef0123 act_refused -l tcp:0.0.0.0:0
	[[ "$output" == *"is not loopback and no --allow-host names the Host"* ]]

	QWEN_SERVER_TOKEN=0123456789abcdef0123 act_start -l tcp:0.0.0.0:0 -- \
	    --allow-host 127.0.0.1
	TRANSPORT=tcp req GET /capabilities
	expect 401
	TRANSPORT=tcp req GET /capabilities '' -H 'Authorization: Bearer 0123456789abcdef0123'
	expect 200
}

@test "socket activation: LISTEN_PID of another process is ignored, the variables unset" {
	act_start -p 1 -l "unix:$BATS_TEST_TMPDIR/act.sock" -- --socket "$BATS_TEST_TMPDIR/s.sock" --no-tcp
	grep -qx "qwen-serve: listening on unix:$SOCK" "$BATS_TEST_TMPDIR/out"
	req GET /health
	expect 200
	child_env_lacks '^LISTEN_'
	run sh -c 'LISTEN_PID=$$ LISTEN_FDS=17 exec qwen-serve --no-tcp --socket "$1/x.sock"' sh "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
	[[ "$output" == *"socket activation: LISTEN_FDS=17 is too large (0..16)"* ]]
}

@test "sd_notify: READY=1 once capabilities answer, with MAINPID and STATUS" {
	notify_start "$BATS_TEST_TMPDIR/notify.sock" \
	    "curl -sf -o /dev/null --unix-socket $BATS_TEST_TMPDIR/s.sock http://localhost/capabilities"
	act_start -l "unix:$BATS_TEST_TMPDIR/s.sock"
	wait_for 10 grep -q '^ready-check:' "$NOTES"
	# The receiver asked for /capabilities the moment READY=1 arrived.
	grep -qx 'ready-check: 0' "$NOTES"
	head -1 "$NOTES" | grep -qx "READY=1|MAINPID=$SERVE_PID|STATUS=0 sessions, 0 restores in flight, 0 prompts running, 0 connections"
	# The daemon sent it after its own probe was answered.
	wait_for 5 grep -q 'notified systemd: ready' "$BATS_TEST_TMPDIR/err"
	probe=$(grep -n 'readiness probe: GET /capabilities answered 200' "$BATS_TEST_TMPDIR/err" | cut -d: -f1)
	notified=$(grep -n 'notified systemd: ready' "$BATS_TEST_TMPDIR/err" | cut -d: -f1)
	[ "$probe" -lt "$notified" ]
	[ "$(grep -c 'READY=1' "$NOTES")" = 1 ]
	# Children never see NOTIFY_SOCKET.
	child_env_lacks '^NOTIFY_SOCKET='
}

@test "sd_notify: STATUS= follows the session count; STOPPING=1 on SIGTERM (abstract socket)" {
	notify_start "@qwen-test-$$-$BATS_TEST_NUMBER"
	serve_start
	wait_for 10 grep -q '^READY=1' "$NOTES"
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	wait_for 10 grep -q '^STATUS=1 sessions, 0 restores in flight' "$NOTES"
	req DELETE /session/$SID
	wait_for 10 eval "tail -1 '$NOTES' | grep -q '^STATUS=0 sessions'"
	serve_stop
	[ "$SERVE_STATUS" -eq 0 ]
	wait_for 5 grep -q '^STOPPING=1' "$NOTES"
	grep '^STOPPING=1' "$NOTES" | grep -q '|STATUS=stopping: '
	# Rate-limited: far fewer STATUS lines than state changes could cause.
	[ "$(grep -c '^STATUS=' "$NOTES")" -le 4 ]
}

@test "sd_notify: an unusable NOTIFY_SOCKET is a warning, not a failure" {
	export NOTIFY_SOCKET=relative/notify
	serve_start
	grep -q 'NOTIFY_SOCKET=relative/notify: not an absolute path' "$BATS_TEST_TMPDIR/err"
	req GET /health
	expect 200
	# A path nobody listens on: sending fails quietly, serving goes on.
	serve_stop
	export NOTIFY_SOCKET=$BATS_TEST_TMPDIR/nobody.sock
	serve_start
	wait_for 5 grep -q 'sd_notify' "$BATS_TEST_TMPDIR/err"
	req GET /health
	expect 200
}

@test "systemd-socket-activate starts the daemon on the first connection" {
	command -v systemd-socket-activate >/dev/null || skip "systemd-socket-activate not installed"
	WS=$BATS_TEST_TMPDIR/ws
	SOCK=$BATS_TEST_TMPDIR/s.sock
	mkdir -p "$WS"
	(cd "$WS" && exec systemd-socket-activate -l "$SOCK" --fdname=api -E PATH \
	    qwen-serve --child "$FAKE_CHILD_BIN" --data-dir "$BATS_TEST_TMPDIR" \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&-) 3>&- &
	SERVE_PID=$!
	wait_for 10 test -S "$SOCK"
	# The first connection waits in the queue while the daemon starts.
	req GET /capabilities
	expect 200 '.v == 1'
	grep -qx "qwen-serve: listening on unix:$SOCK (from systemd)" "$BATS_TEST_TMPDIR/out"
}
