#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# DELETE then an immediate load of the same session: the load waits at the
# daemon until the child has answered the close (a real agent closes
# asynchronously and would refuse a load of a session it still holds),
# then goes out; its restore budget starts only then.

load serve_restore_helper

teardown() {
	serve_teardown
}

@test "a load right after DELETE waits for the close's answer, then succeeds" {
	rserve hold=qwen/control/session/close
	req POST /session/$SID/load '{}'
	expect 200
	req DELETE /session/$SID
	expect 204
	wait_for 5 calls_are 1 qwen/control/session/close "$SID"
	bg_req again POST /session/$SID/load '{}'
	# Held here: the child has not seen the second load.
	wait_for 5 grep -q "session $SID: waiting for its close before the next restore" "$BATS_TEST_TMPDIR/err"
	req POST /session/$SID2/load '{}'
	expect 200
	[ "$(calls session/load "$SID")" -eq 1 ]
	[ ! -e "$BATS_TEST_TMPDIR/again.code" ]
	kill -USR1 "$(child_pid)"
	wait_for 10 test -e "$BATS_TEST_TMPDIR/again.code"
	[ "$(cat "$BATS_TEST_TMPDIR/again.code")" = 200 ]
	[ "$(calls session/load "$SID")" -eq 2 ]
	# On the wire: the close, then the load.
	awk -v id="$SID" '$3 == id { print $2 }' "$CLOG" | tail -2 | tr '\n' ' ' |
	    grep -qx 'qwen/control/session/close session/load '
}

@test "another session's load does not wait for the close" {
	rserve hold=qwen/control/session/close
	req POST /session/$SID/load '{}'
	expect 200
	req DELETE /session/$SID
	expect 204
	req POST /session/$SID2/load '{}'
	expect 200
}
