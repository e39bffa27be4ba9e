/* SPDX-License-Identifier: ISC */
/*
 * test-txscan.c: the key scanner's string skipping (txscan.c, included for
 * its static functions) against a byte-at-a-time reference, on strings
 * made of the bytes that matter: quotes, runs of backslashes, newlines,
 * \u escapes with good and bad digits, across the 64-byte steps.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../../bin/acp-child/loader/txscan.c"
#include "tap.h"

/* What skip_str must answer: the byte after the closing quote, or NULL. */
static const char *
ref_skip_str(const char *p, const char *e)
{
	while (p < e) {
		if (*p == '"')
			return p + 1;
		if (*p == '\n')
			return NULL;
		if (*p != '\\')
			p++;
		else if ((p = escape_end(p, e)) == NULL)
			return NULL;
	}
	return NULL;
}

/* A random string body of n bytes, mostly text, dense with the bytes the
   scanner stops at. */
static void
fill(char *b, size_t n, unsigned *seed)
{
	static const char pick[] = "\\\\\\\\\\\"\"nu0aF/bfrtx\n \xc3";
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		r = rand_r(seed) % 100;
		b[i] = r < 70 ? 'a' + r % 26 : pick[r % (sizeof pick - 1)];
	}
}

int
main(void)
{
	char buf[512], where[64];
	const char *got, *want;
	unsigned seed = 1, bad = 0, ended = 0, failed = 0;
	size_t n, off;
	int i;

	for (i = 0; i < 200000; i++) {
		n = 1 + (size_t)rand_r(&seed) % (sizeof buf - 1);
		fill(buf, n, &seed);
		/* Long quiet runs, so that strings cross several steps. */
		if (rand_r(&seed) % 2 && n > 130) {
			off = (size_t)rand_r(&seed) % (n - 128);
			memset(buf + off, 'q', 100 + (size_t)rand_r(&seed) % 28);
		}
		want = ref_skip_str(buf, buf + n);
		got = skip_str(buf, buf + n);
		if (want == NULL)
			bad++;
		else
			ended++;
		if (got != want && failed++ < 5) {
			snprintf(where, sizeof where, "%td/%td",
			    got ? got - buf : -1, want ? want - buf : -1);
			ok(0, "string %d (%zu bytes): skip_str %s", i, n, where);
		}
	}
	ok(failed == 0, "skip_str agrees with the reference on 200000 strings"
	    " (%u failed)", failed);
	ok(bad > 1000 && ended > 1000, "both outcomes tried (%u ended, %u bad)",
	    ended, bad);
	return done_testing();
}
