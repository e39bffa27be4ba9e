# SPDX-License-Identifier: ISC
# serve_restore_helper.bash: the safe-restore tests (t/21xx-serve-restore-*):
# a fake child that logs every message, health counters, timing.

load serve_helper

CLOG=$BATS_TEST_TMPDIR/child.log
P='{"prompt":[{"type":"text","text":"hello"}]}'

# rserve KNOBS [qwen-serve args...]: serve_start with FAKE_CHILD=KNOBS plus
# the message log, and transcripts for SID and SID2.
rserve() {
	local knobs=$1
	shift
	FAKE_CHILD="log=$CLOG${knobs:+,$knobs}" serve_start "$@"
	make_transcript "$SID"
	make_transcript "$SID2"
}

# The pid of the newest child, from the daemon log.
child_pid() {
	sed -n 's/.*started .* (pid \([0-9]*\)).*/\1/p' "$BATS_TEST_TMPDIR/err" | tail -1
}

# calls METHOD [ID]: how many METHOD messages (for ID) the children read.
calls() {
	if [ $# -gt 1 ]; then
		awk -v m="$1" -v id="$2" '$2 == m && $3 == id' "$CLOG" 2>/dev/null | wc -l
	else
		awk -v m="$1" '$2 == m' "$CLOG" 2>/dev/null | wc -l
	fi
}

# calls_are N METHOD [ID]: exactly N such messages (for wait_for).
calls_are() {
	local n=$1
	shift
	[ "$(calls "$@")" -eq "$n" ]
}

# health_has JQ-CONDITION: GET /health?deep=1 satisfies it.
health_has() {
	curl -s --unix-socket "$SOCK" 'http://localhost/health?deep=1' |
	    jq -e "$1" >/dev/null
}

health_wait() {
	wait_for "${2:-5}" health_has "$1"
}

# bg_req NAME METHOD PATH [BODY]: a request in the background; its status
# goes to NAME.code, its body to NAME.body, its headers to NAME.hdrs.
bg_req() {
	local n=$1 m=$2 p=$3 d=${4-}
	local args=(-s -X "$m" -o "$BATS_TEST_TMPDIR/$n.body" -D "$BATS_TEST_TMPDIR/$n.hdrs"
	    -w '%{http_code}' --unix-socket "$SOCK")
	[ -n "$d" ] && args+=(--data-binary "$d" -H 'Content-Type: application/json')
	(curl "${args[@]}" "http://localhost$p" >"$BATS_TEST_TMPDIR/$n.code.tmp" 3>&-
	    mv "$BATS_TEST_TMPDIR/$n.code.tmp" "$BATS_TEST_TMPDIR/$n.code") 3>&- &
}

# bg_wait NAME [TIMEOUT]: wait for bg_req NAME; sets $code, $body, $hdrs.
bg_wait() {
	wait_for "${2:-10}" test -s "$BATS_TEST_TMPDIR/$1.code" || return 1
	code=$(cat "$BATS_TEST_TMPDIR/$1.code")
	body=$(cat "$BATS_TEST_TMPDIR/$1.body")
	hdrs=$(tr -d '\r' <"$BATS_TEST_TMPDIR/$1.hdrs")
}

now_ms() {
	date +%s%3N
}

# Spans named qwen-code.daemon.bridge with operation session.restore, as
# one JSON array of {attrs, events:[{name, attrs}], traceId, spanId}.
restore_spans() {
	jq -c '.resourceSpans[].scopeSpans[].spans[]
	    | select(.name == "qwen-code.daemon.bridge")
	    | {traceId, spanId,
	       attrs: (reduce .attributes[] as $a ({}; .[$a.key] = ($a.value | .stringValue // .intValue))),
	       events: [(.events // [])[] | {name, attrs: (reduce (.attributes // [])[] as $a ({}; .[$a.key] = $a.value.stringValue))}]}
	    | select(.attrs["qwen-code.daemon.operation"] == "session.restore")' \
	    "$TRACE" 2>/dev/null | jq -c -s .
}

# rteardown: stop everything; the daemon must have exited cleanly, with no
# sanitizer report (ASan/UBSan/LSan builds).
rteardown() {
	local st=0
	serve_teardown
	[ -f "$BATS_TEST_TMPDIR/err" ] || return 0
	if grep -q 'Sanitizer\|runtime error:' "$BATS_TEST_TMPDIR/err"; then
		grep -A30 'Sanitizer\|runtime error:' "$BATS_TEST_TMPDIR/err" >&2
		st=1
	fi
	[ "${SERVE_STATUS:-0}" -eq 0 ] || { echo "qwen-serve exited $SERVE_STATUS" >&2; st=1; }
	return $st
}

# masked: a load's body (stdin) with what differs between two loads
# blanked (t/2902, t/2950).
masked() {
	sed -e 's/"serverTimestamp":[0-9]*/"serverTimestamp":0/g' \
	    -e 's/"clientId":"[^"]*"/"clientId":""/' \
	    -e 's/"createdAt":"[^"]*"/"createdAt":""/' \
	    -e 's/"eventEpoch":"[^"]*"/"eventEpoch":""/' \
	    -e 's/,"index":"[a-z]*","bytesRead":[0-9]*\(,"indexBytesChecked":[0-9]*\)\{0,1\}//'
}

# sibling_works SID: a prompt on the live session SID completes (seen on an
# event stream named a, left open).
sibling_works() {
	sse_open a "/session/$1/events"
	req POST "/session/$1/prompt" "$P"
	expect 202
	local p=$(jq -r .promptId <<<"$body")
	sse_wait a ".type == \"turn_complete\" and .data.promptId == \"$p\""
}

# drain_recycles SID PID: closing SID, the channel's last session, ends
# the child PID and settles every abandoned spawn or restore.
drain_recycles() {
	sse_stop_all
	req DELETE "/session/$1"
	expect 204
	wait_for 10 bash -c "! kill -0 $2 2>/dev/null"
	health_wait '.restoresUnsettled == 0 and .restoresOverdue == 0 and .inFlight == 0'
}

# req_stamp PATH BODY: POST like req, by a client that notes the wall time
# (ms) its answer began to arrive in $stamp (no fork between the two, so a
# loaded machine cannot push it later than the truth by much).
req_stamp() {
	local out
	out=$(python3 - "$SOCK" "$1" "$2" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
b = sys.argv[3].encode()
s.sendall(b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (sys.argv[2].encode(), len(b), b))
data, stamp = b"", 0
while True:
    d = s.recv(65536)
    if not d:
        break
    if not data:
        stamp = int(time.time() * 1000)
    data += d
head, _, body = data.partition(b"\r\n\r\n")
print(head.split()[1].decode(), stamp)
print(body.decode())
PY
)
	read -r code stamp <<<"$(head -1 <<<"$out")"
	body=$(tail -n +2 <<<"$out")
}

# log_ms PATTERN: the wall time (ms) of the first daemon log line matching
# PATTERN.
log_ms() {
	date -d "$(grep -m1 "$1" "$BATS_TEST_TMPDIR/err" | cut -d' ' -f1)" +%s%3N
}
