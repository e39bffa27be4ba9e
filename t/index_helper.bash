# index_helper.bash: the persistent transcript index through qwen-inspect
# (t/1301, t/1303): a summary through the cache, compared with a fresh pass
# and the reference loader, and damage to one byte of a kept index.
# fresh_agrees needs oracle_helper loaded.

ORACLE="$SHARED_DIR/tools/gen-transcript"

# index_setup MIB SANITIZED-MIB: jq, $CACHE and $MIB (smaller under sanitizers).
index_setup() {
	command -v jq >/dev/null || skip "jq not installed"
	CACHE="$BATS_TEST_TMPDIR/cache"
	MIB=$1
	[ -z "${QWEN_SANITIZED:-}" ] || MIB=$2
}

# cached [ARGS...] FILE: the summary through the index cache.
cached() {
	qwen-inspect --cache-dir "$CACHE" "$@"
}

# fresh_agrees FILE JSON: JSON (less the cache members) is what a fresh
# pass answers, and what the reference loader answers when it is here.
fresh_agrees() {
	local got want
	got=$(jq -S 'del(.index, .indexReason, .bytesRead, .indexBytesChecked)' <<<"$2")
	want=$(qwen-inspect "$1" | jq -S .)
	[ "$got" = "$want" ] || {
		diff <(echo "$got") <(echo "$want")
		return 1
	}
	if [ -x "$ORACLE" ] && command -v python3 >/dev/null; then
		agree "$2" "$("$ORACLE" --verify "$1")"
	fi
}

# state JSON: "index reason" of a cached summary.
state() {
	jq -r '"\(.index) \(.indexReason)"' <<<"$1"
}

# flip_byte FILE OFFSET: change one byte of FILE in place.
flip_byte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059
	printf "\\$(printf %03o "$((b ^ 1))")" |
	    dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# one_index: the path of the only kept index.
one_index() {
	local n
	n=$(find "$CACHE" -name 'tx-*.idx' | wc -l)
	[ "$n" -eq 1 ]
	find "$CACHE" -name 'tx-*.idx'
}
