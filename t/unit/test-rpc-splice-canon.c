/* SPDX-License-Identifier: ISC */
/*
 * test-rpc-splice-canon.c: the spliced array's scanner
 * (lib/rpc-splice-canon.c) on each of its string paths: byte-wise (the
 * reference), SSE2 32 bytes a step, AVX2 64 bytes a step.  Every sequence
 * json-c may or may not write, at every offset of two 64-byte blocks, and
 * many seeded random strings and values: all paths accept the same ones
 * and end them at the same byte.  Each input lies in a buffer of its own
 * length, so a read past it shows in a sanitizer build.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rpc-splice-canon.c"
#include "tap.h"

enum { PATH_BYTES, PATH_SSE2, PATH_AVX2, NPATH };
static const char *const pathname[NPATH] = { "bytes", "sse2", "avx2" };

/* The string at s[0] (its opening quote) of n bytes by path: -1, or
   the offset after it. */
static long
str_by(int path, const char *s, size_t n)
{
	unsigned char *b = malloc(n ? n : 1);
	const unsigned char *q;
	struct canon c;
	long r;

	memcpy(b, s, n);
	memset(&c, 0, sizeof c);
	c.e = b + n;
	switch (path) {
	case PATH_BYTES:
		q = canon_str_bytes(&c, b + 1);
		break;
	case PATH_SSE2:
		q = canon_str_sse2(&c, b + 1);
		break;
	default:
#ifdef CANON_AVX2
		q = canon_str_avx2(&c, b + 1);
#else
		q = canon_str_sse2(&c, b + 1);
#endif
		break;
	}
	r = q == NULL ? -1 : (long)(q - b);
	free(b);
	return r;
}

/* A whole value, strings by AVX2 (its kept block too) or not. */
static long
value_by(int avx2, const char *s, size_t n)
{
	unsigned char *b = malloc(n ? n : 1);
	const unsigned char *q;
	struct canon c;
	long r;

	memcpy(b, s, n);
	memset(&c, 0, sizeof c);
	c.e = b + n;
	c.depth = 16;
	c.avx2 = avx2;
	q = canon_value(&c, b);
	r = q == NULL ? -1 : (long)(q - b);
	free(b);
	return r;
}

static int have_avx2;

/* Whether all paths agree on s[0, n); diag on the first that does not. */
static int
agree(const char *what, const char *s, size_t n, long *got)
{
	long r[NPATH];
	int i;

	for (i = 0; i < NPATH; i++)
		r[i] = i == PATH_AVX2 && !have_avx2 ? r[PATH_SSE2] :
		    str_by(i, s, n);
	*got = r[0];
	for (i = 1; i < NPATH; i++)
		if (r[i] != r[0]) {
			diag("%s: %s says %ld, bytes %ld (%zu bytes)", what,
			    pathname[i], r[i], r[0], n);
			return 0;
		}
	return 1;
}

/*
 * Each sequence at every offset of the first two blocks of a string, the
 * string cut right after it or going on past a block: every path accepts
 * or refuses it as json-c's encoding says, and ends it at its quote.  An
 * earlier string in the same value may leave its block for this one.
 */
static void
check_offsets(void)
{
	static const struct {
		const char	*what, *seq;
		int		 good;
	} seqs[] = {
		{ "\\n", "\\n", 1 }, { "\\\"", "\\\"", 1 }, { "\\\\", "\\\\", 1 },
		{ "\\b\\f\\r\\t", "\\b\\f\\r\\t", 1 },
		{ "\\u0000", "\\u0000", 1 }, { "\\u001f", "\\u001f", 1 },
		{ "\\u007f", "\\u007f", 0 },
		{ "even run then quote", "\\\\\\\\", 1 },
		{ "odd run then quote", "\\\\\\\\\\\"", 1 },
		{ "long run", "\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\", 1 },
		{ "2-byte UTF-8", "\xc3\xa9", 1 }, { "3-byte UTF-8", "\xe2\x82\xac", 1 },
		{ "4-byte UTF-8", "\xf0\x9f\x98\x80", 1 },
		{ "U+10FFFF", "\xf4\x8f\xbf\xbf", 1 },
		{ "U+0080", "\xc2\x80", 1 }, { "U+0800", "\xe0\xa0\x80", 1 },
		{ "U+D7FF", "\xed\x9f\xbf", 1 }, { "U+E000", "\xee\x80\x80", 1 },
		{ "U+10000", "\xf0\x90\x80\x80", 1 },
		{ "two 2-byte", "\xc3\xa9\xc3\xa9", 1 },
		{ "UTF-8 and escapes", "\xe2\x82\xac\\n\xc3\xa9\\\\\\u0001", 1 },
		{ "DEL", "\x7f", 1 },
		{ "escaped slash", "\\/", 0 }, { "\\a", "\\a", 0 },
		{ "\\u0041", "\\u0041", 0 }, { "uppercase \\u001F", "\\u001F", 0 },
		{ "\\u000a", "\\u000a", 0 }, { "\\u0009", "\\u0009", 0 },
		{ "\\U0001", "\\U0001", 0 }, { "cut \\u00", "\\u00", 0 },
		{ "\\u then quote", "\\u00\"", 0 },
		{ "escaped control byte", "\\\x01", 0 },
		{ "escaped non-ASCII", "\\\xc3\xa9", 0 },
		{ "odd run then letter", "\\\\\\x", 0 },
		{ "raw control byte", "\x01", 0 }, { "raw newline", "\n", 0 },
		{ "raw unit separator", "\x1f", 0 },
		{ "lone continuation byte", "\x80", 0 },
		{ "overlong 2-byte", "\xc0\xaf", 0 },
		{ "overlong 3-byte", "\xe0\x80\xaf", 0 },
		{ "overlong 4-byte", "\xf0\x80\x80\xaf", 0 },
		{ "surrogate", "\xed\xa0\x80", 0 },
		{ "above U+10FFFF", "\xf4\x90\x80\x80", 0 },
		{ "cut 3-byte UTF-8", "\xe2\x82", 0 },
		{ "cut 4-byte UTF-8 then quote", "\xf0\x9f\x98\"", 0 },
		{ "0xff", "\xff", 0 },
		{ "0xf5 lead", "\xf5\x80\x80\x80", 0 },
		{ "5-byte lead", "\xf8\x88\x80\x80\x80", 0 },
		{ "cut 2-byte UTF-8", "\xc3", 0 },
		{ "continuation too many", "\xc3\xa9\xa9", 0 },
		{ "4-byte lead, 3 bytes", "\xf0\x9f\x98", 0 },
	};
	static const char fill[] =
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	/* Text after the sequence: no hex digit to complete a \u. */
	static const char after[] =
	    "ghijklmnopqrstuvwxyzghijklmnopqrstuvwxyzghijklmnopqrstuvwxyz"
	    "ghijklmnopqrstuvwxyz";
	char what[160], buf[600];
	size_t i, n, lead;
	int o, tail, pre, good;
	long got, want;

	for (i = 0; i < sizeof seqs / sizeof *seqs; i++) {
		good = 1;
		for (pre = 0; pre < 2; pre++)
		for (o = 0; o < 140; o++)
		for (tail = 0; tail < 3; tail++) {
			/* pre: a string before it in the same array. */
			lead = pre ? (size_t)snprintf(buf, sizeof buf, "[\"%.*s\",",
			    o % 37, fill) : 0;
			n = lead + (size_t)snprintf(buf + lead, sizeof buf - lead,
			    "\"%.*s%s%.*s\"%s", o, fill, seqs[i].seq,
			    tail == 0 ? 0 : tail == 1 ? 7 : 70, after, pre ? "]" : "");
			snprintf(what, sizeof what, "%s at %d (tail %d%s)",
			    seqs[i].what, o, tail, pre ? ", after a string" : "");
			want = seqs[i].good ? (long)n : -1;
			if (pre) {
				got = value_by(0, buf, n);
				if (got != want || (have_avx2 &&
				    value_by(1, buf, n) != want)) {
					diag("%s: got %ld/%ld want %ld", what, got,
					    value_by(1, buf, n), want);
					good = 0;
				}
			} else {
				good &= agree(what, buf, n, &got);
				if (got != (seqs[i].good ? (long)n : -1)) {
					diag("%s: %ld, not %ld", what, got, want);
					good = 0;
				}
			}
		}
		ok(good, "%s at every offset: %s", seqs[i].what,
		    seqs[i].good ? "accepted" : "refused");
	}
}

/*
 * Numbers, their digits taken eight at a time: an integer of 1 to 24
 * digits, then each byte that may end it or go on with it, with the
 * value's end anywhere after it.  An integer is kept to 18 digits (json-c
 * would clamp a longer one), a fraction or exponent makes it a double.
 */
static void
check_numbers(void)
{
	static const char digits[] = "918273645546372819102938475";
	static const char ends[] = ",]} x:/\"\x80\x01" "aE";
	char buf[64], what[96];
	unsigned char *b;
	const char *end;
	size_t n, j, len;
	long got, want;
	int good = 1, r, cut;

	for (n = 1; n <= 24; n++)
	for (j = 0; j < sizeof ends; j++)
	for (cut = 0; cut < 12; cut++) {
		/* ends[j] is '\0' at the last: the number ends the input. */
		len = (size_t)snprintf(buf, sizeof buf, "%.*s%c5.5e+5",
		    (int)n, digits, ends[j] != '\0' ? ends[j] : ',');
		if (ends[j] == '\0')
			len = n;
		else if (n + (size_t)cut < len)
			len = n + (size_t)cut;
		if (ends[j] == 'E' && len > n)
			want = len == n + 1 ? -1 : (long)n + 2;
		else
			want = n <= 18 ? (long)n : -1;
		b = malloc(len);
		memcpy(b, buf, len);
		r = rpc_splice_canon((const char *)b, (const char *)b + len, 4,
		    &end);
		got = r == -1 ? -1 : (long)(end - (const char *)b);
		free(b);
		if (got != want) {
			snprintf(what, sizeof what, "%zu digits, then %#x, %zu bytes",
			    n, (unsigned char)ends[j], len);
			diag("%s: %ld, not %ld", what, got, want);
			good = 0;
		}
	}
	ok(good, "integers of 1 to 24 digits end where they should");
}

/* A random piece of string text: mostly good, now and then not. */
static size_t
put_piece(char *b, unsigned *seed)
{
	static const char *const good[] = {
		"\\n", "\\\"", "\\\\", "\\t", "\\r", "\\b", "\\f", "\\u0000",
		"\\u001b", "\\u0010", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
		"\xdf\xbf", "\xef\xbf\xbf", "\\\\\\\\", "\\\\\\\"", " ", "/", "\x7f",
		"\xc2\x80", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80",
		"\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf",
	};
	static const char *const bad[] = {
		"\\/", "\\a", "\\u0041", "\\u001F", "\\u000a", "\\u000d", "\\", "\x01",
		"\x1f", "\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x9f\xbf", "\xed\xbf\xbf",
		"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xe2\x82", "\xf0\x9f\x98",
		"\\u00", "\\u0", "\\x", "\xff", "\"",
	};
	unsigned r = (unsigned)rand_r(seed) % 100;
	const char *s;
	size_t n;

	if (r < 60) {
		n = 1 + (unsigned)rand_r(seed) % 40;
		memset(b, 'a' + (int)(r % 26), n);
		return n;
	}
	if (r < 98)
		s = good[(unsigned)rand_r(seed) % (sizeof good / sizeof *good)];
	else if (r == 98) {
		/* 1 to 4 random non-ASCII bytes: some are UTF-8, most not. */
		n = 1 + (unsigned)rand_r(seed) % 4;
		for (r = 0; r < n; r++)
			b[r] = (char)(0x80 | (unsigned)rand_r(seed) % 0x80);
		return n;
	} else
		s = bad[(unsigned)rand_r(seed) % (sizeof bad / sizeof *bad)];
	n = strlen(s);
	memcpy(b, s, n);
	return n;
}

/* A random string (or, with more, an array of them) in b: its length. */
static size_t
put_string(char *b, size_t cap, unsigned *seed)
{
	size_t n = 0, want = (unsigned)rand_r(seed) % 400;

	/* Now and then a long one: many blocks of a string's middle. */
	if ((unsigned)rand_r(seed) % 8 == 0)
		want = (unsigned)rand_r(seed) % 3000;

	b[n++] = '"';
	while (n < want && n + 64 < cap)
		n += put_piece(b + n, seed);
	if ((unsigned)rand_r(seed) % 8 != 0)
		b[n++] = '"';
	return n;
}

/*
 * Seeded random strings, whole or cut anywhere, and arrays of them (the
 * AVX2 path keeps a block from one string to the next): the paths agree
 * on every one.  Most are good, so the ends are compared too.
 */
static void
check_random(void)
{
	static char buf[8192];
	unsigned seed = 20261207;
	size_t n, k, cut;
	int i, good = 1, goodv = 1, took = 0;
	long got, v0, v1;

	for (i = 0; i < 200000 && good; i++) {
		n = put_string(buf, sizeof buf, &seed);
		cut = (unsigned)rand_r(&seed) % 4 == 0 ?
		    (size_t)rand_r(&seed) % (n + 1) : n;
		if (cut == 0)
			cut = n;
		good &= agree("random string", buf, cut, &got);
		took += got != -1;
	}
	ok(good, "random strings: every path agrees (%d of %d taken)", took, i);
	ok(took > i / 4, "random strings: most are taken (%d)", took);
	took = 0;
	for (i = 0; i < 20000 && goodv; i++) {
		n = 0;
		buf[n++] = '[';
		for (k = (unsigned)rand_r(&seed) % 12; n < sizeof buf - 1024; k--) {
			n += put_string(buf + n, sizeof buf - 1024 - n, &seed);
			if (k == 0)
				break;
			buf[n++] = (unsigned)rand_r(&seed) % 40 == 0 ? ':' : ',';
		}
		buf[n++] = ']';
		cut = (unsigned)rand_r(&seed) % 4 == 0 ?
		    (size_t)rand_r(&seed) % (n + 1) : n;
		v0 = value_by(0, buf, cut);
		v1 = have_avx2 ? value_by(1, buf, cut) : v0;
		if (v0 != v1) {
			diag("random array %d: avx2 %ld, not %ld (%zu bytes)",
			    i, v1, v0, cut);
			goodv = 0;
		}
		took += v0 != -1;
	}
	ok(goodv, "random arrays of strings: AVX2 agrees (%d of %d taken)",
	    took, i);
	ok(took > i / 20, "random arrays: some are taken (%d)", took);
}

int
main(void)
{
#ifdef CANON_AVX2
	have_avx2 = __builtin_cpu_supports("avx2");
#endif
	if (!have_avx2)
		diag("no AVX2 here: the SSE2 and byte-wise paths only");
	check_offsets();
	check_numbers();
	check_random();
	return done_testing();
}
