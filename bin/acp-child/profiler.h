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

enum prof_stage {
	PROF_SETTINGS_LOAD,
	PROF_EXISTENCE_CHECK,
	PROF_TRANSCRIPT_READ,
	PROF_CHAIN_RECONSTRUCT,
	PROF_CONFIG_SETUP,
	PROF_AUTH,
	PROF_FILE_SYSTEM_SETUP,
	PROF_SESSION_REGISTER,
	PROF_HISTORY_REPLAY,
	PROF_RESPONSE_BUILD,
	PROF_NSTAGES
};

struct prof {
	uint64_t	 stage_ns[PROF_NSTAGES];
	unsigned char	 ran[PROF_NSTAGES];
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

void		 prof_init(struct prof *);
/* Start stage s (ending any stage still running as a success). */
void		 prof_begin(struct prof *, enum prof_stage s);
/* End the running stage; ok 0 marks it as the failed stage (first one wins). */
void		 prof_end(struct prof *, int ok);
const char	*prof_stage_name(enum prof_stage);

/*
 * Start the span: a child of the W3C traceparent found at
 * meta["qwen.telemetry.traceparent"] when it is valid, else a new root.
 * meta is borrowed and may be NULL.
 */
struct span	*prof_span_start(const char *name, json_object *meta);

/*
 * Put the stage durations, counters and lag snapshot on span and end it,
 * writing to sink (NULL: dropped).  operation is e.g. "acp_session_load";
 * error_kind NULL on success.
 */
void		 prof_span_finish(struct span *, const struct prof *,
		    const struct lag_snapshot *, struct trace_sink *,
		    const char *operation, const char *action,
		    const char *session_id, const char *error_kind);

#endif
