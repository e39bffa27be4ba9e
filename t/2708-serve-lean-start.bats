#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A lean start: qwen-acp-child starts for every request on a session that
# is not live, so neither it nor the daemon links libcurl (and the thirty
# libraries behind it); the OTLP exporter dlopen()s libcurl when an export
# is configured, and only then.  t/2706 shows the export itself works.

load serve_helper
bats_require_minimum_version 1.5.0

setup() {
	command -v readelf >/dev/null || skip "readelf not installed"
	unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
}

teardown() {
	serve_teardown
}

# needed PROGRAM: the shared libraries PROGRAM names (DT_NEEDED).
needed() {
	readelf -d "$QWEN_TOP_BUILDDIR/bin/$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

# defines PROGRAM SYMBOL: PROGRAM has SYMBOL's code in it (a static link).
defines() {
	readelf -Ws "$QWEN_TOP_BUILDDIR/bin/$1" |
	    awk -v s="$2" '$8 == s && $7 != "UND" { found = 1 } END { exit !found }'
}

@test "qwen-acp-child and qwen-serve do not link libcurl; json-c and libevent they do" {
	run needed qwen-acp-child
	[ "$status" -eq 0 ]
	[[ "$output" != *curl* ]]
	# configure's default links the child's own libraries in (a start
	# maps four objects fewer); --disable-static-child names them.
	if grep -q '^CHILD_LIBS = -Wl,-Bstatic' "$QWEN_TOP_BUILDDIR/Makefile"; then
		[[ "$output" != *libjson-c* ]]
		[[ "$output" != *libevent* ]]
		defines qwen-acp-child json_object_new_object
		defines qwen-acp-child event_base_new
	else
		[[ "$output" == *libjson-c* ]]
		[[ "$output" == *libevent* ]]
	fi
	run needed qwen-serve
	[ "$status" -eq 0 ]
	[[ "$output" == *libjson-c* ]]
	[[ "$output" != *curl* ]]
}

@test "the daemon maps libcurl only once an OTLP export is configured" {
	serve_start
	run grep -c libcurl "/proc/$SERVE_PID/maps"
	[ "$output" = 0 ]
	serve_stop
	# A collector nobody listens on: the export starts, its posts fail.
	serve_start --otlp-endpoint http://127.0.0.1:9
	run grep -c libcurl "/proc/$SERVE_PID/maps"
	[ "$output" != 0 ]
}
