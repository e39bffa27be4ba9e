#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The console's pictures and accessibility in headless Chromium (issue 17):
# restore bars against the budget with the deadline, the watchdog and the
# Retry-After countdown marked; the live chart of restores and sessions;
# accessible names, live regions and WCAG AA contrast in the light and the
# dark scheme.  Screenshots go to the build tree's t/artifacts/.  Skips as
# t/2302 does when node, chromium or playwright-core is missing.

load serve_restore_helper

PW_VERSION=1.64.1

setup() {
	browser_setup
}

teardown() {
	rteardown
}

@test "browser: restore bars with deadline, watchdog and Retry-After; live chart; names, live regions, contrast, dark scheme" {
	# SID2's load outlasts the 400 ms budget: a 504 with Retry-After.
	rserve "delay=session/load@$SID2:900" --web-dir "$QWEN_TOP_SRCDIR/web" \
	    --session-restore-timeout-ms 400
	WEB_ARTIFACTS=$ART run timeout 150 node "$QWEN_TOP_SRCDIR/t/helper/web-pictures.mjs" \
	    "$PW_DIR" "http://127.0.0.1:$PORT" "$SID" "$SID2" 3>&-
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok - the 504's Retry-After countdown is drawn"* ]]
	[[ "$output" == *"ok - dark: WCAG AA contrast"* ]]
	[ -s "$ART/web-console-pictures.png" ]
	[ -s "$ART/web-console-pictures-dark.png" ]
}
