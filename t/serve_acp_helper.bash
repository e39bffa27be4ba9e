# SPDX-License-Identifier: ISC
# serve_acp_helper.bash: ACP clients of qwen-serve (t/22xx-serve-acp-*):
# ACP over HTTP, and the error views that REST, ACP over HTTP and the
# WebSocket must agree on.

load serve_restore_helper

# acp_init [NAME]: POST /acp initialize; the connection id goes to
# $ACP_CONN (and to $ACP_CONN_<NAME> when NAME is given).
acp_init() {
	req POST /acp '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
	expect 200 '.result.protocolVersion == 1' || return 1
	ACP_CONN=$(header Acp-Connection-Id)
	[ -n "$ACP_CONN" ] || return 1
	[ -z "${1:-}" ] || printf -v "ACP_CONN_$1" '%s' "$ACP_CONN"
}

# acp_post MESSAGE [CONN]: POST one message on the connection; $code.
acp_post() {
	req POST /acp "$1" -H "Acp-Connection-Id: ${2:-$ACP_CONN}"
}

# acp_call ID METHOD PARAMS [CONN]: a request, acknowledged 202.
acp_call() {
	acp_post "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"$2\",\"params\":$3}" "${4:-}"
	expect 202
}

# acp_open NAME [SESSION [CONN [curl args...]]]: open the connection
# stream (or SESSION's) into NAME.sse.
acp_open() {
	local name=$1 sid=${2:-} conn=${3:-$ACP_CONN}
	shift $(( $# < 3 ? $# : 3 ))
	local args=(-H "Acp-Connection-Id: $conn")
	[ -n "$sid" ] && args+=(-H "Acp-Session-Id: $sid")
	sse_open "$name" /acp "${args[@]}" "$@"
}

# acp_msgs NAME: the messages of stream NAME as one JSON array.
acp_msgs() {
	sse_data "$1" | jq -c -s .
}

# acp_wait NAME JQ-CONDITION [TIMEOUT]: some message satisfies it.
acp_wait() {
	sse_wait "$1" "$2" "${3:-10}"
}

# acp_answer NAME ID: the answer to request ID on stream NAME (or "").
acp_answer() {
	acp_msgs "$1" | jq -c --argjson id "$2" '[.[] | select(.id == $id)][0] // empty'
}

# acp_wait_answer NAME ID [TIMEOUT]: wait for it; the answer goes to $answer.
acp_wait_answer() {
	acp_wait "$1" ".id == $2 and (has(\"result\") or has(\"error\"))" "${3:-10}" || return 1
	answer=$(acp_answer "$1" "$2")
}

# The error view three transports must agree on, from a REST reply
# ($code, $body, $hdrs) or from a JSON-RPC error object (-32603 data):
# {code, errorKind, httpStatus, retryable, retryAfterSeconds, sessionId,
#  action, timeoutMs, reason, activeAction, requestedAction} (null absent).
ERROR_VIEW='{code, errorKind, httpStatus, retryable, retryAfterSeconds,
    sessionId, action, timeoutMs, reason, activeAction, requestedAction}'

rest_error_view() {
	local ra
	ra=$(header Retry-After)
	jq -c --argjson st "$code" --arg ra "$ra" \
	    ". + {httpStatus: \$st, retryAfterSeconds: (if \$ra == \"\" then null else (\$ra | tonumber) end)} | $ERROR_VIEW" <<<"$body"
}

# rpc_error_view ERROR-MEMBER-JSON: the view of a JSON-RPC error member.
rpc_error_view() {
	jq -c "select(.code == -32603) | .data | $ERROR_VIEW" <<<"$1"
}
