#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child session/load replay options: _meta
# "qwen.session.loadReplayPageSize" (the newest page of at most N records,
# turn aligned, with hasMore and anchorRecordId) and
# "qwen.session.loadReplayHideInherited" (records a fork inherited from its
# parent, those with forkedFrom, are not replayed).
load acp_helper

setup() {
	acp_setup
	command -v jq >/dev/null || skip "jq not installed"
}

# load_req ID META-MEMBERS: a bulk session/load of SID1 with more _meta.
load_req() {
	req "$1" session/load "{\"sessionId\":\"$SID1\",\"_meta\":{\"qwen.session.loadReplayMode\":\"bulk\"$2}}"
}

# Turn i's first record uuid in make_transcript's numbering.
user_uuid() {
	printf '%08x-0000-4000-8000-%012x' "$1" "$(($1 * 2))"
}

@test "loadReplayPageSize: the newest turns within N records, hasMore and the anchor" {
	make_transcript "$SID1" 5
	run drive <<EOF
$INIT
$(load_req 1 ',"qwen.session.loadReplayPageSize":4')
$(load_req 2 ',"qwen.session.loadReplayPageSize":3')
$(load_req 3 ',"qwen.session.loadReplayPageSize":500')
$(load_req 4 '')
EOF
	[ "$status" -eq 0 ]
	r=$(replay 1)
	[ "$(jq -c '[.updates[].content.text]' <<<"$r")" = '["question 4","answer 4","question 5","answer 5"]' ]
	[ "$(jq .hasMore <<<"$r")" = true ]
	[ "$(jq .partial <<<"$r")" = null ]
	[ "$(jq -r .anchorRecordId <<<"$r")" = "$(user_uuid 4)" ]
	# 3 records start inside a turn: the page moves forward to the next turn start.
	r=$(replay 2)
	[ "$(jq -c '[.updates[].content.text]' <<<"$r")" = '["question 5","answer 5"]' ]
	[ "$(jq -r .anchorRecordId <<<"$r")" = "$(user_uuid 5)" ]
	r=$(replay 3)
	[ "$(jq '.updates | length' <<<"$r")" = 10 ]
	[ "$(jq .hasMore <<<"$r")" = null ]
	[ "$(jq -r .anchorRecordId <<<"$r")" = "$(user_uuid 1)" ]
	# Without a page size nothing changes: no anchor.
	r=$(replay 4)
	[ "$(jq '.updates | length' <<<"$r")" = 10 ]
	[ "$(jq .anchorRecordId <<<"$r")" = null ]
}

@test "loadReplayPageSize: a page inside one long turn goes back to its start" {
	make_transcript "$SID1" 1
	# One turn of 1 user record and 6 assistant records.
	for i in 2 3 4 5 6; do
		printf '{"uuid":"00000000-0000-4000-8000-00000000010%d","parentUuid":"%s","sessionId":"%s","type":"assistant","message":{"role":"model","parts":[{"text":"more %d"}]}}\n' \
		    "$i" "$( [ "$i" = 2 ] && echo 00000001-0000-4000-8000-000000000003 || echo "00000000-0000-4000-8000-00000000010$((i - 1))")" "$SID1" "$i"
	done >>"$CHATS/$SID1.jsonl"
	run drive <<EOF
$INIT
$(load_req 1 ',"qwen.session.loadReplayPageSize":2')
EOF
	r=$(replay 1)
	[ "$(jq '.updates | length' <<<"$r")" = 7 ]
	[ "$(jq -r '.updates[0].content.text' <<<"$r")" = "question 1" ]
	[ "$(jq .hasMore <<<"$r")" = null ]
}

@test "loadReplayPageSize: out of range or not an integer is -32602 and nothing loads" {
	make_transcript "$SID1" 2
	run drive <<EOF
$INIT
$(load_req 1 ',"qwen.session.loadReplayPageSize":0')
$(load_req 2 ',"qwen.session.loadReplayPageSize":501')
$(load_req 3 ',"qwen.session.loadReplayPageSize":"10"')
$(load_req 4 ',"qwen.session.loadReplayPageSize":2.5')
$(req 5 session/prompt "{\"sessionId\":\"$SID1\",\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"}]}")
$(load_req 6 ',"qwen.session.loadReplayPageSize":1')
EOF
	for id in 1 2 3 4; do
		[ "$(resp $id | jq .error.code)" = -32602 ]
		[ "$(resp $id | jq -r .error.data.errorKind)" = invalid_transcript_limit ]
		[ "$(resp $id | jq .error.data.maxLimit)" = 500 ]
	done
	[ "$(resp 5 | jq .error.code)" = -32002 ]
	[ "$(replay 6 | jq '.updates | length')" = 2 ]
}

@test "loadReplayHideInherited: a fork's inherited records are not replayed, the model history keeps them" {
	make_transcript "$SID1" 3
	# Turns 1 and 2 came from the parent session.
	sed -i -e '1,4s/,"type":/,"forkedFrom":{"sessionId":"parent","messageUuid":"x"},"type":/' "$CHATS/$SID1.jsonl"
	run drive <<EOF
$INIT
$(load_req 1 ',"qwen.session.loadReplayHideInherited":true')
$(load_req 2 '')
$(load_req 3 ',"qwen.session.loadReplayHideInherited":true,"qwen.session.loadReplayPageSize":1')
$(load_req 4 ',"qwen.session.loadReplayHideInherited":"yes"')
EOF
	r=$(replay 1)
	[ "$(jq -c '[.updates[].content.text]' <<<"$r")" = '["question 3","answer 3"]' ]
	[ "$(jq .hasMore <<<"$r")" = null ]
	[ "$(jq .partial <<<"$r")" = null ]
	[ "$(resp 1 | jq '.result._meta["qwen.session.restore"].modelHistoryEntries')" = 6 ]
	[ "$(replay 2 | jq '.updates | length')" = 6 ]
	r=$(replay 3)
	[ "$(jq -c '[.updates[].content.text]' <<<"$r")" = '["question 3","answer 3"]' ]
	[ "$(jq -r .anchorRecordId <<<"$r")" = "$(user_uuid 3)" ]
	# Only true hides.
	[ "$(replay 4 | jq '.updates | length')" = 6 ]
}

@test "loadReplayHideInherited: the fast and json-c projections hide the same records" {
	make_transcript "$SID1" 3
	sed -i -e '1,3s/,"type":/,"forkedFrom":{"sessionId":"parent"},"type":/' \
	    -e '3s/"question 2"/"question \\u0032"/' -e '5s/,"type":/,"forkedFrom":null,"type":/' \
	    "$CHATS/$SID1.jsonl"
	f="$CHATS/$SID1.jsonl"
	a=$(qwen-inspect --replay --hide-inherited "$f" | jq -c '[.updates[].content.text]')
	b=$(qwen-inspect --replay --hide-inherited --jsonc "$f" | jq -c '[.updates[].content.text]')
	[ "$a" = "$b" ]
	[ "$a" = '["answer 2","question 3","answer 3"]' ]
}

@test "a window cut between two unanswered calls: only the kept call fails, the answer parses" {
	make_transcript "$SID1" 30
	# Turns 1 and 30 end with a tool call that never got a result.
	sed -i -e '2s/"parts":\[{"text":"answer 1"}\]/"parts":[{"functionCall":{"id":"old-call","name":"glob","args":{"pattern":"*"}}}]/' \
	    -e '60s/"parts":\[{"text":"answer 30"}\]/"parts":[{"functionCall":{"id":"new-call","name":"glob","args":{"pattern":"*"}}}]/' \
	    "$CHATS/$SID1.jsonl"
	run drive --replay-max-bytes 3000 <<EOF
$INIT
$(load_req 1 '')
$(req 2 session/load "{\"sessionId\":\"$SID1\"}")
EOF
	r=$(replay 1)
	[ "$(jq .partial <<<"$r")" = true ]
	[ "$(jq -c '[.updates[] | select(.sessionUpdate == "tool_call_update") | .toolCallId]' <<<"$r")" = '["new-call"]' ]
	[ "$(jq -r '.updates[-1].status' <<<"$r")" = failed ]
	# The same updates as notifications.
	[ "$(child_lines | jq -s '[.[] | select(.method == "session/update")] | length')" = "$(jq '.updates | length' <<<"$r")" ]
}
