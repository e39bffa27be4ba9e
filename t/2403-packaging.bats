#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Packaging: the make install layout, the example systemd units
# (systemd-analyze verify when available) and the bash completions, which
# must list every option each program's --help and man page give.

load test_helper

B=$QWEN_TOP_BUILDDIR

# make_var NAME: a variable of the build's Makefile, expanded.
make_var() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$B" \
	    -f Makefile -f <(printf 'print-var:\n\t@echo $(%s)\n' "$1") print-var
}

@test "make install: programs in bindir, the child in libexecdir, man pages, units, completions" {
	local d=$BATS_TEST_TMPDIR/inst bindir libexecdir mandir docdir compdir
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$B" install DESTDIR="$d" >/dev/null
	bindir=$(make_var bindir)
	libexecdir=$(make_var libexecdir)
	mandir=$(make_var mandir)
	docdir=$(make_var docdir)
	compdir=$(make_var bashcompletiondir)
	for p in qwen-serve qwen-restore qwen-trace-dump; do
		[ -x "$d$bindir/$p" ]
	done
	[ -x "$d$libexecdir/qwen-acp-child" ]
	[ ! -e "$d$bindir/qwen-acp-child" ]
	[ -f "$d$mandir/man1/qwen-restore.1" ]
	[ -f "$d$mandir/man1/qwen-trace-dump.1" ]
	[ -f "$d$mandir/man8/qwen-serve.8" ]
	[ -f "$d$mandir/man8/qwen-acp-child.8" ]
	for u in qwen-serve.service qwen-serve.socket user/qwen-serve.service user/qwen-serve.socket; do
		[ -f "$d$docdir/examples/systemd/$u" ]
	done
	grep -qx "ExecStart=$bindir/qwen-serve .*" "$d$docdir/examples/systemd/qwen-serve.service"
	[ -f "$d$compdir/qwen-restore" ]
	[ -f "$d$compdir/qwen-trace-dump" ]
	# The installed daemon looks for the child in the configured libexecdir
	# (outside DESTDIR it is not there: the check names the path it tried).
	run env PATH=/nonexistent "$d$bindir/qwen-serve" --check-config --no-tcp \
	    --data-dir "$BATS_TEST_TMPDIR" --socket "$BATS_TEST_TMPDIR/c.sock"
	if [ -x "$libexecdir/qwen-acp-child" ]; then
		[[ "$output" == *"child: $libexecdir/qwen-acp-child"* ]]
	else
		[ "$status" -eq 1 ]
		[[ "$output" == *"--child qwen-acp-child: not found in $libexecdir or on PATH"* ]]
	fi
	# --child overrides the default.
	run "$d$bindir/qwen-serve" --check-config --no-tcp --data-dir "$BATS_TEST_TMPDIR" \
	    --socket "$BATS_TEST_TMPDIR/c.sock" --child "$d$libexecdir/qwen-acp-child"
	[ "$status" -eq 0 ]
	[[ "$output" == *"child: $d$libexecdir/qwen-acp-child"* ]]
}

# units_for_verify DIR: the generated units with ExecStart pointing into
# the build tree (verify checks that the program exists).
units_for_verify() {
	mkdir -p "$1/user"
	for u in qwen-serve.service qwen-serve.socket user/qwen-serve.service user/qwen-serve.socket; do
		[ -f "$B/contrib/systemd/$u" ]
		sed "s|^ExecStart=[^ ]*/qwen-serve |ExecStart=$B/bin/qwen-serve |" \
		    "$B/contrib/systemd/$u" >"$1/$u"
	done
}

@test "systemd units: Type=notify, socket activation and the hardening directives" {
	local s=$B/contrib/systemd/qwen-serve.service
	[ -f "$s" ]
	for u in qwen-serve.service qwen-serve.socket user/qwen-serve.service user/qwen-serve.socket; do
		! grep -q '@bindir@' "$B/contrib/systemd/$u" || false
	done
	grep -qx 'Type=notify' "$s"
	grep -qx 'NoNewPrivileges=yes' "$s"
	grep -qx 'ProtectSystem=strict' "$s"
	grep -qx 'ReadWritePaths=/var/lib/qwen-serve' "$s"
	grep -q -- '--data-dir /var/lib/qwen-serve ' "$s"
	grep -qx 'PrivateTmp=yes' "$s"
	# AF_NETLINK: the loopback TCP gate asks sock_diag who owns the peer.
	grep -qx 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK' "$s"
	grep -qx 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK' "$B/contrib/systemd/user/qwen-serve.service"
	grep -qx 'ListenStream=/run/qwen-serve/qwen-serve.sock' "$B/contrib/systemd/qwen-serve.socket"
	grep -qx 'ListenStream=127.0.0.1:4170' "$B/contrib/systemd/qwen-serve.socket"
	# The user unit's socket is the daemon's (and qwen-restore's) default.
	grep -qx 'ListenStream=%t/qwen-serve/qwen-serve.sock' "$B/contrib/systemd/user/qwen-serve.socket"
	grep -qx 'Type=notify' "$B/contrib/systemd/user/qwen-serve.service"
}

@test "systemd-analyze verify: the system and user units are clean" {
	command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed"
	local d=$BATS_TEST_TMPDIR/units
	units_for_verify "$d"
	(cd "$d" && systemd-analyze verify --man=no qwen-serve.service qwen-serve.socket) \
	    >"$BATS_TEST_TMPDIR/verify" 2>&1 || {
		cat "$BATS_TEST_TMPDIR/verify"
		grep -q 'Failed to initialize manager\|Failed to setup working directory' \
		    "$BATS_TEST_TMPDIR/verify" && skip "systemd-analyze cannot run here"
		return 1
	}
	[ ! -s "$BATS_TEST_TMPDIR/verify" ] || { cat "$BATS_TEST_TMPDIR/verify"; return 1; }
	mkdir -m 700 "$BATS_TEST_TMPDIR/rt"
	(cd "$d/user" && XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/rt systemd-analyze verify \
	    --man=no --user qwen-serve.service qwen-serve.socket) >"$BATS_TEST_TMPDIR/verify" 2>&1 ||
		{ cat "$BATS_TEST_TMPDIR/verify"; return 1; }
	[ ! -s "$BATS_TEST_TMPDIR/verify" ] || { cat "$BATS_TEST_TMPDIR/verify"; return 1; }
	# The check can fail: a misspelt directive is reported.
	sed -i 's/^NoNewPrivileges=/NoNewPrivilegez=/' "$d/qwen-serve.service"
	(cd "$d" && systemd-analyze verify --man=no qwen-serve.service) >"$BATS_TEST_TMPDIR/verify" 2>&1 || true
	grep -q "Unknown key 'NoNewPrivilegez'" "$BATS_TEST_TMPDIR/verify"
}

# documented_opts PROG MAN: every option in PROG --help and in MAN, one a line.
documented_opts() {
	{
		"$1" --help 2>&1 | grep -oE -- '--[a-z][a-z-]*'
		"$1" --help 2>&1 | grep -oE -- '\[-[a-z]+\]' | tr -d '[]-' | grep -o . | sed 's/^/-/'
		grep -E '^\.It Fl ' "$2" | grep -oE '\\-[a-z][a-z-]*' | sed 's/^\\-/--/'
		grep -E '^\.It Fl ' "$2" | grep -oE 'Fl [a-z]( |$)' | sed 's/^Fl /-/; s/ $//'
	} | sort -u
}

# check_completion PROG MAN: the completion lists exactly the documented options.
check_completion() {
	local comp=$QWEN_TOP_SRCDIR/contrib/bash-completion/$1 o missing=0
	[ -f "$comp" ]
	for o in $(documented_opts "$1" "$QWEN_TOP_SRCDIR/man/$2"); do
		grep -qE -- "(^|[ '(|])$o([ ')|]|\$)" "$comp" || {
			echo "$1: $o is not in the completion" >&2
			missing=1
		}
	done
	for o in $(grep -oE -- '--[a-z][a-z-]*' "$comp" | sort -u); do
		documented_opts "$1" "$QWEN_TOP_SRCDIR/man/$2" | grep -qx -- "$o" || {
			echo "$1: the completion offers $o, which is not documented" >&2
			missing=1
		}
	done
	[ "$missing" -eq 0 ]
}

@test "bash completion: qwen-restore lists every documented option and command" {
	check_completion qwen-restore qwen-restore.1
	# The first word of each comma-separated item after "commands:".
	for c in $(qwen-restore --help 2>&1 | sed -n '/^commands:/,$p' | sed 's/^commands://' |
	    tr '\n' ' ' | tr ',' '\n' | awk '{ print $1 }'); do
		grep -q "\b$c\b" "$QWEN_TOP_SRCDIR/contrib/bash-completion/qwen-restore" ||
			{ echo "command $c missing" >&2; return 1; }
	done
}

@test "bash completion: qwen-trace-dump lists every documented option" {
	check_completion qwen-trace-dump qwen-trace-dump.1
}

# complete_words PROG WORD...: COMPREPLY for the last word, one a line.
complete_words() {
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
	    f=$(complete -p "$1" | sed "s/.* -F \([^ ]*\) .*/\1/"); $f; printf "%s\n" "${COMPREPLY[@]}"' \
	    sh "$QWEN_TOP_SRCDIR/contrib/bash-completion/$1" "$@"
}

@test "bash completion: completes options, commands and their arguments" {
	[ "$(complete_words qwen-restore --state)" = --state-dir ]
	[ "$(complete_words qwen-restore lo)" = load ]
	[ "$(complete_words qwen-restore --json prompt ID --no-w)" = --no-wait ]
	[ "$(complete_words qwen-restore events ID --la)" = --last-event-id ]
	[ "$(complete_words qwen-trace-dump --format j)" = json ]
	[ "$(complete_words qwen-trace-dump --result t)" = timeout ]
	[ "$(complete_words qwen-trace-dump --no-p)" = --no-pager ]
}
