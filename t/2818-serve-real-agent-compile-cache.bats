#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Node's compile cache with the real agent (--agent-acp): the agent runs
# with NODE_COMPILE_CACHE at our private <cache-dir>/node-compile-cache,
# and Node fills it, so that the next start does not compile the agent's
# code again.  It runs as the man pages start it: one Node process,
# cli.js with --expose-gc and QWEN_CODE_CLI (what the package's bin,
# cli-entry.js, would start as a second process).

load agent_helper

setup() {
	agent_require
	[ -x "$QWEN_TOP_BUILDDIR/bin/qwen-acp-child" ] || skip "qwen-acp-child not built"
	CACHE=$BATS_TEST_TMPDIR/cache
}

teardown() {
	agent_teardown
}

# node_children PID: the Node processes PID started (their pids).
node_children() {
	local k
	for k in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		if tr '\0' '\n' <"/proc/$k/cmdline" 2>/dev/null | grep -q 'cli\(-entry\)\{0,1\}\.js$'; then
			echo "$k"
		fi
	done
}

@test "the real agent runs as one Node process with our compile cache and fills it" {
	fake_model_start '[]'
	agent_delegate_start --cache-dir "$CACHE"
	wait_for 120 grep -q 'initialize done' "$BATS_TEST_TMPDIR/err"
	local pid
	pid=$(agent_pids | tail -1)
	[ -n "$pid" ]
	tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "NODE_COMPILE_CACHE=$CACHE/node-compile-cache"
	# cli.js itself, with the flag and the variable its bin would add.
	tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qx -- --expose-gc
	tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qx "${AGENT_CLI%/*}/cli.js"
	tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "QWEN_CODE_CLI=$AGENT_CLI"
	[ -z "$(node_children "$pid")" ]
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	# Node writes its cache as the agent exits, after its child.
	wait_for 60 process_gone "$pid"
	[ "$(stat -c %a "$CACHE/node-compile-cache")" = 700 ]
	# What V8 compiled is kept there (one directory per Node version and flags).
	[ -n "$(find "$CACHE/node-compile-cache" -type f -size +0 | head -1)" ]
}
