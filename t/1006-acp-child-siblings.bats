#!/usr/bin/env bats
# qwen-acp-child: sibling sessions are answered while a large load runs.
load acp_helper

setup() { acp_setup; }

BIG=55555555-6666-4777-8888-999999999999

@test "a sibling session is answered while a large transcript loads" {
	command -v qwen-gen-transcript >/dev/null || skip "qwen-gen-transcript not built"
	# ~300 MiB takes about a second to load here; under the sanitizers less.
	mib=300
	[ "${QWEN_SANITIZED:-0}" = 1 ] && mib=24
	qwen-gen-transcript --mib "$mib" --seed 11 --branches 2 --compressions 2 \
	    --data-dir "$DATA" --workspace "$WS" --session-id "$BIG" >/dev/null
	make_transcript "$SID1" 3
	DRIVE_TIMEOUT=60 run drive <<EOF
$INIT
$(req 1 session/resume "{\"sessionId\":\"$SID1\"}")
send {"jsonrpc":"2.0","id":"big","method":"session/load","params":{"sessionId":"$BIG","_meta":{"qwen.session.loadReplayMode":"bulk"}}}
probe sib "big" session/resume {"sessionId":"$SID1"}
elapsed "big"
$(req 2 qwen/status/loop_lag '{}')
EOF
	[ "$status" -eq 0 ]
	echo "$output" | grep '^#' >&3 || true
	[ "$(resp '"big"' | jq '.result._meta["qwen.session.restore"].transcriptBytes > 1000000')" = true ]
	[ "$(resp '"big"' | jq '.result._meta["qwen.session.loadReplay"].updates | length > 0')" = true ]
	probe=$(grep '^#probe' <<<"$output")
	n=$(sed 's/.*n=\([0-9]*\).*/\1/' <<<"$probe")
	p99=$(sed 's/.*p99=\([0-9.]*\).*/\1/' <<<"$probe")
	# Several sibling round trips completed while the load was running...
	[ "$n" -ge 3 ]
	# ...each far quicker than the load itself.
	big_ms=$(grep '^#elapsed "big"' <<<"$output" | awk '{print $3}')
	awk -v p="$p99" -v b="$big_ms" 'BEGIN { exit !(p * 3 < b && p < 250) }'
	# The loop itself never stalled for long.
	[ "$(resp 2 | jq '.result.maxMs < 250')" = true ]
	# Every probe answer is a real resume of the sibling.
	[ "$(child_lines | jq -s '[.[] | select((.id | tostring | startswith("sib-")) and .result._meta["qwen.session.restore"].chainRecords == 6)] | length')" -eq "$n" ]
}
