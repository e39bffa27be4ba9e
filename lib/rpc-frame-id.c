/* SPDX-License-Identifier: ISC */
/*
 * rpc-frame-id.c: the id of a line that could not be taken as a message.
 *
 * A peer's answer the framer rejects (invalid UTF-8, over the frame cap,
 * broken JSON) still names the request it answers, and the caller fails
 * that request at once instead of letting it wait for its deadline.  The
 * scan reads only the top level of the object, skipping nested values and
 * strings (escapes included) without building anything.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "rpc-frame.h"

#define ID_MAX_DIGITS	18	/* fits int64 */

struct idscan {
	const char	*p, *e;
};

static void
scan_ws(struct idscan *s)
{
	while (s->p < s->e && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' ||
	    *s->p == '\n'))
		s->p++;
}

/* s->p at an opening quote: move past the closing one; -1 if none. */
static int
scan_str(struct idscan *s)
{
	for (s->p++; s->p < s->e; s->p++) {
		if (*s->p == '\\') {
			s->p++;
			continue;
		}
		if (*s->p == '"') {
			s->p++;
			return 0;
		}
	}
	return -1;
}

/* Skip one value (nested ones by bracket depth); -1 at the end of input. */
static int
scan_skip(struct idscan *s)
{
	size_t depth = 0;

	while (s->p < s->e) {
		switch (*s->p) {
		case '"':
			if (scan_str(s) == -1)
				return -1;
			if (depth == 0)
				return 0;
			continue;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return 0;	/* the end of the enclosing object */
			if (--depth == 0) {
				s->p++;
				return 0;
			}
			break;
		case ',':
			if (depth == 0)
				return 0;
			break;
		}
		s->p++;
	}
	return -1;
}

/* The id value at s->p: an integer or a plain string, else NULL. */
static json_object *
scan_value(struct idscan *s)
{
	const char *v = s->p, *d;
	int64_t n = 0;

	if (s->p < s->e && *s->p == '"') {
		if (scan_str(s) == -1 || memchr(v + 1, '\\', (size_t)(s->p - v - 2)))
			return NULL;
		return json_object_new_string_len(v + 1, (int)(s->p - v - 2));
	}
	if (s->p < s->e && *s->p == '-')
		s->p++;
	for (d = s->p; s->p < s->e && *s->p >= '0' && *s->p <= '9'; s->p++) {
		if (s->p - d >= ID_MAX_DIGITS)
			return NULL;
		n = n * 10 + (*s->p - '0');
	}
	if (s->p == d)
		return NULL;
	return json_object_new_int64(*v == '-' ? -n : n);
}

json_object *
rpc_frame_scan_id(const char *buf, size_t len)
{
	struct idscan s = { buf, buf + len };
	const char *k;
	int is_id;

	scan_ws(&s);
	if (s.p >= s.e || *s.p++ != '{')
		return NULL;
	for (;;) {
		scan_ws(&s);
		if (s.p >= s.e || *s.p != '"')
			return NULL;
		k = s.p;
		if (scan_str(&s) == -1)
			return NULL;
		is_id = s.p - k == 4 && memcmp(k, "\"id\"", 4) == 0;
		scan_ws(&s);
		if (s.p >= s.e || *s.p++ != ':')
			return NULL;
		scan_ws(&s);
		if (is_id)
			return scan_value(&s);
		if (scan_skip(&s) == -1)
			return NULL;
		scan_ws(&s);
		if (s.p >= s.e || *s.p++ != ',')
			return NULL;
	}
}
