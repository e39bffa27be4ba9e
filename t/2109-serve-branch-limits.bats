#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: branches in flight are bounded per session and per
# workspace (429 branch_limit_exceeded), and an abandoned branch (its
# restore budget passed) has its copy removed when the child answers, or
# when a second budget passes without an answer; an answered one is still
# live (201, resumed and attached) as without the bounds.

load serve_restore_helper

teardown() {
	rteardown
}

# The chats directory of the workspace, and its transcripts.
chats() {
	dirname "$(ls "$DATA"/projects/*/chats/"$SID".jsonl)"
}

njsonl() {
	find "$(chats)" -maxdepth 1 -name '*.jsonl' | wc -l
}

# sid N: a session id of its own for N.
sid() {
	printf '%08d-0000-4000-8000-000000000000' "$1"
}

@test "branches in flight: at most 2 per session, 8 per workspace, 429 branch_limit_exceeded" {
	rserve "hold=qwen/control/session/branch" --session-restore-timeout-ms 20000
	bg_req b1 POST /session/$SID/branch '{}'
	bg_req b2 POST /session/$SID/branch '{}'
	wait_for 5 calls_are 2 qwen/control/session/branch
	req POST /session/$SID/branch '{}'
	expect 429 ".code == \"branch_limit_exceeded\" and .errorKind == \"branch_limit_exceeded\" and
	    .retryable == true and .scope == \"session\" and .limit == 2 and .inFlight == 2 and
	    .sessionId == \"$SID\" and (.error | contains(\"2 in flight per session, limit 2\"))"
	[ "$(header Retry-After)" = 5 ]
	# Six more sessions with one each: the workspace is full.
	local i
	for i in 1 2 3 4 5 6; do
		make_transcript "$(sid "$i")"
		bg_req "o$i" POST "/session/$(sid "$i")/branch" '{}'
	done
	wait_for 5 calls_are 8 qwen/control/session/branch
	req POST /session/$SID2/branch '{}'
	expect 429 '.code == "branch_limit_exceeded" and .scope == "workspace" and .limit == 8 and .inFlight == 8'
	[ "$(calls qwen/control/session/branch)" -eq 8 ]
	# Answered, they are out of the count.
	kill -USR1 "$(child_pid)"
	for i in b1 b2 o1 o2 o3 o4 o5 o6; do
		bg_wait "$i"
		[ "$code" = 201 ]
	done
	bg_req b3 POST /session/$SID2/branch '{}'
	wait_for 5 calls_are 9 qwen/control/session/branch
	kill -USR1 "$(child_pid)"
	bg_wait b3
	[ "$code" = 201 ]
	# Without atRecordId an answered branch is resumed and attached.
	jq -e --arg s "$SID2" '.forkedFrom.sessionId == $s and (.clientId | type) == "string"' <<<"$body"
}

@test "an abandoned branch: 504 at the budget, its copy removed when the child answers late" {
	rserve "hold=qwen/control/session/branch@$SID" --session-restore-timeout-ms 2000
	[ "$(njsonl)" -eq 2 ]
	bg_req b1 POST /session/$SID/branch '{}'
	bg_req b2 POST /session/$SID/branch '{}'
	bg_wait b1
	[ "$code" = 504 ]
	jq -e --arg s "$SID" '.code == "transcript_read_timeout" and .sessionId == $s and .timeoutMs == 2000' <<<"$body"
	bg_wait b2
	[ "$code" = 504 ]
	# The child wrote the copies; nobody learnt their ids.
	[ "$(njsonl)" -eq 4 ]
	# Abandoned, still in flight until the child answers: still counted.
	req POST /session/$SID/branch '{}'
	expect 429 '.scope == "session"'
	kill -USR1 "$(child_pid)"
	wait_for 5 cond '[ "$(grep -c "abandoned branch .* removed (1 file)" "$BATS_TEST_TMPDIR/err")" -eq 2 ]'
	[ "$(njsonl)" -eq 2 ]
	[ -f "$(chats)/$SID.jsonl" ]
	[ -f "$(chats)/$SID2.jsonl" ]
}

@test "an abandoned branch never answered: given up after a second budget, its copy removed" {
	rserve "hold=qwen/control/session/branch@$SID" --session-restore-timeout-ms 300
	req POST /session/$SID/branch '{}'
	expect 504
	[ "$(njsonl)" -eq 3 ]
	wait_for 5 grep -q "abandoned branch .* unanswered; given up" "$BATS_TEST_TMPDIR/err"
	[ "$(njsonl)" -eq 2 ]
	# Out of the count: the session may branch again.
	req POST /session/$SID/branch '{}'
	expect 504
	req POST /session/$SID/branch '{}'
	expect 504
}
