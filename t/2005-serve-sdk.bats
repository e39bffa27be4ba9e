#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve against the real @qwen-code/sdk 0.1.14 (npm; skipped when the
# registry cannot be reached).  Uses the real qwen-acp-child when built.

load serve_helper

setup() {
	command -v node >/dev/null || skip "node not installed"
	SDK_DIR=${QWEN_SDK_DIR:-$QWEN_TOP_BUILDDIR/t/sdk}
	npm_cached "$SDK_DIR" @qwen-code/sdk 0.1.14 --foreground-scripts
	if [ -x "$QWEN_TOP_BUILDDIR/bin/qwen-acp-child" ]; then
		SERVE_CHILD=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	fi
}

teardown() {
	serve_teardown
}

drive() {
	node "$QWEN_TOP_SRCDIR/t/helper/sdk-drive.mjs" "$SDK_DIR" "http://127.0.0.1:$PORT" \
	    "$WS" "$SID" "$@" 3>&-
}

@test "SDK: capabilities, createOrAttach, events, prompt, heartbeat, detach, close, load, resume" {
	serve_start
	make_transcript
	run drive main
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - last detach"* ]]
}

@test "SDK: self-heal after a daemon restart (400 invalid_client_id, resume, 202)" {
	serve_start
	make_transcript
	run drive before-restart
	echo "$output"
	[ "$status" -eq 0 ]
	local stale=$(sed -n 's/^CLIENT_ID=//p' <<<"$output")
	[[ "$stale" == client_* ]]
	serve_stop
	[ "$SERVE_STATUS" = 0 ]
	serve_start
	run drive after-restart "$stale"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - close with the healed id"* ]]
}
