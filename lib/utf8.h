/* SPDX-License-Identifier: ISC */
/*
 * utf8.h: turning arbitrary process output into valid UTF-8 for JSON.
 *
 * Output arrives in pieces that may split a character; an incomplete
 * sequence at the end of a piece is carried into the next one.  Invalid
 * bytes become U+FFFD.
 */
#ifndef QWEN_UTF8_H
#define QWEN_UTF8_H

#include <stddef.h>

struct utf8_carry {
	unsigned char	buf[4];
	size_t		len;
};

/*
 * Clean carry + buf; final: flush an incomplete tail as U+FFFD.  Returns a
 * malloc'd string (caller frees) of *outlen bytes, NULL on allocation
 * failure.
 */
char	*utf8_clean(struct utf8_carry *, const char *buf, size_t len, int final,
	    size_t *outlen);

/*
 * Length of the valid sequence at s (n > 0 bytes available): > 0 valid,
 * 0 incomplete but a valid prefix, -1 invalid.
 */
int	 utf8_seq(const unsigned char *s, size_t n);

/* Whether s[0..n) is all valid UTF-8 (an incomplete tail is not). */
int	 utf8_valid(const char *s, size_t n);

/* The largest length <= want that does not split a character of s[0..len). */
size_t	 utf8_boundary(const char *s, size_t len, size_t want);

#endif
