#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve for operators: --pidfile, --check-config, journald priorities.

load serve_helper

teardown() {
	serve_teardown
}

# check_config [args...]: qwen-serve --check-config with the test's paths.
check_config() {
	WS=$BATS_TEST_TMPDIR/ws
	DATA=$BATS_TEST_TMPDIR/data
	mkdir -p "$WS" "$DATA"
	run qwen-serve --check-config --workspace "$WS" --data-dir "$DATA" \
	    --socket "$BATS_TEST_TMPDIR/c.sock" --port 0 --child "$FAKE_CHILD_BIN" "$@"
}

@test "--pidfile: written with our pid, refused while held, removed on exit" {
	serve_start --pidfile "$BATS_TEST_TMPDIR/pid"
	[ "$(cat "$BATS_TEST_TMPDIR/pid")" = "$SERVE_PID" ]
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/pid")" = 644 ]
	# No temporary file is left beside it.
	[ "$(ls "$BATS_TEST_TMPDIR" | grep -c '^pid')" = 1 ]
	run qwen-serve --pidfile "$BATS_TEST_TMPDIR/pid" --no-tcp \
	    --socket "$BATS_TEST_TMPDIR/other.sock" --child "$FAKE_CHILD_BIN"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--pidfile $BATS_TEST_TMPDIR/pid: held by a running qwen-serve (pid $SERVE_PID)"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/other.sock" ]
	# The refused daemon did not touch the live one's file.
	[ "$(cat "$BATS_TEST_TMPDIR/pid")" = "$SERVE_PID" ]
	serve_stop
	[ "$SERVE_STATUS" -eq 0 ]
	[ ! -e "$BATS_TEST_TMPDIR/pid" ]
}

@test "--pidfile: a stale file (its daemon died) is replaced" {
	echo 999999 >"$BATS_TEST_TMPDIR/pid"
	serve_start --pidfile "$BATS_TEST_TMPDIR/pid"
	[ "$(cat "$BATS_TEST_TMPDIR/pid")" = "$SERVE_PID" ]
	# A daemon killed outright leaves an unlocked file: the next one takes it.
	kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" || true
	SERVE_PID=
	rm -f "$BATS_TEST_TMPDIR/s.sock"
	serve_start --pidfile "$BATS_TEST_TMPDIR/pid"
	[ "$(cat "$BATS_TEST_TMPDIR/pid")" = "$SERVE_PID" ]
}

@test "--pidfile: an unwritable location fails the start with a message" {
	run qwen-serve --pidfile /nonexistent/dir/pid --no-tcp \
	    --socket "$BATS_TEST_TMPDIR/s.sock" --child "$FAKE_CHILD_BIN"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--pidfile /nonexistent/dir/pid: No such file or directory"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/s.sock" ]
}

@test "--check-config: a good configuration exits 0 without serving" {
	check_config --log-file "$BATS_TEST_TMPDIR/log" --pidfile "$BATS_TEST_TMPDIR/pid"
	[ "$status" -eq 0 ]
	[[ "$output" == *"qwen-serve: configuration OK"* ]]
	[[ "$output" == *"child: $FAKE_CHILD_BIN"* ]]
	[[ "$output" == *"socket: $BATS_TEST_TMPDIR/c.sock"* ]]
	[[ "$output" == *"restore budget: 60000 ms"* ]]
	# Nothing was created: no socket, no log, no pidfile.
	[ ! -e "$BATS_TEST_TMPDIR/c.sock" ]
	[ ! -e "$BATS_TEST_TMPDIR/log" ]
	[ ! -e "$BATS_TEST_TMPDIR/pid" ]
}

@test "--check-config: the default child is the one built beside qwen-serve" {
	WS=$BATS_TEST_TMPDIR/ws
	mkdir -p "$WS"
	run qwen-serve --check-config --workspace "$WS" --data-dir "$BATS_TEST_TMPDIR" \
	    --no-tcp --socket "$BATS_TEST_TMPDIR/c.sock"
	[ "$status" -eq 0 ]
	[[ "$output" == *"child: $QWEN_TOP_BUILDDIR/bin/qwen-acp-child"* ]]
}

@test "--check-config: each bad input exits non-zero naming it" {
	check_config --child /nonexistent/qwen-acp-child
	[ "$status" -eq 1 ]
	[[ "$output" == *"--child /nonexistent/qwen-acp-child: No such file or directory"* ]]

	check_config --child "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--child $BATS_TEST_TMPDIR: not an executable file"* ]]

	check_config --child no-such-child-program
	[ "$status" -eq 1 ]
	[[ "$output" == *"--child no-such-child-program: not found"* ]]

	: >"$BATS_TEST_TMPDIR/plainfile"
	check_config --data-dir "$BATS_TEST_TMPDIR/plainfile/data"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the data directory $BATS_TEST_TMPDIR/plainfile/data: $BATS_TEST_TMPDIR/plainfile is not a directory"* ]]

	check_config --token 'two words'
	[ "$status" -eq 1 ]
	[[ "$output" == *"token"*"blank or control character"* ]]

	check_config --require-auth
	[ "$status" -ne 0 ]
	[[ "$output" == *"--require-auth needs --token or QWEN_SERVER_TOKEN"* ]]

	check_config --session-restore-timeout-ms 0
	[ "$status" -ne 0 ]
	[[ "$output" == *"--session-restore-timeout-ms"* ]]

	check_config --log-file /nonexistent/dir/log
	[ "$status" -eq 1 ]
	[[ "$output" == *"--log-file /nonexistent/dir/log: directory /nonexistent/dir"* ]]

	check_config --trace-file "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--trace-file $BATS_TEST_TMPDIR: is a directory"* ]]

	check_config --socket /nonexistent/dir/s.sock
	[ "$status" -eq 1 ]
	[[ "$output" == *"--socket directory /nonexistent/dir: "* ]]

	check_config --hostname 256.1.1.1
	[ "$status" -eq 1 ]
	[[ "$output" == *"--hostname 256.1.1.1"* ]]

	NOTIFY_SOCKET=relative/path check_config
	[ "$status" -eq 1 ]
	[[ "$output" == *"NOTIFY_SOCKET=relative/path"* ]]

	# LISTEN_PID names the daemon itself (exec keeps the pid).
	run sh -c 'LISTEN_PID=$$ LISTEN_FDS=many exec qwen-serve --check-config \
	    --workspace "$1" --data-dir "$1" --child "$2"' sh "$BATS_TEST_TMPDIR" "$FAKE_CHILD_BIN"
	[ "$status" -eq 1 ]
	[[ "$output" == *"LISTEN_FDS=many is invalid"* ]]
}

@test "--check-config: a live daemon on the socket, a held pidfile and a busy port are errors" {
	serve_start --pidfile "$BATS_TEST_TMPDIR/pid"
	run qwen-serve --check-config --workspace "$WS" --data-dir "$DATA" \
	    --child "$FAKE_CHILD_BIN" --socket "$SOCK" --port "$PORT" \
	    --pidfile "$BATS_TEST_TMPDIR/pid"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--socket $SOCK: a daemon is already listening there"* ]]
	[[ "$output" == *"--pidfile $BATS_TEST_TMPDIR/pid: held by a running qwen-serve (pid $SERVE_PID)"* ]]
	[[ "$output" == *"--hostname 127.0.0.1 --port $PORT: Address already in use"* ]]
	[[ "$output" == *"check-config: 3 errors"* ]]
}

@test "--check-config: warnings (short token, budgets) keep the exit status 0" {
	check_config --token short --session-restore-timeout-ms 5000 \
	    --session-reap-interval-ms 90000 --session-idle-timeout-ms 60000
	[ "$status" -eq 0 ]
	[[ "$output" == *"warning: the token is shorter than 16 characters"* ]]
	[[ "$output" == *"warning: the restore budget (5000 ms) is below the initialize timeout (10000 ms)"* ]]
	[[ "$output" == *"warning: --session-reap-interval-ms (90000) is longer than --session-idle-timeout-ms (60000)"* ]]
	[[ "$output" == *"configuration OK"* ]]
}

@test "journald: log lines carry <N> priority prefixes when stderr is the journal stream" {
	: >"$BATS_TEST_TMPDIR/err"
	export JOURNAL_STREAM=$(stat -c '%d:%i' "$BATS_TEST_TMPDIR/err")
	serve_start
	unset JOURNAL_STREAM
	wait_for 5 grep -q '^<6>serving ' "$BATS_TEST_TMPDIR/err"
	# No timestamp of our own: journald adds one.
	! grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' "$BATS_TEST_TMPDIR/err" || false
}

@test "--help and the man page list --pidfile and --check-config" {
	run qwen-serve --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--pidfile FILE"* ]]
	[[ "$output" == *"--check-config"* ]]
	grep -q '^\.It Fl -pidfile Ar file' "$QWEN_TOP_SRCDIR/man/qwen-serve.8"
	grep -q '^\.It Fl -check-config' "$QWEN_TOP_SRCDIR/man/qwen-serve.8"
}
