#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child: prompts, the agent command, cancel, transcript appends.
load acp_helper

setup() { acp_setup; }

new_session() {	# new_session SID
	req '"new"' session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$1\"}}"
}

chunks() {	# chunks SID: the agent_message_chunk texts joined
	child_lines | jq -rj "select(.method == \"session/update\" and .params.sessionId == \"$1\" and .params.update.sessionUpdate == \"agent_message_chunk\") | .params.update.content.text"
}

@test "echo agent: streamed chunks, end_turn, user and assistant records chained" {
	run drive <<EOF
$INIT
$(new_session "$SID1")
$(prompt_req 1 "$SID1" "hello there, agent")
$(prompt_req 2 "$SID1" "again")
EOF
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	[ "$(resp 2 | jq -r .result.stopReason)" = end_turn ]
	[ "$(chunks "$SID1")" = "echo: hello there, agentecho: again" ]
	[ "$(child_lines | jq -s '[.[] | select(.params.update.sessionUpdate == "agent_message_chunk")] | length')" -ge 4 ]
	f="$CHATS/$SID1.jsonl"
	all_lines_parse "$f"
	[ "$(wc -l <"$f")" -eq 4 ]
	[ "$(stat -c %a "$f")" = 600 ]
	[ "$(stat -c %a "$CHATS")" = 700 ]
	jq -s -e '.[0].parentUuid == null and .[1].parentUuid == .[0].uuid and
	    .[2].parentUuid == .[1].uuid and .[3].parentUuid == .[2].uuid' "$f"
	jq -s -e --arg sid "$SID1" --arg ws "$WS" 'all(.[]; .sessionId == $sid and .cwd == $ws and
	    (.timestamp | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z$")) and
	    (.version | type == "string"))' "$f"
	jq -s -e '[.[].type] == ["user","assistant","user","assistant"]' "$f"
	jq -s -e '.[0].message == {"role":"user","parts":[{"text":"hello there, agent"}]}' "$f"
	jq -s -e '.[1].message == {"role":"model","parts":[{"text":"echo: hello there, agent"}]}' "$f"
	jq -s -e '[.[0] | keys_unsorted[0:8]] == [["uuid","parentUuid","sessionId","timestamp","type","provenance","cwd","version"]]' "$f"
	# The loader reads what we wrote.
	run qwen-acp-child --inspect "$f"
	[ "$(jq .activeChainLength <<<"$output")" = 4 ]
	[ "$(jq .malformedLines <<<"$output")" = 0 ]
}

@test "a prompt on a loaded transcript hangs from its leaf" {
	make_transcript "$SID1" 2
	run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
$(prompt_req 2 "$SID1" "continue")
EOF
	f="$CHATS/$SID1.jsonl"
	all_lines_parse "$f"
	[ "$(jq -rs '.[4].parentUuid' "$f")" = "00000002-0000-4000-8000-000000000005" ]
	[ "$(jq -rs '.[5].parentUuid == .[4].uuid' "$f")" = true ]
}

@test "agent command: prompt on stdin, env, output streamed as it arrives" {
	gate="$BATS_TEST_TMPDIR/gate"
	cat >"$BATS_TEST_TMPDIR/agent.sh" <<'AGENT'
read -r line
printf 'first:%s\n' "$line"
printf 'sid=%s tx=%s\n' "$QWEN_SESSION_ID" "$QWEN_TRANSCRIPT"
printf 'cap=%s\n' "${QWEN_ACP_PARENT_CAPABILITY-unset}"
while [ ! -e "$GATE" ]; do sleep 0.01; done
printf 'second\n'
AGENT
	export GATE="$gate" QWEN_ACP_PARENT_CAPABILITY=topsecret
	run drive --agent-command "sh $BATS_TEST_TMPDIR/agent.sh" <<EOF
send {"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"_meta":{"qwen-code/private-parent-capability":"topsecret"}}}
wait "init"
$(new_session "$SID1")
send {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"ping"}]}}
waitfor first:ping
shell touch "$gate"
wait 1
EOF
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	# "first" arrived before the gate opened, so before "second" existed.
	[ "$(line_no '(.params.update.content.text // "") | test("first:ping")')" -lt "$(line_no '(.params.update.content.text // "") | test("second")')" ]
	out=$(chunks "$SID1")
	[[ "$out" == *"sid=$SID1 tx=$CHATS/$SID1.jsonl"* ]]
	[[ "$out" == *"cap=unset"* ]]
	f="$CHATS/$SID1.jsonl"
	[ "$(jq -rs '.[1].message.parts[0].text' "$f")" = "$out" ]
}

@test "agent output split inside a UTF-8 character is sent whole" {
	run drive --agent-command "printf '\\344'; sleep 0.05; printf '\\275\\240\\345\\245\\275 \\377!'" <<EOF
$INIT
$(new_session "$SID1")
$(prompt_req 1 "$SID1" "x")
EOF
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	[ "$(chunks "$SID1")" = "你好 �!" ]
}

@test "a failing agent command fails the prompt and appends no answer" {
	run drive --agent-command "echo partial; exit 3" <<EOF
$INIT
$(new_session "$SID1")
$(prompt_req 1 "$SID1" "x")
EOF
	[ "$(resp 1 | jq .error.code)" = -32603 ]
	[ "$(resp 1 | jq -r .error.data.errorKind)" = agent_failed ]
	[ "$(resp 1 | jq .error.data.exitStatus)" = 3 ]
	f="$CHATS/$SID1.jsonl"
	all_lines_parse "$f"
	[ "$(jq -rs '[.[].type] | join(",")' "$f")" = user ]
}

@test "cancel stops a slow agent: cancelled, its processes gone; a queued prompt still runs" {
	pidf="$BATS_TEST_TMPDIR/agent.pid"
	run drive --agent-command "read -r l; echo \$\$ >>$pidf; echo \"started \$l\"; case \$l in slow) sleep 30 & echo \$! >>$pidf; wait;; esac" <<EOF
$INIT
$(new_session "$SID1")
send {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"slow"}]}}
send {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"queued"}]}}
waitfor started slow
send {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"$SID1"}}
wait 1
wait 2
$(req 3 qwen/status/loop_lag '{}')
EOF
	[ "$(resp 1 | jq -r .result.stopReason)" = cancelled ]
	[ "$(resp 2 | jq -r .result.stopReason)" = end_turn ]
	[ "$(resp 3 | jq .result.v)" = 1 ]
	[ "$(line_no '.id == 1')" -lt "$(line_no '.id == 2')" ]
	for pid in $(cat "$pidf"); do
		wait_for 5 proc_gone "$pid"
	done
	# The cancelled turn left its user record only; the queued one both.
	jq -s -e '[.[].type] == ["user","user","assistant"]' "$CHATS/$SID1.jsonl"
}

@test "cancel: an agent that ignores SIGTERM is killed after the grace" {
	pidf="$BATS_TEST_TMPDIR/agent.pid"
	run drive --agent-command "trap '' TERM; echo \$\$ >$pidf; echo started; while :; do sleep 0.05; done" <<EOF
$INIT
$(new_session "$SID1")
send {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"slow"}]}}
waitfor started
send {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"$SID1"}}
wait 1
elapsed 1
EOF
	[ "$(resp 1 | jq -r .result.stopReason)" = cancelled ]
	wait_for 5 proc_gone "$(cat "$pidf")"
}

@test "stdin EOF during a prompt cancels it and exits 0" {
	pidf="$BATS_TEST_TMPDIR/agent.pid"
	run drive --agent-command "echo \$\$ >$pidf; echo started; exec sleep 30" <<EOF
$INIT
$(new_session "$SID1")
send {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"slow"}]}}
waitfor started
close
exit
EOF
	[[ "$output" == *"#exit 0"* ]]
	[ "$(resp 1 | jq -r .result.stopReason)" = cancelled ]
	wait_for 5 proc_gone "$(cat "$pidf")"
	[ -z "$(ls "$LOCKS")" ]
}

@test "prompts of two sessions run at the same time" {
	export GATE="$BATS_TEST_TMPDIR/gate"
	run drive --agent-command 'read -r l; case "$l" in wait) while [ ! -e "$GATE" ]; do sleep 0.01; done;; esac; echo "done $l"' <<EOF
$INIT
$(new_session "$SID1")
send {"jsonrpc":"2.0","id":"n2","method":"session/new","params":{"_meta":{"qwen-code/sessionId":"$SID2"}}}
wait "n2"
send {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"wait"}]}}
$(prompt_req 2 "$SID2" "quick")
shell touch "$BATS_TEST_TMPDIR/gate"
wait 1
EOF
	[ "$(resp 2 | jq -r .result.stopReason)" = end_turn ]
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	[ "$(line_no '.id == 2')" -lt "$(line_no '.id == 1')" ]
}

@test "a prompt without text is -32602" {
	run drive <<EOF
$INIT
$(new_session "$SID1")
$(req 1 session/prompt "{\"sessionId\":\"$SID1\",\"prompt\":[{\"type\":\"image\",\"data\":\"\"}]}")
$(req 2 session/prompt "{\"sessionId\":\"$SID1\"}")
EOF
	[ "$(resp 1 | jq .error.code)" = -32602 ]
	[ "$(resp 2 | jq .error.code)" = -32602 ]
	[ ! -e "$CHATS/$SID1.jsonl" ]
}

@test "short write (fault hook) truncates back: whole records only, then goes on" {
	export QWEN_ACP_FAULT_SHORT_WRITE=3
	run drive --fsync never <<EOF
$INIT
$(new_session "$SID1")
$(prompt_req 1 "$SID1" "first prompt")
$(prompt_req 2 "$SID1" "this user record is cut in half")
$(prompt_req 3 "$SID1" "third prompt")
EOF
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	[ "$(resp 2 | jq .error.code)" = -32603 ]
	[ "$(resp 2 | jq -r .error.data.errorKind)" = transcript_write_failed ]
	[[ "$(resp 2 | jq -r .error.message)" == *"short write"* ]]
	[ "$(resp 3 | jq -r .result.stopReason)" = end_turn ]
	f="$CHATS/$SID1.jsonl"
	all_lines_parse "$f"
	[ "$(wc -l <"$f")" -eq 4 ]
	! grep -q "cut in half" "$f" || false
	jq -s -e '.[2].parentUuid == .[1].uuid and .[3].parentUuid == .[2].uuid' "$f"
}

@test "a torn last line is kept apart from the next record" {
	make_transcript "$SID1" 1
	printf '{"uuid":"torn-record","parentUuid":null,"sess' >>"$CHATS/$SID1.jsonl"
	run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
$(prompt_req 2 "$SID1" "after the tear")
EOF
	[ "$(resp 2 | jq -r .result.stopReason)" = end_turn ]
	f="$CHATS/$SID1.jsonl"
	[ "$(wc -l <"$f")" -eq 5 ]
	[ "$(sed -n 3p "$f")" = '{"uuid":"torn-record","parentUuid":null,"sess' ]
	sed 3d "$f" >"$BATS_TEST_TMPDIR/rest"
	all_lines_parse "$BATS_TEST_TMPDIR/rest"
	[ "$(jq -rs '.[2].parentUuid' "$BATS_TEST_TMPDIR/rest")" = "00000001-0000-4000-8000-000000000003" ]
}

@test "ENOSPC on a full tmpfs: the prompt fails, the file keeps whole records" {
	[ "$(id -u)" = 0 ] || skip "needs root to mount a tmpfs"
	command -v unshare >/dev/null || skip "unshare not installed"
	mnt="$BATS_TEST_TMPDIR/small"
	mkdir -p "$mnt"
	unshare -m true 2>/dev/null || skip "cannot create a mount namespace"
	big=$(head -c 3000 /dev/zero | tr '\0' 'x')
	script="$BATS_TEST_TMPDIR/script"
	{
		echo "$INIT"
		new_session "$SID1"
		for i in $(seq 1 12); do prompt_req "$i" "$SID1" "$i $big"; done
	} >"$script"
	run unshare -m sh -c '
		mount -t tmpfs -o size=32k tmpfs "$1" || exit 77
		acp-drive -t 10 -e "$2" -- qwen-acp-child --data-dir "$1" \
		    --workspace "$3" <"$4" >"$5"
		rc=$?
		cp -r "$1/projects" "$6/" 2>/dev/null
		exit $rc' sh "$mnt" "$ERR" "$WS" "$script" "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR"
	[ "$status" -ne 77 ] || skip "cannot mount a tmpfs"
	[ "$status" -eq 0 ]
	output=$(cat "$BATS_TEST_TMPDIR/out")
	[ "$(child_lines | jq -s '[.[] | select(.error.data.errorKind == "transcript_write_failed")] | length')" -ge 1 ]
	[ "$(child_lines | jq -s '[.[] | select(.result.stopReason == "end_turn")] | length')" -ge 1 ]
	f="$BATS_TEST_TMPDIR/projects/$(basename "$(dirname "$CHATS")")/chats/$SID1.jsonl"
	all_lines_parse "$f"
	[ "$(wc -l <"$f")" -ge 2 ]
}

@test "a cancel racing the agent's start never signals the child itself" {
	for i in 1 2 3 4 5; do
		run drive --agent-command "echo started; sleep 30" <<EOF
$INIT
$(new_session "$SID1")
batch 2
{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"$SID1","prompt":[{"type":"text","text":"slow"}]}}
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"$SID1"}}
wait 1
$(req 2 qwen/control/session/close "{\"sessionId\":\"$SID1\"}")
EOF
		[ "$(resp 1 | jq -r .result.stopReason)" = cancelled ]
		[ "$(resp 2 | jq .result.closed)" = true ]
		! grep -q 'signal 15' "$ERR" || false
		rm -rf "$DATA"
	done
}
