#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child: sibling sessions are answered while a large load runs.
# Causal only: the big loads are held by a gate the test releases (no
# "the load is slow enough" assumption); the latency figures (sibling
# p50/p99 during a load) are in scripts/bench-child.
load acp_helper

setup() { acp_setup; }

BIG=55555555-6666-4777-8888-999999999999

@test "a sibling session is answered while a large transcript load is held" {
	command -v qwen-gen-transcript >/dev/null || skip "qwen-gen-transcript not built"
	# 20 MiB: past the fast lane's 16 MiB, so the load is a big job.
	qwen-gen-transcript --mib 20 --seed 11 --branches 2 --compressions 2 \
	    --data-dir "$DATA" --workspace "$WS" --session-id "$BIG" >/dev/null
	make_transcript "$SID1" 3
	gate_open
	run acp-drive -q -t 60 -e "$ERR" -- qwen-acp-child --data-dir "$DATA" \
	    --workspace "$WS" <<EOF
$INIT
send {"jsonrpc":"2.0","id":"big","method":"session/load","params":{"sessionId":"$BIG","_meta":{"qwen.session.loadReplayMode":"bulk"}}}
$(sib_script 3)
shell printf x >"$GATE"
wait "big"
$(req 3 session/resume "{\"sessionId\":\"$BIG\"}")
EOF
	[ "$status" -eq 0 ]
	# The load was held until the siblings had their answers (the script
	# waits for each before it opens the gate; a sibling stuck behind the
	# load times the driver out): each is a real resume.
	[ "$(sib_answers)" -eq 3 ]
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].transcriptBytes > 16000000')" = true ]
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].refreshed')" = true ]
}

@test "siblings are restored even while every worker holds a large load" {
	command -v qwen-gen-transcript >/dev/null || skip "qwen-gen-transcript not built"
	BIG2=66666666-7777-4888-8999-aaaaaaaaaaaa
	qwen-gen-transcript --mib 20 --seed 12 --data-dir "$DATA" --workspace "$WS" \
	    --session-id "$BIG" >/dev/null
	qwen-gen-transcript --mib 20 --seed 13 --data-dir "$DATA" --workspace "$WS" \
	    --session-id "$BIG2" >/dev/null
	make_transcript "$SID1" 3
	gate_open
	run acp-drive -q -t 60 -e "$ERR" -- qwen-acp-child \
	    --data-dir "$DATA" --workspace "$WS" <<EOF
$INIT
batch 2
{"jsonrpc":"2.0","id":"b1","method":"session/resume","params":{"sessionId":"$BIG"}}
{"jsonrpc":"2.0","id":"b2","method":"session/resume","params":{"sessionId":"$BIG2"}}
$(sib_script 3)
shell printf xx >"$GATE"
wait "b1"
wait "b2"
EOF
	[ "$status" -eq 0 ]
	[ "$(resp '"b1"' | jq '.result._meta["qwen.session.restore"].records > 0')" = true ]
	[ "$(resp '"b2"' | jq '.result._meta["qwen.session.restore"].records > 0')" = true ]
	[ "$(sib_answers)" -eq 3 ]
	sib3=$(line_no '.id == "sib-3" and has("result")')
	[ "$(line_no '.id == "b1" and has("result")')" -gt "$sib3" ]
	[ "$(line_no '.id == "b2" and has("result")')" -gt "$sib3" ]
}
