/* SPDX-License-Identifier: ISC */
/* sum64.c: the checksum of the files we keep (sum64.h). */
#include "config.h"

#include <string.h>

#include "sum64.h"

static inline uint64_t
rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

#define P1	0x9e3779b185ebca87ULL
#define P2	0xc2b2ae3d27d4eb4fULL
#define P3	0x165667b19e3779f9ULL
#define P4	0x85ebca77c2b2ae63ULL
#define P5	0x27d4eb2f165667c5ULL

/* Four lanes of 32 bytes, then words, then bytes, then the avalanche.
   What the lanes leave (n after them, not the whole length) is mixed in:
   the kept indexes on disk were summed so. */
uint64_t
sum64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t v[4] = { h + P1 + P2, h + P2, h, h - P1 }, w;
	int i;

	for (; n >= 32; n -= 32, s += 32)
		for (i = 0; i < 4; i++) {
			memcpy(&w, s + 8 * i, 8);
			v[i] = rotl(v[i] + w * P2, 31) * P1;
		}
	h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18) + n;
	for (; n >= 8; n -= 8, s += 8) {
		memcpy(&w, s, 8);
		h = rotl(h ^ (rotl(w * P2, 31) * P1), 27) * P1 + P4;
	}
	for (; n > 0; n--, s++)
		h = rotl(h ^ (*s * P5), 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	return h ^ (h >> 32);
}
