/* SPDX-License-Identifier: ISC */
/*
 * replay.h: projection of active-chain records to ACP SessionUpdate objects
 * (upstream-transcript.md 3.8), bounded to the newest turns.
 */
#ifndef QWEN_ACP_REPLAY_H
#define QWEN_ACP_REPLAY_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "chain.h"
#include "jsonw.h"
#include "project.h"
#include "transcript.h"

#define REPLAY_DEFAULT_MAX_BYTES	(4u * 1024 * 1024)
#define REPLAY_DEFAULT_MAX_UPDATES	10000u
#define REPLAY_MAX_PAGE_SIZE		500	/* upstream SESSION_TRANSCRIPT_MAX_LIMIT */

struct replay_opts {
	size_t max_bytes;            /* default 4 MiB (0 = default) */
	size_t max_updates;          /* default 10000 (0 = default) */
	int flags;                   /* PROJECT_* (project.h) */
	size_t page_size;            /* 0, or the newest page of at most this many
	                                records, turn aligned ("recent" replay) */
};
struct replay_result {
	struct projection p;         /* the kept updates, encoded: p.u[0..p.n) */
	size_t records;              /* chain records replayed */
	size_t truncated_records;    /* older chain records dropped to fit */
	int partial;                 /* something was dropped */
	int has_more;                /* older history exists beyond the window */
	uint64_t bytes;              /* encoded size of the updates array */
	ssize_t anchor;              /* paged: chain index of the first record, else -1 */
};
/* Keep the newest turns within opts (align the window to a turn start), parse only those
   records, project them per upstream-transcript.md §3.8. Caller clears result.
   opts NULL = defaults. -1 + cause (caller frees) on failure. */
int replay_build(struct transcript *, const struct tx_chain *, const struct replay_opts *,
    struct replay_result *, char **cause);
/* Append the updates as a JSON array to b. */
void replay_result_write(const struct replay_result *, struct jbuf *b);
/* The updates as they sit in r->p.enc, ','-separated, when the kept ones
   are contiguous there (the array without its brackets); else NULL. */
const char *replay_result_body(const struct replay_result *, size_t *len);
/* The updates parsed back into a json-c array (tests, tools; caller puts). */
json_object *replay_result_json(const struct replay_result *);
void replay_result_clear(struct replay_result *);          /* frees, zeroes */

#endif
