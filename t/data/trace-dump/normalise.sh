#!/bin/sh
# normalise.sh [--all]: make qwen-trace-dump output comparable across runs.
#
# Always: durations and times measured from span times (ts, dur,
# durationMs, elapsedMs in json and chrome; three decimals in the text
# view) -> <D>, trace ids -> <TRACE>, span ids -> <SPAN>, ISO times -> <T>.
# --all (for goldens from real qwen-serve / qwen-acp-child runs, where the
# child measures its stages too): every "N.N ms" -> <D> (padding
# collapsed), bars -> <BAR>, stage and loop-lag figures in json -> "<D>",
# the p50/p90/p99/max columns of --summary -> <D>.  What stays compared:
# the structure, span and stage names, actions, budgets, results, failed
# stages, overdue, attribute names, counts, byte and record counts, session
# and channel ids.
all=0
[ "${1:-}" = "--all" ] && all=1
sed -E \
	-e 's/"(ts|dur|durationMs|elapsedMs)":[0-9.e+-]+/"\1":"<D>"/g' \
	-e 's/\b[0-9a-f]{32}\b/<TRACE>/g' \
	-e 's/\b[0-9a-f]{16}\b/<SPAN>/g' \
	-e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z/<T>/g' \
	-e 's/\b[0-9]+\.[0-9]{3} ms/<D> ms/g' |
if [ $all -eq 1 ]; then
	sed -E -e 's/\b[0-9]+\.[0-9] ms/<D> ms/g' \
		-e 's/\|[# ]*[|>]/|<BAR>|/g' \
		-e 's/ +<D> ms/ <D> ms/g' \
		-e 's/"(settings_load|existence_check|live_restore|transcript_read|chain_reconstruct|config_setup|restore_session_model|runtime_initialize|auth|file_system_setup|session_register|history_replay|post_replay_services|response_build|meanMs|p50Ms|p99Ms|maxMs|loopLagP99Ms)":[0-9.e+-]+/"\1":"<D>"/g' \
		-e 's/^(  [a-z_]+( \(until result\))?) +([0-9]+)( +[0-9]+\.[0-9]){4}$/\1 \3 <D> <D> <D> <D>/'
else
	cat
fi
