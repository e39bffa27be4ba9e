/* SPDX-License-Identifier: ISC */
/*
 * jtape-int.h: internals shared by jtape.c (the reader) and jtape-str.c
 * (strings: decoding and canonical writing).
 */
#ifndef QWEN_JTAPE_INT_H
#define QWEN_JTAPE_INT_H

#include "jtape.h"
#include "scan-special.h"

struct jt_block {
	struct jt_block	*next;
	size_t		 len, cap;
	char		 buf[];
};

/* Forget the C strings handed out for the previous record. */
void	jt_arena_reset(struct jtape *);

static inline int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The code unit of the \uXXXX escape at s (s[0] == '\\'), or -1. */
static inline long
uescape(const char *s, const char *e)
{
	long v = 0;
	int i, h;

	if (e - s < 6)
		return -1;
	for (i = 2; i < 6; i++) {
		if ((h = hexval(s[i])) < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

#endif
