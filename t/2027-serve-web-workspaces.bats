#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve's browser console with two workspaces (headless Chromium, as
# t/2302): the picker switches the session list, load and attach.

load serve_helper

PW_VERSION=1.64.1

setup() {
	browser_setup
}

teardown() {
	serve_teardown
}

@test "browser: the workspace picker switches the list, load and attach" {
	WS=$BATS_TEST_TMPDIR/ws
	local b=$BATS_TEST_TMPDIR/wsb
	mkdir -p "$WS" "$b"
	WS=$(cd "$WS" && pwd -P)
	b=$(cd "$b" && pwd -P)
	SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child serve_start \
	    --web-dir "$QWEN_TOP_SRCDIR/web" --workspace "$WS" --workspace "$b"
	qwen-gen-transcript --mib 0.05 --seed 11 --session-id "$SID" --data-dir "$DATA" \
	    --workspace "$WS" >/dev/null
	qwen-gen-transcript --mib 0.02 --seed 12 --session-id "$SID2" --data-dir "$DATA" \
	    --workspace "$b" >/dev/null
	run timeout 120 node "$QWEN_TOP_SRCDIR/t/helper/web-drive.mjs" "$PW_DIR" \
	    "http://127.0.0.1:$PORT" workspaces "$SID" "$SID2" "$b" 3>&-
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - attach goes to its default session"* ]]
}
