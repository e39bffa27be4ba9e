/* SPDX-License-Identifier: ISC */
/*
 * jtape.c: the replay fast path's JSON reader (strings: jtape-str.c).
 *
 * The parser is a recursive descent over one record that records each
 * value as a node; it validates everything json-c would and bails out
 * (JT_BAIL) wherever json-c's parse-then-serialise would not reproduce the
 * bytes that jt_write() produces, so callers can always fall back.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "jtape-int.h"
#include "utf8.h"

#define JT_MAX_DEPTH	32
#define JT_MAX_KEYS	64	/* members checked for duplicates per object */
#define JT_INT_DIGITS	18	/* longer integers may not fit int64 */

struct jt_parser {
	struct jtape	*t;
	const char	*p, *e;
	int		 rc;
};

/* A new node; -1 on OOM. */
static int
node_new(struct jt_parser *ps, enum jt_type type, const char *p)
{
	struct jtape *t = ps->t;
	struct jt_node *nn;
	size_t cap;

	if (t->len == t->cap) {
		cap = t->cap ? t->cap * 2 : 256;
		if ((nn = reallocarray(t->n, cap, sizeof *nn)) == NULL) {
			ps->rc = JT_OOM;
			return -1;
		}
		t->n = nn;
		t->cap = cap;
	}
	t->n[t->len].p = p;
	t->n[t->len].len = 0;
	t->n[t->len].type = (uint8_t)type;
	t->n[t->len].plain = 1;
	return (int)t->len++;
}

static void
ws(struct jt_parser *ps)
{
	while (ps->p < ps->e && (*ps->p == ' ' || *ps->p == '\t' ||
	    *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

/* Past the stop byte at q, which is not a quote (a control byte or an
   escape); NULL where json-c decides. */
static inline const char *
str_stop(const char *q, const char *e)
{
	long v;

	if (*q != '\\')
		return *q == '\0' ? NULL : q + 1;	/* json-c may stop at a NUL */
	if (q + 1 >= e)
		return NULL;
	if (scan_escape_simple(q[1]))
		return q + 2;
	if (q[1] != 'u' || (v = uescape(q, e)) <= 0 || (v >= 0xd800 && v <= 0xdfff))
		return NULL;	/* \u0000 and surrogates: json-c's business */
	return q + 6;
}

/* The closing quote of the string whose content starts at q, or NULL;
   *plain is cleared at an escape or a control byte. */
static const char *
str_end(const char *q, const char *e, int *plain)
{
	for (;;) {
		q = scan_special(q, e, SCAN_CTL);
		if (q >= e)
			return NULL;
		if (*q == '"')
			return q;
		*plain = 0;
		if ((q = str_stop(q, e)) == NULL)
			return NULL;
	}
}

#ifdef HAVE_AVX2_PATH
/* str_end with AVX2 (escaped quotes and newlines are dense in tool output). */
__attribute__((target("avx2"))) static const char *
str_end_avx2(const char *q, const char *e, int *plain)
{
	int other = 0, r;

	r = scan_string_avx2(&q, e, SCAN_CTL, str_stop, &other);
	if (other)
		*plain = 0;
	if (r == 1)
		return q;
	if (r == 0)
		return NULL;
	return str_end(q, e, plain);
}
#endif

/* A string; ps->p is just after the opening quote. */
static int
parse_str(struct jt_parser *ps)
{
	const char *s = ps->p, *q;
	int i, plain = 1;

#ifdef HAVE_AVX2_PATH
	if (__builtin_cpu_supports("avx2"))
		q = str_end_avx2(s, ps->e, &plain);
	else
#endif
		q = str_end(s, ps->e, &plain);
	if (q == NULL)
		return -1;
	if ((size_t)(q - s) > UINT32_MAX || (i = node_new(ps, JT_STR, s)) == -1)
		return -1;
	ps->t->n[i].len = (uint32_t)(q - s);
	ps->t->n[i].plain = (uint8_t)plain;
	ps->t->n[i].next = (uint32_t)ps->t->len;
	ps->p = q + 1;
	return i;
}

static const char *
digits(const char *p, const char *e)
{
	const char *s = p;

	while (p < e && *p >= '0' && *p <= '9')
		p++;
	return p > s ? p : NULL;
}

/* A number json-c prints back as written: doubles keep their text, ints
   do when they are canonical and fit. */
static int
parse_num(struct jt_parser *ps)
{
	const char *s = ps->p, *p = s, *d;
	int i, dbl = 0;

	if (p < ps->e && *p == '-')
		p++;
	d = p;
	if (p < ps->e && *p == '0')
		p++;
	else if ((p = digits(p, ps->e)) == NULL)
		return -1;
	if (p < ps->e && *p == '.') {
		if ((p = digits(p + 1, ps->e)) == NULL)
			return -1;
		dbl = 1;
	}
	if (p < ps->e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < ps->e && (*p == '+' || *p == '-'))
			p++;
		if ((p = digits(p, ps->e)) == NULL)
			return -1;
		dbl = 1;
	}
	if (!dbl && (p - d > JT_INT_DIGITS || (*s == '-' && *d == '0')))
		return -1;
	if ((i = node_new(ps, JT_NUM, s)) == -1)
		return -1;
	ps->t->n[i].len = (uint32_t)(p - s);
	ps->t->n[i].next = (uint32_t)ps->t->len;
	ps->p = p;
	return i;
}

/* true, false or null. */
static int
parse_lit(struct jt_parser *ps)
{
	static const struct { const char *s; enum jt_type t; } lits[] = {
		{ "true", JT_TRUE }, { "false", JT_FALSE }, { "null", JT_NULL }
	};
	size_t k, n;
	int i;

	for (k = 0; k < 3; k++) {
		n = strlen(lits[k].s);
		if ((size_t)(ps->e - ps->p) >= n && memcmp(ps->p, lits[k].s, n) == 0) {
			if ((i = node_new(ps, lits[k].t, ps->p)) == -1)
				return -1;
			ps->t->n[i].len = (uint32_t)n;
			ps->t->n[i].next = (uint32_t)ps->t->len;
			ps->p += n;
			return i;
		}
	}
	return -1;
}

static int parse_value(struct jt_parser *, int depth);

/* Key node k repeats one of keys[0..nk). */
static int
dup_key(const struct jtape *t, const int *keys, int nk, int k)
{
	const struct jt_node *a = &t->n[k], *b;
	int j;

	for (j = 0; j < nk; j++) {
		b = &t->n[keys[j]];
		if (b->len == a->len && memcmp(b->p, a->p, a->len) == 0)
			return 1;
	}
	return 0;
}

/* An object or array; ps->p is at the opening bracket. */
static int
parse_nest(struct jt_parser *ps, int depth)
{
	int obj = *ps->p == '{', i, k, keys[JT_MAX_KEYS];
	uint32_t members = 0;
	char close = obj ? '}' : ']';

	if (depth >= JT_MAX_DEPTH ||
	    (i = node_new(ps, obj ? JT_OBJ : JT_ARR, ps->p)) == -1)
		return -1;
	ps->p++;
	ws(ps);
	if (ps->p < ps->e && *ps->p == close)
		goto done;
	for (;;) {
		if (obj) {
			if (ps->p >= ps->e || *ps->p != '"' || members == JT_MAX_KEYS)
				return -1;
			ps->p++;
			if ((k = parse_str(ps)) == -1 || !ps->t->n[k].plain ||
			    dup_key(ps->t, keys, (int)members, k))
				return -1;
			keys[members] = k;
			ws(ps);
			if (ps->p >= ps->e || *ps->p != ':')
				return -1;
			ps->p++;
			ws(ps);
		}
		if (parse_value(ps, depth + 1) == -1)
			return -1;
		members++;
		ws(ps);
		if (ps->p < ps->e && *ps->p == ',') {
			ps->p++;
			ws(ps);
			continue;
		}
		if (ps->p < ps->e && *ps->p == close)
			break;
		return -1;
	}
done:
	ps->p++;
	ps->t->n[i].len = members;
	ps->t->n[i].next = (uint32_t)ps->t->len;
	return i;
}

/* Any value at ps->p (not blank). */
static int
parse_value(struct jt_parser *ps, int depth)
{
	if (ps->p >= ps->e)
		return -1;
	switch (*ps->p) {
	case '{':
	case '[':
		return parse_nest(ps, depth);
	case '"':
		ps->p++;
		return parse_str(ps);
	case 't':
	case 'f':
	case 'n':
		return parse_lit(ps);
	default:
		return parse_num(ps);
	}
}

int
jt_parse(struct jtape *t, const char *p, size_t n)
{
	struct jt_parser ps = { t, p, p + n, JT_OK };

	t->len = 0;
	jt_arena_reset(t);
	/* Invalid UTF-8 is json-c's and jsonw's business (U+FFFD). */
	if (n >= UINT32_MAX || !utf8_valid(p, n))
		return JT_BAIL;
	ws(&ps);
	if (parse_value(&ps, 0) == -1)
		return ps.rc == JT_OOM ? JT_OOM : JT_BAIL;
	ws(&ps);
	return ps.p == ps.e ? JT_OK : JT_BAIL;
}

void
jt_free(struct jtape *t)
{
	jt_arena_reset(t);
	free(t->arena);
	free(t->n);
	memset(t, 0, sizeof *t);
}

int
jt_get(const struct jtape *t, int obj, const char *key)
{
	size_t kl = strlen(key);
	uint32_t m;
	int k;

	if (obj < 0 || t->n[obj].type != JT_OBJ)
		return -1;
	for (m = 0, k = obj + 1; m < t->n[obj].len; m++, k = (int)t->n[k + 1].next)
		if (t->n[k].len == kl && memcmp(t->n[k].p, key, kl) == 0)
			return k + 1;
	return -1;
}

int
jt_get_typed(const struct jtape *t, int obj, const char *key, enum jt_type type)
{
	int v = jt_get(t, obj, key);

	return v >= 0 && t->n[v].type == type ? v : -1;
}
