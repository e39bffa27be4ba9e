#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: the browser console's static route (GET/HEAD /, a fixed file
# list, strict headers, --no-web, --web-dir, auth and Host/Origin gates),
# and the console's timer rules in node (web/budget.mjs, no browser).

load serve_helper

WEB=$QWEN_TOP_SRCDIR/web

teardown() {
	serve_teardown
}

# web PATH [curl args...]: over TCP with the Host a browser would send.
web() {
	local p=$1
	shift
	rm -f "$BATS_TEST_TMPDIR/body"
	code=$(curl -s -o "$BATS_TEST_TMPDIR/body" -D "$BATS_TEST_TMPDIR/hdrs" \
	    -w '%{http_code}' --path-as-is "$@" "http://127.0.0.1:$PORT$p")
	hdrs=$(tr -d '\r' <"$BATS_TEST_TMPDIR/hdrs")
}

@test "web: GET / and each file, with their types and strict headers" {
	serve_start --web-dir "$WEB"
	web /
	[ "$code" = 200 ]
	cmp "$BATS_TEST_TMPDIR/body" "$WEB/index.html"
	[ "$(header Content-Type)" = "text/html; charset=utf-8" ]
	[ "$(header X-Content-Type-Options)" = nosniff ]
	[ "$(header Cache-Control)" = no-cache ]
	[ "$(header X-Frame-Options)" = DENY ]
	local csp=$(header Content-Security-Policy)
	[[ "$csp" == *"default-src 'none'"* ]]
	[[ "$csp" == *"script-src 'self';"* ]]
	[[ "$csp" == *"connect-src 'self';"* ]]
	[[ "$csp" == *"frame-ancestors 'none'"* ]]
	[[ "$csp" != *unsafe* ]]
	[ -n "$(header ETag)" ]
	local f t
	# Every file of the console, each with its type.
	for f in "$WEB"/*; do
		f=${f##*/}
		case $f in
		*.html) t=text/html ;;
		*.css) t=text/css ;;
		*.js|*.mjs) t=text/javascript ;;
		*) continue ;;
		esac
		web "/$f"
		[ "$code" = 200 ]
		cmp "$BATS_TEST_TMPDIR/body" "$WEB/$f"
		[ "$(header Content-Type)" = "$t; charset=utf-8" ]
		[ "$(header X-Content-Type-Options)" = nosniff ]
		[ -n "$(header Content-Security-Policy)" ]
	done
	# The query string does not change what is served.
	web '/app.js?v=2'
	[ "$code" = 200 ]
	cmp "$BATS_TEST_TMPDIR/body" "$WEB/app.js"
	# Over the unix socket too.
	req GET /
	[ "$code" = 200 ]
	cmp "$BATS_TEST_TMPDIR/body" "$WEB/index.html"
}

@test "web: HEAD has the length and no body; a matching ETag gets 304" {
	serve_start --web-dir "$WEB"
	web / -I
	[ "$code" = 200 ]
	[ "$(header Content-Length)" = "$(stat -c %s "$WEB/index.html")" ]
	[ "$(header Content-Type)" = "text/html; charset=utf-8" ]
	# On the wire: the headers and nothing after them.
	exec 5<>"/dev/tcp/127.0.0.1/$PORT"
	printf 'HEAD / HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' \
	    "$PORT" >&5
	timeout 5 cat <&5 >"$BATS_TEST_TMPDIR/raw"
	exec 5<&-
	grep -q '^HTTP/1.1 200' "$BATS_TEST_TMPDIR/raw"
	[ "$(tail -c 4 "$BATS_TEST_TMPDIR/raw" | od -An -c | tr -d ' ')" = '\r\n\r\n' ]
	! grep -q '<html' "$BATS_TEST_TMPDIR/raw" || false
	local etag=$(header ETag)
	web /app.js -H "If-None-Match: $etag"
	[ "$code" = 200 ]
	web / -H "If-None-Match: $etag"
	[ "$code" = 304 ]
	[ ! -e "$BATS_TEST_TMPDIR/body" ]
	[ -n "$(header Content-Security-Policy)" ]
}

@test "web: other methods get 405 with Allow; API routes answer HEAD with 405" {
	serve_start --web-dir "$WEB"
	web / -X POST
	[ "$code" = 405 ]
	[ "$(header Allow)" = "GET, HEAD" ]
	jq -e '.code == "method_not_allowed"' "$BATS_TEST_TMPDIR/body"
	web /app.js -X DELETE
	[ "$code" = 405 ]
	web /capabilities -I
	[ "$code" = 405 ]
	web /capabilities
	[ "$code" = 200 ]
}

@test "web: no path outside the fixed list is served (traversal)" {
	serve_start --web-dir "$WEB"
	# A file beside the console files that is not on the list.
	local p
	for p in /../../../../etc/passwd /%2e%2e/%2e%2e/etc/passwd \
	    /app.js/../../../etc/passwd /web/index.html /index.html%00 \
	    //etc/passwd /./index.html /index.htm /APP.JS /app.js/ \
	    /%2fetc%2fpasswd /..%2f..%2fetc%2fpasswd /budget.mjs%2f..%2fapp.js \
	    /Makefile.am /.git/config; do
		web "$p"
		[ "$code" != 200 ] || { echo "served $p" >&2; return 1; }
		! grep -q 'root:' "$BATS_TEST_TMPDIR/body" || false
		! grep -q '<html' "$BATS_TEST_TMPDIR/body" || false
	done
	# A directory where a file should be is not served either.
	local d=$BATS_TEST_TMPDIR/webdir
	mkdir -p "$d/app.css"
	cp "$WEB/index.html" "$d/"
	serve_stop
	serve_start --web-dir "$d"
	web /app.css
	[ "$code" = 404 ]
	web /
	[ "$code" = 200 ]
}

@test "web: --no-web turns the console off and leaves the API" {
	serve_start --no-web --web-dir "$WEB"
	web /
	[ "$code" = 404 ]
	jq -e '.code == "not_found"' "$BATS_TEST_TMPDIR/body"
	[ -z "$(header Content-Security-Policy)" ]
	web /app.js
	[ "$code" = 404 ]
	web /health
	[ "$code" = 200 ]
}

@test "web: --web-dir over QWEN_SERVE_WEB_DIR over pkgdatadir; missing files are a 404" {
	local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b empty=$BATS_TEST_TMPDIR/empty
	mkdir -p "$a" "$b" "$empty"
	echo '<p>from a</p>' >"$a/index.html"
	echo '<p>from b</p>' >"$b/index.html"
	QWEN_SERVE_WEB_DIR=$a serve_start
	web /
	grep -q 'from a' "$BATS_TEST_TMPDIR/body"
	serve_stop
	QWEN_SERVE_WEB_DIR=$a serve_start --web-dir "$b"
	web /
	grep -q 'from b' "$BATS_TEST_TMPDIR/body"
	serve_stop
	serve_start --web-dir "$empty"
	grep -q "web console: $empty/index.html" "$BATS_TEST_TMPDIR/err"
	web /
	[ "$code" = 404 ]
	jq -e '.code == "not_found" and (.error | test("not installed"))' "$BATS_TEST_TMPDIR/body"
}

@test "web: run from a build tree with neither flag nor variable, the tree's own console" {
	[ -f "$QWEN_TOP_BUILDDIR/web/index.html" ] || skip "a VPATH build: the console is not beside bin/"
	unset QWEN_SERVE_WEB_DIR
	serve_start
	run grep -q 'web console:' "$BATS_TEST_TMPDIR/err"
	[ "$status" -ne 0 ]
	web /
	[ "$code" = 200 ]
	cmp -s "$BATS_TEST_TMPDIR/body" "$QWEN_TOP_BUILDDIR/web/index.html"
}

@test "web: the page is public, the API keeps its bearer (--token, --require-auth)" {
	serve_start --web-dir "$WEB" --token s3cret
	web /
	[ "$code" = 200 ]
	! grep -q s3cret "$BATS_TEST_TMPDIR/body" || false
	web /app.js
	[ "$code" = 200 ]
	web /capabilities
	[ "$code" = 401 ]
	web /workspace/sessions
	[ "$code" = 401 ]
	web /workspace/sessions -H 'Authorization: Bearer s3cret'
	[ "$code" = 200 ]
	web /session/$SID/events
	[ "$code" = 401 ]
	serve_stop
	serve_start --web-dir "$WEB" --token s3cret --require-auth
	web /
	[ "$code" = 200 ]
	web /health
	[ "$code" = 401 ]
	! grep -rq s3cret "$WEB" || false
}

@test "web: Host and Origin gates apply to the page" {
	serve_start --web-dir "$WEB"
	web / -H 'Host: evil.example'
	[ "$code" = 403 ]
	jq -e '.code == "forbidden_host"' "$BATS_TEST_TMPDIR/body"
	web / -H "Host: localhost:$PORT"
	[ "$code" = 200 ]
	web / -H 'Origin: http://evil.example'
	[ "$code" = 403 ]
	web / -H 'Origin: null'
	[ "$code" = 403 ]
	web / -H "Origin: http://127.0.0.1:$PORT"
	[ "$code" = 200 ]
}

@test "web: the flags are in --help and the man page" {
	run qwen-serve --help
	[[ "$output" == *"--no-web"* ]]
	[[ "$output" == *"--web-dir DIR"* ]]
	grep -q '^\.It Fl -no-web' "$QWEN_TOP_SRCDIR/man/qwen-serve.8"
	grep -q '^\.It Fl -web-dir Ar dir' "$QWEN_TOP_SRCDIR/man/qwen-serve.8"
	grep -q 'QWEN_SERVE_WEB_DIR' "$QWEN_TOP_SRCDIR/man/qwen-serve.8"
}

# node_tap SCRIPT PLAN: a node TAP script over web/ passes all PLAN checks.
node_tap() {
	command -v node >/dev/null || skip "node not installed"
	run node "$QWEN_TOP_SRCDIR/t/helper/$1" "$WEB"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"not ok"* ]]
	[[ "$output" == *"1..$2"* ]]
}

@test "web: the SSE parser of sse.mjs in node (split chunks, CRLF, CR, comments)" {
	node_tap web-sse-test.mjs 16
}

@test "web: every file the page imports is served (and nothing it needs is missing)" {
	serve_start --web-dir "$WEB"
	local f
	for f in $(grep -oh "from './[a-z.-]*'" "$WEB"/*.js "$WEB"/*.mjs | sed "s|from './||; s|'||" |
	    sort -u) $(grep -o '\(src\|href\)="[a-z.-]*\.\(js\|css\|mjs\)"' "$WEB/index.html" |
	    sed 's/.*="//; s/"//'); do
		web "/$f"
		[ "$code" = 200 ] || { echo "/$f: $code" >&2; return 1; }
	done
	# And every served file is installed.
	for f in $(ls "$WEB"); do
		grep -q "web/$f" "$QWEN_TOP_SRCDIR/Makefile.am"
	done
}

@test "web: timer rules of budget.mjs in node (2^31-1 disables, +10 s, +15 s, 30 s)" {
	node_tap web-budget-test.mjs 48
}
