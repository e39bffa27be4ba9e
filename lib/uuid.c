/* SPDX-License-Identifier: ISC */
/* uuid.c: UUID v4 generation, binary/text conversion, validation. */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uuid.h"

/* RFC 4122 version 4 from arc4random. */
void
uuid_new(char out[UUID_LEN + 1])
{
	uint8_t b[16];

	arc4random_buf(b, sizeof(b));
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	uuid_format(b, out);
}

/* The dashes go before bytes 4, 6, 8 and 10. */
void
uuid_format(const uint8_t b[16], char out[UUID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	int i, j;

	for (i = 0, j = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[j++] = '-';
		out[j++] = hex[b[i] >> 4];
		out[j++] = hex[b[i] & 15];
	}
	out[j] = '\0';
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SWAR_ONES	0x0101010101010101ull
#define SWAR_TOP	0x8080808080808080ull

/*
 * Eight lowercase hex digits, a word x read from the text, as four bytes
 * at out: each byte's range is checked by the top bit of two sums (x >= lo:
 * x + 0x80 - lo; x > hi: x + 0x7f - hi), which stay within their byte
 * while no byte has its own top bit set, checked too.  A letter has bit 6,
 * a digit not: the value is the low nibble, 9 more for a letter.  Then the
 * nibbles are packed in pairs, and the pairs together.
 */
static inline int
hex8(uint64_t x, uint8_t *out)
{
	uint64_t digit, letter, v;
	uint32_t w;

	digit = (x + 0x50 * SWAR_ONES) & ~(x + 0x46 * SWAR_ONES);
	letter = (x + 0x1f * SWAR_ONES) & ~(x + 0x19 * SWAR_ONES);
	v = (x & 0x0f * SWAR_ONES) + ((x >> 6) & SWAR_ONES) * 9;
	v = (v << 4 | v >> 8) & 0x00ff00ff00ff00ffull;
	v = (v | v >> 8) & 0x0000ffff0000ffffull;
	w = (uint32_t)(v | v >> 16);
	memcpy(out, &w, 4);
	return ((digit | letter) & ~x & SWAR_TOP) == SWAR_TOP ? 0 : -1;
}

/* Two groups of four digits at a and b as one word. */
static inline uint64_t
word4x2(const char *a, const char *b)
{
	uint32_t x, y;

	memcpy(&x, a, 4);
	memcpy(&y, b, 4);
	return x | (uint64_t)y << 32;
}

/* The transcript index parses every uuid and parent: 8 digits a step. */
int
uuid_parse(const char *s, size_t n, uint8_t out[16])
{
	uint64_t x, y;

	if (n != UUID_LEN || s[8] != '-' || s[13] != '-' || s[18] != '-' ||
	    s[23] != '-')
		return -1;
	memcpy(&x, s, 8);
	memcpy(&y, s + 28, 8);
	return hex8(x, out) | hex8(word4x2(s + 9, s + 14), out + 4) |
	    hex8(word4x2(s + 19, s + 24), out + 8) | hex8(y, out + 12);
}
#else
/* Value + 1 of a lowercase hex digit; 0 for anything else. */
static const int8_t hexval[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6,
	['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12,
	['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16
};

/* Branch-free over the digits: the transcript index parses every uuid. */
int
uuid_parse(const char *s, size_t n, uint8_t out[16])
{
	static const uint8_t pos[16] = { 0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24,
	    26, 28, 30, 32, 34 };
	int i, hi, lo, bad = 0;

	if (n != UUID_LEN || s[8] != '-' || s[13] != '-' || s[18] != '-' ||
	    s[23] != '-')
		return -1;
	for (i = 0; i < 16; i++) {
		hi = hexval[(unsigned char)s[pos[i]]];
		lo = hexval[(unsigned char)s[pos[i] + 1]];
		bad |= (hi == 0) | (lo == 0);
		out[i] = (uint8_t)(((unsigned)(hi - 1) & 15) << 4 |
		    ((unsigned)(lo - 1) & 15));
	}
	return bad ? -1 : 0;
}
#endif

/* Version 1-5, variant 10xx, any case. */
int
uuid_valid(const char *s)
{
	if (strlen(s) != UUID_LEN)
		return 0;
	for (int i = 0; i < UUID_LEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!isxdigit((unsigned char)s[i]))
			return 0;
	}
	if (s[14] < '1' || s[14] > '5')
		return 0;
	return strchr("89abAB", s[19]) != NULL;
}
