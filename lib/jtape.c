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
	t->n[t->len].canon = 1;
	return (int)t->len++;
}

static void
ws(struct jt_parser *ps)
{
	while (ps->p < ps->e && (*ps->p == ' ' || *ps->p == '\t' ||
	    *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

/* What a string's scan learns: plain, its raw bytes are its value (no
   escape, no control byte); canon, they are what jsonw_string() writes
   for it (no raw control byte, no escaped slash, no \u). */
struct jt_str {
	int	plain, canon;
};

/* Past the stop byte at q, which is not a quote (a control byte or an
   escape); NULL where json-c decides. */
static inline const char *
str_stop(const char *q, const char *e, struct jt_str *st)
{
	long v;

	st->plain = 0;
	if (*q != '\\') {
		st->canon = 0;		/* jsonw_string() escapes it */
		return *q == '\0' ? NULL : q + 1;	/* json-c may stop at a NUL */
	}
	if (q + 1 >= e)
		return NULL;
	if (scan_escape_simple(q[1])) {
		if (q[1] == '/')
			st->canon = 0;	/* written as a bare slash */
		return q + 2;
	}
	st->canon = 0;
	if (q[1] != 'u' || (v = uescape(q, e)) <= 0 || (v >= 0xd800 && v <= 0xdfff))
		return NULL;	/* \u0000 and surrogates: json-c's business */
	return q + 6;
}

/* The closing quote of the string whose content starts at q, or NULL. */
static const char *
str_end(const char *q, const char *e, struct jt_str *st)
{
	for (;;) {
		q = scan_special(q, e, SCAN_CTL);
		if (q >= e)
			return NULL;
		if (*q == '"')
			return q;
		if ((q = str_stop(q, e, st)) == NULL)
			return NULL;
	}
}

#ifdef HAVE_AVX2_PATH
/* The bytes of a 64-byte block a string's scan looks at, a bit each. */
struct jt_block64 {
	uint64_t	q, b, ctl, nul, slash, notok;
};

__attribute__((target("avx2"))) static inline void
jt_block64(const char *p, struct jt_block64 *m)
{
	const __m256i q = _mm256_set1_epi8('"'), b = _mm256_set1_epi8('\\');
	const __m256i c = _mm256_set1_epi8(0x1f), sl = _mm256_set1_epi8('/');
	const __m256i z = _mm256_setzero_si256();
	__m256i lo, hi;

	lo = _mm256_loadu_si256((const __m256i *)(const void *)p);
	hi = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
	m->q = scan_bits64(_mm256_cmpeq_epi8(lo, q), _mm256_cmpeq_epi8(hi, q));
	m->b = scan_bits64(_mm256_cmpeq_epi8(lo, b), _mm256_cmpeq_epi8(hi, b));
	m->ctl = scan_bits64(_mm256_cmpeq_epi8(_mm256_min_epu8(lo, c), lo),
	    _mm256_cmpeq_epi8(_mm256_min_epu8(hi, c), hi));
	m->nul = scan_bits64(_mm256_cmpeq_epi8(lo, z), _mm256_cmpeq_epi8(hi, z));
	m->slash = scan_bits64(_mm256_cmpeq_epi8(lo, sl), _mm256_cmpeq_epi8(hi, sl));
	m->notok = scan_bits64(scan_notok32(lo), scan_notok32(hi));
}

/* str_stop as scan_string_avx2's stop, the scan's state its argument. */
static inline const char *
str_stop_arg(const char *q, const char *e, void *st)
{
	return str_stop(q, e, st);
}

/* str_end with AVX2, 32 bytes a step, every stop of a block handled from
   its one load. */
__attribute__((target("avx2"))) static const char *
str_end32(const char *p, const char *e, struct jt_str *st)
{
	switch (scan_string_avx2(&p, e, SCAN_CTL, str_stop_arg, st)) {
	case 1:
		return p;
	case 0:
		return NULL;
	}
	return str_end(p, e, st);
}

/*
 * The rest of a long string, 64 bytes a step with no branch per escape
 * (tool output is dense with them): the escaped bytes come from the
 * backslash runs, and a step stops only at the closing quote, a raw NUL
 * or an escape that is not simple (\u, checked by str_stop(), or an
 * invalid one).  What the block holds before its stop clears plain and
 * canon as str_stop() would.  Under 64 bytes left: str_end32() goes on
 * (from the backslash when the next byte is escaped).  The index's
 * scanner has the same walk (txscan.c's skip_str_long) with its own stops.
 */
__attribute__((target("avx2"))) static const char *
str_end_long(const char *q, const char *e, struct jt_str *st)
{
	struct jt_block64 m;
	uint64_t carry = 0, esc, end, bad, stop, before;
	unsigned i;

	while (e - q >= 64) {
		jt_block64(q, &m);
		esc = scan_escaped(m.b, &carry);
		end = m.q & ~esc;
		bad = esc & m.notok;
		stop = end | bad | (m.nul & ~esc);
		before = stop == 0 ? ~0ull : (1ull << __builtin_ctzll(stop)) - 1;
		if ((m.b | m.ctl) & before)
			st->plain = 0;
		if (((m.ctl & ~esc) | (esc & m.slash)) & before)
			st->canon = 0;
		if (stop == 0) {
			q += 64;
			continue;
		}
		i = (unsigned)__builtin_ctzll(stop);
		if ((end >> i) & 1)
			return q + i;
		if (!((bad >> i) & 1) ||
		    (q = str_stop(q + i - 1, e, st)) == NULL)
			return NULL;		/* a raw NUL, a bad escape */
		carry = 0;
	}
	return str_end32(carry ? q - 1 : q, e, st);
}

/* str_end with AVX2: a string whose first stop is its closing quote ends
   there (keys, ids, times: most strings), others go the long way. */
__attribute__((target("avx2"))) static const char *
str_end_avx2(const char *q, const char *e, struct jt_str *st)
{
	unsigned m;

	if (e - q < 64)
		return str_end32(q, e, st);
	if ((m = scan_mask_avx2(q, SCAN_CTL)) != 0 &&
	    q[__builtin_ctz(m)] == '"')
		return q + __builtin_ctz(m);
	return str_end_long(q, e, st);
}
#endif

/* A string; ps->p is just after the opening quote. */
static int
parse_str(struct jt_parser *ps)
{
	const char *s = ps->p, *q;
	struct jt_str st = { 1, 1 };
	int i;

#ifdef HAVE_AVX2_PATH
	if (__builtin_cpu_supports("avx2"))
		q = str_end_avx2(s, ps->e, &st);
	else
#endif
		q = str_end(s, ps->e, &st);
	if (q == NULL)
		return -1;
	if ((size_t)(q - s) > UINT32_MAX || (i = node_new(ps, JT_STR, s)) == -1)
		return -1;
	ps->t->n[i].len = (uint32_t)(q - s);
	ps->t->n[i].plain = (uint8_t)st.plain;
	ps->t->n[i].canon = (uint8_t)st.canon;
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
