/* SPDX-License-Identifier: ISC */
/* utf8.c: validate UTF-8 across read boundaries. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "utf8-simd.h"

/* Strings shorter than this are checked a byte (or eight) at a time. */
#define UTF8_VECTOR_MIN	64

int
utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	int len, i;
	unsigned lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return -1;
	for (i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return 0;
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return -1;
	}
	return len;
}

char *
utf8_clean(struct utf8_carry *c, const char *buf, size_t len, int final,
    size_t *outlen)
{
	unsigned char *in, *out;
	size_t n = c->len + len, i = 0, o = 0;
	int k;

	if ((in = malloc(n + 1)) == NULL || (out = malloc(n * 3 + 1)) == NULL) {
		free(in);
		return NULL;
	}
	memcpy(in, c->buf, c->len);
	if (len > 0)
		memcpy(in + c->len, buf, len);
	c->len = 0;
	while (i < n) {
		k = utf8_seq(in + i, n - i);
		if (k == 0 && !final) {
			memcpy(c->buf, in + i, n - i);
			c->len = n - i;
			break;
		}
		if (k <= 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, in + i, (size_t)k);
		o += (size_t)k;
		i += (size_t)k;
	}
	free(in);
	out[o] = '\0';
	*outlen = o;
	return (char *)out;
}

/* utf8_valid a byte at a time, ASCII eight bytes at a time. */
static int
utf8_valid_bytes(const unsigned char *p, const unsigned char *e)
{
	uint64_t w;
	int k;

	while (p < e) {
		/* Transcripts are mostly ASCII: skip it eight bytes at a time. */
		while (e - p >= 8) {
			memcpy(&w, p, 8);
			if (w & 0x8080808080808080ULL)
				break;
			p += 8;
		}
		if (p >= e)
			break;
		if (*p < 0x80) {
			p++;
			continue;
		}
		if ((k = utf8_seq(p, (size_t)(e - p))) <= 0)
			return 0;
		p += k;
	}
	return 1;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static inline __m256i
utf8_load(const unsigned char *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/*
 * utf8_valid 32 bytes a step (n >= UTF8_VECTOR_MIN): each byte is judged
 * with the three before it (utf8_err32), so the first three bytes go the
 * byte way; an ASCII block only has to follow a finished sequence; the
 * last, short block is the 32 bytes that end the string, judged again in
 * part; and the string may not end inside a sequence.
 */
__attribute__((target("avx2"))) static int
utf8_valid_avx2(const unsigned char *s, size_t n)
{
	const unsigned char *p = s, *e = s + n;
	__m256i err = _mm256_setzero_si256(), v;
	int k;

	while (p < s + 3) {
		if ((k = utf8_seq(p, (size_t)(e - p))) <= 0)
			return 0;
		p += k;
	}
	for (;; p += 32) {
		/* Text is mostly ASCII: 64 bytes a step through it. */
		while (e - p >= 64 && _mm256_movemask_epi8(_mm256_or_si256(
		    utf8_load(p), utf8_load(p + 32))) == 0) {
			if (p[-1] >= 0xc0 || p[-2] >= 0xe0 || p[-3] >= 0xf0)
				return 0;
			p += 64;
		}
		if (e - p < 32)
			p = e - 32;
		v = utf8_load(p);
		if (_mm256_movemask_epi8(v) == 0) {
			if (p[-1] >= 0xc0 || p[-2] >= 0xe0 || p[-3] >= 0xf0)
				return 0;
		} else
			err = _mm256_or_si256(err, utf8_err32(v, utf8_load(p - 1),
			    utf8_load(p - 2), utf8_load(p - 3)));
		if (p + 32 == e)
			break;
	}
	err = _mm256_or_si256(err, utf8_incomplete32(utf8_load(e - 32)));
	return _mm256_testz_si256(err, err);
}
#endif

int
utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

#if defined(__x86_64__) && defined(__GNUC__)
	if (n >= UTF8_VECTOR_MIN && __builtin_cpu_supports("avx2"))
		return utf8_valid_avx2(p, n);
#endif
	return utf8_valid_bytes(p, p + n);
}

size_t
utf8_boundary(const char *s, size_t len, size_t want)
{
	if (want >= len)
		return len;
	while (want > 0 && ((unsigned char)s[want] & 0xc0) == 0x80)
		want--;
	return want;
}
