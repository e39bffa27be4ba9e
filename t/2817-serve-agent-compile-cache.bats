#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Node's compile cache for the --agent-acp agent: NODE_COMPILE_CACHE is
# our private <cache-dir>/node-compile-cache (0700, ours), unless the
# user set it (or NODE_DISABLE_COMPILE_CACHE=1); a directory that fails
# the check is not handed to the agent, and the log says why.  The agent
# is fake-child behind a script that writes down what it was given.

load serve_helper

setup() {
	ALOG=$BATS_TEST_TMPDIR/agent.log
	ENVLOG=$BATS_TEST_TMPDIR/agent.env
	CACHE=$BATS_TEST_TMPDIR/cache
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	AGENT=$BATS_TEST_TMPDIR/agent.sh
	cat >"$AGENT" <<EOF
#!/bin/sh
echo "NODE_COMPILE_CACHE=\${NODE_COMPILE_CACHE-unset}" >>"$ENVLOG"
exec "$FAKE_CHILD_BIN"
EOF
	chmod +x "$AGENT"
	export SERVE_CHILD
}

teardown() {
	serve_teardown
}

# cache_serve [qwen-serve args...]: the warm agent started with the daemon.
cache_serve() {
	FAKE_CHILD="log=$ALOG" serve_start --cache-dir "$CACHE" --agent-acp "$AGENT" "$@"
	wait_for 10 grep -q '^NODE_COMPILE_CACHE=' "$ENVLOG"
}

@test "the agent gets our private compile cache directory, made 0700" {
	cache_serve
	grep -qx "NODE_COMPILE_CACHE=$CACHE/node-compile-cache" "$ENVLOG"
	[ -d "$CACHE/node-compile-cache" ]
	[ "$(stat -c %a "$CACHE/node-compile-cache")" = 700 ]
	[ "$(stat -c %u "$CACHE/node-compile-cache")" = "$(id -u)" ]
}

@test "the user's NODE_COMPILE_CACHE is kept; NODE_DISABLE_COMPILE_CACHE=1 sets none" {
	NODE_COMPILE_CACHE=$BATS_TEST_TMPDIR/mine cache_serve
	grep -qx "NODE_COMPILE_CACHE=$BATS_TEST_TMPDIR/mine" "$ENVLOG"
	[ ! -e "$CACHE/node-compile-cache" ]
	serve_stop
	rm -f "$ENVLOG"
	NODE_DISABLE_COMPILE_CACHE=1 cache_serve
	grep -qx 'NODE_COMPILE_CACHE=unset' "$ENVLOG"
}

@test "a compile cache directory others may read is refused: no cache, a log line" {
	mkdir -p "$CACHE/node-compile-cache"
	chmod 0755 "$CACHE/node-compile-cache"
	cache_serve
	grep -qx 'NODE_COMPILE_CACHE=unset' "$ENVLOG"
	grep -q 'agent: no compile cache: compile cache' "$BATS_TEST_TMPDIR/err"
}

@test "a compile cache that is a symbolic link is refused" {
	mkdir -p "$CACHE" "$BATS_TEST_TMPDIR/elsewhere"
	chmod 0700 "$BATS_TEST_TMPDIR/elsewhere"
	ln -s "$BATS_TEST_TMPDIR/elsewhere" "$CACHE/node-compile-cache"
	cache_serve
	grep -qx 'NODE_COMPILE_CACHE=unset' "$ENVLOG"
	grep -q 'agent: no compile cache' "$BATS_TEST_TMPDIR/err"
}
