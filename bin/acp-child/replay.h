/*
 * replay.h: projection of active-chain records to ACP SessionUpdate objects
 * (upstream-transcript.md 3.8), bounded to the newest turns.
 */
#ifndef QWEN_ACP_REPLAY_H
#define QWEN_ACP_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "chain.h"
#include "transcript.h"

#define REPLAY_DEFAULT_MAX_BYTES	(4u * 1024 * 1024)
#define REPLAY_DEFAULT_MAX_UPDATES	10000u

struct replay_opts { size_t max_bytes; size_t max_updates; };   /* defaults 4 MiB, 10000 (0 = default) */
struct replay_result {
	json_object *updates;        /* array of ACP SessionUpdate objects ({sessionUpdate:..., ...}) */
	size_t records;              /* chain records replayed */
	size_t truncated_records;    /* older chain records dropped to fit */
	int partial;                 /* something was dropped */
	int has_more;                /* older history exists beyond the window */
	uint64_t bytes;              /* encoded size of updates */
};
/* Keep the newest turns within opts (align the window to a turn start), parse only those
   records, project them per upstream-transcript.md §3.8. Caller owns result->updates.
   opts NULL = defaults. -1 + cause (caller frees) on failure. */
int replay_build(struct transcript *, const struct tx_chain *, const struct replay_opts *,
    struct replay_result *, char **cause);
void replay_result_clear(struct replay_result *);          /* puts updates, zeroes */

#endif /* QWEN_ACP_REPLAY_H */
