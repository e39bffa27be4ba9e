#!/bin/bash
# SPDX-License-Identifier: ISC
# haproxy-hosts.sh DIR CONFIG: the two-host deployment, run by
# t/2409-serve-haproxy.bats inside `unshare -n -m`: only loopback and the
# namespaces made here exist, so no packet leaves the machine.  Hosts a
# and b are network namespaces of their own joined to this one (the
# proxy's) by veth; each runs qwen-serve for one workspace; HAProxy
# (CONFIG, contrib/haproxy/qwen-serve.cfg) routes by workspace.  Prints
# "step: ..." lines; exits non-zero at the first check that fails.
set -eu

dir=$1 cfg=$2
token=sekrit-token-0123456789
sid=11111111-1111-4111-8111-111111111111
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

step() { printf 'step: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }

# wait_until SECONDS CMD...: poll a condition (no fixed sleeps for timing).
wait_until() {
	local n=$(( $1 * 50 ))
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.02
	done
}

ip link set lo up
# ip netns keeps its namespaces under /run/netns: a private one here.
mkdir -p /run/netns
mount -t tmpfs tmpfs /run/netns

# host NAME N: namespace NAME at 10.77.N.2, the proxy's end 10.77.N.1.
host() {
	ip netns add "$1"
	ip link add "v$1" type veth peer name eth0 netns "$1"
	ip addr add "10.77.$2.1/24" dev "v$1"
	ip link set "v$1" up
	ip netns exec "$1" ip link set lo up
	ip netns exec "$1" ip addr add "10.77.$2.2/24" dev eth0
	ip netns exec "$1" ip link set eth0 up
}

# serve NAME N: qwen-serve in namespace NAME for workspace $dir/NAME.
serve() {
	local d=$dir/$1
	mkdir -p "$d/ws" "$d/data"
	(cd "$d/ws" && exec ip netns exec "$1" qwen-serve --hostname "10.77.$2.2" \
	    --port 4170 --token-file "$dir/token" --allow-host qwen.test \
	    --trusted-proxy "10.77.$2.1" --drain-grace-ms 600000 --no-web \
	    --socket "$d/s.sock" --child "$(command -v fake-child)" \
	    --data-dir "$d/data" --audit-log "$d/audit" \
	    >"$d/out" 2>"$d/err") &
	eval "pid_$1=$!"
	pids+=("$!")
	wait_until 10 grep -q '^qwen-serve: ready' "$d/out" ||
	    fail "host $1 did not start: $(cat "$d/err")"
}

# transcript NAME: session $sid persisted in host NAME's data dir.
transcript() {
	local ws san c
	ws=$(cd "$dir/$1/ws" && pwd -P)
	san=$(printf '%s' "$ws" | sed 's/[^A-Za-z0-9]/-/g')
	c=$dir/$1/data/projects/$san/chats
	mkdir -p "$c"
	printf '%s\n' "{\"uuid\":\"u1\",\"parentUuid\":null,\"sessionId\":\"$sid\",\"timestamp\":\"2026-08-01T15:01:13.619Z\",\"type\":\"user\",\"cwd\":\"$ws\",\"version\":\"0.24.4\",\"message\":{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}}" >"$c/$sid.jsonl"
}

# px METHOD PATH [BODY [curl args]]: through the proxy; $code, $body.
px() {
	local m=$1 p=$2 d=${3-}
	shift 2
	[ $# -gt 0 ] && shift
	local a=(-s -X "$m" -o "$dir/body" -w '%{http_code}' -H "Authorization: Bearer $token")
	[ -n "$d" ] && a+=(--data-binary "$d" -H 'Content-Type: application/json')
	code=$(curl "${a[@]}" "$@" "http://127.0.0.1:8080$p") || code=000
	body=$(cat "$dir/body" 2>/dev/null || true)
}

# expect CODE [JQ]
expect() {
	[ "$code" = "$1" ] || fail "expected $1, got $code: $body"
	[ $# -lt 2 ] || jq -e "$2" >/dev/null <<<"$body" || fail "$2: $body"
}

umask 077
printf '%s\n' "$token" >"$dir/token"
host a 1
host b 2
FAKE_CHILD=hold=session/prompt serve a 1
serve b 2
transcript a
QWEN_PROXY_BIND=127.0.0.1:8080 QWEN_HOST_A=10.77.1.2:4170 \
    QWEN_HOST_B=10.77.2.2:4170 QWEN_HOST_NAME=qwen.test QWEN_TOKEN=$token \
    haproxy -db -f "$cfg" >"$dir/haproxy.log" 2>&1 &
pids+=("$!")
up() { px GET "$1/health"; [ "$code" = 200 ]; }
wait_until 10 up /ws/a || fail "proxy to a: $code $body"
wait_until 10 up /ws/b || fail "proxy to b: $code $body"
step "proxy up, both hosts healthy"

wsa=$(cd "$dir/a/ws" && pwd -P) wsb=$(cd "$dir/b/ws" && pwd -P)
px GET /ws/a/capabilities
expect 200 ".workspaces[0].cwd == \"$wsa\""
px GET /ws/b/capabilities
expect 200 ".workspaces[0].cwd == \"$wsb\""
px GET /capabilities '' -H 'X-Qwen-Workspace: b'
expect 200 ".workspaces[0].cwd == \"$wsb\""
px GET /capabilities
expect 404
step "routing by workspace: path prefix and header"

px POST /ws/a/session/$sid/load '{}'
expect 200
curl -s -N -H "Authorization: Bearer $token" \
    "http://127.0.0.1:8080/ws/a/session/$sid/events" >"$dir/sse" &
pids+=("$!")
wait_until 5 grep -q '^data:' "$dir/sse" || wait_until 5 grep -q ':' "$dir/sse" ||
    fail "no SSE through the proxy"
px POST /ws/a/session/$sid/prompt '{"prompt":[{"type":"text","text":"hello"}]}'
expect 202
running() { px GET /ws/a/health?deep=1; jq -e '.activePrompts == 1' <<<"$body"; }
wait_until 5 running || fail "the turn is not running: $body"
step "SSE through the proxy, a turn running on a"

# WebSocket /acp through the proxy: the upgrade kept open, a round trip.
# Its script comes through a FIFO, so that later steps can go on talking.
mkfifo "$dir/ws.in"
ws-client -t 20 -c 8080 -p /ws/a/acp -H "Authorization: Bearer $token" \
    <"$dir/ws.in" >"$dir/ws.out" 2>"$dir/ws.err" &
wspid=$!
pids+=("$wspid")
exec 3>"$dir/ws.in"
rpc() { printf 'text {"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}\nwait %s\n' \
    "$1" "$2" "$3" "$1" >&3; }
answered() { jq -e -s "any(.[]; .id == $1)" "$dir/ws.out"; }
rpc 1 initialize '{"protocolVersion":1}'
wait_until 10 answered 1 || fail "no initialize answer over WebSocket: $(cat "$dir/ws.out" "$dir/ws.err")"
jq -e -s 'any(.[]; .ws == "open")' "$dir/ws.out" >/dev/null || fail "no upgrade: $(cat "$dir/ws.out")"
rpc 2 session/new "{\"cwd\":\"$wsa\",\"mcpServers\":[]}"
wait_until 10 answered 2 || fail "no session/new answer over WebSocket: $(cat "$dir/ws.out")"
jq -e -s 'any(.[]; .id == 2 and (.result.sessionId | length > 0))' "$dir/ws.out" >/dev/null ||
    fail "session/new over WebSocket: $(cat "$dir/ws.out")"
step "WebSocket /acp through the proxy: upgraded, session/new answered"

# The proxy's client address reached the audit log (trusted proxy).
jq -e -s 'any(.[]; .what == "POST /session/:id/prompt" and .client == "127.0.0.1")' \
    "$dir/a/audit" >/dev/null || fail "audit client: $(cat "$dir/a/audit")"

kill -TERM "$pid_a"
draining() { px GET /ws/a/health; [ "$code" = 503 ]; }
wait_until 10 draining || fail "a still healthy through the proxy"
px POST /ws/a/session '{}'
expect 503
px GET /ws/b/capabilities
expect 200
kill -0 "$pid_a" || fail "a exited before its turn ended"
step "drain: a out of the pool, new work refused, b still served"

# The WebSocket opened before the drain is still up; new sessions on it
# are refused with the catalog's workspace_draining (JSON-RPC -32603).
rpc 3 session/new "{\"cwd\":\"$wsa\",\"mcpServers\":[]}"
wait_until 10 answered 3 || fail "no session/new answer during the drain: $(cat "$dir/ws.out")"
jq -e -s 'any(.[]; .id == 3 and .error.code == -32603 and
    .error.data.code == "workspace_draining" and .error.data.httpStatus == 503)' \
    "$dir/ws.out" >/dev/null || fail "ACP session/new during the drain: $(cat "$dir/ws.out")"
if jq -e -s 'any(.[]; .ws == "close" or .ws == "eof")' "$dir/ws.out" >/dev/null; then
	fail "the WebSocket closed during the drain: $(cat "$dir/ws.out")"
fi
step "drain: ACP over the open WebSocket refuses new sessions (workspace_draining)"

kill -USR1 "$(pgrep -P "$pid_a" -x fake-child)"
wait_until 10 grep -q '"type":"turn_complete"' "$dir/sse" ||
    fail "the turn's end never reached the client: $(cat "$dir/sse")"
grep -q '"stopReason":"end_turn"' "$dir/sse" || fail "turn not ended cleanly"
grep -q '"agent_message_chunk"' "$dir/sse" || fail "the turn's chunks were lost"
st=0
wait "$pid_a" || st=$?
[ "$st" = 0 ] || fail "a exited $st"
grep -q 'drain: every turn ended' "$dir/a/err" || fail "a: $(cat "$dir/a/err")"
step "drained: the running turn finished through the proxy, a exited 0"
# The daemon's exit closed the WebSocket (through the proxy) in the end.
exec 3>&-
wait "$wspid" || true
jq -e -s 'any(.[]; .ws == "close" or .ws == "eof")' "$dir/ws.out" >/dev/null ||
    fail "the WebSocket outlived its daemon: $(cat "$dir/ws.out")"
