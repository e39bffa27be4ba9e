#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# libqwen NDJSON JSON-RPC framing through `qwen-test-tool frame`.

load test_helper

# mixed_input: requests, a notification, a blank line, CRLF, a bad line,
# a response with both result and error, and an unterminated last line.
mixed_input() {
	printf '%s\r\n' '{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"cwd":"/w"}}'
	printf '\n'
	printf '%s\n' '{"jsonrpc":"2.0","method":"session/update","params":{"t":"a\nb"}}'
	printf '%s\n' 'this is not json'
	printf '%s\n' '{"jsonrpc":"2.0","id":"r1","result":{"ok":true}}'
	printf '%s\n' '{"jsonrpc":"2.0","id":9,"result":1,"error":{"code":1,"message":"m"}}'
	printf '%s' '{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"nf"}}'
}

mixed_want='MSG request 1 {"jsonrpc":"2.0","id":1,"method":"session/load","params":{"cwd":"/w"}}
MSG notification 3 {"jsonrpc":"2.0","method":"session/update","params":{"t":"a\nb"}}
BAD -32700 4 null
MSG result 5 {"jsonrpc":"2.0","id":"r1","result":{"ok":true}}
BAD -32600 6 9
MSG error 7 {"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"nf"}}'

@test "frame: chunk sizes 1, 7 and 4096 give identical output" {
	mixed_input >"$BATS_TEST_TMPDIR/in"
	for chunk in 1 7 4096; do
		run qwen-test-tool frame --chunk "$chunk" <"$BATS_TEST_TMPDIR/in"
		[ "$status" -eq 0 ]
		[ "$output" = "$mixed_want" ] || {
			echo "chunk $chunk gave:"; echo "$output"; false; }
	done
}

@test "frame: a line over the cap is one bad frame and the next line survives" {
	{
		printf '%s\n' '{"jsonrpc":"2.0","method":"before"}'
		head -c 200000 /dev/zero | tr '\0' x
		printf '\n%s\n' '{"jsonrpc":"2.0","id":3,"method":"after"}'
	} >"$BATS_TEST_TMPDIR/in"
	for chunk in 1000 4096 65536; do
		run qwen-test-tool frame --max-frame 1000 --chunk "$chunk" \
		    <"$BATS_TEST_TMPDIR/in"
		[ "$status" -eq 0 ]
		[ "$output" = 'MSG notification 1 {"jsonrpc":"2.0","method":"before"}
BAD -32600 2 null
MSG request 3 {"jsonrpc":"2.0","id":3,"method":"after"}' ]
	done
}

@test "frame: the default cap is 64 MiB" {
	huge_line() {
		head -c $((64 * 1024 * 1024 + 1)) /dev/zero | tr '\0' x
		printf '\n%s\n' '{"jsonrpc":"2.0","method":"after"}'
	}
	run qwen-test-tool frame --chunk 65536 < <(huge_line)
	[ "$status" -eq 0 ]
	[ "$output" = 'BAD -32600 1 null
MSG notification 2 {"jsonrpc":"2.0","method":"after"}' ]
}

@test "frame: a multi-MiB message under the cap arrives whole" {
	{
		printf '{"jsonrpc":"2.0","id":1,"result":"'
		head -c $((8 * 1024 * 1024)) /dev/zero | tr '\0' a
		printf '"}\n'
	} >"$BATS_TEST_TMPDIR/in"
	qwen-test-tool frame --chunk 4096 <"$BATS_TEST_TMPDIR/in" \
	    >"$BATS_TEST_TMPDIR/out"
	prefix='MSG result 1 {"jsonrpc":"2.0","id":1,"result":"'
	[ "$(wc -c <"$BATS_TEST_TMPDIR/out")" -eq \
	    $((8 * 1024 * 1024 + ${#prefix} + 3)) ]
	[ "$(head -c ${#prefix} "$BATS_TEST_TMPDIR/out")" = "$prefix" ]
	[ "$(tail -c 4 "$BATS_TEST_TMPDIR/out")" = 'a"}' ]
	[ "$(tr -d a <"$BATS_TEST_TMPDIR/out")" = "${prefix}\"}" ]
}

@test "frame: binary garbage gives bad frames, then a good line is read" {
	head -c 65536 /dev/urandom >"$BATS_TEST_TMPDIR/in"
	printf '\x00\xff\r\n\n%s\n' '{"jsonrpc":"2.0","method":"after"}' \
	    >>"$BATS_TEST_TMPDIR/in"
	for chunk in 1 4096; do
		run qwen-test-tool frame --max-frame 4096 --chunk "$chunk" \
		    <"$BATS_TEST_TMPDIR/in"
		[ "$status" -eq 0 ]
		# Every event is a bad frame except the last line.
		[ "$(grep -c '^BAD -32[67]00 [0-9]* null$' <<<"$output")" -eq \
		    $(( $(wc -l <<<"$output") - 1 )) ]
		[[ "${lines[-1]}" == 'MSG notification '*' {"jsonrpc":"2.0","method":"after"}' ]]
	done
}

@test "frame: CRLF and LF input give the same messages" {
	mixed_input | tr -d '\r' >"$BATS_TEST_TMPDIR/lf"
	sed 's/$/\r/' "$BATS_TEST_TMPDIR/lf" >"$BATS_TEST_TMPDIR/crlf"
	run qwen-test-tool frame --chunk 5 <"$BATS_TEST_TMPDIR/crlf"
	[ "$status" -eq 0 ]
	[ "$output" = "$mixed_want" ]
	grep -q $'\r' "$BATS_TEST_TMPDIR/crlf"
}

@test "frame: an unterminated final line is read at end of input" {
	run qwen-test-tool frame --chunk 3 < <(printf '%s\n%s' \
	    '{"jsonrpc":"2.0","method":"a"}' '{"jsonrpc":"2.0","method":"b"}')
	[ "$status" -eq 0 ]
	[ "$output" = 'MSG notification 1 {"jsonrpc":"2.0","method":"a"}
MSG notification 2 {"jsonrpc":"2.0","method":"b"}' ]
	run qwen-test-tool frame < <(printf '{"jsonrpc":"2.0",')
	[ "$status" -eq 0 ]
	[ "$output" = 'BAD -32700 1 null' ]
}

@test "frame: bad requests carry their id" {
	run qwen-test-tool frame < <(printf '%s\n' \
	    '{"jsonrpc":"1.0","id":"abc","method":"x"}' \
	    '{"jsonrpc":"2.0","id":5,"method":""}' \
	    '{"jsonrpc":"2.0","id":true,"method":"x"}' \
	    '{"jsonrpc":"2.0","id":6,"method":"x","params":[NaN]}')
	[ "$status" -eq 0 ]
	[ "$output" = 'BAD -32600 1 "abc"
BAD -32600 2 5
BAD -32600 3 null
BAD -32700 4 null' ]
}

@test "frame: bad usage exits 2" {
	run qwen-test-tool frame --chunk 0 </dev/null
	[ "$status" -eq 2 ]
	run qwen-test-tool frame --bogus </dev/null
	[ "$status" -eq 2 ]
}
