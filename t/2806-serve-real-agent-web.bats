#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The browser console in front of the real qwen-code agent: tool calls
# and permission requests with Allow / Deny buttons (headless Chromium,
# playwright-core from npm as in t/2302).

load agent_helper

PW_VERSION=1.64.1

setup() {
	command -v node >/dev/null || skip "node not installed"
	[ -x /usr/bin/chromium ] ||
		skip "Debian's chromium is not installed (apt-get install chromium)"
	PW_DIR=${QWEN_PLAYWRIGHT_DIR:-$QWEN_TOP_BUILDDIR/t/web}
	if [ ! -f "$PW_DIR/node_modules/playwright-core/package.json" ]; then
		command -v npm >/dev/null || skip "npm not installed"
		mkdir -p "$PW_DIR"
		timeout 180 npm install --no-audit --no-fund --prefix "$PW_DIR" \
		    "playwright-core@$PW_VERSION" >"$PW_DIR/npm.log" 2>&1 ||
			skip "npm cannot install playwright-core@$PW_VERSION (registry unreachable?): see $PW_DIR/npm.log"
	fi
	agent_require
}

teardown() {
	agent_teardown
}

@test "web console: the agent's permission requests answered with Allow and Deny" {
	fake_model_start '[{"when":"please write the marker","once":false,"tool_calls":[{"name":"run_shell_command",
	    "arguments":{"command":"echo ran >> marker.txt","description":"write the marker file"}}]},
	    {"when":"\"role\":\"tool\"","once":false,"text":"The command has run."}]'
	agent_serve_start --web-dir "$QWEN_TOP_SRCDIR/web"
	run timeout 600 node "$QWEN_TOP_SRCDIR/t/helper/web-permission.mjs" "$PW_DIR" \
	    "http://127.0.0.1:$PORT" 3>&-
	echo "$output"
	[ "$status" -eq 0 ]
	# Allowed once, denied once: the command ran exactly once.
	[ "$(cat "$WS/marker.txt")" = ran ]
}
