/* SPDX-License-Identifier: ISC */
/*
 * jtape.h: a flat, allocation-light JSON reader for the replay fast path.
 *
 * One record's bytes are parsed into a tape of nodes pointing into the
 * input (no string copies, no DOM).  The parser accepts only inputs on
 * which json-c (JSON_TOKENER_STRICT) and the canonical writer below agree
 * byte for byte; anything else (NaN, -0, big integers, \u0000, surrogate
 * escapes, invalid UTF-8, escaped or duplicate keys, deep nesting, odd
 * whitespace, any syntax error) makes jt_parse() answer JT_BAIL and the caller uses json-c.
 */
#ifndef QWEN_JTAPE_H
#define QWEN_JTAPE_H

#include <stddef.h>
#include <stdint.h>

#include "jsonw.h"

enum jt_type { JT_OBJ = 1, JT_ARR, JT_STR, JT_NUM, JT_TRUE, JT_FALSE, JT_NULL };

struct jt_node {
	const char	*p;	/* string: after the quote; others: first byte */
	uint32_t	 len;	/* string: raw bytes; number: text; obj/arr: members */
	uint32_t	 next;	/* index of the node after this subtree */
	uint8_t		 type;	/* enum jt_type */
	uint8_t		 plain;	/* string: the raw bytes are the value, canonical */
	uint8_t		 canon;	/* string: the raw bytes are what jsonw_string()
				   writes for the value (no raw control byte,
				   escaped slash or \u) */
};

struct jt_block;

struct jtape {
	struct jt_node	*n;
	size_t		 len, cap;
	struct jt_block	*arena;	/* C strings handed out since the last parse */
};

#define JT_OK	0
#define JT_BAIL	1		/* not for the fast path: use json-c */
#define JT_OOM	(-1)

/* Parse [p, p+n) (one value, blanks around allowed).  Node 0 is the root. */
int	jt_parse(struct jtape *, const char *p, size_t n);
void	jt_free(struct jtape *);		/* the tape itself stays usable */

/* Member key of object obj, or -1 (also when obj is -1 or not an object). */
int	jt_get(const struct jtape *, int obj, const char *key);
/* jt_get, then -1 unless the member has the given type. */
int	jt_get_typed(const struct jtape *, int obj, const char *key, enum jt_type);
/* The value of string node i as a NUL-terminated string, valid until the
   next jt_parse(); NULL when i is not a string or on OOM (*oom set). */
const char *jt_cstr(struct jtape *, int i, int *oom);
/* jt_cstr of a string member, NULL when absent or not a string. */
const char *jt_get_str(struct jtape *, int obj, const char *key, int *oom);
/* Array elements: first is i + 1, then n[e].next, count n[i].len. */
#define JT_FIRST(i)	((i) + 1)
#define JT_NEXT(t, e)	((int)(t)->n[(e)].next)

/* Append node i as compact JSON, as jsonw_value() would write json-c's
   parse of it. */
void	jt_write(struct jbuf *, const struct jtape *, int i);

#endif
