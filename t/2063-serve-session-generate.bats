#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: POST /session/:id/generate, upstream's stateless generation:
# asked of the session's agent as qwen/control/session/generation/start
# {sessionId, requestId, prompt}, its qwen/notify/session/generation/event
# notifications for that request streamed as server-sent events, then
# "done" from the start's answer; an agent that fails ends the stream with
# upstream's "error" generation_failed.

load serve_helper

teardown() {
	serve_teardown
}

# gen [curl args...]: POST /session/$SID/generate, the stream in $out.
gen() {
	out=$(curl -s -m 20 --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' \
	    -D "$BATS_TEST_TMPDIR/gh" "$@" "http://localhost/session/$SID/generate" 3>&-)
}

# The stream's events as [{event, data}].
events() {
	awk '/^event: /{e=substr($0, 8)} /^data: /{print "{\"event\":\"" e "\",\"data\":" substr($0, 7) "}"}' <<<"$out" | jq -s -c .
}

@test "the agent's events for the request stream, then done" {
	FAKE_CHILD="generate,log=$BATS_TEST_TMPDIR/log" serve_loaded
	gen -d '{"prompt":"  say hi  "}'
	grep -qi '^content-type: text/event-stream' "$BATS_TEST_TMPDIR/gh"
	grep -q ' 200 ' "$BATS_TEST_TMPDIR/gh"
	[ "$(head -1 <<<"$out")" = ": connected" ]
	local ev
	ev=$(events)
	echo "$ev"
	# The prompt goes as given; the stray event of another request is not here.
	jq -e '[.[].event] == ["delta", "delta", "done"]' <<<"$ev"
	jq -e '.[0].data == {v: 1, type: "delta", text: "  say hi  "}' <<<"$ev"
	jq -e '.[1].data.text == "!"' <<<"$ev"
	jq -e '.[2].data | .v == 1 and .type == "done" and .model == "fake-fast" and
	    .modelSource == "fast" and .inputTokens == 3 and .outputTokens == 2 and
	    (.requestId | test("^[0-9a-f-]{36}$"))' <<<"$ev"
	grep -q " qwen/control/session/generation/start $SID " "$BATS_TEST_TMPDIR/log"
	# Each request its own id.
	gen -d '{"prompt":"again"}'
	[ "$(events | jq -r '.[2].data.requestId')" != "$(jq -r '.[2].data.requestId' <<<"$ev")" ]
}

@test "an agent without it: upstream's in-stream error generation_failed, never a hang" {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
	SERVE_CHILD=$REAL serve_loaded
	gen -d '{"prompt":"x"}'
	grep -q ' 200 ' "$BATS_TEST_TMPDIR/gh"
	events | jq -e '. == [{event: "error", data: {v: 1, type: "error",
	    code: "generation_failed", message: "Generation failed"}}]'
}

@test "upstream's 400 invalid_prompt, nothing asked; a session not live 404" {
	FAKE_CHILD="generate,log=$BATS_TEST_TMPDIR/log" serve_loaded
	local b
	for b in '{}' '{"prompt":"   "}' '{"prompt":7}' \
	    "{\"prompt\":\"$(head -c 32769 /dev/zero | tr '\0' a)\"}"; do
		req POST "/session/$SID/generate" "$b"
		expect 400 '.code == "invalid_prompt"'
	done
	req POST "/session/$SID/generate" "{\"prompt\":\"$(head -c 32768 /dev/zero | tr '\0' a)\"}"
	expect 200
	[ "$(grep -c 'generation/start' "$BATS_TEST_TMPDIR/log")" -eq 1 ]
	req POST "/session/$SID2/generate" '{"prompt":"x"}'
	expect 404 '.code == "session_not_found"'
	req GET /capabilities
	expect 200 '.features | index("session_generation") != null'
}

@test "a client that goes away has the generation cancelled at the agent" {
	FAKE_CHILD="generate,hang=qwen/control/session/generation/start,log=$BATS_TEST_TMPDIR/log" serve_loaded
	curl -s -m 2 --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' \
	    -d '{"prompt":"x"}' "http://localhost/session/$SID/generate" 3>&- || true
	# Noticed at the next heartbeat (15 s).
	wait_for 25 grep -q " qwen/control/session/generation/cancel $SID " "$BATS_TEST_TMPDIR/log"
}

@test "with --agent-acp the delegating child passes the agent's generation on" {
	delegating_serve generate
	# The agent has the session once its background resume is answered.
	streamed() {
		gen -d '{"prompt":"hi"}'
		events | jq -e '[.[].event] == ["delta", "delta", "done"]'
	}
	wait_for 10 streamed
	events | jq -e '.[0].data.text == "hi" and .[2].data.model == "fake-fast"'
	grep -q " qwen/control/session/generation/start $SID " "$ALOG"
}
