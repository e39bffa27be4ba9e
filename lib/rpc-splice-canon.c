/* SPDX-License-Identifier: ISC */
/*
 * rpc-splice-canon.c: the strict scanner of a spliced array's elements
 * (rpc-splice.c): one JSON value exactly as json-c itself writes it (no
 * whitespace, json-c's escapes, valid UTF-8, integers it keeps as
 * written), or a refusal.
 *
 * Strings are most of a replay's bytes (most of them in a few long ones:
 * tool output, file text) and dense with escapes.  With AVX2 a string
 * goes 64 bytes a step: the bytes a backslash escapes come from the
 * backslash runs, so an escape costs no branch of its own; a block stops
 * only for what needs a closer look (a \u escape, a byte that may not be
 * there, non-ASCII text), judged by the same functions as on the
 * byte-wise path.  The block where a string ended serves the next one.
 * The middle of a long string is tested as vectors only, UTF-8 too
 * (rpc-splice-simd.h); a block that fails the test takes the exact path.
 * Other CPUs take 32 bytes a step (SSE2) and the byte-wise path.  All of
 * them accept the same strings and end them at the same byte
 * (t/unit/test-rpc-splice-canon.c checks).
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#define CANON_AVX2 1
#endif

#include "rpc-frame-int.h"
#include "rpc-splice-simd.h"
#include "scan-special.h"

/* Bytes inside a string: 0 plain, 1 '"', 2 '\\', 3 control, 4 non-ASCII. */
static const unsigned char strclass[256] = {
	[0 ... 0x1f] = 3, ['"'] = 1, ['\\'] = 2, [0x80 ... 0xff] = 4
};

/* The bits of a 64-byte block of string text, one a byte. */
struct canon_block {
	const unsigned char	*at;	/* its first byte; NULL: none */
	uint64_t		 end;	/* closing quotes (not escaped) */
	uint64_t		 bad;	/* control bytes, escapes to look at */
	uint64_t		 hi;	/* non-ASCII bytes */
	uint64_t		 esc;	/* bytes escaped by a backslash */
	uint64_t		 carry;	/* the next block's first byte is */
};

/* A scan: each canon_ function takes where its part starts and gives
   where it ends, NULL when it is not json-c's own. */
struct canon {
	const unsigned char	*e;		/* what has come ends here */
	int			 depth;		/* containers still allowed */
	int			 avx2;
	struct canon_block	 blk;		/* AVX2: the last one seen */
};

static const unsigned char *canon_value(struct canon *,
		    const unsigned char *);

/* Length of the valid UTF-8 sequence at p (not overlong, no surrogate,
   at most U+10FFFF), 0 when invalid. */
static size_t
utf8_len(const unsigned char *p, const unsigned char *e)
{
	unsigned c = p[0];
	size_t n, i;
	unsigned v;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07;
	else
		return 0;
	if ((size_t)(e - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
	    (n == 4 && (v < 0x10000 || v > 0x10ffff)))
		return 0;
	return n;
}

/* An escape as json-c writes it: \" \\ \b \f \n \r \t, or \u00xx
   (lowercase) for the other control characters.  Its length, 0 if not. */
static size_t
canon_escape(const unsigned char *p, const unsigned char *e)
{
	static const char hex[] = "0123456789abcdef";
	const char *h;
	unsigned v;

	if (e - p < 2)
		return 0;
	switch (p[1]) {
	case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't':
		return 2;
	}
	if (p[1] != 'u' || e - p < 6 || p[2] != '0' || p[3] != '0' ||
	    (p[4] != '0' && p[4] != '1') || p[5] == '\0' ||
	    (h = strchr(hex, p[5])) == NULL)
		return 0;
	v = (unsigned)(p[4] - '0') << 4 | (unsigned)(h - hex);
	return v == '\b' || v == '\t' || v == '\n' || v == '\f' || v == '\r' ? 0 : 6;
}

/* The length of the escape or UTF-8 sequence at a stop byte p other than
   '"', 0 when it is not one json-c writes. */
static size_t
stop_len(const unsigned char *p, const unsigned char *e)
{
	switch (strclass[*p]) {
	case 2:
		return canon_escape(p, e);
	case 4:
		return utf8_len(p, e);
	default:
		return 0;
	}
}

/* The rest of a string from p, a byte at a time. */
static const unsigned char *
canon_str_bytes(struct canon *c, const unsigned char *p)
{
	const unsigned char *e = c->e;
	size_t n;

	for (;;) {
		while (p < e && strclass[*p] == 0)
			p++;
		if (p >= e)
			return NULL;
		if (*p == '"')
			return p + 1;
		if ((n = stop_len(p, e)) == 0)
			return NULL;
		p += n;
	}
}

#ifdef __SSE2__
/* The stop bytes (not plain string text) among the 32 at p, one bit
   each. */
static uint32_t
stop_mask(const unsigned char *p)
{
	const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i space = _mm_set1_epi8(0x20);
	__m128i v;
	uint32_t m[2];
	int i;

	for (i = 0; i < 2; i++) {
		v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
		/* Signed: below 0x20 is a control byte or a non-ASCII one. */
		m[i] = (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(
		    _mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bs)),
		    _mm_cmplt_epi8(v, space)));
	}
	return m[0] | m[1] << 16;
}
#endif

/*
 * The rest of a string from p, every stop byte of a 32-byte block handled
 * from that block's one mask (scanning again after each escape cost more
 * than the scan), each judged as on the byte-wise path.
 */
static const unsigned char *
canon_str_sse2(struct canon *c, const unsigned char *p)
{
#ifdef __SSE2__
	const unsigned char *e = c->e;
	uint32_t m;
	size_t i, n, adv;

	for (; e - p >= 32; p += adv > 32 ? adv : 32) {
		m = stop_mask(p);
		for (adv = 32; m != 0; m &= UINT32_MAX << adv) {
			i = (size_t)__builtin_ctz(m);
			if (p[i] == '"')
				return p + i + 1;
			if ((n = stop_len(p + i, e)) == 0)
				return NULL;
			/* The sequence may cover stop bytes: skip past it. */
			if ((adv = i + n) >= 32)
				break;
		}
	}
#endif
	return canon_str_bytes(c, p);
}

#ifdef CANON_AVX2
/* The block of 64 bytes at at, carry saying whether its first byte is
   escaped: its stops, k (struct canon_block). */
__attribute__((target("avx2"))) static inline void
canon_block(const unsigned char *at, uint64_t carry, struct canon_block *k)
{
	const __m256i q = _mm256_set1_epi8('"'), b = _mm256_set1_epi8('\\');
	const __m256i sp = _mm256_set1_epi8(0x20);
	__m256i lo, hi;
	uint64_t ctl;

	lo = _mm256_loadu_si256((const __m256i *)(const void *)at);
	hi = _mm256_loadu_si256((const __m256i *)(const void *)(at + 32));
	k->at = at;
	k->carry = carry;
	k->esc = scan_escaped(scan_bits64(_mm256_cmpeq_epi8(lo, b),
	    _mm256_cmpeq_epi8(hi, b)), &k->carry);
	k->end = scan_bits64(_mm256_cmpeq_epi8(lo, q),
	    _mm256_cmpeq_epi8(hi, q)) & ~k->esc;
	k->hi = scan_bits64(lo, hi);
	/* Signed: below 0x20 is a control byte or a non-ASCII one. */
	ctl = scan_bits64(_mm256_cmpgt_epi8(sp, lo), _mm256_cmpgt_epi8(sp, hi)) &
	    ~k->hi;
	k->bad = ctl | (k->esc & scan_bits64(canon_notok32(lo),
	    canon_notok32(hi)));
}

/* The first block from p (in the middle of a string) that is not plain
   text, or the first that is not whole before e.  Its own function: the
   constants of the loop are made once, and only for long strings. */
__attribute__((target("avx2"), noinline)) static const unsigned char *
canon_str_middle(const unsigned char *p, const unsigned char *e)
{
	while (e - p >= 64 && canon_plain(p))
		p += 64;
	return p;
}

/* Whether the byte at p, in a string, is escaped: the run of backslashes
   before it is odd (it cannot go back past the opening quote). */
static inline uint64_t
canon_escaped_at(const unsigned char *p)
{
	size_t n = 0;

	while (p[-1 - (ptrdiff_t)n] == '\\')
		n++;
	return n & 1;
}

/*
 * The stops of a block from its string's first byte to its closing quote
 * (bad and hi), in order: a \u escape or UTF-8 sequence judged as on the
 * byte-wise path, anything else refused.  64 when the block is good to
 * its end (or quote), the offset to go on from when a sequence ended
 * elsewhere, 0 to refuse.
 */
__attribute__((target("avx2"))) static size_t
canon_block_stops(const unsigned char *at, uint64_t esc,
    const unsigned char *e, uint64_t bad, uint64_t hi)
{
	uint64_t stops = bad | hi;
	size_t i, n;

	while (stops != 0) {
		i = (size_t)__builtin_ctzll(stops);
		if ((bad >> i) & 1) {
			/* Escaped (its backslash may be the last block's). */
			if (!((esc >> i) & 1) || canon_escape(at + i - 1, e) == 0)
				return 0;
			return i + 5;
		}
		if ((n = utf8_len(at + i, e)) == 0)
			return 0;
		if (i + n >= 64)
			return i + n;
		stops &= UINT64_MAX << (i + n);
	}
	return 64;
}

/*
 * The rest of a string from p, 64 bytes a step.  The block where the last
 * string ended is kept: the next string (a key after a value, the value
 * after its key) mostly starts in it, and its bits hold for that string
 * too (between two strings there is no backslash that passes).  A
 * sequence that ends past the block has the next block start after it;
 * fewer than 64 bytes left, the SSE2 or byte-wise path goes on (from the
 * backslash when the next byte is escaped).
 */
__attribute__((target("avx2"))) static const unsigned char *
canon_str_avx2(struct canon *c, const unsigned char *p)
{
	struct canon_block k;			/* in registers */
	const unsigned char *e = c->e;
	uint64_t from, end, upto, bad, hi, carry;
	size_t adv;

	if (c->blk.at != NULL && p >= c->blk.at && p < c->blk.at + 64)
		k = c->blk;
	else if (e - p < 64)
		return canon_str_sse2(c, p);
	else
		canon_block(p, 0, &k);
	for (;;) {
		from = UINT64_MAX << (p - k.at);
		end = k.end & from;
		/* The bits up to the closing quote, or all. */
		upto = (end != 0 ? end ^ (end - 1) : UINT64_MAX) & from;
		bad = k.bad & upto;
		hi = k.hi & upto;
		adv = 64;
		if ((bad | hi) != 0 &&
		    (adv = canon_block_stops(k.at, k.esc, e, bad, hi)) == 0)
			return NULL;
		if (adv == 64 && end != 0) {
			c->blk = k;
			return k.at + __builtin_ctzll(end) + 1;
		}
		/* After a sequence there is no backslash to carry. */
		carry = adv == 64 ? k.carry : 0;
		p = k.at + adv;
		/* The middle of a long string: blocks with nothing to stop. */
		if (e - p >= 64) {
			p = canon_str_middle(p, e);
			carry = canon_escaped_at(p);
		}
		if (e - p < 64) {
			c->blk.at = NULL;
			return canon_str_sse2(c, carry ? p - 1 : p);
		}
		canon_block(p, carry, &k);
	}
}
#endif

/* A string at q (its opening quote).  With AVX2, one that ends in the
   block kept, with nothing in it to look at (most keys and short
   values), ends here. */
static inline const unsigned char *
canon_string(struct canon *c, const unsigned char *q)
{
	const unsigned char *p = q + 1;
#ifdef CANON_AVX2
	const struct canon_block *k = &c->blk;
	uint64_t from, end;

	if (c->avx2) {
		if (k->at != NULL && p >= k->at && p < k->at + 64) {
			from = UINT64_MAX << (p - k->at);
			end = k->end & from;
			if (end != 0 && ((k->bad | k->hi) & from &
			    (end ^ (end - 1))) == 0)
				return k->at + __builtin_ctzll(end) + 1;
		}
		return canon_str_avx2(c, p);
	}
#endif
	return canon_str_sse2(c, p);
}

/* The end of the run of digits at p, eight bytes at a time where the
   byte order allows: a byte less '0' is a digit when it is below 10,
   which adding 6 keeps below 16 (a carry only leaves a non-digit, so
   the first one is found right). */
static inline const unsigned char *
canon_digits(const unsigned char *p, const unsigned char *e)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t v, nd;

	for (; e - p >= 8; p += 8) {
		memcpy(&v, p, 8);
		v ^= 0x3030303030303030ull;
		nd = (v | (v + 0x0606060606060606ull)) & 0xf0f0f0f0f0f0f0f0ull;
		if (nd != 0)
			return p + __builtin_ctzll(nd) / 8;
	}
#endif
	while (p < e && *p >= '0' && *p <= '9')
		p++;
	return p;
}

/* A number json-c keeps as written: any double; an integer without "-0"
   and short enough not to be clamped. */
static const unsigned char *
canon_number(struct canon *c, const unsigned char *s)
{
	const unsigned char *p = s, *e = c->e, *d;
	int real = 0;

	if (p < e && *p == '-')
		p++;
	d = p;
	if (p < e && *p == '0')
		p++;
	else if (p < e && *p >= '1' && *p <= '9')
		p = canon_digits(p + 1, e);
	else
		return NULL;
	if (p < e && *p == '.') {
		real = 1;
		if (++p >= e || *p < '0' || *p > '9')
			return NULL;
		p = canon_digits(p + 1, e);
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		real = 1;
		if (++p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e || *p < '0' || *p > '9')
			return NULL;
		p = canon_digits(p + 1, e);
	}
	if (!real && (p - d > 18 || (d != s && *d == '0')))
		return NULL;
	return p;
}

/* A literal word. */
static const unsigned char *
canon_word(struct canon *c, const unsigned char *p, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(c->e - p) < n || memcmp(p, w, n) != 0)
		return NULL;
	return p + n;
}

/* An object or array at p (its opening bracket). */
static const unsigned char *
canon_container(struct canon *c, const unsigned char *p, int obj)
{
	const unsigned char *e = c->e;
	unsigned char close = obj ? '}' : ']';

	if (--c->depth < 0)
		return NULL;
	if (++p < e && *p == close) {
		c->depth++;
		return p + 1;
	}
	for (;;) {
		if (obj && (p >= e || *p != '"' ||
		    (p = canon_string(c, p)) == NULL || p >= e || *p++ != ':'))
			return NULL;
		/* Most values are strings. */
		if (p >= e || (p = *p == '"' ? canon_string(c, p) :
		    canon_value(c, p)) == NULL || p >= e)
			return NULL;
		if (*p == close)
			break;
		if (*p++ != ',')
			return NULL;
	}
	c->depth++;
	return p + 1;
}

static const unsigned char *
canon_value(struct canon *c, const unsigned char *p)
{
	if (p >= c->e)
		return NULL;
	switch (*p) {
	case '"':
		return canon_string(c, p);
	case '{':
		return canon_container(c, p, 1);
	case '[':
		return canon_container(c, p, 0);
	case 't':
		return canon_word(c, p, "true");
	case 'f':
		return canon_word(c, p, "false");
	case 'n':
		return canon_word(c, p, "null");
	default:
		return canon_number(c, p);
	}
}

int
rpc_splice_canon(const char *p, const char *e, int depth, const char **end)
{
	struct canon c;
	const unsigned char *q;

	c.e = (const unsigned char *)e;
	c.depth = depth;
#ifdef CANON_AVX2
	c.avx2 = __builtin_cpu_supports("avx2");
#else
	c.avx2 = 0;
#endif
	c.blk.at = NULL;
	if ((q = canon_value(&c, (const unsigned char *)p)) == NULL)
		return -1;
	*end = (const char *)q;
	return 0;
}
