/* SPDX-License-Identifier: ISC */
/*
 * sse.c: an incremental Server-Sent Events parser.
 *
 * Bytes arrive in whatever slices libcurl's write callback gets.  Lines end
 * in LF, CRLF or a lone CR (a CRLF split over two slices is one line end);
 * a blank line dispatches the event.  Fields: id, event, data (several data
 * lines join with \n), retry (digits only); a line starting with ':' is a
 * comment; a field name without ':' has an empty value; one space after
 * the colon is dropped.  An event without data is not dispatched.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "restore.h"

struct sse_parser {
	sse_cb		 cb;
	void		*arg;
	char		*line;		/* the current, unfinished line */
	size_t		 line_len, line_cap;
	char		*data;		/* the data of the current event */
	size_t		 data_len, data_cap;
	int		 has_data;
	char		*id;
	int		 has_id;
	char		*event;
	long		 retry;
	int		 last_cr;	/* the previous byte ended a line in CR */
	unsigned long	 comments;
};

/* A new parser; caller frees with sse_free().  NULL on ENOMEM. */
struct sse_parser *
sse_new(sse_cb cb, void *arg)
{
	struct sse_parser	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->cb = cb;
	p->arg = arg;
	p->retry = -1;
	return p;
}

/* NULL-safe. */
void
sse_free(struct sse_parser *p)
{
	if (p == NULL)
		return;
	free(p->line);
	free(p->data);
	free(p->id);
	free(p->event);
	free(p);
}

/* Comment lines seen (for -v and the tests). */
unsigned long
sse_comments(const struct sse_parser *p)
{
	return p->comments;
}

/* Append len bytes to a growing buffer, bounded by SSE_MAX_BUFFER. */
static int
buf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	char	*nb;
	size_t	 ncap;

	if (*len + n + 1 > SSE_MAX_BUFFER)
		return -1;
	if (*len + n + 1 > *cap) {
		ncap = *cap ? *cap : 256;
		while (ncap < *len + n + 1)
			ncap *= 2;
		if ((nb = realloc(*buf, ncap)) == NULL)
			return -1;
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

/* Replace *dst with a copy of v. */
static int
set_str(char **dst, const char *v, size_t n)
{
	char	*s;

	if ((s = strndup(v, n)) == NULL)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

/* Dispatch the event collected so far (if it has data), then reset it. */
static int
sse_dispatch(struct sse_parser *p)
{
	struct sse_event	 ev;
	int			 rc = 0;

	if (p->has_data) {
		ev.id = p->has_id ? p->id : NULL;
		ev.event = p->event != NULL && p->event[0] != '\0' ?
		    p->event : "message";
		ev.data = p->data != NULL ? p->data : "";
		ev.retry = p->retry;
		rc = p->cb(p->arg, &ev) != 0 ? 1 : 0;
	}
	p->data_len = 0;
	if (p->data != NULL)
		p->data[0] = '\0';
	p->has_data = 0;
	p->has_id = 0;
	free(p->event);
	p->event = NULL;
	p->retry = -1;
	return rc;
}

/* Interpret one complete line (without its terminator). */
static int
sse_line(struct sse_parser *p, const char *line, size_t len)
{
	const char	*colon, *val;
	size_t		 nlen, vlen;

	if (len == 0)
		return sse_dispatch(p);
	if (line[0] == ':') {
		p->comments++;
		return 0;
	}
	colon = memchr(line, ':', len);
	nlen = colon != NULL ? (size_t)(colon - line) : len;
	val = colon != NULL ? colon + 1 : line + len;
	vlen = len - (size_t)(val - line);
	if (vlen > 0 && *val == ' ') {
		val++;
		vlen--;
	}
	if (nlen == 4 && memcmp(line, "data", 4) == 0) {
		if (p->has_data &&
		    buf_append(&p->data, &p->data_len, &p->data_cap, "\n", 1))
			return -1;
		p->has_data = 1;
		return buf_append(&p->data, &p->data_len, &p->data_cap, val,
		    vlen);
	}
	if (nlen == 2 && memcmp(line, "id", 2) == 0) {
		if (memchr(val, '\0', vlen) != NULL)
			return 0;	/* ignored, as the spec says */
		p->has_id = 1;
		return set_str(&p->id, val, vlen);
	}
	if (nlen == 5 && memcmp(line, "event", 5) == 0)
		return set_str(&p->event, val, vlen);
	if (nlen == 5 && memcmp(line, "retry", 5) == 0) {
		if (vlen > 0 && vlen < 10 && strspn(val, "0123456789") >= vlen)
			p->retry = strtol(val, NULL, 10);
		return 0;
	}
	return 0;	/* unknown field: ignored */
}

/* Finish the buffered line. */
static int
sse_end_line(struct sse_parser *p)
{
	int	rc;

	rc = sse_line(p, p->line != NULL ? p->line : "", p->line_len);
	p->line_len = 0;
	return rc;
}

/* Feed bytes; 0, 1 (callback stopped) or -1 (oversized frame, ENOMEM). */
int
sse_feed(struct sse_parser *p, const char *buf, size_t len)
{
	size_t	 i, start = 0;
	int	 rc;

	for (i = 0; i < len; i++) {
		if (buf[i] != '\n' && buf[i] != '\r') {
			p->last_cr = 0;
			continue;
		}
		if (buf[i] == '\n' && p->last_cr && i == start) {
			/* The LF of a CRLF whose CR ended the last line. */
			p->last_cr = 0;
			start = i + 1;
			continue;
		}
		if (buf_append(&p->line, &p->line_len, &p->line_cap,
		    buf + start, i - start) == -1)
			return -1;
		p->last_cr = buf[i] == '\r';
		start = i + 1;
		if ((rc = sse_end_line(p)) != 0)
			return rc;
	}
	if (start < len && buf_append(&p->line, &p->line_len, &p->line_cap,
	    buf + start, len - start) == -1)
		return -1;
	/* A frame that never ends must not grow without bound. */
	if (p->line_len + p->data_len > SSE_MAX_BUFFER)
		return -1;
	return 0;
}
