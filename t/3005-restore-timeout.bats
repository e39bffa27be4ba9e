#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-restore: the restore timeout of seed 000 (SDK rules) and the
# capability cache, against the scripted fake daemon.

load restore_helper

# chosen ACTION [ARGS...]: run ACTION s-1 with -v and print the timeout line.
chosen() {
	local action=$1
	shift
	qwen-restore -v "$@" "$action" s-1 2>&1 >/dev/null |
		sed -n "s/^qwen-restore: $action s-1: $action timeout//p"
}

@test "no flag, no cache: 70 s" {
	fake_start <<<"POST /session/s-1/load 200 $LOADED"
	[ "$(chosen load)" = " 70000 ms (default)" ]
	[ "$(chosen resume)" = " 70000 ms (default)" ]
}

@test "cached capability: budget + 10 s, refreshed by capabilities" {
	fake_start <<EOF
GET /capabilities 200 $(caps 60000)
GET /capabilities 200 $(caps 1234)
GET /capabilities 200 {"v":1,"features":[],"limits":{}}
POST /session/s-1/load 200 $LOADED
EOF
	[ "$(chosen load)" = " 70000 ms (default)" ]
	run qwen-restore --json capabilities
	[ "$status" -eq 0 ]
	[ "$(jq -r .limits.sessionRestoreTimeoutMs <<<"$output")" = 60000 ]
	[ "$(chosen load)" = " 70000 ms (cached capability + 10000 ms)" ]
	qwen-restore capabilities >/dev/null
	[ "$(chosen load)" = " 11234 ms (cached capability + 10000 ms)" ]
	[ "$(jq -r .sessionRestoreTimeoutMs "$(daemon_state_dir)/capabilities.json")" = 1234 ]
	# A daemon that publishes no budget clears the cache.
	qwen-restore capabilities >/dev/null
	[ "$(chosen load)" = " 70000 ms (default)" ]
	[ ! -e "$(daemon_state_dir)/capabilities.json" ]
	# load/resume never asked for capabilities themselves.
	[ "$(count GET /capabilities)" -eq 3 ]
}

@test "load and resume make no implicit capability request" {
	fake_start <<EOF
POST /session/s-1/load 200 $LOADED
POST /session/s-1/resume 200 $LOADED
EOF
	qwen-restore load s-1
	qwen-restore resume s-1
	[ "$(count GET /capabilities)" -eq 0 ]
	[ "$(wc -l <"$FAKE_LOG")" -eq 2 ]
}

@test "the cache is per daemon address" {
	fake_start <<<"GET /capabilities 200 $(caps 1234)"
	qwen-restore capabilities >/dev/null
	[ "$(chosen load)" = " 11234 ms (cached capability + 10000 ms)" ]
	# Another address has no cache (nothing listens there: 69).
	run qwen-restore -v --socket "$BATS_TEST_TMPDIR/other.sock" load s-1
	[ "$status" -eq 69 ]
	[[ "$output" == *"load timeout 70000 ms (default)"* ]]
}

@test "an explicit fetch timeout beats the cached capability" {
	cached_budget 60000 ""
	[ "$(chosen load --fetch-timeout-ms 30000)" = " 30000 ms (--fetch-timeout-ms)" ]
	[ "$(QWEN_FETCH_TIMEOUT_MS=25000 chosen load)" = " 25000 ms (QWEN_FETCH_TIMEOUT_MS)" ]
	# The flag beats the environment.
	[ "$(QWEN_FETCH_TIMEOUT_MS=25000 chosen load --fetch-timeout-ms 31000)" = " 31000 ms (--fetch-timeout-ms)" ]
	# An explicit 0 is no timer, and still beats the cache.
	[ "$(chosen load --fetch-timeout-ms 0)" = ": no timer (--fetch-timeout-ms)" ]
}

@test "per-request --timeout-ms beats everything" {
	cached_budget 60000 ""
	[ "$(QWEN_FETCH_TIMEOUT_MS=25000 chosen load --fetch-timeout-ms 30000 --timeout-ms 5000)" = " 5000 ms (--timeout-ms)" ]
}

@test "--timeout-ms 0: no timer, and never sent to the daemon" {
	fake_start <<EOF
POST /session/s-1/load 200 delay=300 $LOADED
EOF
	[ "$(chosen load --timeout-ms 0 --fetch-timeout-ms 100)" = ": no timer (--timeout-ms)" ]
	# The request outlived the 100 ms fetch timeout: no timer ran.
	run qwen-restore --timeout-ms 0 --fetch-timeout-ms 100 load s-1
	[ "$status" -eq 0 ]
	[ "$output" = s-1 ]
	# No timeout in the body or in any header.
	[ "$(requests POST /session/s-1/load | jq -r '.body' | sort -u)" = '{"cwd":"'"$WS"'"}' ]
	! grep -qi timeout "$FAKE_LOG" || false
}

@test "a value above 2^31-1 disables the timer instead of wrapping" {
	fake_start <<EOF
GET /capabilities 200 $(caps 2147483647)
POST /session/s-1/load 200 delay=200 $LOADED
EOF
	[ "$(chosen load --timeout-ms 2147483648)" = ": no timer (--timeout-ms, over 2^31-1)" ]
	[ "$(chosen load --timeout-ms 2147483647)" = " 2147483647 ms (--timeout-ms)" ]
	[ "$(chosen load --fetch-timeout-ms 9999999999)" = ": no timer (--fetch-timeout-ms, over 2^31-1)" ]
	# The largest budget + 10 s is past the ceiling: no timer.
	qwen-restore capabilities >/dev/null
	[ "$(chosen load)" = ": no timer (cached capability + 10000 ms, over 2^31-1)" ]
	run qwen-restore load s-1
	[ "$status" -eq 0 ]
	# An out-of-range capability is not cached.
	[ "$(jq -r .sessionRestoreTimeoutMs "$(daemon_state_dir)/capabilities.json")" = 2147483647 ]
}

@test "an out-of-range capability budget is ignored" {
	fake_start <<EOF
GET /capabilities 200 $(caps 2147483648)
GET /capabilities 200 $(caps 0)
GET /capabilities 200 {"limits":{"sessionRestoreTimeoutMs":"60000"}}
POST /session/s-1/load 200 $LOADED
EOF
	for i in 1 2 3; do
		qwen-restore capabilities >/dev/null
		[ "$(chosen load)" = " 70000 ms (default)" ]
	done
}

# The daemon holds these answers forever (hold): only qwen-restore's own
# timeout can end the call; timeout(1) turns a timer that never fires
# into a failure (124) rather than a hung suite.
@test "a short timeout really fires (per-request)" {
	fake_start <<<"POST /session/s-1/load 200 hold $LOADED"
	run timeout 60 qwen-restore --timeout-ms 300 load s-1
	[ "$status" -eq 1 ]
	[ "$output" = "qwen-restore: load s-1: timed out after 300 ms" ]
	[ "$(count POST /session/s-1/load)" -eq 1 ]
}

@test "a short timeout really fires (fetch timeout from the environment)" {
	fake_start <<<"POST /session/s-1/resume 200 hold $LOADED"
	QWEN_FETCH_TIMEOUT_MS=250 run timeout 60 qwen-restore resume s-1
	[ "$status" -eq 1 ]
	[[ "$output" == *"timed out after 250 ms"* ]]
}

@test "the cached budget's deadline fires: 1 ms + 10 s is not reached by a 300 ms answer" {
	cached_budget 1 delay=300 hold
	# 10001 ms leaves the 300 ms answer alone; a 100 ms fetch timeout ends
	# a held one.
	run qwen-restore load s-1
	[ "$status" -eq 0 ]
	run timeout 60 qwen-restore --fetch-timeout-ms 100 load s-1
	[ "$status" -eq 1 ]
	[[ "$output" == *"timed out after 100 ms"* ]]
}

@test "the daemon's 504 session_restore_timeout: one line, exit 75" {
	fake_start <<'EOF'
POST /session/3f2a9c1d-0000-4000-8000-000000000000/load 504 retry-after=60 {"error":"AcpSessionBridge session/load timed out after 60000ms","code":"session_restore_timeout","errorKind":"restore_timeout","retryable":true,"sessionId":"3f2a9c1d-0000-4000-8000-000000000000","action":"load","timeoutMs":60000}
EOF
	run qwen-restore load 3f2a9c1d-0000-4000-8000-000000000000
	[ "$status" -eq 75 ]
	[ "$output" = "qwen-restore: load 3f2a9c1d…: restore timed out after 60000 ms (retry in 60 s)" ]
}

@test "other requests: --timeout-ms, then the fetch timeout, then 30 s" {
	fake_start <<<'GET /session/s-1/status 200 delay=400 {"sessionId":"s-1"}'
	run qwen-restore --fetch-timeout-ms 100 status s-1
	[ "$status" -eq 1 ]
	[[ "$output" == *"timed out after 100 ms"* ]]
	run qwen-restore --fetch-timeout-ms 100 --timeout-ms 2000 status s-1
	[ "$status" -eq 0 ]
	run qwen-restore status s-1
	[ "$status" -eq 0 ]
}

@test "bad timeout values are usage errors (exit 2)" {
	run qwen-restore --timeout-ms -1 load s-1
	[ "$status" -eq 2 ]
	run qwen-restore --timeout-ms 1.5 load s-1
	[ "$status" -eq 2 ]
	run qwen-restore --fetch-timeout-ms abc load s-1
	[ "$status" -eq 2 ]
	QWEN_FETCH_TIMEOUT_MS=soon run qwen-restore load s-1
	[ "$status" -eq 2 ]
	[[ "$output" == *QWEN_FETCH_TIMEOUT_MS* ]]
}
