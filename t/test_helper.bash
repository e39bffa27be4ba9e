# SPDX-License-Identifier: ISC
# test_helper.bash: shared setup for the bats tests.

: "${QWEN_TOP_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${QWEN_TOP_BUILDDIR:=$QWEN_TOP_SRCDIR}"
export PATH="$QWEN_TOP_BUILDDIR/bin:$QWEN_TOP_BUILDDIR/t/helper:$PATH"
SHARED_DIR="${QWEN_SHARED_DIR:-$QWEN_TOP_SRCDIR/../shared}"
# run ! and run --separate-stderr.
bats_require_minimum_version 1.5.0
# Kept transcript indexes go below the test run, never into ~/.cache.
unset CACHE_DIRECTORY
export XDG_CACHE_HOME="${BATS_RUN_TMPDIR:-${TMPDIR:-/tmp}}/xdg-cache"

# Skip the test when ../shared (the independent oracle) is not beside us.
require_shared() {
	[ -x "$SHARED_DIR/tools/gen-transcript" ] ||
		skip "../shared/tools/gen-transcript not present"
	command -v python3 >/dev/null || skip "python3 not installed"
}

# wait_for TIMEOUT_S CMD...: poll CMD every 20 ms until it succeeds.
wait_for() {
	local limit=$(( $1 * 50 )) i=0
	shift
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -ge "$limit" ]; then
			echo "wait_for: timed out: $*" >&2
			return 1
		fi
		sleep 0.02
	done
}

# cond SHELL: evaluate SHELL now, for wait_for (whose own arguments,
# $(...) included, are expanded once, before the first try).
cond() {
	eval "$1"
}

# json_get FILE-OR-STRING JQ-FILTER
json_get() {
	jq -r "$2" <<<"$1"
}

# gate_open: a FIFO the child's workers read one byte from before each big
# load (QWEN_ACP_TEST_LOAD_GATE).  The test holds it open read-write, so a
# big load waits until the test writes a byte, however fast the machine.
gate_open() {
	GATE=$BATS_TEST_TMPDIR/gate
	mkfifo "$GATE"
	exec {GATE_FD}<>"$GATE"
	export QWEN_ACP_TEST_LOAD_GATE=$GATE
}

# npm_locked DIR LOG ARGS...: `npm install ARGS` into the prefix DIR,
# logging to LOG; test files run in parallel and share DIR, so one
# installs while the others wait on DIR/.lock.  Non-zero when npm fails.
npm_locked() {
	local dir=$1 log=$2
	shift 2
	mkdir -p "$dir"
	(
		flock 9
		timeout 300 npm install --no-audit --no-fund --prefix "$dir" "$@" \
		    >"$log" 2>&1
	) 9>"$dir/.lock"
}

# npm_cached DIR NAME VERSION [NPM-FLAGS...]: NAME@VERSION from npm into the
# cache DIR (once); skips the test when npm or its registry is not there.
npm_cached() {
	local dir=$1 name=$2 version=$3
	shift 3
	[ -f "$dir/node_modules/$name/package.json" ] && return 0
	command -v npm >/dev/null || skip "npm not installed"
	npm_locked "$dir" "$dir/npm.log" "${@:---ignore-scripts}" "$name@$version" ||
		[ -f "$dir/node_modules/$name/package.json" ] ||
		skip "npm cannot install $name@$version (registry unreachable?): see $dir/npm.log"
}

# browser_setup: node, Debian's chromium and playwright-core (cached in the
# build tree's t/web) or skip; screenshots go to $ART (t/artifacts).
browser_setup() {
	command -v node >/dev/null || skip "node not installed"
	[ -x /usr/bin/chromium ] ||
		skip "Debian's chromium is not installed (apt-get install chromium)"
	PW_DIR=${QWEN_PLAYWRIGHT_DIR:-$QWEN_TOP_BUILDDIR/t/web}
	npm_cached "$PW_DIR" playwright-core "$PW_VERSION"
	ART=$QWEN_TOP_BUILDDIR/t/artifacts
	mkdir -p "$ART"
}

# on_tty CMD...: run CMD with a terminal as stdin and stdout (script(1)).
on_tty() {
	script -qec "$*" /dev/null </dev/null
}
