/* SPDX-License-Identifier: ISC */
/*
 * search.c: the searchable text of a transcript (its titles and, as
 * upstream searches, the text of its user and assistant messages) and
 * the match of a query in it with a snippet.
 * listing-cache.c keeps each transcript's text in its per-file cache
 * (and listing-keep.c on disk), so a search of an unchanged directory
 * reads no transcript at all, and of a grown one only what was appended.
 */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <json-c/json.h>

#include "json.h"
#include "serve.h"
#include "xmalloc.h"

#define SEARCH_FILE_MAX		(16 * 1024 * 1024)	/* bytes read of one file */
#define SEARCH_CHUNK		(256 * 1024)
#define SEARCH_SNIPPET_BEFORE	40
#define SEARCH_SNIPPET_AFTER	100

struct search_text {
	char	*buf;
	size_t	 len;
};

/* Append s (and a newline) while the text has room. */
static void
text_add(struct search_text *t, const char *s)
{
	size_t n = strlen(s);

	/* Room for a byte, the newline and the NUL, or nothing is added. */
	if (n == 0 || t->len + 2 >= SEARCH_TEXT_MAX)
		return;
	if (t->len + n + 2 > SEARCH_TEXT_MAX)
		n = SEARCH_TEXT_MAX - 2 - t->len;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len++] = '\n';
	t->buf[t->len] = '\0';
}

/* Whether a line may be a user, assistant or title record. */
static int
line_wanted(const char *line, size_t len)
{
	/* qwen-code writes compact JSON; a space after the colon is let
	   through too. */
	return memmem(line, len, "\"type\":\"user\"", 13) != NULL ||
	    memmem(line, len, "\"type\": \"user\"", 14) != NULL ||
	    memmem(line, len, "\"type\":\"assistant\"", 18) != NULL ||
	    memmem(line, len, "\"type\": \"assistant\"", 19) != NULL ||
	    memmem(line, len, "\"custom_title\"", 14) != NULL;
}

/*
 * The text parts of a user or assistant message (not a subtyped one, as
 * upstream leaves those out), or the title of a custom_title record.
 */
static void
line_text(struct search_text *t, const char *line, size_t len)
{
	json_object *rec, *parts, *p;
	const char *s;

	if (!line_wanted(line, len) || (rec = json_tokener_parse(line)) == NULL)
		return;
	if ((s = json_get_str(json_get_obj(rec, "systemPayload"),
	    "customTitle")) != NULL)
		text_add(t, s);
	else if ((s = json_get_str(rec, "type")) != NULL &&
	    (strcmp(s, "user") == 0 || strcmp(s, "assistant") == 0) &&
	    !json_object_object_get_ex(rec, "subtype", NULL) &&
	    (parts = json_get(json_get_obj(rec, "message"), "parts",
	    json_type_array)) != NULL)
		for (size_t i = 0; i < json_object_array_length(parts); i++) {
			p = json_object_array_get_idx(parts, i);
			if ((s = json_get_str(p, "text")) != NULL)
				text_add(t, s);
		}
	json_object_put(rec);
}

/* Feed the whole lines of buf[0..*len) to line_text; keep the tail. */
static void
chunk_lines(struct search_text *t, char *buf, size_t *len)
{
	char *p = buf, *nl;

	while ((nl = memchr(p, '\n', *len - (size_t)(p - buf))) != NULL) {
		*nl = '\0';
		line_text(t, p, (size_t)(nl - p));
		p = nl + 1;
	}
	*len -= (size_t)(p - buf);
	memmove(buf, p, *len);
}

/* t's text, its buffer cut to its length; whether it takes no more. */
static char *
text_done(struct search_text *t, int *full)
{
	*full = t->len + 2 >= SEARCH_TEXT_MAX;
	return xreallocarray(t->buf, t->len + 1, 1);
}

/*
 * The searchable text of fd's transcript up to to (the first 16 MiB;
 * lines longer than a chunk are skipped: no prompt is that long in a
 * useful way).  *full: it takes no more (the text or the bytes read are
 * at their bound).  The bytes read are counted.  Caller frees; never NULL.
 */
char *
search_text_read(int fd, int64_t to, int *full)
{
	struct search_text t = { xmalloc(SEARCH_TEXT_MAX), 0 };
	char *buf = xmalloc(SEARCH_CHUNK + 1);
	size_t len = 0, want;
	off_t off = 0;
	ssize_t n;

	t.buf[0] = '\0';
	if (to > SEARCH_FILE_MAX)
		to = SEARCH_FILE_MAX;
	while (off < to && t.len + 2 < SEARCH_TEXT_MAX) {
		want = SEARCH_CHUNK - len;
		if ((int64_t)want > to - off)
			want = (size_t)(to - off);
		if ((n = pread(fd, buf + len, want, off)) <= 0)
			break;
		metrics_listing_read((uint64_t)n);
		off += n;
		len += (size_t)n;
		buf[len] = '\0';
		chunk_lines(&t, buf, &len);
		if (len == SEARCH_CHUNK)
			len = 0;	/* one line over the chunk: dropped */
	}
	if (len > 0 && len < SEARCH_CHUNK) {
		buf[len] = '\0';
		line_text(&t, buf, len);
	}
	free(buf);
	t.buf = text_done(&t, full);
	if (off >= SEARCH_FILE_MAX)
		*full = 1;
	return t.buf;
}

/*
 * old (taken) with the searchable text of the whole lines in buf[0..len)
 * (appended to its transcript) added; buf's lines are cut.  Caller frees.
 */
char *
search_text_extend(char *old, char *buf, size_t len, int *full)
{
	struct search_text t = { xmalloc(SEARCH_TEXT_MAX), 0 };

	t.len = strlcpy(t.buf, old, SEARCH_TEXT_MAX);
	if (t.len >= SEARCH_TEXT_MAX)
		t.len = SEARCH_TEXT_MAX - 1;
	t.buf[t.len] = '\0';
	free(old);
	chunk_lines(&t, buf, &len);
	return text_done(&t, full);
}

/*
 * Whether text holds q (ASCII case folded); *snippet (caller frees) is
 * the match's line around it, cut on character boundaries.
 */
int
search_match(const char *text, const char *q, char **snippet)
{
	const char *m = strcasestr(text, q), *a, *b, *end;
	char *s;

	if (m == NULL)
		return 0;
	for (a = m; a > text && a[-1] != '\n' && m - a < SEARCH_SNIPPET_BEFORE; a--)
		;
	while (((unsigned char)*a & 0xc0) == 0x80)
		a++;
	end = m + strlen(q);
	for (b = end; *b != '\0' && *b != '\n' && b - end < SEARCH_SNIPPET_AFTER; b++)
		;
	while (*b != '\0' && ((unsigned char)*b & 0xc0) == 0x80)
		b--;
	s = xstrndup(a, (size_t)(b - a));
	for (char *c = s; *c != '\0'; c++)
		if (*c == '\r' || *c == '\t')
			*c = ' ';
	*snippet = s;
	return 1;
}
