/* SPDX-License-Identifier: ISC */
/*
 * gen-corpus.h: buffers, a seeded PRNG and pre-built text pools for
 * qwen-gen-transcript.
 */
#ifndef QWEN_GEN_CORPUS_H
#define QWEN_GEN_CORPUS_H

#include <stddef.h>
#include <stdint.h>

struct sbuf {
	char *p;
	size_t len, cap;
};

struct rng {
	uint64_t s[4];
};

struct corpus {
	char *code;			/* lines of code/log text, '\n'-separated */
	size_t ncode;
	char *prose;			/* sentences */
	size_t nprose;
};

void sb_put(struct sbuf *, const void *, size_t);
void sb_putc(struct sbuf *, char);
void sb_puts(struct sbuf *, const char *);
void sb_printf(struct sbuf *, const char *, ...) __attribute__((format(printf, 2, 3)));
/* Append s[0..n) as a quoted JSON string. */
void sb_json(struct sbuf *, const char *, size_t);
void sb_free(struct sbuf *);

void rng_seed(struct rng *, uint64_t);
uint64_t rng_next(struct rng *);
int64_t rng_range(struct rng *, int64_t lo, int64_t hi);	/* inclusive */
double rng_real(struct rng *);					/* [0, 1) */

void corpus_init(struct corpus *, struct rng *);
void corpus_free(struct corpus *);
/* Append about n bytes of code (or prose) text, JSON-escaped, unquoted. */
void corpus_code(const struct corpus *, struct rng *, struct sbuf *, size_t n);
void corpus_prose(const struct corpus *, struct rng *, struct sbuf *, size_t n);
/* A word or identifier from the fixed lists. */
const char *corpus_ident(struct rng *);
const char *corpus_word(struct rng *);
/* Largest cut <= pos in escaped text p that splits no escape or UTF-8 sequence. */
size_t corpus_safe_cut(const char *p, size_t pos);

#endif /* QWEN_GEN_CORPUS_H */
