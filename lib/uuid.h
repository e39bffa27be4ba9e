/* SPDX-License-Identifier: ISC */
/*
 * uuid.h: RFC 4122 UUIDs as qwen-code writes them: new (version 4),
 * binary and text forms, and the check for a client-given UUID.
 */
#ifndef QWEN_UUID_H
#define QWEN_UUID_H

#include <stddef.h>
#include <stdint.h>

#define UUID_LEN	36	/* text form, without the NUL */

/* A fresh random UUID v4 (lowercase) into out[37]. */
void	uuid_new(char out[UUID_LEN + 1]);

/* 16 bytes as lowercase 8-4-4-4-12 text into out[37]. */
void	uuid_format(const uint8_t b[16], char out[UUID_LEN + 1]);

/*
 * Canonical lowercase 8-4-4-4-12 text of n bytes to 16 bytes: 0, or -1 for
 * anything else (upper case included, so a round trip is byte-exact).
 */
int	uuid_parse(const char *s, size_t n, uint8_t out[16]);

/* 1 when s is a UUID of version 1 to 5 with the RFC variant, any case. */
int	uuid_valid(const char *s);

#endif
