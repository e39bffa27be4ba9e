/* SPDX-License-Identifier: ISC */
/*
 * jtape-str.c: the strings of a jtape: C strings for lookups (decoded into
 * a per-record arena) and the canonical writer, which escapes exactly as
 * jsonw_string() escapes json-c's decoded value.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "jtape-int.h"

/* Forget the C strings of the previous record (keeps the oldest block). */
void
jt_arena_reset(struct jtape *t)
{
	struct jt_block *b;

	while ((b = t->arena) != NULL && b->next != NULL) {
		t->arena = b->next;
		free(b);
	}
	if (b != NULL)
		b->len = 0;
}

/* Room for n bytes in the arena; NULL on OOM. */
static char *
arena_alloc(struct jtape *t, size_t n)
{
	struct jt_block *b = t->arena;
	size_t cap;

	if (b == NULL || b->cap - b->len < n) {
		cap = n > 65536 ? n : 65536;
		if ((b = malloc(sizeof *b + cap)) == NULL)
			return NULL;
		b->cap = cap;
		b->len = 0;
		b->next = t->arena;
		t->arena = b;
	}
	b->len += n;
	return b->buf + b->len - n;
}

/* UTF-8 of code point v (< 0x10000, no surrogate) into out; its length. */
static size_t
utf8_put(char *out, long v)
{
	if (v < 0x80) {
		out[0] = (char)v;
		return 1;
	}
	if (v < 0x800) {
		out[0] = (char)(0xc0 | (v >> 6));
		out[1] = (char)(0x80 | (v & 0x3f));
		return 2;
	}
	out[0] = (char)(0xe0 | (v >> 12));
	out[1] = (char)(0x80 | ((v >> 6) & 0x3f));
	out[2] = (char)(0x80 | (v & 0x3f));
	return 3;
}

/* The byte an escape stands for (not \u). */
static char
unescape(char c)
{
	switch (c) {
	case 'b': return '\b';
	case 'f': return '\f';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	default: return c;
	}
}

const char *
jt_cstr(struct jtape *t, int i, int *oom)
{
	const struct jt_node *s;
	const char *r, *e;
	char *out, *o;

	if (i < 0 || t->n[i].type != JT_STR)
		return NULL;
	s = &t->n[i];
	if ((out = arena_alloc(t, (size_t)s->len + 1)) == NULL) {
		*oom = 1;
		return NULL;
	}
	for (r = s->p, e = s->p + s->len, o = out; r < e;) {
		if (*r != '\\')
			*o++ = *r++;
		else if (r[1] == 'u') {
			o += utf8_put(o, uescape(r, e));
			r += 6;
		} else {
			*o++ = unescape(r[1]);
			r += 2;
		}
	}
	*o = '\0';
	return out;
}

const char *
jt_get_str(struct jtape *t, int obj, const char *key, int *oom)
{
	return jt_cstr(t, jt_get_typed(t, obj, key, JT_STR), oom);
}

/* A string node re-escaped the way jsonw_string() escapes its value. */
static void
write_str(struct jbuf *b, const struct jt_node *s)
{
	const char *r = s->p, *e = s->p + s->len, *run;
	char u[3];
	size_t n;

	/* Tool output is mostly escaped newlines and quotes: such a string
	   goes out in one copy, not a run and an escape at a time. */
	if (s->plain || s->canon) {
		jbuf_put(b, "\"", 1);
		jbuf_put(b, s->p, s->len);
		jbuf_put(b, "\"", 1);
		return;
	}
	jbuf_put(b, "\"", 1);
	while (r < e) {
		run = scan_special(r, e, SCAN_CTL);
		jbuf_put(b, r, (size_t)(run - r));
		if ((r = run) >= e)
			break;
		if (*r != '\\') {			/* a raw control byte */
			jsonw_char(b, (unsigned char)*r++);
		} else if (r[1] == 'u') {
			n = utf8_put(u, uescape(r, e));
			if (n == 1)
				jsonw_char(b, (unsigned char)u[0]);
			else
				jbuf_put(b, u, n);
			r += 6;
		} else {
			jsonw_char(b, (unsigned char)unescape(r[1]));
			r += 2;
		}
	}
	jbuf_put(b, "\"", 1);
}

void
jt_write(struct jbuf *b, const struct jtape *t, int i)
{
	const struct jt_node *nd = &t->n[i];
	uint32_t m;
	int k;

	switch (nd->type) {
	case JT_STR:
		write_str(b, nd);
		break;
	case JT_OBJ:
		jbuf_put(b, "{", 1);
		for (m = 0, k = i + 1; m < nd->len; m++, k = (int)t->n[k + 1].next) {
			if (m > 0)
				jbuf_put(b, ",", 1);
			write_str(b, &t->n[k]);
			jbuf_put(b, ":", 1);
			jt_write(b, t, k + 1);
		}
		jbuf_put(b, "}", 1);
		break;
	case JT_ARR:
		jbuf_put(b, "[", 1);
		for (m = 0, k = i + 1; m < nd->len; m++, k = (int)t->n[k].next) {
			if (m > 0)
				jbuf_put(b, ",", 1);
			jt_write(b, t, k);
		}
		jbuf_put(b, "]", 1);
		break;
	default:
		jbuf_put(b, nd->p, nd->len);
	}
}
