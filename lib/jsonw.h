/* SPDX-License-Identifier: ISC */
/*
 * jsonw.h: a fast JSON writer for big answers.
 *
 * json-c serialises at about 50 MB/s; a bulk replay answer is megabytes,
 * encoded on a worker but still on the restore's critical path.  This
 * writer walks the json-c tree and escapes strings a run at a time, byte
 * for byte the same output as json-c's PLAIN | NOSLASHESCAPE, except that
 * a byte that is not part of valid UTF-8 becomes U+FFFD (json-c copies it,
 * and the daemon rejects a frame that holds it).
 */
#ifndef QWEN_JSONW_H
#define QWEN_JSONW_H

#include <stddef.h>
#include <string.h>

#include <json-c/json.h>

struct jbuf {
	char	*p;
	size_t	 len;
	size_t	 cap;
	int	 oom;		/* an allocation failed: the content is incomplete */
};

/* Make room for n more bytes (and a NUL); 0, or -1 with b->oom set. */
int	jbuf_grow(struct jbuf *, size_t n);
void	jbuf_puts(struct jbuf *, const char *s);

/* Append n bytes of s. */
static inline void
jbuf_put(struct jbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap && jbuf_grow(b, n) == -1)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}
/* Append o (borrowed) as compact JSON. */
void	jsonw_value(struct jbuf *, json_object *o);
/* Append s as a JSON string (quotes included). */
void	jsonw_string(struct jbuf *, const char *s, size_t n);
/* Append byte c of a string value, escaped as jsonw_string() escapes it. */
void	jsonw_char(struct jbuf *, unsigned char c);
void	jbuf_free(struct jbuf *);

#endif
