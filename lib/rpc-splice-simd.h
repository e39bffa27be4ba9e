/* SPDX-License-Identifier: ISC */
/*
 * rpc-splice-simd.h: the AVX2 tests of string text for the spliced
 * array's scanner (rpc-splice-canon.c), 32 or 64 bytes at a time: the
 * bytes escaped by backslash runs, the bytes no two-byte escape json-c
 * writes ends with, UTF-8 checked as vectors (utf8-simd.h), and a block
 * of a string's middle with nothing to stop at.  Callers check the CPU
 * first.
 */
#ifndef QWEN_RPC_SPLICE_SIMD_H
#define QWEN_RPC_SPLICE_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <stdint.h>
#include <immintrin.h>

#include "scan-special.h"
#include "utf8-simd.h"

/* The bytes of v that do not end a two-byte escape json-c writes: those
   of any JSON escape (scan_notok32), and '/' (json-c is told not to
   escape it). */
__attribute__((target("avx2"))) static inline __m256i
canon_notok32(__m256i v)
{
	return _mm256_or_si256(scan_notok32(v),
	    _mm256_cmpeq_epi8(v, _mm256_set1_epi8('/')));
}

__attribute__((target("avx2"))) static inline __m256i
canon_load(const unsigned char *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/*
 * Whether the 64 bytes at p, in the middle of a string, are text with
 * nothing to stop at: no quote or control byte, no byte after a
 * backslash that no escape json-c writes ends with, any non-ASCII text
 * valid UTF-8 and whole in the block (the bytes before p are the
 * string's, and end no sequence early).  No bits, no carry: a byte after
 * an escaped backslash that no escape ends with ("\\\\x", rare) fails the
 * test, and the exact path judges it.
 */
__attribute__((target("avx2"), always_inline)) static inline int
canon_plain(const unsigned char *p)
{
	const __m256i two = _mm256_set1_epi8(2), sp = _mm256_set1_epi8(0x20);
	const __m256i b = _mm256_set1_epi8('\\');
	__m256i lo, hi, x, y, any;

	lo = canon_load(p);
	hi = canon_load(p + 32);
	/* A quote or a control byte: v ^ 2 is at most 0x20 only for them. */
	x = _mm256_xor_si256(lo, two);
	y = _mm256_xor_si256(hi, two);
	any = _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_min_epu8(x, sp), x),
	    _mm256_cmpeq_epi8(_mm256_min_epu8(y, sp), y));
	any = _mm256_or_si256(any, _mm256_or_si256(
	    _mm256_and_si256(_mm256_cmpeq_epi8(canon_load(p - 1), b),
	    canon_notok32(lo)),
	    _mm256_and_si256(_mm256_cmpeq_epi8(canon_load(p + 31), b),
	    canon_notok32(hi))));
	if (!_mm256_testz_si256(any, any))
		return 0;
	if (_mm256_movemask_epi8(_mm256_or_si256(lo, hi)) != 0) {
		if (p[61] >= 0xf0 || p[62] >= 0xe0 || p[63] >= 0xc0)
			return 0;
		any = _mm256_or_si256(utf8_err32(lo, canon_load(p - 1),
		    canon_load(p - 2), canon_load(p - 3)), utf8_err32(hi,
		    canon_load(p + 31), canon_load(p + 30), canon_load(p + 29)));
		if (!_mm256_testz_si256(any, any))
			return 0;
	}
	return 1;
}

#endif
#endif
