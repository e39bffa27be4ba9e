#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the directories it writes secrets and sockets into are its
# own: the socket's, and the generated token's (with a TCP-only socket
# activation too, where no Unix socket is bound).
load serve_helper

# tcp_only_start [qwen-serve args...]: serve_start under a TCP-only
# socket activation (sockact execs the daemon).
tcp_only_start() {
	SERVE_WRAP="sockact -l tcp:127.0.0.1:0 --" serve_start "$@"
	PORT=$(sed -n 's/^sockact: tcp port //p' "$BATS_TEST_TMPDIR/out")
}

teardown() {
	serve_teardown
}

@test "a sticky world-writable socket directory (like /tmp) is refused, so is a group-writable one" {
	local d=$BATS_TEST_TMPDIR/shared
	mkdir "$d"
	chmod 1777 "$d"
	run timeout 20 qwen-serve --socket "$d/s.sock" --no-tcp --child "$FAKE_CHILD_BIN" 3>&-
	[ "$status" -eq 1 ]
	# No socket, no daemon: logged as an error.
	[[ "$output" == *" error: socket directory $d is writable by others (mode 1777)"* ]]
	[ ! -e "$d/s.sock" ]
	# --check-config says so too.
	run qwen-serve --check-config --socket "$d/s.sock" --no-tcp --child "$FAKE_CHILD_BIN" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"error: --socket directory $d is writable by others (mode 1777)"* ]]
	chmod 0770 "$d"
	run timeout 20 qwen-serve --socket "$d/s.sock" --no-tcp --child "$FAKE_CHILD_BIN" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"socket directory $d is writable by others (mode 0770)"* ]]
	# Ours alone, it is fine.
	chmod 0700 "$d"
	serve_start --socket "$d/s.sock" --no-tcp
	SOCK=$d/s.sock req GET /health
	expect 200
}

@test "TCP only: the token's directory is checked like the socket's; none is written into an open one" {
	local d=$BATS_TEST_TMPDIR/open
	mkdir "$d"
	chmod 0777 "$d"
	tcp_only_start --socket "$d/s.sock"
	[ ! -e "$d/token" ]
	# The daemon serves TCP on: a warning, naming why.
	grep -q " warn: socket directory $d is writable by others (mode 0777).*: not writing the token file in $d\$" \
	    "$BATS_TEST_TMPDIR/err"
	run grep -c "token in" "$BATS_TEST_TMPDIR/out"
	[ "$output" = 0 ]
	# A symlink to a private directory is not the directory.
	serve_stop
	mkdir -m 700 "$BATS_TEST_TMPDIR/real"
	ln -s "$BATS_TEST_TMPDIR/real" "$BATS_TEST_TMPDIR/link"
	tcp_only_start --socket "$BATS_TEST_TMPDIR/link/s.sock"
	grep -q "socket directory $BATS_TEST_TMPDIR/link is not a directory (symlinks are refused)" "$BATS_TEST_TMPDIR/err"
	[ ! -e "$BATS_TEST_TMPDIR/real/token" ]
}

@test "TCP only with the default socket: its private directory is made 0700 and holds the token" {
	local run=$BATS_TEST_TMPDIR/run
	mkdir -m 700 "$run" "$BATS_TEST_TMPDIR/ws"
	(cd "$BATS_TEST_TMPDIR/ws" && XDG_RUNTIME_DIR=$run exec sockact -l tcp:127.0.0.1:0 -- \
	    qwen-serve --child "$FAKE_CHILD_BIN" --data-dir "$BATS_TEST_TMPDIR/data" \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&-) 3>&- &
	SERVE_PID=$!
	wait_for 10 grep -q '^qwen-serve: ready' "$BATS_TEST_TMPDIR/out"
	[ "$(stat -c %a "$run/qwen-serve")" = 700 ]
	[ "$(stat -c %a "$run/qwen-serve/token")" = 600 ]
	grep -q "^qwen-serve: token in $run/qwen-serve/token\$" "$BATS_TEST_TMPDIR/out"
	[ ! -e "$run/qwen-serve/qwen-serve.sock" ]
	serve_stop
	[ ! -e "$run/qwen-serve/token" ]
}

@test "a default socket directory made open by someone else is refused with a way out named" {
	run=$BATS_TEST_TMPDIR/run
	mkdir -p "$run/qwen-serve" "$BATS_TEST_TMPDIR/ws"
	chmod 0777 "$run/qwen-serve"
	cd "$BATS_TEST_TMPDIR/ws"
	XDG_RUNTIME_DIR=$run run timeout 20 qwen-serve --no-tcp --child "$FAKE_CHILD_BIN" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *" error: socket directory $run/qwen-serve has mode 0777, want 0700"* ]]
	[[ "$output" == *"choose another with --socket, or set XDG_RUNTIME_DIR"* ]]
	[ ! -e "$run/qwen-serve/qwen-serve.sock" ]
}

@test "no home directory: the daemon and the child refuse to start, naming the way out (never /tmp/.qwen)" {
	unshare -U --map-user=54321 --map-group=54321 true 2>/dev/null ||
	    skip "no user namespaces here"
	local d=$BATS_TEST_TMPDIR/nohome
	mkdir -m 700 "$d"
	# A uid with no password entry, and no HOME: nothing says where home is.
	run env -u HOME -u QWEN_HOME -u XDG_CACHE_HOME -u CACHE_DIRECTORY \
	    unshare -U --map-user=54321 --map-group=54321 \
	    qwen-serve --no-tcp --socket "$d/s.sock" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"no home directory (HOME is not set and the user has none): set HOME, or give --data-dir and --cache-dir"* ]]
	[ ! -e "$d/s.sock" ]
	run env -u HOME -u QWEN_HOME -u XDG_CACHE_HOME -u CACHE_DIRECTORY \
	    unshare -U --map-user=54321 --map-group=54321 qwen-acp-child </dev/null
	[ "$status" -eq 1 ]
	[[ "$output" == *"no home directory"* ]]
	# With the directories given, it starts.
	run env -u HOME -u QWEN_HOME -u XDG_CACHE_HOME -u CACHE_DIRECTORY \
	    unshare -U --map-user=54321 --map-group=54321 \
	    qwen-serve --no-tcp --socket "$d/s.sock" --data-dir "$d/data" --cache-dir "$d/cache" --check-config 3>&-
	[ "$status" -eq 0 ]
}

# refused WHAT DIR FLAG-ARGS...: qwen-serve and --check-config refuse to
# start, naming DIR and the way out; nothing is bound.
refused() {
	local what=$1 dir=$2
	shift 2
	mkdir -m 700 -p "$BATS_TEST_TMPDIR/s"
	run timeout 20 qwen-serve --no-tcp --socket "$BATS_TEST_TMPDIR/s/s.sock" \
	    --child "$FAKE_CHILD_BIN" "$@" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"$what $dir "* ]]
	[[ "$output" == *"a directory of your own"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/s/s.sock" ]
	run qwen-serve --check-config --no-tcp --socket "$BATS_TEST_TMPDIR/s/s.sock" \
	    --child "$FAKE_CHILD_BIN" "$@" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"error: $what $dir "* ]]
}

@test "the data and cache directories: writable by others, or another user's, refused with the way out" {
	local d=$BATS_TEST_TMPDIR
	mkdir -m 755 "$d/data" "$d/cache"
	chmod 0777 "$d/data"
	refused "data directory" "$d/data" --data-dir "$d/data" --cache-dir "$d/cache"
	[[ "$output" == *"writable by others (mode 0777)"*"give --data-dir"* ]]
	chmod 0755 "$d/data"
	chmod 0770 "$d/cache"
	refused "cache directory" "$d/cache" --data-dir "$d/data" --cache-dir "$d/cache"
	[[ "$output" == *"writable by others (mode 0770)"*"give --cache-dir"* ]]
	chmod 0700 "$d/cache"
	# Another user's (as root in CI, a chown to nobody shows it).
	if [ "$(id -u)" -eq 0 ]; then
		chown nobody "$d/data"
		refused "data directory" "$d/data" --data-dir "$d/data" --cache-dir "$d/cache"
		[[ "$output" == *"is owned by uid $(id -u nobody)"* ]]
		chown root "$d/data"
	fi
	# Ours alone, or not there yet, they are fine.
	serve_start --data-dir "$d/data" --cache-dir "$d/cache.new"
	req GET /health
	expect 200
}

@test "a runtime directory (XDG_RUNTIME_DIR) others may write to is refused with the way out" {
	local run=$BATS_TEST_TMPDIR/run
	mkdir -m 777 "$run"
	mkdir "$BATS_TEST_TMPDIR/ws"
	cd "$BATS_TEST_TMPDIR/ws"
	XDG_RUNTIME_DIR=$run run timeout 20 qwen-serve --no-tcp --child "$FAKE_CHILD_BIN" \
	    --data-dir "$BATS_TEST_TMPDIR/data" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"runtime directory (XDG_RUNTIME_DIR) $run is writable by others (mode 0777)"* ]]
	[[ "$output" == *"set XDG_RUNTIME_DIR to a directory of your own, or choose a socket with --socket"* ]]
	[ ! -e "$run/qwen-serve" ]
}

@test "a squatted /tmp/qwen-serve-UID (no XDG_RUNTIME_DIR): a clear error naming the way out" {
	[ "$(id -u)" -eq 0 ] || skip "needs root (a private /tmp, a chown)"
	unshare -m true 2>/dev/null || skip "no mount namespaces here"
	# A /tmp of our own, where another user (nobody) made the directory first.
	run env -u XDG_RUNTIME_DIR unshare -m sh -c '
	    mount -t tmpfs tmpfs /tmp &&
	    mkdir -m 700 /tmp/qwen-serve-0 /tmp/ws && chown nobody /tmp/qwen-serve-0 &&
	    cd /tmp/ws && exec timeout 20 "$0" --no-tcp --child "$1" --data-dir /tmp/data' \
	    "$(command -v qwen-serve)" "$FAKE_CHILD_BIN" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"socket directory /tmp/qwen-serve-0 is owned by uid $(id -u nobody), not 0"* ]]
	[[ "$output" == *"choose another with --socket, or set XDG_RUNTIME_DIR to a directory of your own"* ]]
}
