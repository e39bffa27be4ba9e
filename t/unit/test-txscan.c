/* SPDX-License-Identifier: ISC */
/*
 * test-txscan.c: the key scanner's string skipping (txscan.c, included for
 * its static functions) against a byte-at-a-time reference, on strings
 * made of the bytes that matter: quotes, runs of backslashes, newlines,
 * \u escapes with good and bad digits, across the 64-byte steps; and
 * that an escaped key or kept field goes to json-c, and nested values
 * are skipped as JSON has them; and that the object scanner compiled
 * for AVX2 (every string scan inlined) reads random and damaged lines as
 * the plain one does.
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

/* A growing line. */
struct line {
	char	b[16384];
	size_t	n;
	int	over;		/* a piece did not fit: not well formed */
};

static void
put(struct line *l, const char *s)
{
	size_t n = strlen(s);

	if (l->n + n < sizeof l->b - 1) {
		memcpy(l->b + l->n, s, n);
		l->n += n;
	} else
		l->over = 1;
}

/* Blanks JSON allows between tokens, most often none. */
static void
put_ws(struct line *l, unsigned *seed)
{
	static const char *const w[] = { " ", "\t", "\r", "  " };

	if (rand_r(seed) % 8 == 0)
		put(l, w[rand_r(seed) % 4]);
}

/* A string body: text, escapes (simple, \u, bad), quotes escaped, long
   enough at times to cross several 64-byte steps. */
static void
put_str(struct line *l, unsigned *seed)
{
	static const char *const bits[] = { "ab", "\\n", "\\\"", "\\\\",
	    "\\u00e9", "\\/", "x y", "\\t", "\xc3\xa9", "0123456789abcdef",
	    "\\\\\\\"" };
	int i, n = rand_r(seed) % 4 == 0 ? 40 + rand_r(seed) % 80 :
	    rand_r(seed) % 12;

	put(l, "\"");
	for (i = 0; i < n; i++)
		put(l, bits[rand_r(seed) % (sizeof bits / sizeof bits[0])]);
	put(l, "\"");
}

static void put_value(struct line *, unsigned *, int);

/* An object or array of random values, depth levels deep at most. */
static void
put_container(struct line *l, unsigned *seed, int depth, int arr)
{
	int i, n = rand_r(seed) % 4;

	put(l, arr ? "[" : "{");
	for (i = 0; i < n; i++) {
		if (i > 0)
			put(l, ",");
		put_ws(l, seed);
		if (!arr) {
			put_str(l, seed);
			put_ws(l, seed);
			put(l, ":");
			put_ws(l, seed);
		}
		put_value(l, seed, depth - 1);
		put_ws(l, seed);
	}
	put(l, arr ? "]" : "}");
}

static void
put_value(struct line *l, unsigned *seed, int depth)
{
	static const char *const scalars[] = { "null", "true", "false", "0",
	    "-12", "3.5e+7", "1E2", "-0.25" };

	switch (rand_r(seed) % (depth > 0 ? 5 : 3)) {
	case 0:
	case 1:
		put_str(l, seed);
		break;
	case 2:
		put(l, scalars[rand_r(seed) % (sizeof scalars / sizeof scalars[0])]);
		break;
	default:
		put_container(l, seed, depth, rand_r(seed) % 2);
	}
}

/* A transcript-like line: the keys the index keeps among others, a
   message object with a role, values of every kind. */
static void
put_record(struct line *l, unsigned *seed)
{
	static const char *const keys[] = { "uuid", "parentUuid", "sessionId",
	    "type", "subtype", "message", "timestamp", "cwd", "u\\u0075id",
	    "toolUseResult" };
	static const char *const vals[] = { "\"6cdd3c57-87c6-42d0-960e-723578d0f1e9\"",
	    "\"user\"", "\"assistant\"", "null", "\"s-1\"", "\"\"" };
	int i, n = 1 + rand_r(seed) % 9, k;

	l->n = 0;
	l->over = 0;
	put(l, "{");
	for (i = 0; i < n; i++) {
		if (i > 0)
			put(l, ",");
		put_ws(l, seed);
		k = rand_r(seed) % (sizeof keys / sizeof keys[0]);
		put(l, "\"");
		put(l, keys[k]);
		put(l, "\":");
		put_ws(l, seed);
		if (k == 5 && rand_r(seed) % 4 != 0) {
			put(l, rand_r(seed) % 2 ? "{\"role\":\"user\",\"parts\":" :
			    "{\"parts\":");
			put_value(l, seed, 3);
			put(l, rand_r(seed) % 3 ? ",\"role\":\"model\"}" : "}");
		} else if (k < 5 && rand_r(seed) % 2)
			put(l, vals[rand_r(seed) % (sizeof vals / sizeof vals[0])]);
		else
			put_value(l, seed, 3);
	}
	put(l, "}");
}

/* One byte of l changed to one the scanner stops at, or l cut short. */
static void
damage(struct line *l, unsigned *seed)
{
	static const char bytes[] = "\"\\{}[],: \n\x01u0";
	size_t at = (size_t)rand_r(seed) % l->n;

	if (rand_r(seed) % 4 == 0)
		l->n = at;
	else
		l->b[at] = bytes[rand_r(seed) % (sizeof bytes - 1)];
}

/* Whether two scans read the same (the fields, the message flags). */
static int
same_scan(const struct txscan *a, const struct txscan *b)
{
	int i;

	for (i = 0; i < TXF_N; i++)
		if (a->f[i].kind != b->f[i].kind || a->f[i].len != b->f[i].len ||
		    (a->f[i].kind == TXK_STR && a->f[i].p != b->f[i].p))
			return 0;
	return a->message == b->message && a->role_user == b->role_user;
}

/* The AVX2 object scanner against the plain one, and txscan_line against
   txscan_object, on random transcript-like lines, whole and damaged. */
static void
objects_agree(void)
{
	struct line l;
	struct txscan a, b;
	const char *ea, *eb, *end, *nl;
	enum txscan_result ra, rb;
	unsigned seed = 7, failed = 0, n[4] = { 0 }, whole_bad = 0;
	int i;

#ifdef HAVE_AVX2_PATH
	if (!__builtin_cpu_supports("avx2")) {
		ok(1, "AVX2 object scanner # SKIP no AVX2 on this CPU");
		return;
	}
	for (i = 0; i < 100000; i++) {
		put_record(&l, &seed);
		if (i % 2)
			damage(&l, &seed);
		memset(&a, 0, sizeof a);
		memset(&b, 0, sizeof b);
		ea = eb = NULL;
		ra = scan_object(l.b, l.b + l.n, &a, &ea);
		rb = scan_object_avx2(l.b, l.b + l.n, &b, &eb);
		n[ra]++;
		if (i % 2 == 0 && !l.over && ra == TXSCAN_BAD)
			whole_bad++;
		if (ra != rb || (ra == TXSCAN_OK && (ea != eb || !same_scan(&a, &b))))
			failed++;
		/* The fast path of the pass reads the same line ended by a
		   newline, or leaves it to txscan_object. */
		l.b[l.n] = '\n';
		memset(&b, 0, sizeof b);
		if (txscan_line(l.b, l.b + l.n + 1, &b, &end, &nl) == 1 &&
		    (txscan_object(l.b, l.b + l.n, &a) != TXSCAN_OK ||
		    nl != l.b + l.n || !same_scan(&a, &b)))
			failed++;
	}
	ok(failed == 0, "the AVX2 object scanner agrees with the plain one on"
	    " 100000 lines (%u failed)", failed);
	ok(whole_bad == 0, "no whole line is read as bad (%u were)", whole_bad);
	ok(n[TXSCAN_OK] > 1000 && n[TXSCAN_BAD] > 1000 &&
	    n[TXSCAN_FALLBACK] > 1000, "every outcome tried (%u read, %u bad,"
	    " %u to json-c)", n[TXSCAN_OK], n[TXSCAN_BAD], n[TXSCAN_FALLBACK]);
#else
	(void)l; (void)a; (void)b; (void)ea; (void)eb; (void)end; (void)nl;
	(void)ra; (void)rb; (void)seed; (void)failed; (void)n; (void)whole_bad;
	(void)i;
	ok(1, "AVX2 object scanner # SKIP not in this build");
#endif
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
	objects_agree();
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
