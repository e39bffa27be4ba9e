#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: requests bounded in JSON values and nesting, not only in
# bytes (json-limit.h), on the REST routes, ACP over HTTP and the
# WebSocket; a body for a session that is not live is never parsed.
load serve_acp_helper

teardown() { serve_teardown; }

# objects N: a JSON array of N empty objects.
objects() {
	awk -v n="$1" 'BEGIN { printf "["; for (i = 1; i < n; i++) printf "{},";
	    printf "{}]" }'
}

@test "a 1 MiB prompt of empty objects is refused 413 json_too_complex, unparsed" {
	serve_loaded
	{ printf '{"prompt":'; objects 350000; printf '}'; } >"$BATS_TEST_TMPDIR/many"
	req POST /session/$SID/prompt '' --data-binary @"$BATS_TEST_TMPDIR/many" \
	    -H 'Content-Type: application/json'
	expect 413 '.code == "json_too_complex" and .errorKind == "json_too_complex"'
	# Nesting too deep is the same refusal.
	deep=$(printf '[%.0s' $(seq 70); printf ']%.0s' $(seq 70))
	req POST /session/$SID/prompt "{\"prompt\":$deep}"
	expect 413 '.code == "json_too_complex"'
	# Under the budget a prompt is taken as before.
	prompt_post $SID
	req POST /session '' --data-binary @"$BATS_TEST_TMPDIR/many" \
	    -H 'Content-Type: application/json'
	expect 413 '.code == "json_too_complex"'
}

@test "a body to a missing session's cancel is 404 without being parsed" {
	serve_start
	missing=33333333-3333-4333-8333-333333333333
	# Almost 10 MiB that would be a parse error, or over the budget.
	{ printf '{"x":'; head -c $((10 * 1024 * 1024 - 64)) /dev/zero | tr '\0' '['; } \
	    >"$BATS_TEST_TMPDIR/bad"
	req POST /session/$missing/cancel '' --data-binary @"$BATS_TEST_TMPDIR/bad" \
	    -H 'Content-Type: application/json'
	expect 404 '.code == "session_not_found"'
	objects 100000 >"$BATS_TEST_TMPDIR/many"
	for r in cancel heartbeat prompt model approval-mode; do
		req POST /session/$missing/$r '' --data-binary @"$BATS_TEST_TMPDIR/many" \
		    -H 'Content-Type: application/json'
		expect 404 '.code == "session_not_found"'
	done
	# A live session with a caller it does not know: refused unparsed too.
	make_transcript
	req POST /session/$SID/load '{}'
	expect 200
	req POST /session/$SID/cancel '' --data-binary @"$BATS_TEST_TMPDIR/bad" \
	    -H 'Content-Type: application/json' -H 'X-Qwen-Client-Id: nobody-1'
	expect 400 '.code == "invalid_client_id"'
	# Its own caller's body is parsed: too deep, or malformed.
	req POST /session/$SID/cancel '' --data-binary @"$BATS_TEST_TMPDIR/bad" \
	    -H 'Content-Type: application/json'
	expect 413 '.code == "json_too_complex"'
	req POST /session/$SID/cancel '{"x":'
	expect 400 '.code == "invalid_json"'
}

@test "ACP over HTTP and the WebSocket refuse a message of too many values" {
	serve_start
	acp_init
	{ printf '{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"prompt":'
	  objects 20000; printf '}}'; } >"$BATS_TEST_TMPDIR/many"
	req POST /acp '' --data-binary @"$BATS_TEST_TMPDIR/many" \
	    -H 'Content-Type: application/json' -H "Acp-Connection-Id: $ACP_CONN"
	expect 400 '.error.code == -32600 and (.error.message | test("too many JSON values"))'
	# An unknown connection is refused before its message is parsed.
	req POST /acp '' --data-binary @"$BATS_TEST_TMPDIR/many" \
	    -H 'Content-Type: application/json' -H "Acp-Connection-Id: nope"
	expect 404 '.error.data.code == "acp_connection_not_found"'
	ws-client -t 20 -u "$SOCK" >"$BATS_TEST_TMPDIR/w.ws" 3>&- <<EOF
text {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}
wait 1
values 3000000
wait "values"
text {"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}
wait 2
EOF
	jq -e -s 'any(.[]; .id == "values" and .error.code == -32600)' "$BATS_TEST_TMPDIR/w.ws"
	jq -e -s 'any(.[]; .id == 2 and .result.protocolVersion == 1)' "$BATS_TEST_TMPDIR/w.ws"
}

# rss_kib: the daemon's resident set now.
rss_kib() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$SERVE_PID/status"
}

@test "a large body or message, parsed or not, gives its memory back once answered" {
	# The sanitizers' allocator holds freed memory in quarantine.
	[ -z "${QWEN_SANITIZED:-}" ] || skip "RSS is the sanitizer's under ASan"
	serve_start
	local before
	objects 3400000 >"$BATS_TEST_TMPDIR/big"
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/big")" -gt 10000000 ]
	req GET /health
	before=$(rss_kib)
	req POST /session/$SID2/cancel '' --data-binary @"$BATS_TEST_TMPDIR/big" \
	    -H 'Content-Type: application/json'
	expect 404 '.code == "session_not_found"'
	# The 10 MiB the body took are back (the trim runs a loop turn later:
	# one more request is past it).
	req GET /health
	[ "$(rss_kib)" -lt $((before + 4096)) ]
	ws-client -t 20 -u "$SOCK" >"$BATS_TEST_TMPDIR/w.ws" 3>&- <<EOF2
text {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}
wait 1
values 3000000
wait "values"
EOF2
	req GET /health
	[ "$(rss_kib)" -lt $((before + 4096)) ]
}
