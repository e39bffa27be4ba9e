/* SPDX-License-Identifier: ISC */
/*
 * utf8-simd.h: UTF-8 checked 32 bytes at a time with AVX2, for
 * utf8_valid() (utf8.c) and the spliced array's scanner
 * (rpc-splice-simd.h).  Callers check the CPU first.
 */
#ifndef QWEN_UTF8_SIMD_H
#define QWEN_UTF8_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * The bytes of v that break UTF-8, given the three bytes before each
 * (prev1, prev2, prev3: v as loaded 1, 2, 3 bytes earlier): each pair of
 * a byte and the one before it is looked up by nibble (the error kinds
 * the pair may be, one bit each, as in Keiser and Lemire, "Validating
 * UTF-8 in less than one instruction per byte"), and a continuation byte
 * is right after another only as a 3- or 4-byte sequence's third or
 * fourth byte.  Not 0 somewhere when v is not valid UTF-8 there.
 */
#define U_SHORT		0x01	/* a lead byte not followed by a continuation */
#define U_LONG		0x02	/* a continuation byte after ASCII */
#define U_OVER3		0x04	/* 0xe0 0x80-0x9f */
#define U_LARGE		0x08	/* 0xf4 0x90-0xbf, 0xf5-0xff */
#define U_SURR		0x10	/* 0xed 0xa0-0xbf */
#define U_OVER2		0x20	/* 0xc0-0xc1 */
#define U_LARGE1000	0x40	/* 0xf5-0xff 0x80-0x8f */
#define U_OVER4		0x40	/* 0xf0 0x80-0x8f */
#define U_TWOCONT	0x80	/* two continuation bytes */
#define U_CARRY		(U_SHORT | U_LONG | U_TWOCONT)
#define U_L16(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p) \
	_mm256_setr_epi8(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, \
	    a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p)

__attribute__((target("avx2"))) static inline __m256i
utf8_err32(__m256i v, __m256i prev1, __m256i prev2, __m256i prev3)
{
	const __m256i b1high = U_L16(
	    U_LONG, U_LONG, U_LONG, U_LONG, U_LONG, U_LONG, U_LONG, U_LONG,
	    U_TWOCONT, U_TWOCONT, U_TWOCONT, U_TWOCONT,
	    U_SHORT | U_OVER2, U_SHORT, U_SHORT | U_OVER3 | U_SURR,
	    U_SHORT | U_LARGE | U_LARGE1000 | U_OVER4);
	const __m256i b1low = U_L16(
	    U_CARRY | U_OVER3 | U_OVER2 | U_OVER4, U_CARRY | U_OVER2,
	    U_CARRY, U_CARRY, U_CARRY | U_LARGE,
	    U_CARRY | U_LARGE | U_LARGE1000, U_CARRY | U_LARGE | U_LARGE1000,
	    U_CARRY | U_LARGE | U_LARGE1000, U_CARRY | U_LARGE | U_LARGE1000,
	    U_CARRY | U_LARGE | U_LARGE1000, U_CARRY | U_LARGE | U_LARGE1000,
	    U_CARRY | U_LARGE | U_LARGE1000, U_CARRY | U_LARGE | U_LARGE1000,
	    U_CARRY | U_LARGE | U_LARGE1000 | U_SURR,
	    U_CARRY | U_LARGE | U_LARGE1000, U_CARRY | U_LARGE | U_LARGE1000);
	const __m256i b2high = U_L16(
	    U_SHORT, U_SHORT, U_SHORT, U_SHORT, U_SHORT, U_SHORT, U_SHORT,
	    U_SHORT,
	    U_LONG | U_OVER2 | U_TWOCONT | U_OVER3 | U_LARGE1000 | U_OVER4,
	    U_LONG | U_OVER2 | U_TWOCONT | U_OVER3 | U_LARGE,
	    U_LONG | U_OVER2 | U_TWOCONT | U_SURR | U_LARGE,
	    U_LONG | U_OVER2 | U_TWOCONT | U_SURR | U_LARGE,
	    U_SHORT, U_SHORT, U_SHORT, U_SHORT);
	const __m256i nib = _mm256_set1_epi8(0x0f);
	__m256i sc, must;

	sc = _mm256_and_si256(_mm256_and_si256(
	    _mm256_shuffle_epi8(b1high,
	    _mm256_and_si256(_mm256_srli_epi16(prev1, 4), nib)),
	    _mm256_shuffle_epi8(b1low, _mm256_and_si256(prev1, nib))),
	    _mm256_shuffle_epi8(b2high,
	    _mm256_and_si256(_mm256_srli_epi16(v, 4), nib)));
	/* 0x80 where a third (after 0xe0-0xff) or fourth (after 0xf0-0xff)
	   byte is due. */
	must = _mm256_and_si256(_mm256_or_si256(
	    _mm256_subs_epu8(prev2, _mm256_set1_epi8(0xe0 - 0x80)),
	    _mm256_subs_epu8(prev3, _mm256_set1_epi8((char)(0xf0 - 0x80)))),
	    _mm256_set1_epi8((char)0x80));
	return _mm256_xor_si256(sc, must);
}
#undef U_SHORT
#undef U_LONG
#undef U_OVER3
#undef U_LARGE
#undef U_SURR
#undef U_OVER2
#undef U_LARGE1000
#undef U_OVER4
#undef U_TWOCONT
#undef U_CARRY
#undef U_L16

/* 0x80 in the last bytes of v that begin a sequence v does not finish:
   the last byte a lead, the one before a 3- or 4-byte lead, the one
   before that a 4-byte lead. */
__attribute__((target("avx2"))) static inline __m256i
utf8_incomplete32(__m256i v)
{
	const __m256i max = _mm256_setr_epi8(
	    (char)0xff, (char)0xff, (char)0xff, (char)0xff, (char)0xff,
	    (char)0xff, (char)0xff, (char)0xff, (char)0xff, (char)0xff,
	    (char)0xff, (char)0xff, (char)0xff, (char)0xff, (char)0xff,
	    (char)0xff, (char)0xff, (char)0xff, (char)0xff, (char)0xff,
	    (char)0xff, (char)0xff, (char)0xff, (char)0xff, (char)0xff,
	    (char)0xff, (char)0xff, (char)0xff, (char)0xff,
	    (char)(0xf0 - 1), (char)(0xe0 - 1), (char)(0xc0 - 1));

	return _mm256_subs_epu8(v, max);
}

#endif
#endif
