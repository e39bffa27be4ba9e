/*
 * jtape-int.h: internals shared by jtape.c (the reader) and jtape-str.c
 * (strings: decoding and canonical writing).
 */
#ifndef ACP_JTAPE_INT_H
#define ACP_JTAPE_INT_H

#include "jtape.h"

struct jt_block {
	struct jt_block	*next;
	size_t		 len, cap;
	char		 buf[];
};

/* Forget the C strings handed out for the previous record. */
void	jt_arena_reset(struct jtape *);

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* First '"', '\\' or control byte in [p, e), or e: 32 bytes per step. */
__attribute__((target("avx2"))) static inline const char *
find_special_avx2(const char *p, const char *e)
{
	const __m256i q = _mm256_set1_epi8('"'), b = _mm256_set1_epi8('\\');
	const __m256i c = _mm256_set1_epi8(0x1f);
	__m256i v;
	unsigned m;

	for (; e - p >= 32; p += 32) {
		v = _mm256_loadu_si256((const __m256i *)(const void *)p);
		m = (unsigned)_mm256_movemask_epi8(_mm256_or_si256(_mm256_or_si256(
		    _mm256_cmpeq_epi8(v, q), _mm256_cmpeq_epi8(v, b)),
		    _mm256_cmpeq_epi8(_mm256_min_epu8(v, c), v)));
		if (m != 0)
			return p + __builtin_ctz(m);
	}
	while (p < e && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
		p++;
	return p;
}
#define HAVE_AVX2_PATH 1
#endif

/* First '"', '\\' or control byte in [p, e), or e. */
static inline const char *
find_special(const char *p, const char *e)
{
#ifdef HAVE_AVX2_PATH
	if (__builtin_cpu_supports("avx2"))
		return find_special_avx2(p, e);
#endif
	while (p < e && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
		p++;
	return p;
}

static inline int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The code unit of the \uXXXX escape at s (s[0] == '\\'), or -1. */
static inline long
uescape(const char *s, const char *e)
{
	long v = 0;
	int i, h;

	if (e - s < 6)
		return -1;
	for (i = 2; i < 6; i++) {
		if ((h = hexval(s[i])) < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

#endif
