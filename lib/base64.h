/* SPDX-License-Identifier: ISC */
/*
 * base64.h: RFC 4648 base64, standard and URL-safe alphabets.
 *
 * The WebSocket handshake needs the standard form (Sec-WebSocket-Accept,
 * Sec-WebSocket-Key) and the bearer subprotocol carries a base64url token;
 * both decoders are strict (no whitespace, no stray characters, canonical
 * padding bits), so a malformed value is an error, never a guess.
 */
#ifndef QWEN_BASE64_H
#define QWEN_BASE64_H

#include <stddef.h>

enum base64_alphabet {
	BASE64_STD,	/* A-Z a-z 0-9 + /, padded with '=' */
	BASE64_URL,	/* A-Z a-z 0-9 - _, padding optional on decode, none on encode */
};

/* The encoded length of n bytes, without the terminating NUL. */
size_t	base64_encoded_len(enum base64_alphabet, size_t n);

/*
 * Encode in[0..n) into out, NUL-terminated; outsize must be at least
 * base64_encoded_len() + 1.  Returns the length, or -1 when out is short.
 */
long	base64_encode(enum base64_alphabet, const void *in, size_t n, char *out,
	    size_t outsize);

/*
 * Decode s[0..len) into out (outsize bytes).  BASE64_STD requires padding
 * to a multiple of 4; BASE64_URL accepts it or not.  Returns the decoded
 * length, or -1 for malformed input or a short out.
 */
long	base64_decode(enum base64_alphabet, const char *s, size_t len, void *out,
	    size_t outsize);

#endif
