#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Tokens for people: --token-file, the daemon's generated token found
# beside its socket (over the socket too), and a 401 that says what to do.

load serve_helper

setup() {
	TOK=$BATS_TEST_TMPDIR/tok
	printf 'sekrit-token-0123456789\n' >"$TOK"
	chmod 600 "$TOK"
}

teardown() {
	serve_teardown
}

restore() {
	(cd "$WS" && qwen-restore --socket "$SOCK" --state-dir "$BATS_TEST_TMPDIR/state" "$@" 3>&-)
}

@test "a daemon that wants its token: 401 with a hint, then --token-file answers it" {
	serve_start --token-file "$TOK" --require-auth
	run --separate-stderr restore list
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"Unauthorized (the daemon wants its token: --token-file FILE, or QWEN_SERVER_TOKEN)"* ]]
	run restore --token-file "$TOK" list
	[ "$status" -eq 0 ]
	[[ "$output" == *"no sessions in"* ]]
}

@test "a token beside the socket is found and sent over the socket itself" {
	cp "$TOK" "$BATS_TEST_TMPDIR/token"
	serve_start --token-file "$BATS_TEST_TMPDIR/token" --require-auth
	run restore list
	[ "$status" -eq 0 ]
	[[ "$output" == *"no sessions in"* ]]
	# Another's or a readable token file is not taken: 401 again.
	chmod 644 "$BATS_TEST_TMPDIR/token"
	run restore list
	[ "$status" -eq 1 ]
}

@test "--token-file: a file others can read, a missing one, or with --token: exit 2" {
	serve_start
	chmod 640 "$TOK"
	run restore --token-file "$TOK" list
	[ "$status" -eq 2 ]
	[[ "$output" == *"--token-file $TOK is readable by others (chmod 600 it)"* ]]
	run restore --token-file "$BATS_TEST_TMPDIR/none" list
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot be opened"* ]]
	chmod 600 "$TOK"
	run restore --token x --token-file "$TOK" list
	[ "$status" -eq 2 ]
	[[ "$output" == *"--token and --token-file are exclusive"* ]]
}
