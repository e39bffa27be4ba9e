/*
 * project.h: projection of chain records to ACP SessionUpdate objects
 * (upstream-transcript.md 3.8), used by replay.c.
 */
#ifndef QWEN_ACP_PROJECT_H
#define QWEN_ACP_PROJECT_H

#include <stddef.h>

#include <json-c/json.h>

#include "chain.h"

#define PROJECT_JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

struct projection {
	json_object *updates;		/* array of SessionUpdate objects (owned) */
	size_t *origin;			/* per update: index into chain rec[] */
	size_t cap;
};

/* Parse and project c->rec[start..len) into *p (cleared first); tool calls
   still pending at the end get a failed tool_call_update.  -1 + cause. */
int project_window(struct transcript *, const struct tx_chain *, size_t start,
    struct projection *p, char **cause);
void project_clear(struct projection *);

#endif /* QWEN_ACP_PROJECT_H */
