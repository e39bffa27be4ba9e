/* SPDX-License-Identifier: ISC */
/*
 * gen.h: internals of qwen-gen-transcript (generator state, record writers).
 */
#ifndef QWEN_GEN_H
#define QWEN_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "gen-corpus.h"

#define MIB		(1024 * 1024)
#define TITLE_REANCHOR	(32 * 1024)
#define DISPLAY_LIMIT	32000

struct opts {
	double mib;
	uint64_t seed;
	int branches, compressions, glued, torn_tail, no_title, max_record_kib;
	const char *out, *data_dir, *workspace, *cwd, *session_id;
};

struct call {
	char id[32];
	const char *name;
	struct sbuf args, output, display;	/* JSON texts */
	size_t output_len;
};

struct gen {
	const struct opts *o;
	struct rng rng;
	struct corpus corpus;
	char sid[64];
	int64_t clock;
	char tail[37];			/* "" = null */
	char (*turn_parents)[37];
	int64_t *ctx_at_turn;
	size_t nturns, capturns;
	int64_t ctx_tokens;
	int turn_no;
	uint64_t bytes, target, cap;
	char title[64];
	int has_title;
	uint64_t since_title;
	struct sbuf rec, out;
	int fd;
	uint64_t *glue_at;
	int nglue, glue_i;
	struct call calls[3];
	char *cwdesc;
	const char *prov;		/* provenance override for the next base() */
};

/* qwen-gen-transcript.c: record framing. */
void gen_iso(int64_t ms, char out[80]);
/* Start a record in g->rec with the base fields (left open); uuid set. */
void gen_base(struct gen *, const char *type, int lo, int hi, char uuid[37]);
/* Write g->rec (closed by the caller) as one line, or glued to the next. */
void gen_emit(struct gen *, const char *uuid, int conv, int update_tail,
    int counts_for_title, int is_title);

/* gen-tools.c: arguments, output and display of one tool call. */
void gen_tool_call(struct gen *, struct call *);

/* gen-turn.c: the record kinds. */
void gen_prompt_text(struct gen *, struct sbuf *);
void gen_turn(struct gen *);
void gen_title(struct gen *, int lo, int hi, int counts);
void gen_compression(struct gen *);
void gen_rewind(struct gen *);

#endif /* QWEN_GEN_H */
