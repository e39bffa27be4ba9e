#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a browser's request from another site (Sec-Fetch-Site) is
# refused on every route, though the same user's browser needs no token:
# a cross-site GET carries no Origin to refuse it by.
load serve_helper

teardown() {
	serve_teardown
}

@test "Sec-Fetch-Site cross-site or same-site without an allowed Origin: 403 on every route, both listeners" {
	serve_start
	for TRANSPORT in tcp unix; do
		for p in /capabilities /health /workspace/sessions / /session/$SID/events; do
			req GET "$p" '' -H 'Sec-Fetch-Site: cross-site' --max-time 10
			expect 403 '.code == "origin_forbidden"'
			req GET "$p" '' -H 'Sec-Fetch-Site: same-site' --max-time 10
			expect 403 '.code == "origin_forbidden"'
		done
		req POST /session '{}' -H 'Sec-Fetch-Site: cross-site'
		expect 403 '.code == "origin_forbidden"'
		# The console's own pages, and a typed URL, get in.
		req GET /capabilities '' -H 'Sec-Fetch-Site: same-origin'
		expect 200
		req GET /capabilities '' -H 'Sec-Fetch-Site: none'
		expect 200
	done
	# The WebSocket upgrade passes the same gate.
	TRANSPORT=tcp req GET /acp '' -H 'Sec-Fetch-Site: cross-site' \
	    -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
	    -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='
	expect 403 '.code == "origin_forbidden"'
}

@test "Sec-Fetch-Site cross-site from an --allow-origin origin goes on to the bearer" {
	printf 'site-token-0123456789\n' >"$BATS_TEST_TMPDIR/tok"
	chmod 600 "$BATS_TEST_TMPDIR/tok"
	serve_start --token-file "$BATS_TEST_TMPDIR/tok" --allow-origin http://app.example
	TRANSPORT=tcp req GET /capabilities '' -H 'Sec-Fetch-Site: cross-site' \
	    -H 'Origin: http://app.example'
	expect 401
	TRANSPORT=tcp req GET /capabilities '' -H 'Sec-Fetch-Site: cross-site' \
	    -H 'Origin: http://app.example' -H 'Authorization: Bearer site-token-0123456789'
	expect 200
	# Our own console's origin counts as ours.
	TRANSPORT=tcp req GET /capabilities '' -H 'Sec-Fetch-Site: same-site' \
	    -H "Origin: http://127.0.0.1:$PORT" -H 'Authorization: Bearer site-token-0123456789'
	expect 200
	TRANSPORT=tcp req GET /capabilities '' -H 'Sec-Fetch-Site: cross-site' \
	    -H 'Authorization: Bearer site-token-0123456789'
	expect 403 '.code == "origin_forbidden"'
}

@test "Sec-Fetch-Site cross-site: a link followed to the console opens it; a frame, a fetch or an API route does not" {
	serve_start --web-dir "$QWEN_TOP_SRCDIR/web"
	for TRANSPORT in tcp unix; do
		req GET / '' -H 'Sec-Fetch-Site: cross-site' -H 'Sec-Fetch-Mode: navigate' \
		    -H 'Sec-Fetch-Dest: document'
		expect 200
		req GET / '' -H 'Sec-Fetch-Site: cross-site' -H 'Sec-Fetch-Mode: navigate' \
		    -H 'Sec-Fetch-Dest: iframe'
		expect 403 '.code == "origin_forbidden"'
		req GET / '' -H 'Sec-Fetch-Site: cross-site' -H 'Sec-Fetch-Mode: no-cors' \
		    -H 'Sec-Fetch-Dest: document'
		expect 403 '.code == "origin_forbidden"'
		req GET /capabilities '' -H 'Sec-Fetch-Site: cross-site' \
		    -H 'Sec-Fetch-Mode: navigate' -H 'Sec-Fetch-Dest: document'
		expect 403 '.code == "origin_forbidden"'
	done
}
