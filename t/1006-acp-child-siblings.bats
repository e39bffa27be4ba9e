#!/usr/bin/env bats
# qwen-acp-child: sibling sessions are answered while a large load runs.
load acp_helper

setup() { acp_setup; }

BIG=55555555-6666-4777-8888-999999999999

@test "a sibling session is answered while a large transcript loads" {
	command -v qwen-gen-transcript >/dev/null || skip "qwen-gen-transcript not built"
	# ~300 MiB takes well under a second to load here; under the sanitizers
	# a third of it, still long enough for many sibling round trips.
	mib=300
	[ "${QWEN_SANITIZED:-0}" = 1 ] && mib=96
	qwen-gen-transcript --mib "$mib" --seed 11 --branches 2 --compressions 2 \
	    --data-dir "$DATA" --workspace "$WS" --session-id "$BIG" >/dev/null
	make_transcript "$SID1" 3
	run acp-drive -q -t 60 -e "$ERR" -- qwen-acp-child --data-dir "$DATA" \
	    --workspace "$WS" <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
send {"jsonrpc":"2.0","id":"big","method":"session/load","params":{"sessionId":"$BIG","_meta":{"qwen.session.loadReplayMode":"bulk"}}}
probe sib "big" session/resume {"sessionId":"$SID1"}
elapsed "big"
$(req 2 qwen/status/loop_lag '{}')
$(req 3 session/resume "{\"sessionId\":\"$BIG\"}")
EOF
	[ "$status" -eq 0 ]
	echo "$output" | grep '^#' >&3 || true
	# The big answer (megabytes) is not copied with -q; the session is loaded.
	grep -q '^#elapsed "big" [0-9]' <<<"$output"
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].transcriptBytes > 1000000')" = true ]
	[ "$(resp 3 | jq '.result._meta["qwen.session.restore"].refreshed')" = true ]
	probe=$(grep '^#probe' <<<"$output")
	n=$(sed 's/.*n=\([0-9]*\).*/\1/' <<<"$probe")
	p99=$(sed 's/.*p99=\([0-9.]*\).*/\1/' <<<"$probe")
	# Several sibling round trips completed while the load was running...
	[ "$n" -ge 3 ]
	# ...each far quicker than the load itself.
	big_ms=$(grep '^#elapsed "big"' <<<"$output" | awk '{print $3}')
	awk -v p="$p99" -v b="$big_ms" 'BEGIN { exit !(p * 3 < b && p < 250) }'
	# The loop itself never stalled for a large part of the load.
	[ "$(resp 2 | jq --argjson b "$big_ms" '.result.maxMs < $b / 2')" = true ]
	# Every probe answer is a real resume of the sibling.
	[ "$(child_lines | jq -s '[.[] | select((.id | tostring | startswith("sib-")) and .result._meta["qwen.session.restore"].chainRecords == 6)] | length')" -eq "$n" ]
}

@test "siblings are restored even while every worker loads a large transcript" {
	command -v qwen-gen-transcript >/dev/null || skip "qwen-gen-transcript not built"
	mib=120
	[ "${QWEN_SANITIZED:-0}" = 1 ] && mib=12
	BIG2=66666666-7777-4888-8999-aaaaaaaaaaaa
	qwen-gen-transcript --mib "$mib" --seed 12 --data-dir "$DATA" --workspace "$WS" \
	    --session-id "$BIG" >/dev/null
	qwen-gen-transcript --mib "$mib" --seed 13 --data-dir "$DATA" --workspace "$WS" \
	    --session-id "$BIG2" >/dev/null
	make_transcript "$SID1" 3
	run acp-drive -q -t 60 -e "$ERR" -- qwen-acp-child \
	    --data-dir "$DATA" --workspace "$WS" <<EOF
$INIT
batch 2
{"jsonrpc":"2.0","id":"b1","method":"session/resume","params":{"sessionId":"$BIG"}}
{"jsonrpc":"2.0","id":"b2","method":"session/resume","params":{"sessionId":"$BIG2"}}
probe sib "b1" session/resume {"sessionId":"$SID1"}
wait "b2"
elapsed "b1"
elapsed "b2"
EOF
	[ "$status" -eq 0 ]
	echo "$output" | grep '^#' >&3 || true
	[ "$(resp '"b1"' | jq '.result._meta["qwen.session.restore"].records > 0')" = true ]
	[ "$(resp '"b2"' | jq '.result._meta["qwen.session.restore"].records > 0')" = true ]
	probe=$(grep '^#probe' <<<"$output")
	n=$(sed 's/.*n=\([0-9]*\).*/\1/' <<<"$probe")
	p50=$(sed 's/.*p50=\([0-9.]*\).*/\1/' <<<"$probe")
	b1=$(grep '^#elapsed "b1"' <<<"$output" | awk '{print $3}')
	[ "$n" -ge 3 ]
	awk -v p="$p50" -v b="$b1" 'BEGIN { exit !(p * 5 < b) }'
}
