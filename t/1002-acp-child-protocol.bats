#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child: every ACP method over a real pipe, errors, EOF.
load acp_helper

setup() { acp_setup; }

@test "initialize answers protocol 1 with loadSession and resume" {
	run drive <<<"$(req 1 initialize '{"protocolVersion":1}')"
	[ "$status" -eq 0 ]
	r=$(resp 1)
	[ "$(jq .result.protocolVersion <<<"$r")" = 1 ]
	[ "$(jq .result.agentCapabilities.loadSession <<<"$r")" = true ]
	[ "$(jq -c .result.agentCapabilities.sessionCapabilities.resume <<<"$r")" = '{}' ]
	[[ "$output" == *"#exit 0"* ]]
}

@test "requests before initialize are refused; notifications ignored" {
	run drive <<EOF
send {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"$SID1"}}
$(req 1 session/new '{}')
$(req 2 initialize '{"protocolVersion":1}')
$(req 3 session/new '{}')
EOF
	[ "$(resp 1 | jq .error.code)" = -32600 ]
	[ "$(resp 2 | jq .result.protocolVersion)" = 1 ]
	[ "$(resp 3 | jq -r .result.sessionId)" != null ]
}

@test "parent capability: a mismatch is -32602 and no session is allowed after it" {
	export QWEN_ACP_PARENT_CAPABILITY=s3cret-capability
	run drive <<EOF
$(req 1 initialize '{"protocolVersion":1,"_meta":{"qwen-code/private-parent-capability":"wrong"}}')
$(req 2 session/new '{}')
$(req 3 initialize '{"protocolVersion":1,"_meta":{"qwen-code/private-parent-capability":"s3cret-capability"}}')
$(req 4 session/load "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(resp 1 | jq .error.code)" = -32602 ]
	[ "$(resp 1 | jq -r .error.message)" = "Invalid private ACP parent capability" ]
	[ "$(resp 2 | jq .error.code)" = -32602 ]
	[ "$(resp 3 | jq .error.code)" = -32602 ]
	[ "$(resp 4 | jq .error.code)" = -32602 ]
	[ ! -e "$LOCKS/$SID1.lock" ]
}

@test "parent capability: a missing secret is refused, the right one accepted" {
	export QWEN_ACP_PARENT_CAPABILITY=s3cret-capability
	run drive <<EOF
$(req 1 initialize '{"protocolVersion":1}')
EOF
	[ "$(resp 1 | jq .error.code)" = -32602 ]
	run drive <<EOF
$(req 1 initialize '{"protocolVersion":1,"_meta":{"qwen-code/private-parent-capability":"s3cret-capability"}}')
$(req 2 session/new '{}')
EOF
	[ "$(resp 1 | jq .result.protocolVersion)" = 1 ]
	resp 2 | jq -e '.result.sessionId | test("^[0-9a-f-]{36}$")'
}

@test "unknown method is -32601; malformed lines get errors and the child goes on" {
	run drive <<EOF
$INIT
$(req 1 no/such/method '{}')
send this is not json
send {"jsonrpc":"1.0","id":7,"method":"x"}
send {"jsonrpc":"2.0","id":8,"method":"qwen/status/loop_lag"
send {"jsonrpc":"2.0","method":"no/such/notification","params":{}}
$(req 2 qwen/status/loop_lag '{}')
EOF
	[ "$(resp 1 | jq .error.code)" = -32601 ]
	[ "$(child_lines | jq -s '[.[] | select(.error.code == -32700)] | length')" -ge 2 ]
	[ "$(child_lines | jq -s '[.[] | select(.error.code == -32600)] | length')" -ge 1 ]
	[ "$(resp 2 | jq .result.v)" = 1 ]
}

@test "an oversize line is answered with an error and the next request works" {
	run drive --max-frame-bytes 4096 <<EOF
$INIT
big 9 100000
$(req 2 qwen/status/loop_lag '{}')
EOF
	[ "$status" -eq 0 ]
	[ "$(child_lines | jq -s '[.[] | select(.error.code == -32600 or .error.code == -32700)] | length')" -ge 1 ]
	[ "$(resp 2 | jq .result.v)" = 1 ]
	[ -z "$(resp 9 | jq -c 'select(.result)')" ]
}

@test "session/new: fresh UUID v4, caller id, invalid and duplicate ids" {
	run drive <<EOF
$INIT
$(req 1 session/new '{}')
$(req 2 session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID1\"}}")
$(req 3 session/new '{"_meta":{"qwen-code/sessionId":"../../etc/passwd"}}')
$(req 4 session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID1\"}}")
EOF
	resp 1 | jq -e '.result.sessionId | test("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")'
	[ "$(resp 2 | jq -r .result.sessionId)" = "$SID1" ]
	[ "$(resp 3 | jq .error.code)" = -32602 ]
	[ "$(resp 3 | jq -r .error.data.errorKind)" = invalid_session_id ]
	[ "$(resp 4 | jq .error.code)" = -32602 ]
	# Lazy creation: no transcript before the first prompt.
	[ ! -e "$CHATS/$SID1.jsonl" ]
}

@test "session/new refuses an id whose transcript exists" {
	make_transcript "$SID1" 1
	run drive <<EOF
$INIT
$(req 1 session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID1\"}}")
EOF
	[ "$(resp 1 | jq .error.code)" = -32602 ]
	[ "$(resp 1 | jq -r .error.data.errorKind)" = session_exists ]
	[ ! -e "$LOCKS/$SID1.lock" ]
}

@test "load/resume/close/prompt of an unknown id: -32002 with data.uri; bad ids -32602" {
	run drive <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\"}")
$(req 2 session/resume "{\"sessionId\":\"$SID1\"}")
$(req 3 qwen/control/session/close "{\"sessionId\":\"$SID1\"}")
$(req 4 session/prompt "{\"sessionId\":\"$SID1\",\"prompt\":[{\"type\":\"text\",\"text\":\"x\"}]}")
$(req 5 session/load '{"sessionId":"../../../../etc/passwd"}')
$(req 6 session/load '{}')
EOF
	for id in 1 2 3 4; do
		[ "$(resp $id | jq .error.code)" = -32002 ]
		[ "$(resp $id | jq -r .error.message)" = "Resource not found: session:$SID1" ]
		[ "$(resp $id | jq -r .error.data.uri)" = "session:$SID1" ]
	done
	[ "$(resp 5 | jq .error.code)" = -32602 ]
	[ "$(resp 6 | jq .error.code)" = -32602 ]
	[ ! -e "$LOCKS/$SID1.lock" ]
}

@test "session/load replays as notifications before the answer" {
	make_transcript "$SID1" 3
	run drive <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\",\"cwd\":\"$WS\",\"mcpServers\":[]}")
EOF
	n=$(child_lines | jq -s "[.[] | select(.method == \"session/update\" and .params.sessionId == \"$SID1\")] | length")
	[ "$n" -eq 6 ]
	[ "$(line_no '.id == 1')" -gt "$(line_no '.method == "session/update"')" ]
	child_lines | jq -s -e '[.[] | select(.method == "session/update") | .params.update.sessionUpdate] == ["user_message_chunk","agent_message_chunk","user_message_chunk","agent_message_chunk","user_message_chunk","agent_message_chunk"]'
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].chainRecords')" = 6 ]
	[ "$(resp 1 | jq '.result._meta | has("qwen.session.loadReplay")')" = false ]
}

@test "session/load bulk mode puts the replay in result._meta" {
	make_transcript "$SID1" 4
	run drive <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\",\"_meta\":{\"qwen.session.loadReplayMode\":\"bulk\"}}")
EOF
	[ "$(child_lines | jq -s '[.[] | select(.method == "session/update")] | length')" = 0 ]
	r=$(resp 1)
	[ "$(jq '.result._meta["qwen.session.loadReplay"].v' <<<"$r")" = 1 ]
	[ "$(jq '.result._meta["qwen.session.loadReplay"].updates | length' <<<"$r")" = 8 ]
	[ "$(jq -r '.result._meta["qwen.session.loadReplay"].updates[0].content.text' <<<"$r")" = "question 1" ]
}

@test "bulk replay within --replay-max-bytes keeps the newest turns and says so" {
	make_transcript "$SID1" 200
	run drive --replay-max-bytes 4096 <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\",\"_meta\":{\"qwen.session.loadReplayMode\":\"bulk\"}}")
EOF
	r=$(resp 1)
	[ "$(jq '.result._meta["qwen.session.loadReplay"].partial' <<<"$r")" = true ]
	[ "$(jq '.result._meta["qwen.session.loadReplay"].truncatedRecords > 0' <<<"$r")" = true ]
	[ "$(jq '.result._meta["qwen.session.loadReplay"].updates | length < 400' <<<"$r")" = true ]
	[ "$(jq -r '.result._meta["qwen.session.loadReplay"].updates[-1].content.text' <<<"$r")" = "answer 200" ]
}

@test "session/resume and unstable_resumeSession restore without replay" {
	make_transcript "$SID1" 2
	run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
$(req 2 unstable_resumeSession "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(child_lines | jq -s '[.[] | select(.method == "session/update")] | length')" = 0 ]
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].chainRecords')" = 4 ]
	[ "$(resp 1 | jq -r '.result._meta["qwen.session.restore"].leafUuid')" = "00000002-0000-4000-8000-000000000005" ]
	[ "$(resp 2 | jq '.result._meta["qwen.session.restore"].refreshed')" = true ]
}

@test "a second load answers from the kept index, refreshed by appended bytes" {
	make_transcript "$SID1" 2
	run drive <<EOF
$INIT
$(req 1 session/load "{\"sessionId\":\"$SID1\",\"_meta\":{\"qwen.session.loadReplayMode\":\"bulk\"}}")
$(prompt_req 2 "$SID1" "more please")
$(req 3 session/load "{\"sessionId\":\"$SID1\",\"_meta\":{\"qwen.session.loadReplayMode\":\"bulk\"}}")
EOF
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].refreshed')" = false ]
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].refreshed')" = true ]
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].chainRecords')" = 6 ]
	[ "$(resp 3 | jq -r '.result._meta["qwen.session.loadReplay"].updates[-1].content.text')" = "echo: more please" ]
}

@test "requests wait behind a load and run in order; close cancels prompts" {
	make_transcript "$SID1" 50
	run drive <<EOF
$INIT
send {"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"$SID1"}}
send {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"queued"}]}}
send {"jsonrpc":"2.0","id":3,"method":"qwen/control/session/close","params":{"sessionId":"$SID1"}}
wait 3
EOF
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].chainRecords')" = 100 ]
	# The prompt queued behind the load is cancelled by the close after it.
	[ "$(resp 2 | jq -r .result.stopReason)" = cancelled ]
	[ "$(resp 3 | jq .result.closed)" = true ]
	[ "$(line_no '.id == 1')" -lt "$(line_no '.id == 3')" ]
	[ "$(line_no '.id == 2')" -lt "$(line_no '.id == 3')" ]
}

@test "close answers closed:true, releases the lease; the id is unknown after" {
	run drive <<EOF
$INIT
$(req 1 session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID1\"}}")
shell test -e "$LOCKS/$SID1.lock"
$(req 2 qwen/control/session/close "{\"sessionId\":\"$SID1\"}")
shell test ! -e "$LOCKS/$SID1.lock"
$(req 3 qwen/control/session/close "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 2 | jq -c .result)" = "{\"sessionId\":\"$SID1\",\"closed\":true}" ]
	[ "$(resp 3 | jq .error.code)" = -32002 ]
	[ "$(resp 3 | jq -r .error.data.uri)" = "session:$SID1" ]
}

@test "a transcript in the real qwen-code layout loads as it is" {
	local ws=$WS
	WS=/home/dev/projects/acme-service
	CHATS="$DATA/projects/-home-dev-projects-acme-service/chats"
	make_transcript "$SID2" 1
	WS=$ws
	run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID2\",\"cwd\":\"/home/dev/projects/acme-service\"}")
EOF
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].records')" = 2 ]
}

@test "QWEN_HOME is the default data dir" {
	make_transcript "$SID1" 1
	QWEN_HOME="$DATA" run acp-drive -e "$ERR" -- qwen-acp-child --workspace "$WS" <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].records')" = 2 ]
}

@test "stdin EOF ends the child with status 0 and releases every lease" {
	run drive <<EOF
$INIT
$(req 1 session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID1\"}}")
$(req 2 session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID2\"}}")
shell test -e "$LOCKS/$SID1.lock" && test -e "$LOCKS/$SID2.lock"
close
exit
EOF
	[[ "$output" == *"#exit 0"* ]]
	[ -z "$(ls "$LOCKS")" ]
}

@test "SIGTERM ends the child with status 0" {
	run drive <<EOF
$INIT
$(req 1 session/new '{}')
kill 15
exit
EOF
	[[ "$output" == *"#exit 0"* ]]
	[ -z "$(ls "$LOCKS")" ]
}

@test "qwen/status/loop_lag reports the lag window" {
	run drive <<EOF
$INIT
shell sleep 0.3
$(req 1 qwen/status/loop_lag '{}')
EOF
	r=$(resp 1)
	[ "$(jq .result.intervalMs <<<"$r")" = 50 ]
	[ "$(jq '.result.samples >= 2' <<<"$r")" = true ]
	for k in meanMs p50Ms p99Ms maxMs; do
		[ "$(jq ".result.$k >= 0" <<<"$r")" = true ]
	done
	[ "$(jq '.result.maxMs >= .result.p99Ms and .result.p99Ms >= .result.p50Ms' <<<"$r")" = true ]
}

@test "bad options print usage and exit 2" {
	run qwen-acp-child --no-such-flag
	[ "$status" -eq 2 ]
	[[ "$output" == *usage:* ]]
	run qwen-acp-child --fsync sometimes
	[ "$status" -eq 2 ]
	run qwen-acp-child --replay-max-bytes 0
	[ "$status" -eq 2 ]
	run qwen-acp-child extra-arg
	[ "$status" -eq 2 ]
}

@test "--inspect prints the transcript summary" {
	make_transcript "$SID1" 3
	run qwen-acp-child --inspect "$CHATS/$SID1.jsonl"
	[ "$status" -eq 0 ]
	[ "$(jq .records <<<"$output")" = 6 ]
	[ "$(jq .activeChainLength <<<"$output")" = 6 ]
}

@test "requests queued behind a close run after it, and stdin EOF still answers them" {
	make_transcript "$SID1" 30
	run drive <<EOF
$INIT
batch 4
{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"$SID1"}}
{"jsonrpc":"2.0","id":2,"method":"qwen/control/session/close","params":{"sessionId":"$SID1"}}
{"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"$SID1"}}
{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"late"}]}}
close
exit
EOF
	[[ "$output" == *"#exit 0"* ]]
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].chainRecords')" = 60 ]
	[ "$(resp 2 | jq .result.closed)" = true ]
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].refreshed')" = false ]
	# A turn queued when stdin closes is not started.
	[ "$(resp 4 | jq -r .result.stopReason)" = cancelled ]
	[ "$(wc -l <"$CHATS/$SID1.jsonl")" -eq 60 ]
	[ -z "$(ls "$LOCKS")" ]
}

@test "--log-level: debug lines appear, a bad level is a usage error" {
	run drive --log-level debug <<EOF
$INIT
EOF
	grep -q 'debug: ready' "$ERR"
	run qwen-acp-child --log-level loud
	[ "$status" -eq 2 ]
	[[ "$output" == *"--log-level"* ]]
}

@test "a line of too many JSON values is refused unparsed with its id; the child goes on" {
	many=$(awk 'BEGIN { printf "["; for (i = 1; i < 40000; i++) printf "{},";
	    printf "{}]" }')
	run drive <<EOF
$INIT
$(req 1 session/new '{}')
send {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":$many}}
wait 2
$(req 3 qwen/status/loop_lag '{}')
EOF
	[ "$(resp 2 | jq .error.code)" = -32600 ]
	[[ "$(resp 2 | jq -r .error.message)" == *"too many JSON values"* ]]
	[ "$(resp 3 | jq .result.v)" = 1 ]
}

@test "the 4097th session is refused with the limit and scope the daemon's message names" {
	DRIVE_TIMEOUT=120 run drive <<EOF
$INIT
$(for i in $(seq 1 4097); do printf 'send {"jsonrpc":"2.0","id":%d,"method":"session/new","params":{}}\n' "$i"; done)
wait 4097
EOF
	[ "$(resp 4096 | jq -r '.result.sessionId != null')" = true ]
	r=$(resp 4097)
	[ "$(jq -r .error.data.errorKind <<<"$r")" = session_limit_exceeded ]
	[ "$(jq .error.data.limit <<<"$r")" = 4096 ]
	[ "$(jq -r .error.data.scope <<<"$r")" = "workspace child" ]
}
