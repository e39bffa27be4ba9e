/* SPDX-License-Identifier: ISC */
/*
 * scan-special.h: the one SIMD scanner of the loader, shared by the
 * transcript key scanner (txscan.c) and the JSON tape (jtape.c,
 * jtape-str.c): the first byte in a run of string content that needs a
 * look, 32 bytes per step with AVX2.
 *
 * Stop bytes are '"', '\\' and either every control byte (SCAN_CTL: the
 * tape, which must escape them) or '\n' only (SCAN_NL: the line scanner,
 * where a newline ends the line and other bytes are left to json-c).
 */
#ifndef QWEN_SCAN_SPECIAL_H
#define QWEN_SCAN_SPECIAL_H

#include <stdint.h>

enum scan_stop { SCAN_NL, SCAN_CTL };

/* Whether c stops a scan of kind k. */
static inline int
scan_stops(unsigned char c, enum scan_stop k)
{
	return c == '"' || c == '\\' || (k == SCAN_CTL ? c < 0x20 : c == '\n');
}

/* Whether a backslash followed by c is a whole escape (\\u takes four
   hex digits more). */
static inline int
scan_escape_simple(char c)
{
	switch (c) {
	case '"': case '\\': case '/': case 'b': case 'f': case 'n':
	case 'r': case 't':
		return 1;
	}
	return 0;
}

/* The bytes escaped by a backslash among 64 whose backslashes are b: a
   run of backslashes escapes the byte after it when its length is odd,
   found by adding the runs that start on odd bits to b (the carry marks a
   run's end).  *carry: the block's first byte is escaped, in and out.
   (txscan.c's strings and the daemon's replay check, rpc-splice-canon.c.) */
static inline uint64_t
scan_escaped(uint64_t b, uint64_t *carry)
{
	const uint64_t even = 0x5555555555555555ull;
	uint64_t follows, odd_starts, seq;

	b &= ~*carry;
	follows = b << 1 | *carry;
	odd_starts = b & ~even & ~follows;
	*carry = __builtin_add_overflow(odd_starts, b, &seq);
	return (even ^ (seq << 1)) & follows;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The top bits of 64 bytes' worth of compare results, a bit a byte. */
__attribute__((target("avx2"))) static inline uint64_t
scan_bits64(__m256i lo, __m256i hi)
{
	return (uint32_t)_mm256_movemask_epi8(lo) |
	    (uint64_t)(uint32_t)_mm256_movemask_epi8(hi) << 32;
}

/* The bytes of v that are no simple escape's second byte (all but
   " \\ / b f n r t: txscan.c's strings and the tape's).  The low
   nibble's lookup needs no mask: a byte above 0x7f looks up 0 (pshufb),
   which is "no". */
__attribute__((target("avx2"))) static inline __m256i
scan_notok32(__m256i v)
{
	/* low nibble -> the high nibbles (bits) of " \\ / b f n r t */
	const __m256i lowtab = _mm256_setr_epi8(
	    0, 0, 0x04 | 0x40 | 0x80, 0, 0x80, 0, 0x40, 0,
	    0, 0, 0, 0, 0x20, 0, 0x40, 0x04,
	    0, 0, 0x04 | 0x40 | 0x80, 0, 0x80, 0, 0x40, 0,
	    0, 0, 0, 0, 0x20, 0, 0x40, 0x04);
	const __m256i hightab = _mm256_setr_epi8(
	    0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, (char)0x80,
	    0, 0, 0, 0, 0, 0, 0, 0,
	    0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, (char)0x80,
	    0, 0, 0, 0, 0, 0, 0, 0);
	const __m256i nib = _mm256_set1_epi8(0x0f);
	__m256i l, h;

	l = _mm256_shuffle_epi8(lowtab, v);
	h = _mm256_shuffle_epi8(hightab,
	    _mm256_and_si256(_mm256_srli_epi16(v, 4), nib));
	return _mm256_cmpeq_epi8(_mm256_and_si256(l, h), _mm256_setzero_si256());
}

/* The stop bytes among the 32 at p, one bit each; callers check the CPU
   first.  A caller that handles several stops of one block walks the
   bits instead of scanning again after each one. */
__attribute__((target("avx2"))) static inline unsigned
scan_mask_avx2(const char *p, enum scan_stop k)
{
	const __m256i q = _mm256_set1_epi8('"'), b = _mm256_set1_epi8('\\');
	const __m256i c = _mm256_set1_epi8(0x1f), n = _mm256_set1_epi8('\n');
	__m256i v, third;

	v = _mm256_loadu_si256((const __m256i *)(const void *)p);
	third = k == SCAN_CTL ?
	    _mm256_cmpeq_epi8(_mm256_min_epu8(v, c), v) :
	    _mm256_cmpeq_epi8(v, n);
	return (unsigned)_mm256_movemask_epi8(_mm256_or_si256(_mm256_or_si256(
	    _mm256_cmpeq_epi8(v, q), _mm256_cmpeq_epi8(v, b)), third));
}

/* First stop byte in [p, e), or e; callers check the CPU first. */
__attribute__((target("avx2"))) static inline const char *
scan_special_avx2(const char *p, const char *e, enum scan_stop k)
{
	unsigned m;

	for (; e - p >= 32; p += 32)
		if ((m = scan_mask_avx2(p, k)) != 0)
			return p + __builtin_ctz(m);
	while (p < e && !scan_stops((unsigned char)*p, k))
		p++;
	return p;
}
/*
 * Walk a string whose content starts at *pp to its closing quote, every
 * stop byte of a 32-byte block handled from that block's one load (text
 * is dense with escapes: scanning again after each stop cost more than the
 * scan).  A stop other than a quote goes to stop(), which returns the byte
 * after it (an escape, a control byte) or NULL to give up, with arg, the
 * caller's state (the tape's plain and canonical flags).  Returns 1 with
 * *pp at the closing quote, 0 when stop() gave up, -1 when fewer than 32
 * bytes are left (*pp: where the caller's own loop goes on).  Callers
 * check the CPU first.
 */
__attribute__((target("avx2"), always_inline)) static inline int
scan_string_avx2(const char **pp, const char *e, enum scan_stop k,
    const char *(*stop)(const char *, const char *, void *), void *arg)
{
	const char *p = *pp, *s;
	unsigned m, i, adv;

	for (; e - p >= 32; p += adv > 32 ? adv : 32) {
		m = scan_mask_avx2(p, k);
		for (adv = 32; m != 0; m &= ~0u << adv) {
			i = (unsigned)__builtin_ctz(m);
			if (p[i] == '"') {
				*pp = p + i;
				return 1;
			}
			if ((s = stop(p + i, e, arg)) == NULL)
				return 0;
			/* The escaped byte may be a stop byte: skip past it. */
			if ((adv = (unsigned)(s - p)) >= 32)
				break;
		}
	}
	*pp = p;
	return -1;
}
#define HAVE_AVX2_PATH 1
#endif

/* First stop byte in [p, e), or e, on any CPU. */
static inline const char *
scan_special(const char *p, const char *e, enum scan_stop k)
{
#ifdef HAVE_AVX2_PATH
	if (__builtin_cpu_supports("avx2"))
		return scan_special_avx2(p, e, k);
#endif
	while (p < e && !scan_stops((unsigned char)*p, k))
		p++;
	return p;
}

#endif
