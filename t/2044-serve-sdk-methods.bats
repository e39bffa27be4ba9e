#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: every session-level method of the real @qwen-code/sdk
# 0.1.14 DaemonClient and DaemonSessionClient, driven through
# t/helper/sdk-methods.mjs against its table: "works" resolves and
# passes its check, "agent-only" reaches the agent, "not served" is
# refused as a route (or a variant) this daemon does not serve (never a
# hang, never an HTML page).  The
# same table is in qwen-serve(8).

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

@test "SDK: every session-level method as the table says" {
	command -v node >/dev/null || skip "node not installed"
	local dir=${QWEN_SDK_DIR:-$QWEN_TOP_BUILDDIR/t/sdk}
	npm_cached "$dir" @qwen-code/sdk 0.1.14 --foreground-scripts
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start --enable-session-shell
	make_transcript
	make_transcript "$SID2"	# archived, unarchived and deleted on the way
	run node "$QWEN_TOP_SRCDIR/t/helper/sdk-methods.mjs" "$dir" "http://127.0.0.1:$PORT" \
	    "$WS" "$SID" "$SID2" 3>&-
	echo "$output"
	local out=$output n
	[ "$status" -eq 0 ]
	[[ "$out" == *"METHODS="* ]]
	run ! grep -q '^not ok' <<<"$out"
	# Every method of the two classes that takes a session is in the table.
	n=$(sed -n 's/^METHODS=\([0-9]*\).*/\1/p' <<<"$out")
	[ "$n" -ge 150 ]
}

@test "SDK: the man page's method table is the test's" {
	command -v node >/dev/null || skip "node not installed"
	local dir=${QWEN_SDK_DIR:-$QWEN_TOP_BUILDDIR/t/sdk}
	npm_cached "$dir" @qwen-code/sdk 0.1.14 --foreground-scripts
	run -0 node "$QWEN_TOP_SRCDIR/t/helper/sdk-methods.mjs" "$dir" http://127.0.0.1:1 / x table 3>&-
	local name st why
	while IFS=$'\t' read -r name st why; do
		[ "$(grep -A1 -xF ".It Li $name" "$QWEN_TOP_SRCDIR/man/qwen-serve.8" | tail -1)" = "$st: $why" ] ||
		    { echo "$name ($st: $why) is not so in qwen-serve(8)" >&2; return 1; }
	done <<<"$output"
}

# The SDK 0.1.14 has no listSessionsCatalog: qwen-code 0.24.4's own
# client (bundled in the agent's package) is driven instead.
@test "SDK: qwen-code 0.24.4's DaemonClient.listSessionsCatalog pages POST /sessions/catalog" {
	command -v node >/dev/null || skip "node not installed"
	local pkg=${QWEN_AGENT_DIR:-$QWEN_TOP_BUILDDIR/t/agent}/qwen/node_modules/@qwen-code/qwen-code
	[ -d "$pkg/chunks" ] || skip "no @qwen-code/qwen-code (QWEN_AGENT_DIR)"
	serve_start
	make_transcript
	make_transcript "$SID2"
	run node "$QWEN_TOP_SRCDIR/t/helper/sdk-catalog.mjs" "$pkg" "http://127.0.0.1:$PORT" \
	    "$WS" "$SID" 3>&-
	echo "$output"
	local out=$output
	[ "$status" -eq 0 ]
	run ! grep -q '^not ok' <<<"$out"
	[ "$(grep -c '^ok' <<<"$out")" -eq 5 ]
}
