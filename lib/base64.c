/* SPDX-License-Identifier: ISC */
/* base64.c: RFC 4648 base64 and base64url, strict decoding. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "base64.h"

static const char std_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t
base64_encoded_len(enum base64_alphabet a, size_t n)
{
	if (a == BASE64_STD)
		return (n + 2) / 3 * 4;
	return n / 3 * 4 + (n % 3 == 0 ? 0 : n % 3 + 1);
}

long
base64_encode(enum base64_alphabet a, const void *in, size_t n, char *out,
    size_t outsize)
{
	const char *chars = a == BASE64_STD ? std_chars : url_chars;
	const uint8_t *p = in;
	size_t len = base64_encoded_len(a, n), o = 0;

	if (outsize < len + 1)
		return -1;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t k = n - i < 3 ? n - i : 3;

		if (k > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (k > 2)
			v |= p[i + 2];
		for (size_t j = 0; j < 4; j++) {
			if (j <= k)
				out[o++] = chars[(v >> (18 - 6 * j)) & 63];
			else if (a == BASE64_STD)
				out[o++] = '=';
		}
	}
	out[o] = '\0';
	return (long)o;
}

/* The 6-bit value of c in the alphabet, or -1. */
static int
b64_value(enum base64_alphabet a, char c)
{
	const char *chars = a == BASE64_STD ? std_chars : url_chars;
	const char *hit;

	if (c == '\0' || (hit = strchr(chars, c)) == NULL)
		return -1;
	return (int)(hit - chars);
}

long
base64_decode(enum base64_alphabet a, const char *s, size_t len, void *out,
    size_t outsize)
{
	uint8_t *o = out;
	size_t pad = 0, n = 0;
	uint32_t acc = 0;
	unsigned bits = 0;

	while (pad < 2 && len > 0 && s[len - 1] == '=') {
		len--;
		pad++;
	}
	if (a == BASE64_STD ? (len + pad) % 4 != 0 :
	    (pad != 0 && (len + pad) % 4 != 0))
		return -1;
	if (len % 4 == 1)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int v = b64_value(a, s[i]);

		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= outsize)
				return -1;
			o[n++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* Leftover bits must be zero (canonical encoding). */
	if (acc != 0)
		return -1;
	return (long)n;
}
