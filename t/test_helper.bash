# test_helper.bash: shared setup for the bats tests.

: "${QWEN_TOP_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${QWEN_TOP_BUILDDIR:=$QWEN_TOP_SRCDIR}"
export PATH="$QWEN_TOP_BUILDDIR/bin:$QWEN_TOP_BUILDDIR/t/helper:$PATH"
SHARED_DIR="${QWEN_SHARED_DIR:-$QWEN_TOP_SRCDIR/../shared}"
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

# json_get FILE-OR-STRING JQ-FILTER
json_get() {
	jq -r "$2" <<<"$1"
}
