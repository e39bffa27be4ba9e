/* SPDX-License-Identifier: ISC */
/*
 * rpc-frame.c: NDJSON JSON-RPC 2.0 framing: the incremental line reader and
 * the parser.  Classification, builders and the writer are in rpc-message.c.
 *
 * The reader keeps the unconsumed bytes in buf[start, end) and remembers that
 * buf[start, scan) holds no newline, so memchr looks at each byte once however
 * the input is split.  Space is reclaimed by moving the unconsumed bytes to
 * the front only when at least half of the buffer is free afterwards, which
 * keeps the copying amortised O(1) per byte; a buffer that grew past
 * READER_KEEP is released as soon as it empties.
 *
 * The frame cap counts the bytes before the '\n', a '\r' included, so that
 * "cap bytes then \r\n" is judged the same however it is split.
 *
 * Accepted JSON: what json-c 0.16 accepts with JSON_TOKENER_STRICT and
 * JSON_TOKENER_VALIDATE_UTF8 (so no trailing commas, leading zeros, trailing
 * garbage or invalid UTF-8), minus what this file rejects on top: single
 * quoted strings or keys, and the NaN, Infinity and -Infinity literals.
 * Still accepted: raw control characters (a tab) inside strings, a lone
 * \ud800 escape, and integers beyond the int64/uint64 range, which json-c
 * clamps.  Numbers such as 1e400 are kept as written.
 */
#include "config.h"

#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json-limit.h"
#include "rpc-frame.h"
#include "rpc-frame-int.h"

#define READER_MIN	16384		/* first allocation */
#define READER_KEEP	(1024 * 1024)	/* release a larger buffer when empty */

#define TOKENER_FLAGS	(JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8)
#define ENCODE_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

struct rpc_reader {
	struct json_tokener	*tok;
	char			*buf;
	size_t			 size;		/* allocated */
	size_t			 start;		/* first unconsumed byte */
	size_t			 scan;		/* no '\n' in [start, scan) */
	size_t			 end;		/* one past the last byte */
	size_t			 max_frame;
	size_t			 max_values;	/* rpc_reader_limit; 0: none */
	size_t			 line_no;	/* lines completed so far */
	int			 discarding;	/* inside an oversize line */
	struct rpc_splice_spec	 splice[RPC_SPLICE_MAX]; /* kept arrays */
	size_t			 nsplice;
	struct rpc_splice	 sp;		/* the current line's scan */
};

static const char msg_parse[] = "Parse error: not valid JSON";
static const char msg_nonfinite[] = "Parse error: NaN or Infinity";
static const char msg_quote[] = "Parse error: single-quoted string";
static const char msg_too_large[] = "Invalid Request: frame too large";
static const char msg_too_many[] = "Invalid Request: too many JSON values or "
    "nested too deep";

/* Make a new tokener with the library's depth and flags. */
static struct json_tokener *
tokener_new(void)
{
	struct json_tokener *tok;

	if ((tok = json_tokener_new_ex(RPC_MAX_DEPTH)) != NULL)
		json_tokener_set_flags(tok, TOKENER_FLAGS);
	return tok;
}

/* Create a reader; the cap is clamped to what json-c can parse (INT_MAX). */
struct rpc_reader *
rpc_reader_new(size_t max_frame)
{
	struct rpc_reader *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	if ((r->tok = tokener_new()) == NULL) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	if (max_frame == 0)
		max_frame = RPC_DEFAULT_MAX_FRAME;
	r->max_frame = max_frame > INT_MAX ? INT_MAX : max_frame;
	return r;
}

/* Free the reader and whatever it buffered. */
void
rpc_reader_free(struct rpc_reader *r)
{
	if (r == NULL)
		return;
	json_tokener_free(r->tok);
	rpc_splice_reset(&r->sp);
	free(r->buf);
	free(r);
}

/* Make room for len more bytes after end, compacting or growing. */
static int
reader_reserve(struct rpc_reader *r, size_t len)
{
	size_t used = r->end - r->start, need, size;
	char *nbuf;

	if (r->size - r->end >= len)
		return 0;
	if (len > SIZE_MAX / 4 - used) {
		errno = ENOMEM;
		return -1;
	}
	need = used + len;
	if (need > r->size / 2) {
		/* A long line (a load's few MiB) grows four times a step: each
		   step copies what is in, and a spliced line's buffer is lent
		   away with it, so every big answer grows one from the start.
		   The lent buffer is cut to its bytes. */
		size = r->size != 0 ? r->size : READER_MIN;
		while (size < need)
			size *= size >= READER_KEEP / 4 ? 4 : 2;
		if ((nbuf = realloc(r->buf, size)) == NULL)
			return -1;
		r->buf = nbuf;
		r->size = size;
		if (r->size - r->end >= len)
			return 0;
	}
	memmove(r->buf, r->buf + r->start, used);
	r->scan -= r->start;
	r->end -= r->start;
	r->start = 0;
	return 0;
}

/* Append bytes; while discarding an oversize line, drop up to its newline. */
int
rpc_reader_feed(struct rpc_reader *r, const void *data, size_t len)
{
	const char *p = data, *nl;
	size_t rest;

	if (len == 0)
		return 0;
	if (r->discarding) {
		/* The buffer is empty while discarding. */
		if ((nl = memchr(p, '\n', len)) == NULL)
			return 0;
		rest = len - (size_t)(nl + 1 - p);
		if (rest > 0 && reader_reserve(r, rest) == -1)
			return -1;
		r->discarding = 0;
		r->line_no++;
		p = nl + 1;
		len = rest;
		if (len == 0)
			return 0;
	} else if (reader_reserve(r, len) == -1)
		return -1;
	/* Bytes read into rpc_reader_space may have moved down a newline. */
	if (p != r->buf + r->end)
		memmove(r->buf + r->end, p, len);
	r->end += len;
	return 0;
}

void *
rpc_reader_space(struct rpc_reader *r, size_t len)
{
	if (reader_reserve(r, len) == -1)
		return NULL;
	return r->buf + r->end;
}

/* Once everything is consumed, rewind and release an oversized buffer. */
static void
reader_settle(struct rpc_reader *r)
{
	if (r->start != r->end)
		return;
	r->start = r->scan = r->end = 0;
	if (r->size > READER_KEEP) {
		free(r->buf);
		r->buf = NULL;
		r->size = 0;
	}
}

/* Fill *bad; takes ownership of id (NULL for none). */
static enum rpc_read_status
bad_set(struct rpc_bad *bad, int code, const char *message, json_object *id)
{
	bad->code = code;
	bad->message = message;
	bad->id = id;
	return RPC_READ_BAD;
}

/* Whether buf holds only JSON whitespace. */
static int
is_blank(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r')
			return 0;
	return 1;
}

/*
 * Whether a '\'' stands outside every double-quoted string in buf (json-c
 * STRICT still takes {'a':1}).  Strings are skipped with memchr; the
 * backslashes before each '"' are counted to see whether it is escaped.
 */
static int
has_single_quote(const char *buf, size_t len)
{
	const char *q;
	size_t i = 0, k;

	if (memchr(buf, '\'', len) == NULL)
		return 0;
	while (i < len) {
		while (i < len && buf[i] != '"' && buf[i] != '\'')
			i++;
		if (i == len)
			return 0;
		if (buf[i++] == '\'')
			return 1;
		/* Inside a string: find the '"' that closes it. */
		for (;;) {
			if ((q = memchr(buf + i, '"', len - i)) == NULL)
				return 0;
			for (k = (size_t)(q - buf); k > i && buf[k - 1] == '\\'; k--)
				;
			i = (size_t)(q - buf) + 1;
			if (((size_t)(q - buf) - k) % 2 == 0)
				break;
		}
	}
	return 0;
}

/* Whether the tree holds a NaN or an Infinity literal (not 1e400). */
static int
has_nonfinite(json_object *o)
{
	const char *s;
	double d;
	size_t i, n;

	switch (json_object_get_type(o)) {
	case json_type_double:
		d = json_object_get_double(o);
		if (isnan(d))
			return 1;
		if (!isinf(d))
			return 0;
		s = json_object_to_json_string_ext(o, ENCODE_FLAGS);
		return s == NULL || strchr(s, 'I') != NULL;
	case json_type_array:
		n = json_object_array_length(o);
		for (i = 0; i < n; i++)
			if (has_nonfinite(json_object_array_get_idx(o, i)))
				return 1;
		return 0;
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			(void)key;
			if (has_nonfinite(val))
				return 1;
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* Whether buf, parsed into root, spells a NaN or an Infinity literal. */
static int
nonfinite_in(const char *buf, size_t len, json_object *root)
{
	return (memmem(buf, len, "NaN", 3) != NULL ||
	    memmem(buf, len, "Infinity", 8) != NULL) && has_nonfinite(root);
}

int
rpc_frame_suspect(const char *buf, size_t len, json_object *root)
{
	return has_single_quote(buf, len) || nonfinite_in(buf, len, root);
}

/*
 * Parse buf with tok (reset first) and classify the result; a line of more
 * than max_values values (0: no limit) is refused before it is parsed.
 */
static enum rpc_read_status
parse_with(struct json_tokener *tok, const char *buf, size_t len,
    size_t max_values, struct rpc_msg *msg, struct rpc_bad *bad)
{
	json_object *root;
	size_t used = len;

	if (len > INT_MAX)
		return bad_set(bad, RPC_INVALID_REQUEST, msg_too_large, NULL);
	/* Refused unparsed, but answered with the id its bytes name. */
	if (max_values != 0 &&
	    !json_limit_ok(buf, len, max_values, RPC_MAX_DEPTH))
		return bad_set(bad, RPC_INVALID_REQUEST, msg_too_many,
		    rpc_frame_scan_id(buf, len));
	json_tokener_reset(tok);
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (root == NULL &&
	    json_tokener_get_error(tok) == json_tokener_continue) {
		/* A top-level scalar ends only at a delimiter: give it one. */
		root = json_tokener_parse_ex(tok, " ", 1);
		used = 1;
	}
	/* json-c returns NULL with success for a JSON null. */
	if ((root == NULL &&
	    json_tokener_get_error(tok) != json_tokener_success) ||
	    json_tokener_get_parse_end(tok) != used) {
		json_object_put(root);
		json_tokener_reset(tok);
		return bad_set(bad, RPC_PARSE_ERROR, msg_parse, NULL);
	}
	if (has_single_quote(buf, len)) {
		json_object_put(root);
		return bad_set(bad, RPC_PARSE_ERROR, msg_quote, NULL);
	}
	if (nonfinite_in(buf, len, root)) {
		json_object_put(root);
		return bad_set(bad, RPC_PARSE_ERROR, msg_nonfinite, NULL);
	}
	return rpc_classify(root, msg, bad);
}

/*
 * json-c's reset keeps a high surrogate a failed parse was holding: the
 * next line's first \u escape would decode to U+FFFD plus the character.
 * After a failure on a line with a \u escape the reader takes a new
 * tokener (keeping the old one if there is no memory for it).
 */
static void
reader_fresh_tokener(struct rpc_reader *r)
{
	struct json_tokener *tok;

	if ((tok = tokener_new()) == NULL)
		return;
	json_tokener_free(r->tok);
	r->tok = tok;
}

/*
 * A spliced array stays where it was read: its raw takes the reader's
 * buffer (what follows the array given back), and the reader moves the
 * bytes after the line to a new one.  A copy of the array's few MiB cost
 * the daemon more than its scan.  Copies the array instead when there is
 * no memory for the new buffer; -1 when not even for that.
 */
static int
reader_lend(struct rpc_reader *r, struct rpc_raw *raw)
{
	size_t used = r->end - r->start, size = READER_MIN, off;
	char *nb, *mem;

	while (size < used)
		size *= 2;
	if ((nb = malloc(size)) == NULL) {
		if ((mem = malloc(raw->len + 1)) == NULL)
			return -1;
		memcpy(mem, raw->bytes, raw->len);
		raw->mem = raw->bytes = mem;
		return 0;
	}
	memcpy(nb, r->buf + r->start, used);
	off = (size_t)(raw->bytes - r->buf);
	if ((mem = realloc(r->buf, off + raw->len + 1)) == NULL)
		mem = r->buf;
	raw->mem = mem;
	raw->bytes = mem + off;
	r->buf = nb;
	r->size = size;
	r->start = r->scan = 0;
	r->end = used;
	return 0;
}

/*
 * Handle one complete line (without its '\n'); RPC_READ_MORE means it was
 * blank.  line points into the reader's buffer, which stays put meanwhile;
 * r->sp holds what was scanned of it (the caller resets it after).
 */
static enum rpc_read_status
reader_line(struct rpc_reader *r, const char *line, size_t len,
    struct rpc_msg *msg, struct rpc_bad *bad)
{
	enum rpc_read_status st;
	struct rpc_raw *lent = NULL;

	if (len > r->max_frame)
		st = bad_set(bad, RPC_INVALID_REQUEST, msg_too_large, NULL);
	else {
		if (len > 0 && line[len - 1] == '\r')
			len--;
		if (is_blank(line, len))
			return RPC_READ_MORE;
		if (r->nsplice == 0 || rpc_splice_parse(&r->sp, r->tok,
		    r->splice, r->nsplice, line, len, msg, bad, &st,
		    &lent) == -1)
			st = parse_with(r->tok, line, len, r->max_values, msg,
			    bad);
		else if (st == RPC_READ_MSG && reader_lend(r, lent) == -1) {
			/* (A bad message has dropped its raw already.) */
			rpc_msg_clear(msg);
			st = bad_set(bad, RPC_INTERNAL_ERROR,
			    "Internal error: out of memory", NULL);
		}
	}
	if (st == RPC_READ_MSG)
		msg->line_no = r->line_no;
	else {
		bad->line_no = r->line_no;
		if (bad->id == NULL)
			bad->frame_id = rpc_frame_scan_id(line, len);
		if (bad->code == RPC_PARSE_ERROR && memmem(line, len, "\\u", 2))
			reader_fresh_tokener(r);
	}
	return st;
}

/* Take the next complete line, or report a line that crossed the cap. */
enum rpc_read_status
rpc_reader_next(struct rpc_reader *r, struct rpc_msg *msg, struct rpc_bad *bad)
{
	enum rpc_read_status st;
	const char *line, *nl;
	size_t len;

	memset(msg, 0, sizeof(*msg));
	memset(bad, 0, sizeof(*bad));
	for (;;) {
		nl = NULL;
		if (r->scan < r->end)
			nl = memchr(r->buf + r->scan, '\n', r->end - r->scan);
		if (nl == NULL) {
			r->scan = r->end;
			if (r->end - r->start <= r->max_frame) {
				if (r->nsplice > 0 && r->end > r->start)
					rpc_splice_advance(&r->sp, r->splice,
					    r->nsplice, r->buf + r->start,
					    r->end - r->start);
				return RPC_READ_MORE;
			}
			/* Report now, drop the rest up to the newline. */
			rpc_splice_reset(&r->sp);
			bad->frame_id = rpc_frame_scan_id(r->buf + r->start,
			    r->end - r->start);
			r->start = r->end;
			reader_settle(r);
			r->discarding = 1;
			bad->line_no = r->line_no + 1;
			return bad_set(bad, RPC_INVALID_REQUEST, msg_too_large,
			    NULL);
		}
		line = r->buf + r->start;
		len = (size_t)(nl - line);
		r->start = r->scan = (size_t)(nl + 1 - r->buf);
		r->line_no++;
		st = reader_line(r, line, len, msg, bad);
		rpc_splice_reset(&r->sp);
		reader_settle(r);
		if (st != RPC_READ_MORE)
			return st;
	}
}

/* At end of stream, take an unterminated last line as a whole line. */
enum rpc_read_status
rpc_reader_finish(struct rpc_reader *r, struct rpc_msg *msg,
    struct rpc_bad *bad)
{
	enum rpc_read_status st;
	const char *line;
	size_t len;

	if ((st = rpc_reader_next(r, msg, bad)) != RPC_READ_MORE)
		return st;
	if (r->discarding) {
		r->discarding = 0;
		r->line_no++;
		return RPC_READ_MORE;
	}
	if (r->start == r->end)
		return RPC_READ_MORE;
	line = r->buf + r->start;
	len = r->end - r->start;
	r->start = r->scan = r->end;
	r->line_no++;
	st = reader_line(r, line, len, msg, bad);
	rpc_splice_reset(&r->sp);
	reader_settle(r);
	return st;
}

void
rpc_reader_splice(struct rpc_reader *r, const char *marker,
    const char *const *path)
{
	r->nsplice = 0;
	rpc_reader_splice_also(r, marker, path);
}

void
rpc_reader_splice_also(struct rpc_reader *r, const char *marker,
    const char *const *path)
{
	if (marker != NULL && r->nsplice < RPC_SPLICE_MAX) {
		r->splice[r->nsplice].marker = marker;
		r->splice[r->nsplice++].path = path;
	}
	rpc_splice_reset(&r->sp);
}

size_t
rpc_reader_spliced(const struct rpc_reader *r)
{
	return rpc_splice_checked(&r->sp);
}

/* Bytes buffered and not yet returned. */
size_t
rpc_reader_pending(const struct rpc_reader *r)
{
	return r->end - r->start;
}

void
rpc_reader_limit(struct rpc_reader *r, size_t max_values)
{
	r->max_values = max_values;
}

/* Parse one complete message with a tokener of its own. */
enum rpc_read_status
rpc_parse(const char *buf, size_t len, struct rpc_msg *msg,
    struct rpc_bad *bad)
{
	return rpc_parse_limited(buf, len, 0, msg, bad);
}

/* The same, refusing more than max_values values unparsed. */
enum rpc_read_status
rpc_parse_limited(const char *buf, size_t len, size_t max_values,
    struct rpc_msg *msg, struct rpc_bad *bad)
{
	struct json_tokener *tok;
	enum rpc_read_status st;

	memset(msg, 0, sizeof(*msg));
	memset(bad, 0, sizeof(*bad));
	if ((tok = tokener_new()) == NULL)
		return bad_set(bad, RPC_INTERNAL_ERROR, "Internal error: out of memory",
		    NULL);
	st = parse_with(tok, buf, len, max_values, msg, bad);
	json_tokener_free(tok);
	return st;
}

