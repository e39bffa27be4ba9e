#!/bin/sh
# normalise.sh [--all]: make qwen-trace-dump output comparable across runs.
#
# Always: trace ids -> <TRACE>, span ids -> <SPAN>, ISO times -> <T>, and
# durations measured from span times (printed with three decimals in the
# text view; durationMs/elapsedMs/ts/dur in json and chrome) -> <D>.
# --all (for goldens from real qwen-serve / qwen-acp-child runs, where the
# child's stage attributes are measured too): every "N.N ms" -> <D>, bars
# -> <BAR>, session UUIDs -> <SESSION>; budgets, results, byte and record
# counts kept as they are.
all=0
[ "${1:-}" = "--all" ] && all=1
sed -E \
	-e 's/\b[0-9a-f]{32}\b/<TRACE>/g' \
	-e 's/\b[0-9a-f]{16}\b/<SPAN>/g' \
	-e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z/<T>/g' \
	-e 's/\b[0-9]+\.[0-9]{3} ms/<D> ms/g' \
	-e 's/"(ts|dur|durationMs|elapsedMs)":[0-9.e+-]+/"\1":"<D>"/g' |
if [ $all -eq 1 ]; then
	sed -E -e 's/\b[0-9]+\.[0-9] ms/<D> ms/g' \
		-e 's/\|[# ]*[|>]/|<BAR>|/g' \
		-e 's/ +<D> ms/ <D> ms/g' \
		-e 's/"(settings_load|existence_check|live_restore|transcript_read|chain_reconstruct|config_setup|restore_session_model|runtime_initialize|auth|file_system_setup|session_register|history_replay|post_replay_services|response_build|meanMs|p50Ms|p99Ms|maxMs)":[0-9.e+-]+/"\1":"<D>"/g' \
		-e 's/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/<SESSION>/g'
else
	cat
fi
