#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: safe restore with the real qwen-acp-child and small budgets.
# A stopped (SIGSTOP) child, or a big load held at the child's load gate
# (QWEN_ACP_TEST_LOAD_GATE, released by the test), stands for a restore
# that cannot finish in time: the 504 is caused, not hoped for.

load serve_restore_helper

setup() {
	REAL=$QWEN_TOP_BUILDDIR/bin/qwen-acp-child
	[ -x "$REAL" ] || skip "qwen-acp-child not built"
}

teardown() {
	[ -n "${STOPPED:-}" ] && kill -CONT "$STOPPED" 2>/dev/null
	rteardown
}

@test "real child, held load: the restore crosses its deadline, one close, the sibling stays" {
	TRACE=$BATS_TEST_TMPDIR/trace.jsonl
	gate_open
	real_child_serve --session-restore-timeout-ms 200 --trace-file "$TRACE"
	# Past the child's 16 MiB fast lane: a big load, which waits at the gate.
	qwen-gen-transcript --mib 20 --seed 7 --session-id "$SID" --data-dir "$DATA" \
	    --workspace "$WS" >/dev/null
	req POST /session '{}'
	expect 200
	local sib=$(jq -r .sessionId <<<"$body") pid=$(child_pid)
	req POST /session/$SID/load '{}'
	expect 504 ".code == \"session_restore_timeout\" and .timeoutMs == 200 and .sessionId == \"$SID\""
	[ "$(header Retry-After)" = 5 ]
	# Only now may the load run: its late success is what gets closed.
	printf x >&"$GATE_FD"
	health_wait '.restoresUnsettled == 0' 10
	req GET /session/$sib/status
	expect 200
	[ "$(child_pid)" = "$pid" ]
	kill -0 "$pid"
	wait_for 5 test -s "$TRACE"
	wait_for 5 bash -c "jq -c 'select(.resourceSpans[].scopeSpans[].spans[].name == \"qwen-code.daemon.bridge\")' '$TRACE' | grep -q session.restore"
	# The daemon's restore span was settled by the close of the late load
	# (closed), and the child's restore span joined its trace.
	local span=$(restore_spans | jq -c '.[0]')
	jq -e '[.events[] | select(.name == "session.restore.cleanup")][0].attrs.cleanup_result == "closed"' <<<"$span" >/dev/null
	jq -e --arg t "$(jq -r .traceId <<<"$span")" --arg p "$(jq -r .spanId <<<"$span")" -s '
	    [.[].resourceSpans[].scopeSpans[].spans[] |
	     select(.name == "qwen-code.daemon.session_restore")] |
	    any(.traceId == $t and .parentSpanId == $p)' "$TRACE" >/dev/null
}

@test "real child stopped: 504 on time, same-id 409, late success closed after SIGCONT" {
	real_child_serve --session-restore-timeout-ms 400
	req POST /session/$SID2/load '{}'
	expect 200
	local pid=$(child_pid)
	kill -STOP "$pid"
	STOPPED=$pid
	local t0=$(now_ms)
	req POST /session/$SID/load '{}'
	expect 504
	[ $(( $(now_ms) - t0 )) -lt 3000 ]
	req POST /session/$SID/resume '{}'
	expect 409 '.reason == "awaiting_abandoned_cleanup"'
	kill -0 "$pid"
	kill -CONT "$pid"
	STOPPED=
	health_wait '.restoresUnsettled == 0' 10
	grep -q "session $SID: cleanup close: close_ok" "$BATS_TEST_TMPDIR/err"
	req GET /session/$SID2/status
	expect 200
	[ "$(child_pid)" = "$pid" ]
	req POST /session/$SID/load '{}'
	expect 200 '.attached == false'
}

@test "real child, nothing else on it: killed at the deadline, the daemon lives" {
	gate_open
	real_child_serve --session-restore-timeout-ms 200
	# A big load, held at the gate (never released): it cannot answer.
	qwen-gen-transcript --mib 20 --seed 7 --session-id "$SID" --data-dir "$DATA" \
	    --workspace "$WS" >/dev/null
	req POST /session/$SID/load '{}'
	expect 504 '.code == "session_restore_timeout" and .timeoutMs == 200'
	local pid=$(child_pid)
	grep -q "session $SID: abandoned on an empty channel: ending its child" "$BATS_TEST_TMPDIR/err"
	wait_for 10 bash -c "! kill -0 $pid 2>/dev/null"
	health_wait '.restoresUnsettled == 0 and .inFlight == 0'
	# A clean channel for the next request.
	req POST /session '{}'
	expect 200
	[ "$(child_pid)" != "$pid" ]
}
