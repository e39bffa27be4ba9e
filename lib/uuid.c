/* SPDX-License-Identifier: ISC */
/* uuid.c: UUID v4 generation, binary/text conversion, validation. */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uuid.h"

/* Value + 1 of a lowercase hex digit; 0 for anything else. */
static const int8_t hexval[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6,
	['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12,
	['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16
};

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
