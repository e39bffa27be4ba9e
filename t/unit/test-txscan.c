/* SPDX-License-Identifier: ISC */
/*
 * test-txscan.c: the key scanner's string skipping (txscan.c, included for
 * its static functions) against a byte-at-a-time reference, on strings
 * made of the bytes that matter: quotes, runs of backslashes, newlines,
 * \u escapes with good and bad digits, across the 64-byte steps; and
 * that an escaped key or kept field goes to json-c, and nested values
 * are skipped as JSON has them.
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

/* An escaped key or kept field is json-c's to read (the scanner would use
   its raw bytes), however far the line goes on after it. */
static void
escapes_fall_back(void)
{
	static const char *const lines[] = {
		"{\"uuid\":\"a\\u0062\",\"type\":\"user\",\"pad\":\"%s\"}",
		"{\"uu\\u0069d\":\"ab\",\"type\":\"user\",\"pad\":\"%s\"}",
		"{\"message\":{\"ro\\u006ce\":\"user\"},\"pad\":\"%s\"}",
		"{\"type\":\"us\\\"er\",\"pad\":\"%s\"}",
	};
	char pad[200], line[400];
	struct txscan s;
	size_t i, n;

	memset(pad, 'x', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		for (n = 0; n < sizeof pad; n += 199) {
			snprintf(line, sizeof line, lines[i], pad + sizeof pad - 1 - n);
			memset(&s, 0, sizeof s);
			ok(txscan_object(line, line + strlen(line), &s) ==
			    TXSCAN_FALLBACK, "escaped, %zu bytes after: %.40s",
			    n, line);
		}
	}
	snprintf(line, sizeof line, "{\"uuid\":\"ab\",\"type\":\"user\","
	    "\"pad\":\"%s\"}", pad);
	memset(&s, 0, sizeof s);
	ok(txscan_object(line, line + strlen(line), &s) == TXSCAN_OK &&
	    s.f[TXF_UUID].len == 2, "the same line unescaped is read");
}

/* Nested values are skipped structurally: whitespace only where JSON
   has it (space, tab, CR; a newline ends the line), brackets matched by
   the container they close. */
static void
structure(void)
{
	static const struct {
		const char *line;
		enum txscan_result want;
	} c[] = {
		{ "{ \"a\" : [ 1 , { \"b\" : [ ] } , \"s\" ] , \"c\" : 2 }",
		    TXSCAN_OK },
		{ "{\t\"a\"\r:\t[\r{\t}\r]\t}", TXSCAN_OK },
		{ "{\"a\":[[1,[2]],{\"b\":{\"c\":[]}}]}", TXSCAN_OK },
		{ "{\"a\":[1,2}}", TXSCAN_BAD },
		{ "{\"a\":{\"b\":1]}", TXSCAN_BAD },
		{ "{\"a\":[{\"b\":1},]}", TXSCAN_BAD },
		{ "{\"a\":[1 2]}", TXSCAN_BAD },
		{ "{\"a\":{\"b\" 1}}", TXSCAN_BAD },
		{ "{\"a\":[\x1f" "1]}", TXSCAN_BAD },
		{ "{\"a\":\x0b[1]}", TXSCAN_BAD },
		{ "{\"a\":[1,\x0c" "2]}", TXSCAN_BAD },
		{ "{\"a\":[1,\n2]}", TXSCAN_BAD },
	};
	struct txscan s;
	size_t i;

	for (i = 0; i < sizeof c / sizeof c[0]; i++) {
		memset(&s, 0, sizeof s);
		ok(txscan_object(c[i].line, c[i].line + strlen(c[i].line), &s) ==
		    c[i].want, "structure %zu: %s", i, c[i].want == TXSCAN_OK ?
		    "read" : "bad");
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

	escapes_fall_back();
	structure();
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
