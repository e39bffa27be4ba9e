/* SPDX-License-Identifier: ISC */
/*
 * profiler.h: the phase profiler of a session restore.
 *
 * Each load/resume (and session/new) measures its stages on the monotonic
 * clock, on whichever thread runs them, and ends as one span
 * `qwen-code.daemon.session_restore` (`qwen-code.daemon.session_start` for
 * session/new) with `qwen-code.daemon.session_restore.<stage>_ms`
 * attributes, the first failing stage, the transcript counters and the
 * event-loop lag snapshot.  Only numbers and ids go into attributes, never
 * transcript content.
 */
#ifndef QWEN_ACP_PROFILER_H
#define QWEN_ACP_PROFILER_H

#include <stdint.h>

#include <json-c/json.h>

struct lag_snapshot;
struct span;
struct trace_sink;

enum profiler_stage {
	PROFILER_SETTINGS_LOAD,
	PROFILER_EXISTENCE_CHECK,
	PROFILER_TRANSCRIPT_READ,
	PROFILER_CHAIN_RECONSTRUCT,
	PROFILER_CONFIG_SETUP,
	PROFILER_AUTH,
	PROFILER_FILE_SYSTEM_SETUP,
	PROFILER_SESSION_REGISTER,
	PROFILER_HISTORY_REPLAY,
	PROFILER_RESPONSE_BUILD,
	PROFILER_NSTAGES
};

struct prof {
	uint64_t	 stage_ns[PROFILER_NSTAGES];
	unsigned char	 ran[PROFILER_NSTAGES];
	int		 failed;	/* first failing stage, -1 when none */
	int		 cur;		/* stage running, -1 when none */
	uint64_t	 cur_start;
	/* Counters (only numbers). */
	uint64_t	 transcript_bytes;
	uint64_t	 chain_records;
	uint64_t	 replay_records;
	uint64_t	 replay_bytes;
	uint64_t	 malformed_lines;
	uint64_t	 truncated_records;
	int		 partial_replay;
	uint64_t	 bytes_read;	/* transcript bytes this restore read */
	const char	*index;		/* the index: none, cold, warm, rescan */
};

void		 profiler_init(struct prof *);
/* Start stage s (ending any stage still running as a success). */
void		 profiler_begin(struct prof *, enum profiler_stage s);
/* End the running stage; ok 0 marks it as the failed stage (first one wins). */
void		 profiler_end(struct prof *, int ok);
const char	*profiler_stage_name(enum profiler_stage);

/*
 * Start the span: a child of the W3C traceparent found at
 * meta["qwen.telemetry.traceparent"] when it is valid, else a new root.
 * meta is borrowed and may be NULL.
 */
struct span	*profiler_span_start(const char *name, json_object *meta);

/*
 * Put the stage durations, counters and lag snapshot on span and end it,
 * writing to sink (NULL: dropped).  operation is e.g. "acp_session_load";
 * error_kind NULL on success.
 */
void		 profiler_span_finish(struct span *, const struct prof *,
		    const struct lag_snapshot *, struct trace_sink *,
		    const char *operation, const char *action,
		    const char *session_id, const char *error_kind);

#endif
