/* SPDX-License-Identifier: ISC */
/* jsonw.c: compact JSON output with run-at-a-time string escaping. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "utf8.h"

int
jbuf_grow(struct jbuf *b, size_t n)
{
	char *p;
	size_t cap;

	if (b->oom)
		return -1;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n + 1)
		cap *= 2;
	if ((p = realloc(b->p, cap)) == NULL) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void
jbuf_puts(struct jbuf *b, const char *s)
{
	jbuf_put(b, s, strlen(s));
}

void
jbuf_free(struct jbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* Bytes json-c escapes: '"', '\\' and the control characters. */
static int
jsonw_special(unsigned char c)
{
	return c < 0x20 || c == '"' || c == '\\';
}

void
jsonw_char(struct jbuf *b, unsigned char c)
{
	char esc[8];

	if (!jsonw_special(c)) {
		jbuf_put(b, (const char *)&c, 1);
		return;
	}
	switch (c) {
	case '"': jbuf_put(b, "\\\"", 2); break;
	case '\\': jbuf_put(b, "\\\\", 2); break;
	case '\b': jbuf_put(b, "\\b", 2); break;
	case '\f': jbuf_put(b, "\\f", 2); break;
	case '\n': jbuf_put(b, "\\n", 2); break;
	case '\r': jbuf_put(b, "\\r", 2); break;
	case '\t': jbuf_put(b, "\\t", 2); break;
	default:
		snprintf(esc, sizeof(esc), "\\u00%c%c", "0123456789abcdef"[c >> 4],
		    "0123456789abcdef"[c & 0xf]);
		jbuf_put(b, esc, 6);
	}
}

/* Append an invalid byte of a string as U+FFFD (as agent output gets). */
static void
jsonw_bad_byte(struct jbuf *b)
{
	jbuf_put(b, "\xef\xbf\xbd", 3);
}

void
jsonw_string(struct jbuf *b, const char *s, size_t n)
{
	size_t i = 0, run;
	unsigned char c;
	int k;

	jbuf_put(b, "\"", 1);
	while (i < n) {
		for (run = i; run < n; run++) {
			c = (unsigned char)s[run];
			if (jsonw_special(c))
				break;
			if (c >= 0x80) {
				/* Never emit invalid UTF-8: a frame the daemon rejects. */
				if ((k = utf8_seq((const unsigned char *)s + run,
				    n - run)) <= 0)
					break;
				run += (size_t)k - 1;
			}
		}
		if (run > i)
			jbuf_put(b, s + i, run - i);
		if (run == n)
			break;
		if ((unsigned char)s[run] >= 0x80)
			jsonw_bad_byte(b);
		else
			jsonw_char(b, (unsigned char)s[run]);
		i = run + 1;
	}
	jbuf_put(b, "\"", 1);
}

void
jsonw_value(struct jbuf *b, json_object *o)
{
	size_t i, n;
	int first = 1;
	char num[32];

	switch (json_object_get_type(o)) {
	case json_type_null:
		jbuf_put(b, "null", 4);
		break;
	case json_type_string:
		jsonw_string(b, json_object_get_string(o),
		    (size_t)json_object_get_string_len(o));
		break;
	case json_type_int:
		if (json_object_get_int64(o) == INT64_MAX)
			snprintf(num, sizeof(num), "%llu",
			    (unsigned long long)json_object_get_uint64(o));
		else
			snprintf(num, sizeof(num), "%lld",
			    (long long)json_object_get_int64(o));
		jbuf_puts(b, num);
		break;
	case json_type_array:
		jbuf_put(b, "[", 1);
		n = json_object_array_length(o);
		for (i = 0; i < n; i++) {
			if (i > 0)
				jbuf_put(b, ",", 1);
			jsonw_value(b, json_object_array_get_idx(o, i));
		}
		jbuf_put(b, "]", 1);
		break;
	case json_type_object: {
		jbuf_put(b, "{", 1);
		json_object_object_foreach(o, key, val) {
			if (!first)
				jbuf_put(b, ",", 1);
			first = 0;
			jsonw_string(b, key, strlen(key));
			jbuf_put(b, ":", 1);
			jsonw_value(b, val);
		}
		jbuf_put(b, "}", 1);
		break;
	}
	default:	/* booleans and doubles: json-c's own formatting */
		jbuf_puts(b, json_object_to_json_string_ext(o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	}
}
