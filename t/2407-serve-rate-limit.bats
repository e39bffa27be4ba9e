#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve --rate-limit: a window per client identity and route class;
# a greedy client is refused 429 with Retry-After while another is served.

load serve_helper

setup() {
	export QWEN_SERVE_TEST_CLOCK_FILE=$BATS_TEST_TMPDIR/clock
	echo 1000 >"$QWEN_SERVE_TEST_CLOCK_FILE"
}

teardown() {
	serve_teardown
}

# greedy METHOD PATH [BODY]: a request from 127.0.0.2 (another client).
greedy() {
	TRANSPORT=tcp req "$1" "$2" "${3-}" --interface 127.0.0.2
}

@test "--rate-limit: the greedy client is held, another is served, the window resets" {
	serve_start --rate-limit --rate-limit-read 3 --rate-limit-window-ms 60000
	for i in 1 2 3; do
		greedy GET /capabilities
		expect 200
		[ "$(header X-RateLimit-Limit)" = 3 ]
		[ "$(header X-RateLimit-Remaining)" = $((3 - i)) ]
		[ "$(header X-RateLimit-Reset)" = 60 ]
	done
	greedy GET /capabilities
	expect 429 '.code == "rate_limit_exceeded" and .routeClass == "read" and .limit == 3'
	[ "$(header Retry-After)" = 60 ]
	[ "$(header X-RateLimit-Remaining)" = 0 ]
	# Another client address is served meanwhile.
	TRANSPORT=tcp req GET /capabilities
	expect 200
	[ "$(header X-RateLimit-Remaining)" = 2 ]
	# Other classes and the exempt routes go on for the greedy one.
	greedy POST /session '{}'
	expect 200
	[ "$(header X-RateLimit-Limit)" = 30 ]
	greedy GET /health
	expect 200
	[ -z "$(header X-RateLimit-Limit)" ]
	# 30 s on: Retry-After counts down; at 60 s the window is new.
	echo 31000 >"$QWEN_SERVE_TEST_CLOCK_FILE"
	greedy GET /capabilities
	expect 429
	[ "$(header Retry-After)" = 30 ]
	echo 61000 >"$QWEN_SERVE_TEST_CLOCK_FILE"
	greedy GET /capabilities
	expect 200
	[ "$(header X-RateLimit-Remaining)" = 2 ]
	# The refusals are counted in /metrics.
	req GET /metrics
	grep -q '^qwen_serve_refusals_total{listener="tcp",reason="rate_limited"} 2$' <<<"$body"
	req GET /daemon/status
	expect 200 '.runtime.rateLimit.enabled == true and .runtime.rateLimit.rejectedSinceStart.read == 2 and .runtime.rateLimit.rejectedSinceStart.prompt == 0'
	req GET /capabilities
	expect 200 '.features | index("rate_limit") != null'
}

@test "--rate-limit-prompt: prompts have their own window" {
	FAKE_CHILD=hang=session/prompt serve_start --rate-limit-prompt 1
	make_transcript
	TRANSPORT=tcp req POST /session/$SID/load '{}'
	expect 200
	TRANSPORT=tcp req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"a"}]}'
	expect 202
	[ "$(header X-RateLimit-Limit)" = 1 ]
	TRANSPORT=tcp req POST /session/$SID/prompt '{"prompt":[{"type":"text","text":"b"}]}'
	expect 429 '.routeClass == "prompt"'
	# Reads are another class: still served.
	TRANSPORT=tcp req GET /session/$SID/status
	expect 200
	[ "$(header X-RateLimit-Limit)" = 120 ]
}

@test "--rate-limit: the Unix socket's own uid is exempt unless --rate-limit-own-uid" {
	serve_start --rate-limit --rate-limit-read 1
	for i in 1 2 3; do
		req GET /capabilities
		expect 200
	done
	[ -z "$(header X-RateLimit-Limit)" ]
	serve_stop
	serve_start --rate-limit --rate-limit-read 1 --rate-limit-own-uid
	req GET /capabilities
	expect 200
	[ "$(header X-RateLimit-Limit)" = 1 ]
	req GET /capabilities
	expect 429
}

@test "--rate-limit: off by default" {
	serve_start
	for i in 1 2 3; do
		greedy GET /capabilities
		expect 200
	done
	[ -z "$(header X-RateLimit-Limit)" ]
}

@test "--rate-limit-window-ms 0 and --rate-limit-read 0 are usage errors" {
	run qwen-serve --rate-limit-window-ms 0 --check-config
	[ "$status" -eq 2 ]
	run qwen-serve --rate-limit-read 0 --check-config
	[ "$status" -eq 2 ]
	[[ "$output" == *"--rate-limit-read"* ]]
}
