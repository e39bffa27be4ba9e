/*
 * jsonw.h: a fast JSON writer for big answers.
 *
 * json-c serialises at about 50 MB/s; a bulk replay answer is megabytes,
 * encoded on a worker but still on the restore's critical path.  This
 * writer walks the json-c tree and escapes strings a run at a time, byte
 * for byte the same output as json-c's PLAIN | NOSLASHESCAPE.
 */
#ifndef ACP_JSONW_H
#define ACP_JSONW_H

#include <stddef.h>

#include <json-c/json.h>

struct jbuf {
	char	*p;
	size_t	 len;
	size_t	 cap;
	int	 oom;		/* an allocation failed: the content is incomplete */
};

void	jbuf_put(struct jbuf *, const char *s, size_t n);
void	jbuf_puts(struct jbuf *, const char *s);
/* Append o (borrowed) as compact JSON. */
void	jsonw_value(struct jbuf *, json_object *o);
/* Append s as a JSON string (quotes included). */
void	jsonw_string(struct jbuf *, const char *s, size_t n);
/* Append byte c of a string value, escaped as jsonw_string() escapes it. */
void	jsonw_char(struct jbuf *, unsigned char c);
void	jbuf_free(struct jbuf *);

#endif
