/* SPDX-License-Identifier: ISC */
/* utf8.c: validate UTF-8 across read boundaries. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

int
utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	int len, i;
	unsigned lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return -1;
	for (i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return 0;
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return -1;
	}
	return len;
}

char *
utf8_clean(struct utf8_carry *c, const char *buf, size_t len, int final,
    size_t *outlen)
{
	unsigned char *in, *out;
	size_t n = c->len + len, i = 0, o = 0;
	int k;

	if ((in = malloc(n + 1)) == NULL || (out = malloc(n * 3 + 1)) == NULL) {
		free(in);
		return NULL;
	}
	memcpy(in, c->buf, c->len);
	if (len > 0)
		memcpy(in + c->len, buf, len);
	c->len = 0;
	while (i < n) {
		k = utf8_seq(in + i, n - i);
		if (k == 0 && !final) {
			memcpy(c->buf, in + i, n - i);
			c->len = n - i;
			break;
		}
		if (k <= 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, in + i, (size_t)k);
		o += (size_t)k;
		i += (size_t)k;
	}
	free(in);
	out[o] = '\0';
	*outlen = o;
	return (char *)out;
}

int
utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;
	uint64_t w;
	int k;

	while (p < e) {
		/* Transcripts are mostly ASCII: skip it eight bytes at a time. */
		while (e - p >= 8) {
			memcpy(&w, p, 8);
			if (w & 0x8080808080808080ULL)
				break;
			p += 8;
		}
		if (p >= e)
			break;
		if (*p < 0x80) {
			p++;
			continue;
		}
		if ((k = utf8_seq(p, (size_t)(e - p))) <= 0)
			return 0;
		p += k;
	}
	return 1;
}

size_t
utf8_boundary(const char *s, size_t len, size_t want)
{
	if (want >= len)
		return len;
	while (want > 0 && ((unsigned char)s[want] & 0xc0) == 0x80)
		want--;
	return want;
}
