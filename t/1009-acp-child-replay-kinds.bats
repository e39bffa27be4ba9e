#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child replay of the record kinds the fake model cannot make the
# real agent write in t/1201: cancelled turns, cron, mid-turn, goal and
# voice input, the daemon's prompt ids and annotations, background task
# notices and turns, subagent readiness and usage, plans (held as JSON
# text, with ids, blockers and the token counts so far), results no call
# claims, the web_fetch, agent and skill presentations, the daemon's
# attachment references and the resource links of a prompt (the
# attachment tokens taken off its text), hooked prompts with images, and
# tool call ids repeated (given ":N" suffixes, results included).  The golden
# (t/data/replay/kinds.golden) is the real agent's own bulk replay of
# t/data/replay/kinds.jsonl.in, made and checked by t/1201.
load test_helper

SID=00000000-0000-4000-8000-00000000c0de

setup() {
	command -v jq >/dev/null || skip "jq not installed"
	F=$BATS_TEST_TMPDIR/$SID.jsonl
	sed 's|@WS@|/ws|g' "$TESTDATA/replay/kinds.jsonl.in" >"$F"
}

@test "the hand-made kinds replay as the agent replays them, on both paths" {
	qwen-inspect --replay "$F" | jq -S -c '.updates[]' >"$BATS_TEST_TMPDIR/fast"
	qwen-inspect --replay --jsonc "$F" | jq -S -c '.updates[]' >"$BATS_TEST_TMPDIR/jsonc"
	diff "$TESTDATA/replay/kinds.golden" "$BATS_TEST_TMPDIR/fast"
	diff "$TESTDATA/replay/kinds.golden" "$BATS_TEST_TMPDIR/jsonc"
	# Byte for byte, key order included.
	run qwen-inspect --replay-compare "$F"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r 'select(.same != null) | .same' <<<"$output")" = true ]
}

@test "a plan's stats count the tokens replayed before it, from the window's first record" {
	local last='{"promptTokens":1112,"cachedTokens":41,"candidateTokens":16,"apiTimeMs":0}'
	qwen-inspect --replay "$F" | jq -c '.updates[] | select(.sessionUpdate == "plan") | ._meta.stats' >"$BATS_TEST_TMPDIR/stats"
	[ "$(sed -n 1p "$BATS_TEST_TMPDIR/stats")" = '{"promptTokens":105,"cachedTokens":41,"candidateTokens":12,"apiTimeMs":0}' ]
	[ "$(sed -n 3p "$BATS_TEST_TMPDIR/stats")" = "$last" ]
	# A window of the newest records counts from its first one, as the
	# agent counts from the first record of the page it replays (and reads
	# none of the bytes before it; t/2023 shows transcript pages agree).
	qwen-inspect --replay --max-bytes 2000 "$F" >"$BATS_TEST_TMPDIR/w"
	[ "$(jq .truncatedRecords "$BATS_TEST_TMPDIR/w")" -gt 10 ]
	[ "$(jq -c '[.updates[] | select(.sessionUpdate == "plan") | ._meta.stats] | last' "$BATS_TEST_TMPDIR/w")" = '{"promptTokens":1000,"cachedTokens":0,"candidateTokens":1,"apiTimeMs":0}' ]
}

# The agent registers web_search only when a search provider is configured,
# so t/1201 cannot show it: these titles are read from upstream's
# WebSearchToolInvocation.getDescription and its parameter check (a query
# of at least 2 characters once trimmed).
@test "web_search calls are titled as the agent's tool describes them" {
	local g=$BATS_TEST_TMPDIR/web/$SID.jsonl
	mkdir -p "$BATS_TEST_TMPDIR/web"
	{
		jq -c '.parentUuid = null' <"$F" | head -1
		printf '%s\n' '{"uuid":"00000000-0000-4000-8000-00000000d001","parentUuid":"00000000-0000-4000-8000-0000000c0001","sessionId":"'"$SID"'","timestamp":"2026-09-01T11:00:00.000Z","type":"assistant","message":{"role":"model","parts":[{"functionCall":{"id":"ws1","name":"web_search","args":{"query":"qwen acp"}}},{"functionCall":{"id":"ws2","name":"web_search","args":{"query":" x ","description":"short"}}},{"functionCall":{"id":"ws3","name":"web_search","args":{"query":"é€"}}}]}}'
	} >"$g"
	qwen-inspect --replay "$g" | jq -c '.updates[] | select(.sessionUpdate == "tool_call") | [.title, .kind]' >"$BATS_TEST_TMPDIR/t"
	cat "$BATS_TEST_TMPDIR/t"
	[ "$(sed -n 1p "$BATS_TEST_TMPDIR/t")" = '["WebSearch: Searching the web for: \"qwen acp\"","search"]' ]
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/t")" = '["WebSearch: short","search"]' ]
	[ "$(sed -n 3p "$BATS_TEST_TMPDIR/t")" = '["WebSearch: Searching the web for: \"é€\"","search"]' ]
	run qwen-inspect --replay-compare "$g"
	[ "$status" -eq 0 ]
}
