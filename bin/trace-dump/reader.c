/* SPDX-License-Identifier: ISC */
/*
 * reader.c: a streaming line reader over trace files, stdin, or a growing
 * file (--follow).
 *
 * Each line is one OTLP/JSON ExportTraceServiceRequest; it is parsed with
 * one reused tokener, its spans are converted and passed on, and the
 * document is freed before the next line, so memory does not grow with the
 * file.  A malformed line is counted and reported with its line number and
 * never stops the run.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "rpc-frame.h"
#include "trace-dump.h"

#define READ_CHUNK	65536
#define LINE_MAX_BYTES	(64UL << 20)
#define REPORT_MAX	100	/* malformed lines reported per input */

struct reader {
	int		 fd;
	char		*name;
	char		*buf;
	size_t		 len, cap;
	off_t		 offset;	/* bytes consumed from fd */
	unsigned long	 lineno;
	unsigned long	 malformed;
	int		 skipping;	/* inside an overlong line */
	volatile sig_atomic_t *stop;	/* set: return early */
	json_tokener	*tok;
};

/* A reader over path ("-" = stdin); NULL with errno set.  Caller frees. */
struct reader *
reader_open(const char *path)
{
	struct reader *r;
	int fd, saved;

	if (strcmp(path, "-") == 0)
		fd = STDIN_FILENO;
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->name = strdup(strcmp(path, "-") == 0 ? "(stdin)" : path)) == NULL ||
	    (r->tok = json_tokener_new_ex(RPC_MAX_DEPTH)) == NULL) {
		saved = errno;
		if (r != NULL)
			free(r->name);
		free(r);
		if (fd != STDIN_FILENO)
			close(fd);
		errno = saved;
		return NULL;
	}
	json_tokener_set_flags(r->tok, JSON_TOKENER_STRICT);
	r->fd = fd;
	return r;
}

/* Close and free.  NULL-safe. */
void
reader_free(struct reader *r)
{
	if (r == NULL)
		return;
	if (r->fd != STDIN_FILENO)
		close(r->fd);
	json_tokener_free(r->tok);
	free(r->buf);
	free(r->name);
	free(r);
}

/* The input's name for messages (borrowed). */
const char *
reader_name(const struct reader *r)
{
	return r->name;
}

/* Return from reader_run early once *flag is set. */
void
reader_set_stop(struct reader *r, volatile sig_atomic_t *flag)
{
	r->stop = flag;
}

/* Can the input grow (a regular file)? */
int
reader_growable(const struct reader *r)
{
	struct stat st;

	return fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* How many malformed lines were seen. */
unsigned long
reader_malformed(const struct reader *r)
{
	return r->malformed;
}

/* Pass the spans of one resourceSpans entry to fn; 0 or -1 (reason set). */
static int
resource_parse(json_object *rs, const char *source, unsigned long lineno,
    reader_span_fn *fn, void *arg, char *why, size_t whysize)
{
	json_object *res, *attrs, *scopes, *spans;
	const char *service = NULL;
	int rc = 0;

	if (json_object_object_get_ex(rs, "resource", &res) &&
	    json_object_object_get_ex(res, "attributes", &attrs) &&
	    json_object_is_type(attrs, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(attrs); i++) {
			json_object *kv = json_object_array_get_idx(attrs, i), *k, *v, *s;

			if (json_object_object_get_ex(kv, "key", &k) &&
			    strcmp(json_object_get_string(k), "service.name") == 0 &&
			    json_object_object_get_ex(kv, "value", &v) &&
			    json_object_object_get_ex(v, "stringValue", &s))
				service = json_object_get_string(s);
		}
	}
	if (!json_object_object_get_ex(rs, "scopeSpans", &scopes) ||
	    !json_object_is_type(scopes, json_type_array)) {
		snprintf(why, whysize, "resourceSpans entry without scopeSpans");
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(scopes); i++) {
		json_object *sc = json_object_array_get_idx(scopes, i);

		if (!json_object_object_get_ex(sc, "spans", &spans) ||
		    !json_object_is_type(spans, json_type_array))
			continue;
		for (size_t j = 0; j < json_object_array_length(spans); j++) {
			json_object *so = json_object_array_get_idx(spans, j);
			struct tspan *sp = NULL;

			if (json_object_is_type(so, json_type_object))
				sp = span_parse(so, service, why, whysize);
			else
				snprintf(why, whysize, "span is not an object");
			if (sp == NULL) {
				rc = -1;
				continue;
			}
			sp->source = source;
			sp->line = lineno;
			fn(sp, arg);
		}
	}
	return rc;
}

/* Parse one line; see trace-dump.h. */
int
reader_parse_line(json_tokener *tok, const char *line, size_t len,
    const char *source, unsigned long lineno, reader_span_fn *fn, void *arg,
    char *why, size_t whysize)
{
	json_object *doc, *rss;
	enum json_tokener_error jerr;
	size_t end;
	int rc = 0;

	json_tokener_reset(tok);
	doc = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	if (doc == NULL) {
		snprintf(why, whysize, "invalid JSON: %s",
		    jerr == json_tokener_continue ? "truncated" :
		    json_tokener_error_desc(jerr));
		return -1;
	}
	end = json_tokener_get_parse_end(tok);
	while (end < len && strchr(" \t\r", line[end]) != NULL)
		end++;
	if (end != len) {
		snprintf(why, whysize, "invalid JSON: trailing data");
		rc = -1;
	} else if (!json_object_object_get_ex(doc, "resourceSpans", &rss) ||
	    !json_object_is_type(rss, json_type_array)) {
		snprintf(why, whysize,
		    "not an ExportTraceServiceRequest (no resourceSpans array)");
		rc = -1;
	} else {
		for (size_t i = 0; i < json_object_array_length(rss); i++)
			if (resource_parse(json_object_array_get_idx(rss, i),
			    source, lineno, fn, arg, why, whysize) == -1)
				rc = -1;
	}
	json_object_put(doc);
	return rc;
}

/* Count and report a malformed line. */
static void
reader_bad(struct reader *r, const char *why)
{
	r->malformed++;
	if (r->malformed <= REPORT_MAX)
		fprintf(stderr, "%s: %s:%lu: malformed line: %s\n", getprogname(),
		    r->name, r->lineno, why);
	if (r->malformed == REPORT_MAX)
		fprintf(stderr, "%s: %s: further malformed lines are counted but "
		    "not reported\n", getprogname(), r->name);
}

/* Handle one complete line (without its newline). */
static void
reader_line(struct reader *r, const char *line, size_t len,
    reader_span_fn *fn, void *arg)
{
	char why[160];
	size_t i;

	r->lineno++;
	for (i = 0; i < len && strchr(" \t\r", line[i]) != NULL; i++)
		;
	if (i == len)
		return;
	if (reader_parse_line(r->tok, line, len, r->name, r->lineno, fn, arg,
	    why, sizeof(why)) == -1)
		reader_bad(r, why);
}

/* Consume the complete lines in the buffer; keep a partial last line. */
static void
reader_drain(struct reader *r, reader_span_fn *fn, void *arg)
{
	size_t start = 0;
	char *nl;

	while ((nl = memchr(r->buf + start, '\n', r->len - start)) != NULL) {
		size_t n = (size_t)(nl - (r->buf + start));

		if (r->skipping) {
			r->skipping = 0;
			r->lineno++;
			reader_bad(r, "line longer than 64 MiB");
		} else
			reader_line(r, r->buf + start, n, fn, arg);
		start += n + 1;
	}
	memmove(r->buf, r->buf + start, r->len - start);
	r->len -= start;
	if (r->len > LINE_MAX_BYTES) {
		r->skipping = 1;
		r->len = 0;
	}
}

/* Start over when a followed file shrank (truncated like a rotated log). */
static void
reader_check_truncate(struct reader *r)
{
	struct stat st;

	if (fstat(r->fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size >= r->offset)
		return;
	fprintf(stderr, "%s: %s: file truncated\n", getprogname(), r->name);
	lseek(r->fd, 0, SEEK_SET);
	r->offset = 0;
	r->len = 0;
	r->skipping = 0;
	r->lineno = 0;
}

/* Read what is available; see trace-dump.h. */
int
reader_run(struct reader *r, int follow, reader_span_fn *fn, void *arg)
{
	ssize_t n;

	for (;;) {
		if (r->stop != NULL && *r->stop)
			return 0;
		if (r->cap - r->len < READ_CHUNK) {
			size_t ncap = r->cap == 0 ? 2 * READ_CHUNK : r->cap * 2;
			char *nbuf = realloc(r->buf, ncap);

			if (nbuf == NULL)
				return -1;
			r->buf = nbuf;
			r->cap = ncap;
		}
		n = read(r->fd, r->buf + r->len, READ_CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;
		r->offset += n;
		r->len += (size_t)n;
		reader_drain(r, fn, arg);
	}
	if (follow) {
		reader_check_truncate(r);
		return 1;
	}
	if (r->len > 0 && !r->skipping)
		reader_line(r, r->buf, r->len, fn, arg);
	r->len = 0;
	return 1;
}
