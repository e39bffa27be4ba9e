#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve's browser console: the history as a person reads it.  A
# permission asked before the console came is shown with every option;
# the agent's markdown becomes elements (never markup from the text); tool
# calls show their input and output; messages carry their time; thinking
# folds; older history loads page by page from the top; Send follows the
# answer.  Headless Chromium as in t/2302; screenshots in t/artifacts/.

load serve_restore_helper

PW_VERSION=1.64.1

setup() {
	browser_setup
}

teardown() {
	rteardown
}

chats() {
	local san
	san=$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')
	CHATS=$DATA/projects/$san/chats
	mkdir -p "$CHATS"
}

# rec UUID PARENT TYPE MESSAGE-JSON [MORE-MEMBERS]: one transcript line.
rec() {
	local parent=null
	[ -z "$2" ] || parent="\"$2\""
	printf '{"uuid":"%s","parentUuid":%s,"sessionId":"%s","timestamp":"2026-08-01T08:00:%02d.000Z","type":"%s","cwd":"%s","version":"0.24.4","message":%s%s}\n' \
	    "$1" "$parent" "$SID" "${TS:-1}" "$3" "$WS" "$4" "${5:-}"
}

history() {
	WEB_ARTIFACTS=$ART timeout 150 node "$QWEN_TOP_SRCDIR/t/helper/web-history.mjs" \
	    "$PW_DIR" "http://127.0.0.1:$PORT" "$1" "$SID" 3>&-
}

@test "console: a permission asked before the console came shows with every option, and Allow answers it" {
	FAKE_CHILD=ask serve_start --web-dir "$QWEN_TOP_SRCDIR/web"
	make_transcript "$SID"
	req POST /session/$SID/load '{}'
	expect 200
	prompt_post "$SID"
	waiting() {
		req GET "/session/$SID/status"
		jq -e '.pendingInteractionCount == 1' >/dev/null <<<"$body"
	}
	wait_for 10 waiting
	run history pending
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$ART/web-pending-permission.png" ]
}

@test "console: markdown as elements, tool input and output, times, folded thinking" {
	real_child_serve --web-dir "$QWEN_TOP_SRCDIR/web"
	chats
	local md='**bold** and `x`\n\n```c\nif (a < b) {}\n```\n\n- one\n- two\n\n<img src=x onerror=alert(1)> [doc](https://example.org/doc) [bad](javascript:alert(1))'
	{
		TS=1 rec u1 "" user '{"role":"user","parts":[{"text":"Why is it slow?"}]}'
		TS=2 rec a1 u1 assistant "{\"role\":\"model\",\"parts\":[{\"text\":\"Weighing it\",\"thought\":true},{\"text\":\"$md\"},{\"functionCall\":{\"id\":\"call_1\",\"name\":\"read_file\",\"args\":{\"absolute_path\":\"/src/a.ts\"}}}]}"
		TS=3 rec t1 a1 tool_result '{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"read_file","response":{"output":"line one\nline two"}}}]}' \
		    ',"toolCallResult":{"callId":"call_1","status":"success","resultDisplay":"line one\nline two"}'
	} >"$CHATS/$SID.jsonl"
	run history render
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$ART/web-history-render.png" ]
}

@test "console: older history page by page from the top, and Send follows the answer" {
	real_child_serve --web-dir "$QWEN_TOP_SRCDIR/web"
	chats
	local i parent=""
	for i in $(seq 1 300); do
		rec "u$i" "$parent" user "{\"role\":\"user\",\"parts\":[{\"text\":\"question $i\"}]}"
		rec "a$i" "u$i" assistant "{\"role\":\"model\",\"parts\":[{\"text\":\"answer $i\"}]}"
		parent=a$i
	done >"$CHATS/$SID.jsonl"
	run history older
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$ART/web-history-older.png" ]
}
