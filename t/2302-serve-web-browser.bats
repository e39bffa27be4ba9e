#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve's browser console in headless Chromium (Debian's chromium,
# driven by playwright-core from npm, cached in the build tree's t/web),
# against the real daemon and the real qwen-acp-child with generated
# transcripts.  Screenshots go to the build tree's t/artifacts/.

load serve_restore_helper

PW_VERSION=1.64.1

setup() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	browser_setup
}

teardown() {
	[ -n "${STOPPED:-}" ] && kill -CONT "$STOPPED" 2>/dev/null
	rteardown
}

# web_serve [qwen-serve args...]: the real child, two generated transcripts.
web_serve() {
	SERVE_CHILD=$REAL serve_start --web-dir "$QWEN_TOP_SRCDIR/web" "$@"
	qwen-gen-transcript --mib 0.05 --seed 11 --session-id "$SID" --data-dir "$DATA" \
	    --workspace "$WS" >/dev/null
	qwen-gen-transcript --mib 0.02 --seed 12 --session-id "$SID2" --data-dir "$DATA" \
	    --workspace "$WS" >/dev/null
}

drive() {
	WEB_ARTIFACTS=$ART timeout 120 node "$QWEN_TOP_SRCDIR/t/helper/web-drive.mjs" \
	    "$PW_DIR" "http://127.0.0.1:$PORT" "$@" 3>&-
}

@test "browser: token, listing, load with replay, streamed prompt, clientId self-heal, screenshot" {
	web_serve --token s3cret
	WEB_TOKEN=s3cret run drive main "$SID" "$SID2" 60000
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - the prompt heals its stale clientId (seed 001)"* ]]
	[ -s "$ART/web-console.png" ]
	[ -s "$ART/web-console-loaded.png" ]
}

@test "browser: timers from a 1500 ms budget; forced restore timeout: 504 countdown, retry" {
	web_serve --session-restore-timeout-ms 1500
	# A live sibling keeps the child; stopping it makes the load miss 1.5 s.
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid)
	kill -STOP "$pid"
	STOPPED=$pid
	run drive timeout "$SID" "$pid" 1500 11500 16500
	echo "$output"
	[ "$status" -eq 0 ]
	STOPPED=
	[[ "$output" == *"ok - watchdog 16500"* ]]
	[[ "$output" == *"ok - 409 restore_in_progress shown with its reason"* ]]
	[[ "$output" == *"ok - retry loads the session"* ]]
	[ -s "$ART/web-console-timeout.png" ]
}

@test "browser: the 30 s attach watchdog ends an attach the stopped child cannot answer" {
	# The daemon would wait 10 min for the child's initialize: only the
	# console's watchdog (on Playwright's clock) can end the attach.
	web_serve --initialize-timeout-ms 600000
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid)
	kill -STOP "$pid"
	STOPPED=$pid
	run drive attach "$pid"
	echo "$output"
	[ "$status" -eq 0 ]
	STOPPED=
	[[ "$output" == *"ok - the attach watchdog fired at 30000 ms"* ]]
}

@test "browser: 503 acp_channel_unavailable on a quarantined channel, with its reason" {
	# The load is held past its deadline, then released: its late success
	# gets a close that fails, and that quarantines the channel.
	FAKE_CHILD="hold=session/load@$SID,fail=qwen/control/session/close@$SID:-32603" \
	    serve_start --web-dir "$QWEN_TOP_SRCDIR/web" --session-restore-timeout-ms 300
	make_transcript "$SID"
	make_transcript "$SID2"
	req POST /session '{}'
	expect 200
	req POST /session/$SID/load '{}'
	expect 504
	kill -USR1 "$(child_pid)"
	health_wait '.restoresQuarantined == 1' 10
	run drive unavailable "$SID2"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$ART/web-console-unavailable.png" ]
}

@test "browser: a budget near 2^31-1 disables the derived timers; attach and resume still work" {
	web_serve --session-restore-timeout-ms 2147480000
	run drive timers 2147480000 0 0 "$SID"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - shown as disabled"* ]]
	[[ "$output" == *"ok - a prompt on the resumed session"* ]]
}
