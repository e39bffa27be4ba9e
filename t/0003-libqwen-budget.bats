#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# libqwen budgets and timeouts (seed 000) through `qwen-test-tool budget`.

load test_helper

# check WANT CMD...: the command succeeds and prints WANT.
check() {
	local want=$1
	shift
	run qwen-test-tool budget "$@"
	[ "$status" -eq 0 ] || { echo "$*: exit $status: $output"; return 1; }
	[ "$output" = "$want" ] || { echo "$*: got '$output', want '$want'"; return 1; }
}

@test "budget restore: explicit restore timeout wins outright" {
	check 60000 restore
	check 5000 restore --restore 5000
	check 1 restore --restore 1
	check 5000 restore --restore 5000 --init 120000
	check 90000 restore --restore 90000 --init 30000
}

@test "budget restore: a larger initialize timeout raises, never lowers" {
	check 120000 restore --init 120000
	check 60001 restore --init 60001
	check 60000 restore --init 60000
	check 60000 restore --init 5000
	check 60000 restore --init 10000
	check 2147483647 restore --init 2147483647
}

@test "budget client: per-request, then fetch, then cached + 10 s, then 70 s" {
	check 70000 client
	check 70000 client --cached 60000
	check 130000 client --cached 120000
	check 30000 client --fetch 30000 --cached 60000
	check 5000 client --request 5000 --fetch 30000 --cached 60000
	check none client --request 0 --fetch 30000 --cached 60000
	check none client --fetch 0 --cached 60000
}

@test "budget client: a derived delay above 2^31-1 disables the timer" {
	check 2147483647 client --cached 2147473647
	check none client --cached 2147473648
	check none client --request 2147483648
	check 2147483647 client --request 2147483647
	check none client --fetch 9223372036854775807
}

@test "budget watchdog and web request: +15 s / +10 s, fallbacks, overflow" {
	check 75000 watchdog 60000
	check 75000 watchdog
	check 20000 watchdog 5000
	check 2147483647 watchdog 2147468647
	check none watchdog 2147468648
	check 70000 web-request 60000
	check 70000 web-request
	check none web-request 2147483647
}

@test "budget retry-after: clamp(ceil(ms/1000), 5, 120)" {
	for pair in 0:5 4999:5 5000:5 5001:6 60000:60 120000:120 121000:120; do
		check "${pair##*:}" retry-after "${pair%%:*}"
	done
}

@test "budget parse: accepts 1 and 2^31-1" {
	check 1 parse --x-ms 1
	check 2147483647 parse --x-ms 2147483647
	check 0 parse --x-ms 0 --allow-zero
}

@test "budget parse: rejects everything else with exit 2 and a message" {
	for text in "" 0 -1 1.5 1e3 " 5" "5 " 2147483648 99999999999999999999 +5 0x10 007; do
		run qwen-test-tool budget parse --session-restore-timeout-ms "$text"
		[ "$status" -eq 2 ] || { echo "'$text' accepted: $output"; false; }
		[ "$output" = "--session-restore-timeout-ms: must be a positive integer of milliseconds no greater than 2147483647, not '$text'" ] ||
			{ echo "'$text': $output"; false; }
	done
}

@test "budget: bad arguments are usage errors" {
	run qwen-test-tool budget restore --restore
	[ "$status" -eq 2 ]
	run qwen-test-tool budget client --bogus 5
	[ "$status" -eq 2 ]
	run qwen-test-tool budget nonsense
	[ "$status" -eq 2 ]
}
