# SPDX-License-Identifier: ISC
# index_helper.bash: the persistent transcript index (--cache-dir) through
# qwen-inspect, checked against a fresh pass and the reference loader, and
# damage to one byte of an index cache (t/1301, t/1303-t/1305, t/2903).

load oracle_helper

ORACLE="$SHARED_DIR/tools/gen-transcript"

# index_setup [MIB [SANITIZED-MIB]]: the index caches go to $CACHE;
# generated transcripts are $MIB MiB (2, or 0.5 under the sanitizers); jq
# is needed.
index_setup() {
	command -v jq >/dev/null || skip "jq not installed"
	CACHE="$BATS_TEST_TMPDIR/cache"
	MIB=${1:-2}
	[ -z "${QWEN_SANITIZED:-}" ] || MIB=${2:-0.5}
}

# gen SEED [ARGS...]: a generated transcript; prints its path.
gen() {
	local seed=$1
	shift
	qwen-gen-transcript --mib "$MIB" --seed "$seed" --branches 2 \
	    --compressions 2 --glued 2 "$@" --out "$BATS_TEST_TMPDIR/g$seed"
}

# index_session SEED: a generated transcript of $MIB MiB among the
# sessions of $DATA for $WS (acp_setup): its path in $F, its id in $SID.
index_session() {
	F=$(qwen-gen-transcript --mib "$MIB" --seed "$1" --branches 2 --compressions 2 \
	    --data-dir "$DATA" --workspace "$WS")
	SID=$(basename "$F" .jsonl)
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

# cached_is "INDEX REASON" FILE: a pass through the cache finds the index
# in that state and answers what a fresh pass answers; its summary in $o.
cached_is() {
	o=$(cached "$2")
	[ "$(state "$o")" = "$1" ] || {
		echo "$2: index $(state "$o"), expected $1" >&2
		return 1
	}
	fresh_agrees "$2" "$o"
}

# one_index: the path of the only index cache.
one_index() {
	local n
	n=$(find "$CACHE" -name 'tx-*.idx' | wc -l)
	[ "$n" -eq 1 ] || return 1
	find "$CACHE" -name 'tx-*.idx'
}

# flip_byte FILE OFFSET: change one byte of FILE in place.
flip_byte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059
	printf "\\$(printf %03o "$((b ^ 1))")" |
	    dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
