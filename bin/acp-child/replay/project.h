/* SPDX-License-Identifier: ISC */
/*
 * project.h: projection of chain records to ACP SessionUpdate objects
 * (upstream-transcript.md 3.8), used by replay.c.  Updates are kept encoded
 * (compact JSON, as json-c PLAIN | NOSLASHESCAPE writes them).
 */
#ifndef QWEN_ACP_PROJECT_H
#define QWEN_ACP_PROJECT_H

#include <stddef.h>

#include <json-c/json.h>

#include "chain.h"
#include "jsonw.h"

#define PROJECT_JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* One encoded update: p->enc.p[off .. off+len), from chain record origin. */
struct pupd {
	size_t origin;
	size_t off;
	size_t len;
};

struct projection {
	struct jbuf enc;		/* the encoded updates, ',' between them */
	struct pupd *u;			/* per update, in order */
	size_t n, cap;
	size_t fast_records;		/* records projected from their raw bytes */
	size_t jsonc_records;		/* records projected through json-c */
};

#define PROJECT_JSONC	0x01		/* every record through json-c (tests) */
#define PROJECT_HIDE_INHERITED 0x02	/* skip records with forkedFrom */
#define PROJECT_OPEN_END 0x04		/* a page: calls still open at its end
					   may be answered on the next page */
#define PROJECT_CHAIN_STATS 0x08	/* a plan's stats count the records
					   before the window too (else from
					   its first record, as the agent) */

/* Project c->rec[start..len) into *p (cleared first) as encoded updates:
   each record straight from its bytes when the fast path can read it, else
   parsed with json-c; tool calls still pending at the end get a failed
   tool_call_update.  flags: PROJECT_*.  -1 + cause. */
int project_window(struct transcript *, const struct tx_chain *, size_t start,
    int flags, struct projection *p, char **cause);

/*
 * The token counts of one chain's records before a page (what
 * PROJECT_CHAIN_STATS adds at a page's first plan), kept between the pages
 * of that chain: a sum every PROJECT_USAGE_EVERY records, made as pages
 * need them, so a page near the end of a long session parses the records
 * since the last sum, not all before it.  Zeroed to start; cleared when
 * the chain changes.
 */
#define PROJECT_USAGE_EVERY	256
struct project_usage {
	double	(*sum)[3];	/* sum[k]: the chain's records [0, k * EVERY) */
	size_t	  n, cap;	/* sums made, room */
};
/* project_window with the sums of the chain's records kept in *u. */
int project_window_usage(struct transcript *, const struct tx_chain *,
    size_t start, int flags, struct project_usage *u, struct projection *p,
    char **cause);
void project_usage_clear(struct project_usage *);	/* forget the sums */
void project_clear(struct projection *);
/* Whether rec carries forkedFrom (history inherited from a fork parent):
   1, 0, or -1 + cause on I/O failure. */
int project_inherited(struct transcript *, uint32_t rec, char **cause);

#endif
