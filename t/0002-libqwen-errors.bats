#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# libqwen error catalog through `qwen-test-tool errors`.

load test_helper

# row CODE: the TSV line of CODE in $table (fails when absent).
row() {
	awk -F'\t' -v c="$1" '$1 == c { print; f = 1 } END { exit !f }' <<<"$table"
}

@test "errors table: the restore-critical and session rows" {
	table=$(qwen-test-tool errors table)
	while IFS= read -r want; do
		got=$(row "${want%%	*}") || { echo "missing: $want"; false; }
		[ "$got" = "$want" ] || { echo "got:  $got"; echo "want: $want"; false; }
	done <<'ROWS'
session_restore_timeout	504	restore_timeout	true	budget	75
restore_in_progress	409	restore_in_progress	true	reason	75
acp_channel_unavailable	503	acp_channel_unavailable	true	budget	75
init_timeout	504	init_timeout	true	budget	75
invalid_client_id	400	-	false	none	1
invalid_session_id	400	invalid_session_id	false	none	2
session_not_found	404	-	false	none	3
session_closing	404	-	false	none	3
workspace_mismatch	400	-	false	none	2
session_limit_exceeded	503	session_limit_exceeded	true	fixed:5	75
prompt_queue_full	503	prompt_queue_full	true	fixed:5	75
subscriber_limit_exceeded	429	-	true	fixed:5	75
token_required	401	-	false	none	1
unauthorized	401	-	false	none	1
payload_too_large	413	-	false	none	1
internal	500	internal	false	none	1
invalid_json	400	-	false	none	1
forbidden_host	403	-	false	none	1
origin_forbidden	403	-	false	none	1
method_not_allowed	405	-	false	none	1
not_found	404	-	false	none	1
unsupported_media_type	415	-	false	none	1
not_implemented	501	-	false	none	1
session_id_conflict	409	-	false	none	1
session_writer_conflict	409	session_writer_conflict	false	none	1
invalid_max_queued	400	-	false	none	2
invalid_transcript_limit	400	-	false	none	2
invalid_live_replay_mode	400	-	false	none	2
invalid_compacted_replay_mode	400	-	false	none	2
daemon_unreachable	0	-	false	none	69
ROWS
}

@test "errors table: codes are unique and every row has six columns" {
	run qwen-test-tool errors table
	[ "$status" -eq 0 ]
	[ "$(cut -f1 <<<"$output" | sort | uniq -d)" = "" ]
	[ "$(awk -F'\t' 'NF != 6' <<<"$output")" = "" ]
}

@test "errors reasons: restore_in_progress is 5 s, abandoned cleanup the budget" {
	run qwen-test-tool errors reasons
	[ "$status" -eq 0 ]
	grep -qx $'restore_in_progress\trestore_in_progress\tfixed:5' <<<"$output"
	grep -qx $'restore_in_progress\tawaiting_abandoned_cleanup\tbudget' <<<"$output"
	grep -qx $'acp_channel_unavailable\trestore_cleanup_failed\tbudget' <<<"$output"
	grep -qx $'acp_channel_unavailable\trestore_settlement_overdue\tbudget' <<<"$output"
}

@test "errors rest: session_restore_timeout body and clamped Retry-After" {
	run qwen-test-tool errors rest session_restore_timeout sessionId=s1 action=load timeoutMs=60000
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "Retry-After: 60" ]
	body=${lines[1]}
	[ "$(json_get "$body" .code)" = session_restore_timeout ]
	[ "$(json_get "$body" .errorKind)" = restore_timeout ]
	[ "$(json_get "$body" .retryable)" = true ]
	[ "$(json_get "$body" .sessionId)" = s1 ]
	[ "$(json_get "$body" .timeoutMs)" = 60000 ]
	[ "$(json_get "$body" .error)" = "AcpSessionBridge session/load timed out after 60000ms" ]
	[ "$(json_get "$body" 'has("httpStatus")')" = false ]
}

@test "errors rest: Retry-After clamp edges of the budget" {
	for pair in 0:5 4999:5 5000:5 5001:6 60000:60 120000:120 121000:120; do
		run qwen-test-tool errors rest session_restore_timeout budget_ms="${pair%%:*}"
		[ "${lines[0]}" = "Retry-After: ${pair##*:}" ] || {
			echo "budget ${pair%%:*}: ${lines[0]}"; false; }
	done
}

@test "errors rest: restore_in_progress Retry-After depends on the reason" {
	run qwen-test-tool errors rest restore_in_progress reason=restore_in_progress budget_ms=90000
	[ "${lines[0]}" = "Retry-After: 5" ]
	[ "$(json_get "${lines[1]}" .reason)" = restore_in_progress ]
	run qwen-test-tool errors rest restore_in_progress reason=awaiting_abandoned_cleanup budget_ms=90000
	[ "${lines[0]}" = "Retry-After: 90" ]
	[ "$(json_get "${lines[1]}" .reason)" = awaiting_abandoned_cleanup ]
}

@test "errors rest: acp_channel_unavailable carries retryAfterSeconds in the body" {
	run qwen-test-tool errors rest acp_channel_unavailable reason=restore_settlement_overdue budget_ms=30000
	[ "${lines[0]}" = "Retry-After: 30" ]
	[ "$(json_get "${lines[1]}" .retryAfterSeconds)" = 30 ]
	[ "$(json_get "${lines[1]}" .reason)" = restore_settlement_overdue ]
}

@test "errors rest: codes without a rule have no Retry-After" {
	run qwen-test-tool errors rest session_not_found sessionId=x
	[ "${lines[0]}" = none ]
	[ "${lines[1]}" = '{"error":"No session with id \"x\"","code":"session_not_found","sessionId":"x"}' ]
}

@test "errors rest: no REST body of any code has httpStatus" {
	table=$(qwen-test-tool errors table)
	n=0
	while IFS=$'\t' read -r code status _; do
		[ "$status" = 0 ] && continue
		out=$(qwen-test-tool errors rest "$code" sessionId=s)
		printf '%s\n' "${out#*$'\n'}" >>"$BATS_TEST_TMPDIR/bodies"
		n=$((n + 1))
	done <<<"$table"
	[ "$n" -ge 50 ]
	# One document per code, each with a string error and a code, none
	# with httpStatus.
	run jq -s -r '[length, (map(select(has("httpStatus") or (.error|type) != "string" or (.code|type) != "string")) | length)] | @tsv' "$BATS_TEST_TMPDIR/bodies"
	[ "$output" = "$n	0" ]
}

@test "errors jsonrpc: -32603 with the full data for a restore timeout" {
	run qwen-test-tool errors jsonrpc session_restore_timeout sessionId=s1 action=resume timeoutMs=30000
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .code)" = -32603 ]
	[ "$(json_get "$output" '.data | [.code, .errorKind, .httpStatus, .retryable, .retryAfterSeconds, .action] | @tsv')" = \
	    "session_restore_timeout	restore_timeout	504	true	30	resume" ]
}

@test "errors jsonrpc: -32602 shapes and the writer-lease code" {
	run qwen-test-tool errors jsonrpc session_not_found sessionId=x
	[ "$output" = '{"code":-32602,"message":"No session with id \"x\""}' ]
	run qwen-test-tool errors jsonrpc workspace_mismatch
	[ "$(json_get "$output" '[.code, has("data")] | @tsv')" = "-32602	false" ]
	run qwen-test-tool errors jsonrpc invalid_client_id
	[ "$(json_get "$output" '[.code, has("data")] | @tsv')" = "-32602	false" ]
	run qwen-test-tool errors jsonrpc invalid_session_id sessionId=bad
	[ "$(json_get "$output" '.data')" = "$(jq . <<<'{"httpStatus":400,"errorKind":"invalid_session_id"}')" ]
	run qwen-test-tool errors jsonrpc session_writer_conflict
	[ "$(json_get "$output" '[.code, (.data|tojson)] | @tsv')" = '-32020	{"errorKind":"session_writer_conflict"}' ]
}

@test "errors: unknown code, reserved key and bad argument are usage errors" {
	run qwen-test-tool errors rest no_such_code
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown error code"* ]]
	run qwen-test-tool errors rest internal code=x
	[ "$status" -eq 2 ]
	run qwen-test-tool errors rest internal novalue
	[ "$status" -eq 2 ]
	run qwen-test-tool errors classify abc '{}'
	[ "$status" -eq 2 ]
}

# The round trips of every code are in t/unit/test-errors.c; here a
# sample of each retry rule and JSON-RPC shape goes through the shell.
@test "errors: REST and JSON-RPC round trips through the shell" {
	declare -A st rt
	while IFS=$'\t' read -r code status _ retryable _; do
		st[$code]=$status rt[$code]=$retryable
	done <<<"$(qwen-test-tool errors table)"
	sid=0b6c1c9e-8f5e-4a7b-9c1d-2e3f4a5b6c7d
	: >"$BATS_TEST_TMPDIR/want"
	: >"$BATS_TEST_TMPDIR/got"
	for code in session_restore_timeout restore_in_progress acp_channel_unavailable \
	    init_timeout session_not_found session_closing invalid_client_id \
	    invalid_session_id workspace_mismatch session_limit_exceeded \
	    prompt_queue_full subscriber_limit_exceeded unauthorized token_required \
	    payload_too_large internal invalid_json session_writer_conflict; do
		status=${st[$code]} retryable=${rt[$code]}
		[ -n "$status" ] || { echo "$code not in the table"; false; }
		out=$(qwen-test-tool errors rest "$code" sessionId=$sid budget_ms=45000)
		ra=${out%%$'\n'*} body=${out#*$'\n'}
		if [ "$ra" = none ]; then want_ra=; args=("$status" "$body")
		else want_ra=${ra#Retry-After: }; args=("$status" "$body" "$want_ra"); fi
		printf 'REST\t%s\t%s\t%s\t%s\n' "$code" "$status" "$retryable" "$want_ra" >>"$BATS_TEST_TMPDIR/want"
		printf 'RPC\t%s\t%s\t%s\t%s\n' "$code" "$status" "$retryable" "$want_ra" >>"$BATS_TEST_TMPDIR/want"
		c=$(qwen-test-tool errors classify "${args[@]}")
		printf '{"via":"REST","c":%s}\n' "$c" >>"$BATS_TEST_TMPDIR/got"
		rpc=$(qwen-test-tool errors jsonrpc "$code" sessionId=$sid budget_ms=45000)
		c=$(qwen-test-tool errors classify-rpc "$rpc")
		printf '{"via":"RPC","c":%s}\n' "$c" >>"$BATS_TEST_TMPDIR/got"
	done
	jq -r '[.via, .c.code, .c.status, .c.retryable, .c.retryAfter] | @tsv' "$BATS_TEST_TMPDIR/got" >"$BATS_TEST_TMPDIR/got.tsv"
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got.tsv"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/want")" -eq 36 ]
}

@test "errors classify: garbage bodies are classified by status" {
	run qwen-test-tool errors classify 500 'not json at all'
	[ "$(json_get "$output" '[.code, .status, .exit] | @tsv')" = "internal	500	1" ]
	run qwen-test-tool errors classify 404 ''
	[ "$(json_get "$output" '.code')" = not_found ]
	run qwen-test-tool errors classify 502 '[1,2,3]'
	[ "$(json_get "$output" '[.code, .retryable, .retryAfter, .exit] | @tsv')" = "unknown	true		1" ]
	run qwen-test-tool errors classify 503 '{"code":' 9
	[ "$(json_get "$output" '[.code, .retryable, .retryAfter, .exit] | @tsv')" = "unknown	true	9	75" ]
	run qwen-test-tool errors classify 401 '{"error":"Unauthorized"}'
	[ "$(json_get "$output" '[.code, .rawCode, .exit] | @tsv')" = "unauthorized		1" ]
}

@test "errors classify: exit classes 3, 75 and the upstream JSON-RPC-shaped 500" {
	run qwen-test-tool errors classify 404 '{"error":"gone","code":"session_closing"}'
	[ "$(json_get "$output" .exit)" = 3 ]
	run qwen-test-tool errors classify 503 '{"error":"full","code":"prompt_queue_full","sessionId":"s","limit":5,"pendingCount":5}' 5
	[ "$(json_get "$output" '[.code, .retryAfter, .exit] | @tsv')" = "prompt_queue_full	5	75" ]
	run qwen-test-tool errors classify 500 '{"error":"Internal error","code":-32000,"data":{"message":"Authentication required"}}'
	[ "$(json_get "$output" '[.code, .rawCode, .message] | @tsv')" = "internal	-32000	Authentication required" ]
}

@test "errors classify-rpc: garbage and upstream shapes" {
	run qwen-test-tool errors classify-rpc 'nonsense'
	[ "$(json_get "$output" '[.code, .exit] | @tsv')" = "protocol_error	1" ]
	run qwen-test-tool errors classify-rpc '{"code":-32002,"message":"Resource not found: session:x","data":{"uri":"session:x"}}'
	[ "$(json_get "$output" '[.code, .status, .exit] | @tsv')" = "session_not_found	404	3" ]
	run qwen-test-tool errors classify-rpc '{"code":-32603,"message":"m","data":{"errorKind":"session_limit_exceeded","limit":32,"scope":"total","retryable":true}}'
	[ "$(json_get "$output" '[.code, .retryAfter, .exit] | @tsv')" = "session_limit_exceeded	5	75" ]
}
