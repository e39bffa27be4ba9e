#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: admission of fresh work (a spawn or a restore), through the
# daemon, for every outcome of rfsm_admit_fresh() (unit-tested in
# t/unit/test-restore-fsm): an unavailable channel (quarantined or
# overdue) refuses before capacity is looked at, so the error is the
# stable acp_channel_unavailable and not a coincidental session limit;
# a clean full daemon answers session_limit_exceeded; a clean one with
# room admits.  Late answers are held by the fake child and released by
# the test (SIGUSR1).

load serve_restore_helper

teardown() {
	rteardown
}

# fresh_work CODE JQ: a spawn and a restore of SID2 both answer CODE, JQ.
fresh_work() {
	req POST /session '{"sessionScope":"thread"}'
	expect "$1" "$2"
	req POST /session/$SID2/load '{}'
	expect "$1" "$2"
}

# abandon KNOBS [qwen-serve args...]: a live sibling, then a load of SID
# held past its 300 ms deadline.
abandon() {
	local knobs=$1
	shift
	rserve "hold=session/load@$SID${knobs:+,$knobs}" --session-restore-timeout-ms 300 "$@"
	req POST /session '{}'
	expect 200
	req POST /session/$SID/load '{}'
	expect 504
}

@test "admission: a quarantined channel refuses fresh work before capacity" {
	# A late success whose close fails quarantines the channel.  The
	# sibling and the unsettled restore fill --max-sessions 2: the daemon
	# is also full, and unavailable comes first.
	abandon "fail=qwen/control/session/close@$SID:-32603" --max-sessions 2
	kill -USR1 "$(child_pid)"
	health_wait '.restoresQuarantined == 1' 10
	health_has '.sessions == 1 and .inFlight == 1'
	fresh_work 503 '.code == "acp_channel_unavailable" and .reason == "restore_cleanup_failed"'
	[ "$(header Retry-After)" -ge 5 ]
}

@test "admission: a quarantined channel refuses fresh work with room left too" {
	abandon "fail=qwen/control/session/close@$SID:-32603" --max-sessions 8
	kill -USR1 "$(child_pid)"
	health_wait '.restoresQuarantined == 1' 10
	fresh_work 503 '.code == "acp_channel_unavailable" and .reason == "restore_cleanup_failed"'
}

@test "admission: an overdue restore refuses fresh work before capacity" {
	# Held for one further budget after the 504: the restore is overdue.
	abandon "" --max-sessions 2
	health_wait '.restoresOverdue == 1' 10
	health_has '.sessions == 1 and .inFlight == 1'
	fresh_work 503 '.code == "acp_channel_unavailable" and .reason == "restore_settlement_overdue"'
	# Attaching to the live sibling is not fresh work.
	req POST /session '{}'
	expect 200 '.attached == true'
}

@test "admission: a branch is fresh work, refused on a quarantined and on an overdue channel" {
	abandon "fail=qwen/control/session/close@$SID:-32603" --max-sessions 8
	kill -USR1 "$(child_pid)"
	health_wait '.restoresQuarantined == 1' 10
	req POST "/session/$SID2/branch" '{}'
	expect 503 '.code == "acp_channel_unavailable" and .reason == "restore_cleanup_failed"'
	[ "$(calls qwen/control/session/branch)" -eq 0 ]
}

@test "admission: a branch is refused while a restore is overdue" {
	abandon "" --max-sessions 8
	health_wait '.restoresOverdue == 1' 10
	req POST "/session/$SID2/branch" '{}'
	expect 503 '.code == "acp_channel_unavailable" and .reason == "restore_settlement_overdue"'
	[ "$(calls qwen/control/session/branch)" -eq 0 ]
}

@test "admission: a clean full daemon answers session_limit_exceeded; with room it admits" {
	rserve "" --max-sessions 1
	req POST /session '{}'
	expect 200
	fresh_work 503 '.code == "session_limit_exceeded" and .limit == 1'
	serve_stop
	rserve "" --max-sessions 3
	req POST /session '{}'
	expect 200
	req POST /session '{"sessionScope":"thread"}'
	expect 200 '.attached == false'
	req POST /session/$SID2/load '{}'
	expect 200 '.attached == false'
}
