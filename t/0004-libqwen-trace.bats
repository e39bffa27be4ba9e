#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# libqwen trace context and OTLP/JSON span recorder, through qwen-test-tool.
load test_helper

setup() {
	command -v jq >/dev/null || skip "jq not installed (Debian package jq)"
}

TP_RE='^00-[0-9a-f]{32}-[0-9a-f]{16}-01$'

# jq program: true when the line is one ExportTraceServiceRequest with one span.
VALID='fromjson
	| (keys == ["resourceSpans"]) and (.resourceSpans | length == 1)
	and (.resourceSpans[0].resource.attributes
		| any(.key == "service.name" and .value.stringValue == "qwen-test-tool")
		and any(.key == "process.pid" and (.value.intValue | test("^[0-9]+$"))))
	and (.resourceSpans[0].scopeSpans | length == 1)
	and (.resourceSpans[0].scopeSpans[0].scope.name == "qwen-serve")
	and (.resourceSpans[0].scopeSpans[0].spans | length == 1)
	and (.resourceSpans[0].scopeSpans[0].spans[0]
		| (.traceId | test("^[0-9a-f]{32}$"))
		and (.spanId | test("^[0-9a-f]{16}$"))
		and ((.parentSpanId // "0000000000000001") | test("^[0-9a-f]{16}$"))
		and (.kind | type == "number")
		and (.startTimeUnixNano | test("^[0-9]{19}$"))
		and (.endTimeUnixNano | test("^[0-9]{19}$"))
		and ((.endTimeUnixNano | tonumber) >= (.startTimeUnixNano | tonumber))
		and (.status.code | type == "number"))'

# span FILE-LINE-JQ: the first span of every line, one compact object a line.
spans() {
	jq -c '.resourceSpans[0].scopeSpans[0].spans[0]' "$1"
}

# spanid TRACEPARENT: its span id field.
spanid() {
	cut -d- -f3 <<<"$1"
}

@test "trace new prints a fresh sampled version-00 traceparent" {
	run qwen-test-tool trace new
	[ "$status" -eq 0 ]
	[[ "$output" =~ $TP_RE ]]
	first=$output
	run qwen-test-tool trace new
	[[ "$output" =~ $TP_RE ]]
	[ "$output" != "$first" ]
}

@test "trace parse prints the fields of a valid traceparent" {
	run qwen-test-tool trace parse 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	[ "$status" -eq 0 ]
	[ "$output" = "4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 01" ]
	tp=$(qwen-test-tool trace new)
	run qwen-test-tool trace parse "$tp"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cut -d- -f2 <<<"$tp") $(cut -d- -f3 <<<"$tp") 01" ]
	run qwen-test-tool trace parse 01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-future
	[ "$status" -eq 0 ]
	[ "$output" = "4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 03" ]
}

@test "trace parse rejects malformed traceparents with exit 1" {
	for tp in \
	    00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01 \
	    ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 \
	    00-00000000000000000000000000000000-00f067aa0ba902b7-01 \
	    00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01 \
	    00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x \
	    00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1 \
	    00-4bf92f3577b34da6a3ce929d0e0e4736.00f067aa0ba902b7-01 \
	    01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x \
	    "" garbage; do
		run qwen-test-tool trace parse "$tp"
		[ "$status" -eq 1 ] || { echo "accepted: '$tp'"; false; }
	done
}

@test "trace span appends one valid ExportTraceServiceRequest per line" {
	f=$BATS_TEST_TMPDIR/spans.jsonl
	for i in 1 2 3; do
		run qwen-test-tool trace span "$f" "seq.$i" i=$i
		[ "$status" -eq 0 ]
		[[ "$output" =~ $TP_RE ]]
	done
	# Twenty more from processes running at once.
	pids=()
	for i in $(seq 1 20); do
		qwen-test-tool trace span "$f" par pad="$(printf 'x%.0s' $(seq 1 200))" \
		    i=$i >/dev/null 3>&- &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	[ "$(wc -l <"$f")" -eq 23 ]
	run jq -R "$VALID" "$f"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 23 ]
	[ "$(printf '%s\n' "${lines[@]}" | grep -cvx true)" -eq 0 ]
	[ "$(spans "$f" | jq -r .spanId | sort -u | wc -l)" -eq 23 ]
	[ "$(stat -c %a "$f")" = 600 ]
}

@test "trace span --parent links child spans into the parent's trace" {
	f=$BATS_TEST_TMPDIR/tree.jsonl
	root=$(qwen-test-tool trace span "$f" qwen-code.daemon.bridge --kind client)
	child=$(qwen-test-tool trace span "$f" qwen-code.daemon.session_restore \
	    --parent "$root" --kind server)
	leaf=$(qwen-test-tool trace span "$f" stage --parent "$child")
	[ "$(cut -d- -f2 <<<"$root")" = "$(cut -d- -f2 <<<"$child")" ]
	[ "$(cut -d- -f2 <<<"$root")" = "$(cut -d- -f2 <<<"$leaf")" ]
	run spans "$f"
	[ "${#lines[@]}" -eq 3 ]
	[ "$(jq -r .spanId <<<"${lines[0]}")" = "$(spanid "$root")" ]
	[ "$(jq -r '.parentSpanId // "none"' <<<"${lines[0]}")" = none ]
	[ "$(jq -r .kind <<<"${lines[0]}")" = 3 ]
	[ "$(jq -r .spanId <<<"${lines[1]}")" = "$(spanid "$child")" ]
	[ "$(jq -r .parentSpanId <<<"${lines[1]}")" = "$(spanid "$root")" ]
	[ "$(jq -r .kind <<<"${lines[1]}")" = 2 ]
	[ "$(jq -r .parentSpanId <<<"${lines[2]}")" = "$(spanid "$child")" ]
	[ "$(spans "$f" | jq -r .traceId | sort -u)" = "$(cut -d- -f2 <<<"$root")" ]
}

@test "trace span attribute types, events and status" {
	f=$BATS_TEST_TMPDIR/attrs.jsonl
	run qwen-test-tool trace span "$f" restore \
	    qwen-code.daemon.session_restore.timeout_ms=60000 action=load \
	    huge=99999999999999999999 empty= \
	    --status error:timed\ out \
	    --event session.restore.public_result result=timeout n=2 \
	    --event session.restore.cleanup
	[ "$status" -eq 0 ]
	s=$(spans "$f")
	[ "$(jq -c '.attributes | map({(.key): .value}) | add' <<<"$s")" = \
	    '{"qwen-code.daemon.session_restore.timeout_ms":{"intValue":"60000"},"action":{"stringValue":"load"},"huge":{"stringValue":"99999999999999999999"},"empty":{"stringValue":""}}' ]
	[ "$(jq -c '.events | map(.name)' <<<"$s")" = \
	    '["session.restore.public_result","session.restore.cleanup"]' ]
	[ "$(jq -c '.events[0].attributes' <<<"$s")" = \
	    '[{"key":"result","value":{"stringValue":"timeout"}},{"key":"n","value":{"intValue":"2"}}]' ]
	[ "$(jq -c '.events[1].attributes' <<<"$s")" = '[]' ]
	[ "$(jq -c .status <<<"$s")" = '{"code":2,"message":"timed out"}' ]
	jq -e '(.events[0].timeUnixNano | tonumber) >= (.startTimeUnixNano | tonumber)
	    and (.events[0].timeUnixNano | tonumber) <= (.endTimeUnixNano | tonumber)' <<<"$s"
}

@test "trace span errors: bad parent 1, bad file 1, usage 2; nothing written" {
	f=$BATS_TEST_TMPDIR/err.jsonl
	run qwen-test-tool trace span "$f" x --parent 00-zz
	[ "$status" -eq 1 ]
	[[ "$output" == *"invalid traceparent"* ]]
	[ ! -e "$f" ]
	run qwen-test-tool trace span "$BATS_TEST_TMPDIR/no/such/dir.jsonl" x
	[ "$status" -eq 1 ]
	[[ "$output" == *"No such file or directory"* ]]
	run qwen-test-tool trace span "$f" x novalue
	[ "$status" -eq 2 ]
	run qwen-test-tool trace span "$f" x --kind sideways
	[ "$status" -eq 2 ]
	run qwen-test-tool trace span "$f" x --status maybe
	[ "$status" -eq 2 ]
	run qwen-test-tool trace span "$f"
	[ "$status" -eq 2 ]
	run qwen-test-tool trace bogus
	[ "$status" -eq 2 ]
	[ ! -e "$f" ]
	run qwen-test-tool trace span /dev/full x
	[ "$status" -eq 1 ]
	[[ "$output" == *"No space left on device"* ]]
}
