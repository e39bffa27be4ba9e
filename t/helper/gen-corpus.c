/* SPDX-License-Identifier: ISC */
/*
 * gen-corpus.c: text pools for qwen-gen-transcript.
 */
#include "config.h"

#include <err.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen-corpus.h"

static const char *const words[] = { "the", "a", "an", "this", "that", "we",
	"it", "handler", "cache", "request", "session", "token", "retry",
	"parser", "buffer", "stream", "config", "module", "test", "build",
	"error", "value", "index", "record", "chain", "parent", "leaf", "branch",
	"file", "path", "update", "check", "ensure", "return", "should", "could",
	"when", "after", "before", "because", "while", "load", "write", "read",
	"append", "compress", "history", "model", "tool", "call", "result",
	"output", "input", "schema", "field", "daemon", "client", "server",
	"replay", "journal", "page", "limit", "budget", "offset", "size",
	"refactor", "rename", "migrate", "validate", "timeout", "memory",
	"queue", "worker", "thread", "lock", "lease", "writer", "reader",
	"snapshot", "transcript", "event", "message", "prompt" };
static const char *const idents[] = { "sessionId", "parentUuid", "loadSession",
	"readRecords", "buildIndex", "walkChain", "appendLine", "flushQueue",
	"parseLine", "recordToolResult", "handleRequest", "cfg", "opts", "ctx",
	"result", "payload", "entry", "records", "chain", "leaf", "node", "buf",
	"offset", "logger", "state", "cursor", "pageSize", "maxBytes", "decoder",
	"encoder", "fileHandle", "transcriptPath", "lockPath", "retryCount",
	"deadline", "controller", "signal" };
static const char *const types[] = { "string", "number", "boolean", "Buffer",
	"Record<string, unknown>", "ChatRecord", "Promise<void>", "Content[]",
	"Part", "Config", "SessionService" };
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Make room for n more bytes. */
static void
sb_grow(struct sbuf *b, size_t n)
{
	size_t cap;

	if (b->len + n <= b->cap)
		return;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	if ((b->p = realloc(b->p, cap)) == NULL)
		err(1, "realloc");
	b->cap = cap;
}

void
sb_put(struct sbuf *b, const void *p, size_t n)
{
	sb_grow(b, n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void
sb_putc(struct sbuf *b, char c)
{
	sb_grow(b, 1);
	b->p[b->len++] = c;
}

void
sb_puts(struct sbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

void
sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	sb_grow(b, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void
sb_json(struct sbuf *b, const char *s, size_t n)
{
	size_t i;

	sb_putc(b, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			sb_putc(b, '\\');
			sb_putc(b, (char)c);
		} else if (c == '\n') {
			sb_puts(b, "\\n");
		} else if (c < 0x20) {
			sb_printf(b, "\\u%04x", c);
		} else {
			sb_putc(b, (char)c);
		}
	}
	sb_putc(b, '"');
}

void
sb_free(struct sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

static uint64_t
splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void
rng_seed(struct rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

/* xoshiro256** */
uint64_t
rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = s[3] << 45 | s[3] >> 19;
	return res;
}

int64_t
rng_range(struct rng *r, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

double
rng_real(struct rng *r)
{
	return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}

const char *
corpus_ident(struct rng *r)
{
	return idents[rng_next(r) % NELEM(idents)];
}

const char *
corpus_word(struct rng *r)
{
	return words[rng_next(r) % NELEM(words)];
}

/* lo..hi random words separated by spaces. */
static void
sentence(struct rng *r, struct sbuf *b, int lo, int hi)
{
	int i, n = (int)rng_range(r, lo, hi);

	for (i = 0; i < n; i++) {
		if (i > 0)
			sb_putc(b, ' ');
		sb_puts(b, corpus_word(r));
	}
}

/* One line of the code pool. */
static void
code_line(struct rng *r, struct sbuf *b)
{
	double k = rng_real(r);
	const char *a = corpus_ident(r), *c = corpus_ident(r), *d = corpus_ident(r);

	if (k < 0.15) {
		sb_printf(b, "export function %s(%s: %s): %s {", a, c,
		    types[rng_next(r) % NELEM(types)], types[rng_next(r) % NELEM(types)]);
	} else if (k < 0.45) {
		sb_printf(b, "  const %s = await %s.%s(%s, %d);", a, c, d,
		    corpus_ident(r), (int)rng_range(r, 0, 65536));
	} else if (k < 0.55) {
		sb_printf(b, "  if (!%s) return %s;", a, c);
	} else if (k < 0.65) {
		sb_puts(b, "  // ");
		sentence(r, b, 6, 14);
	} else if (k < 0.72) {
		sb_puts(b, "}");
	} else if (k < 0.80) {
		sb_printf(b, "import { %s } from './%s.js';", a, c);
	} else if (k < 0.92) {
		sb_printf(b, "2026-08-%02dT%02d:%02d:%02d.%03dZ %s [%s] ",
		    (int)rng_range(r, 1, 28), (int)rng_range(r, 0, 23),
		    (int)rng_range(r, 0, 59), (int)rng_range(r, 0, 59),
		    (int)rng_range(r, 0, 999),
		    rng_real(r) < 0.5 ? "INFO" : "DEBUG", a);
		sentence(r, b, 4, 10);
	} else {
		sb_puts(b, "  \xe2\x9c\x93 ");
		sentence(r, b, 3, 8);
		sb_printf(b, " (%d ms)", (int)rng_range(r, 1, 900));
	}
	sb_putc(b, '\n');
}

void
corpus_init(struct corpus *c, struct rng *r)
{
	struct sbuf code = { 0 }, prose = { 0 };
	int i;

	for (i = 0; i < 24000; i++)
		code_line(r, &code);
	for (i = 0; i < 6000; i++) {
		sentence(r, &prose, 6, 20);
		sb_puts(&prose, ". ");
	}
	c->code = code.p;
	c->ncode = code.len;
	c->prose = prose.p;
	c->nprose = prose.len;
}

void
corpus_free(struct corpus *c)
{
	free(c->code);
	free(c->prose);
}

/* Append raw pool bytes escaping '\n' (the pools hold no other specials). */
static void
put_escaped(struct sbuf *b, const char *p, size_t n)
{
	const char *e = p + n, *nl;

	while (p < e && (nl = memchr(p, '\n', e - p)) != NULL) {
		sb_put(b, p, nl - p);
		sb_puts(b, "\\n");
		p = nl + 1;
	}
	sb_put(b, p, e - p);
}

/* Append about n bytes from a pool, starting after an align character. */
static void
slice(const char *pool, size_t npool, char align, struct rng *r,
    struct sbuf *b, size_t n)
{
	size_t start, end, need = n;
	const char *a;

	while (need > 0) {
		start = rng_next(r) % (npool - 1);
		a = memchr(pool + start, align, npool - start);
		start = a != NULL && (size_t)(a - pool) < npool - 1 ? (size_t)(a - pool) + 1 : 0;
		end = start + need < npool ? start + need : npool;
		while (end < npool && ((unsigned char)pool[end] & 0xc0) == 0x80)
			end++;
		put_escaped(b, pool + start, end - start);
		need -= end - start < need ? end - start : need;
	}
}

void
corpus_code(const struct corpus *c, struct rng *r, struct sbuf *b, size_t n)
{
	slice(c->code, c->ncode, '\n', r, b, n);
}

void
corpus_prose(const struct corpus *c, struct rng *r, struct sbuf *b, size_t n)
{
	slice(c->prose, c->nprose, ' ', r, b, n);
}

size_t
corpus_safe_cut(const char *p, size_t pos)
{
	size_t k;

	while (pos > 0 && ((unsigned char)p[pos] & 0xc0) == 0x80)
		pos--;
	for (k = 0; k < pos && p[pos - 1 - k] == '\\'; k++)
		;
	return (k & 1) ? pos - 1 : pos;
}
