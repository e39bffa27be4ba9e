# SPDX-License-Identifier: ISC
# acp_helper.bash: driving qwen-acp-child over real pipes with acp-drive.

load test_helper

SID1=11111111-2222-4333-8444-555555555555
SID2=22222222-3333-4444-8555-666666666666

acp_setup() {
	DATA="$BATS_TEST_TMPDIR/data"
	WS="$BATS_TEST_TMPDIR/ws"
	mkdir -p "$DATA" "$WS"
	WS=$(cd "$WS" && pwd -P)
	CHATS="$DATA/projects/$(printf '%s' "$WS" | tr -c 'A-Za-z0-9' '-')/chats"
	LOCKS="$DATA/tmp/session-writer-locks"
	ERR="$BATS_TEST_TMPDIR/stderr"
	INIT='send {"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1}}
wait "init"'
}

# drive [CHILD-ARGS...] < script: run the child under acp-drive.
drive() {
	acp-drive -t "${DRIVE_TIMEOUT:-10}" -e "$ERR" -- \
	    qwen-acp-child --data-dir "$DATA" --workspace "$WS" "$@"
}

# Lines the child wrote (without the driver's # reports).
child_lines() {
	grep -v '^#' <<<"$output" || true
}

# resp ID: the answer to request id ID (a JSON value: 5 or "a").
resp() {
	child_lines | jq -c "select(.id == $1 and (has(\"result\") or has(\"error\")))"
}

# line_no FILTER: 1-based position of the first child line matching FILTER.
line_no() {
	child_lines | jq -s "map($1) | index(true) + 1"
}

# Requests as one line each.
req() {	# req ID METHOD PARAMS-JSON
	printf 'send {"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}\nwait %s\n' \
	    "$1" "$2" "$3" "$1"
}

prompt_req() {	# prompt_req ID SID TEXT
	req "$1" session/prompt \
	    "{\"sessionId\":\"$2\",\"prompt\":[{\"type\":\"text\",\"text\":\"$3\"}]}"
}

# Every line of FILE is a JSON object.
all_lines_parse() {
	local n=0 line
	while IFS= read -r line; do
		n=$((n + 1))
		jq -e 'type == "object"' <<<"$line" >/dev/null || {
			echo "line $n does not parse: ${line:0:80}" >&2
			return 1
		}
	done <"$1"
	[ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ] || {
		echo "$1 does not end with a newline" >&2
		return 1
	}
}

# A small transcript FILE for session SID with N user/assistant turns.
make_transcript() {	# make_transcript SID TURNS
	local sid=$1 turns=$2 i parent=null u a
	mkdir -p "$CHATS"
	for ((i = 1; i <= turns; i++)); do
		u=$(printf '%08x-0000-4000-8000-%012x' "$i" "$((i * 2))")
		a=$(printf '%08x-0000-4000-8000-%012x' "$i" "$((i * 2 + 1))")
		printf '{"uuid":"%s","parentUuid":%s,"sessionId":"%s","timestamp":"2026-08-01T15:01:13.619Z","type":"user","provenance":"real_user","cwd":"%s","version":"0.24.4","message":{"role":"user","parts":[{"text":"question %d"}]}}\n' \
		    "$u" "$parent" "$sid" "$WS" "$i"
		printf '{"uuid":"%s","parentUuid":"%s","sessionId":"%s","timestamp":"2026-08-01T15:01:14.619Z","type":"assistant","provenance":"assistant_output","cwd":"%s","version":"0.24.4","model":"m","message":{"role":"model","parts":[{"text":"answer %d"}]}}\n' \
		    "$a" "$u" "$sid" "$WS" "$i"
		parent="\"$a\""
	done >"$CHATS/$sid.jsonl"
}

# proc_gone PID: the process no longer runs (a zombie waiting to be reaped counts).
proc_gone() {
	[ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# Sanitizer reports from any child of the test fail it (the child's
# stderr is $ERR; its exit status is not always what a test checks).
teardown() {
	if [ -f "${ERR:-}" ] && grep -q -E 'Sanitizer|runtime error:' "$ERR"; then
		cat "$ERR" >&2
		return 1
	fi
}

# sib_script N: N resumes of SID1 (ids "sib-K"), each answered before the next.
sib_script() {
	local k
	for k in $(seq 1 "$1"); do
		req "\"sib-$k\"" session/resume "{\"sessionId\":\"$SID1\"}"
	done
}

# sib_answers: how many "sib-*" answers are real resumes of SID1.
sib_answers() {
	child_lines | jq -s '[.[] | select((.id | tostring | startswith("sib-")) and
	    .result._meta["qwen.session.restore"].chainRecords == 6)] | length'
}

# replay ID: the loadReplay envelope of answer ID.
replay() {
	resp "$1" | jq -c '.result._meta["qwen.session.loadReplay"]'
}
