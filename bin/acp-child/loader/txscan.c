/* SPDX-License-Identifier: ISC */
/*
 * txscan.c: string-aware top-level key scanner for transcript lines.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "scan-special.h"
#include "txscan.h"

#define MAX_DEPTH 64

int
txscan_isspace(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* Skip JSON whitespace; '\n' is never skipped: it ends the line.  It is
   called before every token, and compact JSON has none: one compare
   tells a byte above the space from it. */
static inline const char *
ws(const char *p, const char *e)
{
	while (p < e && (unsigned char)*p <= ' ' &&
	    (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return p;
}

static inline int
is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Validate one escape at b (a backslash); the byte after it, or NULL. */
static inline const char *
escape_end(const char *b, const char *e)
{
	if (b + 1 >= e)
		return NULL;
	if (scan_escape_simple(b[1]))
		return b + 2;
	if (b[1] != 'u' || e - b < 6 || !is_hex(b[2]) || !is_hex(b[3]) ||
	    !is_hex(b[4]) || !is_hex(b[5]))
		return NULL;
	return b + 6;
}

#ifdef HAVE_AVX2_PATH
/* A stop byte of a string that is no quote: a newline ends the line, a
   backslash starts an escape. */
static inline const char *
str_stop_nl(const char *q, const char *e, void *unused)
{
	(void)unused;
	return *q == '\n' ? NULL : escape_end(q, e);
}

/* The quotes, backslashes, newlines and bytes that may not follow a
   backslash in a simple escape (all but "\\/bfnrt) among the 64 at p, one
   bit each.  The escape bytes are looked up by nibble: the low nibble's
   table holds the high nibbles it may have, the high nibble's its own bit
   (none above 0x7f). */
struct str_masks {
	uint64_t	q, b, n, notok;
};

__attribute__((target("avx2"))) static inline void
str_masks(const char *p, struct str_masks *m)
{
	const __m256i q = _mm256_set1_epi8('"'), b = _mm256_set1_epi8('\\');
	const __m256i n = _mm256_set1_epi8('\n');
	__m256i lo, hi;

	lo = _mm256_loadu_si256((const __m256i *)(const void *)p);
	hi = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
	m->q = scan_bits64(_mm256_cmpeq_epi8(lo, q), _mm256_cmpeq_epi8(hi, q));
	m->b = scan_bits64(_mm256_cmpeq_epi8(lo, b), _mm256_cmpeq_epi8(hi, b));
	m->n = scan_bits64(_mm256_cmpeq_epi8(lo, n), _mm256_cmpeq_epi8(hi, n));
	m->notok = scan_bits64(scan_notok32(lo), scan_notok32(hi));
}

static const char *skip_str_avx2(const char *, const char *);

/*
 * The rest of a long string, 64 bytes a step without a branch per escape
 * (text is dense with them): the escaped bytes come from the backslash
 * runs, and the step stops only at the closing quote, a newline, or an
 * escape that is not simple (\u, checked here, or an invalid one).  Fewer
 * than 64 bytes left: the byte-wise scanner goes on (from the backslash
 * when the next byte is escaped).
 */
__attribute__((target("avx2"))) static const char *
skip_str_long(const char *p, const char *e)
{
	struct str_masks m;
	uint64_t carry = 0, esc, end, bad, stop;
	unsigned i;

	while (e - p >= 64) {
		str_masks(p, &m);
		esc = scan_escaped(m.b, &carry);
		end = m.q & ~esc;
		bad = esc & m.notok;
		if ((stop = end | bad | (m.n & ~esc)) == 0) {
			p += 64;
			continue;
		}
		i = (unsigned)__builtin_ctzll(stop);
		if ((end >> i) & 1)
			return p + i + 1;
		if (!((bad >> i) & 1) || p[i] != 'u' ||
		    (p = escape_end(p + i - 1, e)) == NULL)
			return NULL;		/* a newline, a bad escape */
		carry = 0;
	}
	return skip_str_avx2(carry ? p - 1 : p, e);
}

/* A string whose first stop in its first 64 bytes is the closing quote
   ends there (most strings are short: keys, and the uuids, session id and
   timestamp of every record are 24 to 36 bytes): the byte after it, or
   NULL for any other string.  Such a string has no backslash. */
__attribute__((target("avx2"))) static inline const char *
str_short_end(const char *p)
{
	unsigned m, i;

	m = scan_mask_avx2(p, SCAN_NL);
	if (m != 0) {
		i = (unsigned)__builtin_ctz(m);
		if (p[i] == '"')
			return p + i + 1;
	} else if ((m = scan_mask_avx2(p + 32, SCAN_NL)) != 0) {
		i = (unsigned)__builtin_ctz(m);
		if (p[32 + i] == '"')
			return p + 32 + i + 1;
	}
	return NULL;
}

/* skip_str with AVX2: str_short_end, else skip_str_long. */
__attribute__((target("avx2"))) static inline const char *
skip_str_first(const char *p, const char *e)
{
	const char *q;

	if (e - p < 64)
		return skip_str_avx2(p, e);
	if ((q = str_short_end(p)) != NULL)
		return q;
	return skip_str_long(p, e);
}

/* The byte-wise scanner with AVX2. */
__attribute__((target("avx2"))) static const char *
skip_str_avx2(const char *p, const char *e)
{
	switch (scan_string_avx2(&p, e, SCAN_NL, str_stop_nl, NULL)) {
	case 1:
		return p + 1;
	case 0:
		return NULL;
	}
	while (p < e) {
		if (*p == '"')
			return p + 1;
		if (*p == '\n')
			return NULL;
		if (*p != '\\')
			p++;
		else if ((p = escape_end(p, e)) == NULL)
			return NULL;
	}
	return NULL;
}
#endif

/* p is just after an opening quote: return just after the closing one, or
   NULL when the line ends first.  Escapes are validated.  Without AVX2, a
   string without escapes costs two memchr(). */
static inline const char *
skip_str(const char *p, const char *e)
{
	const char *q, *b;

#ifdef HAVE_AVX2_PATH
	if (__builtin_cpu_supports("avx2"))
		return skip_str_first(p, e);
#endif
	for (;;) {
		if ((q = memchr(p, '"', e - p)) == NULL)
			return NULL;
		while ((b = memchr(p, '\\', q - p)) != NULL) {
			if ((p = escape_end(b, e)) == NULL)
				return NULL;
			if (p > q)
				break;		/* the escape was \" : look further */
		}
		if (b == NULL)
			return q + 1;
	}
}

/* skip_str for a key or a field the index keeps, used as it is only
   without escapes: *esc set when the string has a backslash.  A short
   string's scan already tells (str_short_end); others look again. */
static inline const char *
skip_str_esc(const char *p, const char *e, int *esc)
{
	const char *q;

#ifdef HAVE_AVX2_PATH
	if (e - p >= 64 && __builtin_cpu_supports("avx2") &&
	    (q = str_short_end(p)) != NULL) {
		*esc = 0;
		return q;
	}
#endif
	if ((q = skip_str(p, e)) != NULL)
		*esc = memchr(p, '\\', q - 1 - p) != NULL;
	return q;
}

/* Digits [0-9]+ at p; NULL when none. */
static inline const char *
digits(const char *p, const char *e)
{
	const char *s = p;

	while (p < e && *p >= '0' && *p <= '9')
		p++;
	return p > s ? p : NULL;
}

/* The literal lit (n bytes) at p: the byte after it, or NULL. */
static inline const char *
literal(const char *p, const char *e, const char *lit, size_t n)
{
	return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0 ? p + n : NULL;
}

/* A number, literal, NaN or Infinity at p (Python's json accepts the last
   two).  The first byte picks the one literal that may follow. */
static const char *
skip_scalar(const char *p, const char *e)
{
	const char *q;

	if (p >= e)
		return NULL;
	switch (*p) {
	case 't':
		return literal(p, e, "true", 4);
	case 'f':
		return literal(p, e, "false", 5);
	case 'n':
		return literal(p, e, "null", 4);
	case 'N':
		return literal(p, e, "NaN", 3);
	case 'I':
		return literal(p, e, "Infinity", 8);
	case '-':
		if ((q = literal(p, e, "-Infinity", 9)) != NULL)
			return q;
		p++;
		break;
	}
	if (p < e && *p == '0')
		p++;
	else if ((p = digits(p, e)) == NULL)
		return NULL;
	if (p < e && *p == '.' && (p = digits(p + 1, e)) == NULL)
		return NULL;
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if ((p = digits(p, e)) == NULL)
			return NULL;
	}
	return p;
}

enum { S_VALUE, S_VALUE_OR_END, S_KEY, S_KEY_OR_END, S_COLON, S_NEXT };

/* Validate and skip an object or array starting at p; *deep set when too deep. */
static const char *
skip_nested(const char *p, const char *e, int *deep)
{
	uint64_t arrays = 0;
	int depth = 0, state = S_VALUE, arr;
	char c;

	for (;;) {
		p = ws(p, e);
		if (p >= e)
			return NULL;
		c = *p;
		switch (state) {
		case S_KEY_OR_END:
			if (c == '}')
				goto close;
			/* FALLTHROUGH */
		case S_KEY:
			if (c != '"' || (p = skip_str(p + 1, e)) == NULL)
				return NULL;
			state = S_COLON;
			continue;
		case S_COLON:
			if (c != ':')
				return NULL;
			p++;
			state = S_VALUE;
			continue;
		case S_NEXT:
			/* Only here does the container's kind matter (depth
			   is at least 1 after a value inside one). */
			arr = (arrays >> (depth - 1)) & 1;
			if (c == ',') {
				p++;
				state = arr ? S_VALUE : S_KEY;
				continue;
			}
			if (c == (arr ? ']' : '}'))
				goto close;
			return NULL;
		case S_VALUE_OR_END:
			if (c == ']')
				goto close;
			/* FALLTHROUGH */
		case S_VALUE:
			if (c == '{' || c == '[') {
				if (depth == MAX_DEPTH) {
					*deep = 1;
					return NULL;
				}
				if (c == '[')
					arrays |= 1ull << depth;
				else
					arrays &= ~(1ull << depth);
				depth++;
				p++;
				state = c == '[' ? S_VALUE_OR_END : S_KEY_OR_END;
				continue;
			}
			if (depth == 0)
				return NULL;
			p = c == '"' ? skip_str(p + 1, e) : skip_scalar(p, e);
			if (p == NULL)
				return NULL;
			state = S_NEXT;
			continue;
		}
close:
		p++;
		if (--depth == 0)
			return p;
		state = S_NEXT;
	}
}

/* Skip one value at p (not whitespace). */
static const char *
skip_value(const char *p, const char *e, int *deep)
{
	if (*p == '"')
		return skip_str(p + 1, e);
	if (*p == '{' || *p == '[')
		return skip_nested(p, e, deep);
	return skip_scalar(p, e);
}

enum { KEY_OTHER = TXF_N, KEY_MESSAGE, KEY_ROLE };

/* Which key of interest [k, k+n) names. */
static int
key_id(const char *k, size_t n)
{
	switch (n) {
	case 4:
		if (memcmp(k, "uuid", 4) == 0)
			return TXF_UUID;
		if (memcmp(k, "type", 4) == 0)
			return TXF_TYPE;
		if (memcmp(k, "role", 4) == 0)
			return KEY_ROLE;
		break;
	case 7:
		if (memcmp(k, "subtype", 7) == 0)
			return TXF_SUBTYPE;
		if (memcmp(k, "message", 7) == 0)
			return KEY_MESSAGE;
		break;
	case 9:
		if (memcmp(k, "sessionId", 9) == 0)
			return TXF_SESSION;
		break;
	case 10:
		if (memcmp(k, "parentUuid", 10) == 0)
			return TXF_PARENT;
		break;
	}
	return KEY_OTHER;
}

/* Read one object member's key at *pp; returns its id, -1 bad, -2 fallback. */
static int
member_key(const char **pp, const char *e)
{
	const char *p = *pp, *k, *ke;
	int id, esc;

	if (p >= e || *p != '"')
		return -1;
	k = p + 1;
	if ((ke = skip_str_esc(k, e, &esc)) == NULL)
		return -1;
	if (esc)
		return -2;
	id = key_id(k, ke - 1 - k);
	p = ws(ke, e);
	if (p >= e || *p != ':')
		return -1;
	p = ws(p + 1, e);
	if (p >= e)
		return -1;
	*pp = p;
	return id;
}

/* A field not seen (yet).  Not a memset: once a line, a small memset is
   a string instruction with a slow start. */
static inline void
field_clear(struct txscan_field *f)
{
	f->kind = TXK_ABSENT;
	f->p = NULL;
	f->len = 0;
}

/* Read a field value: strings are recorded, others classified and skipped. */
static int
field_value(const char **pp, const char *e, struct txscan_field *f, int *deep)
{
	const char *p = *pp, *q;
	int esc;

	if (*p == '"') {
		if ((q = skip_str_esc(p + 1, e, &esc)) == NULL)
			return TXSCAN_BAD;
		f->kind = TXK_STR;
		f->p = p + 1;
		f->len = q - 1 - (p + 1);
		if (esc)
			return TXSCAN_FALLBACK;
	} else {
		if ((q = skip_value(p, e, deep)) == NULL)
			return *deep ? TXSCAN_FALLBACK : TXSCAN_BAD;
		f->kind = (q - p == 4 && memcmp(p, "null", 4) == 0) ?
		    TXK_NULL : TXK_OTHER;
	}
	*pp = q;
	return TXSCAN_OK;
}

/* After a member: ',' continues (1), '}' ends (0), anything else is bad. */
static int
member_end(const char **pp, const char *e)
{
	const char *p = ws(*pp, e);

	if (p >= e)
		return -1;
	if (*p == ',') {
		*pp = ws(p + 1, e);
		return 1;
	}
	if (*p == '}') {
		*pp = p + 1;
		return 0;
	}
	return -1;
}

/* The message value: note a non-empty object and whether its role is user. */
static int
scan_message(const char **pp, const char *e, struct txscan *s, int *deep)
{
	const char *p = *pp;
	struct txscan_field role;
	int id, r, more;

	s->message = s->role_user = 0;
	if (*p != '{') {
		if ((p = skip_value(p, e, deep)) == NULL)
			return *deep ? TXSCAN_FALLBACK : TXSCAN_BAD;
		*pp = p;
		return TXSCAN_OK;
	}
	p = ws(p + 1, e);
	if (p < e && *p == '}') {
		*pp = p + 1;
		return TXSCAN_OK;
	}
	s->message = 1;
	do {
		if ((id = member_key(&p, e)) < 0)
			return id == -2 ? TXSCAN_FALLBACK : TXSCAN_BAD;
		field_clear(&role);
		if ((r = field_value(&p, e, &role, deep)) != TXSCAN_OK)
			return r;
		if (id == KEY_ROLE)
			s->role_user = role.kind == TXK_STR && role.len == 4 &&
			    memcmp(role.p, "user", 4) == 0;
		if ((more = member_end(&p, e)) < 0)
			return TXSCAN_BAD;
	} while (more);
	*pp = p;
	return TXSCAN_OK;
}

/* Scan one object at p; *end is set just after its closing brace. */
static enum txscan_result
scan_object(const char *p, const char *e, struct txscan *s, const char **end)
{
	struct txscan_field scratch;
	int id, r, more, deep = 0;

	for (id = 0; id < TXF_N; id++)
		field_clear(&s->f[id]);
	s->message = s->role_user = 0;
	if (p >= e || *p != '{')
		return TXSCAN_FALLBACK;
	p = ws(p + 1, e);
	if (p < e && *p == '}') {
		*end = p + 1;
		return TXSCAN_OK;
	}
	do {
		if ((id = member_key(&p, e)) < 0)
			return id == -2 ? TXSCAN_FALLBACK : TXSCAN_BAD;
		if (id == KEY_MESSAGE)
			r = scan_message(&p, e, s, &deep);
		else if (id < TXF_N) {
			r = field_value(&p, e, &s->f[id], &deep);
			if (id == TXF_UUID && r == TXSCAN_OK && s->uuid_hook != NULL &&
			    s->f[id].kind == TXK_STR)
				s->uuid_hook(s->hook_arg, s->f[id].p, s->f[id].len);
		} else
			r = field_value(&p, e, &scratch, &deep);
		if (r != TXSCAN_OK)
			return r;
		if ((more = member_end(&p, e)) < 0)
			return TXSCAN_BAD;
	} while (more);
	*end = p;
	return TXSCAN_OK;
}

#ifdef HAVE_AVX2_PATH
/* scan_object with every call inside it inlined into AVX2 code: the
   string scanner is then inlined into each caller (the keys, the values,
   nested ones) instead of being called once per string. */
__attribute__((target("avx2"), flatten)) static enum txscan_result
scan_object_avx2(const char *p, const char *e, struct txscan *s, const char **end)
{
	return scan_object(p, e, s, end);
}
#endif

/* scan_object, through its AVX2 copy where the CPU has it. */
static enum txscan_result
scan_object_any(const char *p, const char *e, struct txscan *s, const char **end)
{
#ifdef HAVE_AVX2_PATH
	if (__builtin_cpu_supports("avx2"))
		return scan_object_avx2(p, e, s, end);
#endif
	return scan_object(p, e, s, end);
}

enum txscan_result
txscan_object(const char *p, const char *e, struct txscan *s)
{
	enum txscan_result r;
	const char *end;

	if ((r = scan_object_any(p, e, s, &end)) != TXSCAN_OK)
		return r;
	return ws(end, e) == e ? TXSCAN_OK : TXSCAN_TRAIL;
}

int
txscan_line(const char *p, const char *e, struct txscan *s, const char **obj_end,
    const char **nl)
{
	const char *end;

#ifdef HAVE_AVX2_PATH
	if (!__builtin_cpu_supports("avx2"))
		return 0;
	if (scan_object_avx2(p, e, s, &end) != TXSCAN_OK)
		return 0;
	*obj_end = end;
	while (end < e && *end != '\n' && txscan_isspace((unsigned char)*end))
		end++;
	if (end >= e || *end != '\n')
		return 0;
	*nl = end;
	return 1;
#else
	(void)p;
	(void)e;
	(void)s;
	(void)obj_end;
	(void)nl;
	(void)end;
	return 0;
#endif
}

/* One field from a json-c member. */
static void
json_field(json_object *obj, const char *key, struct txscan_field *f)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v)) {
		f->kind = TXK_ABSENT;
	} else if (v == NULL) {
		f->kind = TXK_NULL;
	} else if (json_object_is_type(v, json_type_string)) {
		f->kind = TXK_STR;
		f->p = json_object_get_string(v);
		f->len = json_object_get_string_len(v);
	} else {
		f->kind = TXK_OTHER;
	}
}

void
txscan_from_json(json_object *obj, struct txscan *s)
{
	static const char *const keys[TXF_N] = {
		"uuid", "parentUuid", "sessionId", "type", "subtype"
	};
	json_object *msg, *role;
	int i;

	memset(s, 0, sizeof *s);
	for (i = 0; i < TXF_N; i++)
		json_field(obj, keys[i], &s->f[i]);
	if (json_object_object_get_ex(obj, "message", &msg) &&
	    json_object_is_type(msg, json_type_object) &&
	    json_object_object_length(msg) > 0) {
		s->message = 1;
		s->role_user = json_object_object_get_ex(msg, "role", &role) &&
		    json_object_is_type(role, json_type_string) &&
		    strcmp(json_object_get_string(role), "user") == 0;
	}
}

void
txscan_recover(const char *p, const char *e,
    void (*cb)(void *, const char *, const char *), void *arg)
{
	const char *start = NULL;
	int depth = 0, in_str = 0, esc = 0;

	for (; p < e; p++) {
		if (esc) {
			esc = 0;
			continue;
		}
		if (in_str) {
			if (*p == '\\')
				esc = 1;
			else if (*p == '"')
				in_str = 0;
			continue;
		}
		if (*p == '"') {
			in_str = 1;
		} else if (*p == '{') {
			if (depth++ == 0)
				start = p;
		} else if (*p == '}') {
			depth--;
			if (depth == 0 && start != NULL) {
				cb(arg, start, p + 1);
				start = NULL;
			} else if (depth < 0) {
				depth = 0;
				start = NULL;
			}
		}
	}
}
