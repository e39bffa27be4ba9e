#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Node's compile cache with the real agent (--agent-acp): the agent runs
# with NODE_COMPILE_CACHE at our private <cache-dir>/node-compile-cache,
# and Node fills it, so that the next start does not compile the agent's
# code again.

load agent_helper

setup() {
	agent_require
	[ -x "$QWEN_TOP_BUILDDIR/bin/qwen-acp-child" ] || skip "qwen-acp-child not built"
	CACHE=$BATS_TEST_TMPDIR/cache
}

teardown() {
	agent_teardown
}

@test "the real agent runs with our compile cache and fills it" {
	fake_model_start '[]'
	agent_delegate_start --cache-dir "$CACHE"
	wait_for 120 grep -q 'initialize done' "$BATS_TEST_TMPDIR/err"
	local pid
	pid=$(agent_pids | tail -1)
	[ -n "$pid" ]
	tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "NODE_COMPILE_CACHE=$CACHE/node-compile-cache"
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	# Node writes its cache as the agent exits, after its child.
	wait_for 60 process_gone "$pid"
	[ "$(stat -c %a "$CACHE/node-compile-cache")" = 700 ]
	# What V8 compiled is kept there (one directory per Node version and flags).
	[ -n "$(find "$CACHE/node-compile-cache" -type f -size +0 | head -1)" ]
}
