/* SPDX-License-Identifier: ISC */
/*
 * test-rpc-splice.c: rpc_reader_splice, an array kept as bytes.  Every
 * line is read twice, with and without the splice: the messages must
 * encode alike once the kept bytes are put back, the bytes must be kept
 * only when they are json-c's own encoding, and any split of the input
 * must give the same result.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc-frame.h"
#include "tap.h"

#define PLAIN	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static const char marker[] = "\"qwen.session.loadReplay\":{\"v\":1,\"updates\":[";
static const char *const path[] = {
	"result", "_meta", "qwen.session.loadReplay", "updates", NULL
};

/* An answer line holding the updates arr (text of the array's elements). */
static char *
answer(const char *arr, const char *more)
{
	char *s;

	if (asprintf(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"_meta\":{"
	    "\"qwen.session.restore\":{\"v\":1},%s%s],\"partial\":true}}}}%s\n",
	    marker, arr, more) == -1)
		abort();
	return s;
}

/* Read line through a reader (splice on or off, fed step bytes at a
   time): the message encoded with the kept bytes put back ("BAD code"
   for a bad frame); *kept says whether bytes were kept. */
static char *
read_one(const char *line, int splice, size_t step, int *kept)
{
	struct rpc_reader *r = rpc_reader_new(0);
	struct rpc_msg m;
	struct rpc_bad bad;
	enum rpc_read_status st = RPC_READ_MORE;
	json_object *a = NULL, *p;
	struct rpc_raw *raw;
	size_t i, len = strlen(line), n;
	char *out = NULL, *el;

	if (splice)
		rpc_reader_splice(r, marker, path);
	for (i = 0; i < len && st == RPC_READ_MORE; i += n) {
		n = len - i < step ? len - i : step;
		rpc_reader_feed(r, line + i, n);
		st = rpc_reader_next(r, &m, &bad);
	}
	*kept = 0;
	if (st == RPC_READ_BAD) {
		if (asprintf(&out, "BAD %d", bad.code) == -1)
			abort();
		rpc_bad_clear(&bad);
	} else if (st == RPC_READ_MSG) {
		a = m.root;
		for (i = 0; path[i] != NULL && a != NULL; i++)
			a = json_object_object_get_ex(a, path[i], &p) ? p : NULL;
		if ((raw = rpc_raw_of(a)) != NULL) {
			*kept = 1;
			for (i = 0; i < raw->n; i++) {
				el = strndup(raw->bytes + raw->el[i].off, raw->el[i].len);
				json_object_array_add(a, json_tokener_parse(el));
				free(el);
			}
		}
		out = strdup(json_object_to_json_string_ext(m.root, PLAIN));
		rpc_msg_clear(&m);
	} else
		out = strdup("MORE");
	rpc_reader_free(r);
	return out;
}

/* The line reads alike with and without the splice, at every split
   step in steps; the splice keeps bytes iff want_kept. */
static void
check(const char *what, const char *arr, const char *more, int want_kept)
{
	static const size_t steps[] = { 1 << 20, 1, 7, 4096 };
	char *line = answer(arr, more), *plain, *got;
	int kept, k;
	size_t i;

	plain = read_one(line, 0, 1 << 20, &k);
	for (i = 0; i < sizeof steps / sizeof *steps; i++) {
		got = read_one(line, 1, steps[i], &kept);
		if (!ok(strcmp(got, plain) == 0, "%s: same message (step %zu)", what,
		    steps[i]))
			diag("spliced %s\n# plain   %s", got, plain);
		is_int(kept, want_kept, "%s: bytes kept (step %zu)", what, steps[i]);
		free(got);
	}
	free(plain);
	free(line);
}

/* Whether the line reads alike with and without the splice at every
   step, keeping bytes iff want_kept; diag names what differs. */
static int
same(const char *what, const char *arr, int want_kept)
{
	static const size_t steps[] = { 1 << 20, 1, 7, 4096 };
	char *line = answer(arr, ""), *plain, *got;
	int kept, k, good = 1;
	size_t i;

	plain = read_one(line, 0, 1 << 20, &k);
	for (i = 0; i < sizeof steps / sizeof *steps; i++) {
		got = read_one(line, 1, steps[i], &kept);
		if (strcmp(got, plain) != 0 || kept != want_kept) {
			diag("%s (step %zu): kept %d\n# spliced %s\n# plain   %s",
			    what, steps[i], kept, got, plain);
			good = 0;
		}
		free(got);
	}
	free(plain);
	free(line);
	return good;
}

/*
 * A string's stops are judged a 32- or 64-byte block at a time: put each
 * kind of sequence at every offset of two 64-byte blocks and across their
 * ends (a sequence split by a block boundary, two stops in one block, an
 * escaped quote or backslash that is itself a stop byte, the closing quote
 * right after a sequence), accepted or refused as json-c's own encoding
 * says.
 */
static void
check_offsets(void)
{
	static const struct {
		const char	*what, *seq;
		int		 kept;
	} seqs[] = {
		{ "\\n", "\\n", 1 },
		{ "\\\"", "\\\"", 1 },
		{ "\\\\", "\\\\", 1 },
		{ "\\u001f", "\\u001f", 1 },
		{ "\\u0000", "\\u0000", 1 },
		{ "two escapes", "\\t\\\"\\b\\f\\r", 1 },
		{ "2-byte UTF-8", "\xc3\xa9", 1 },
		{ "3-byte UTF-8", "\xe2\x82\xac", 1 },
		{ "4-byte UTF-8", "\xf0\x9f\x98\x80", 1 },
		{ "UTF-8 then escape", "\xe2\x82\xac\\n\xc3\xa9\\\\", 1 },
		{ "DEL", "\x7f", 1 },
		{ "control byte", "\x01", 0 },
		{ "unit separator", "\x1f", 0 },
		{ "escape then control byte", "\\n\x1f", 0 },
		{ "cut 3-byte UTF-8", "\xe2\x82", 0 },
		{ "lone continuation byte", "\x80", 0 },
		{ "surrogate", "\xed\xb0\x80", 0 },
		{ "escaped slash", "\\/", 0 },
		{ "\\u000a", "\\u000a", 0 },
		{ "\\u00e9", "\\u00e9", 0 },
		{ "unknown escape", "\\x", 0 },
		{ "\\a", "\\a", 0 },
		{ "\\u0041", "\\u0041", 0 },
		{ "uppercase \\u001F", "\\u001F", 0 },
		{ "even backslash run", "\\\\\\\\", 1 },
		{ "odd backslash run, quote", "\\\\\\\"", 1 },
		{ "overlong UTF-8", "\xc0\xaf", 0 },
	};
	char what[128], *arr;
	size_t i;
	int o, tail, good;

	for (i = 0; i < sizeof seqs / sizeof *seqs; i++) {
		good = 1;
		for (o = 0; o < 140; o++) {
			for (tail = 0; tail < 2; tail++) {
				/* The sequence last in its string, or text after it. */
				if (asprintf(&arr, "\"%.*s%s%s\",\"%.*s\"", o,
				    "0123456789abcdef0123456789abcdef0123456789abcdef"
				    "0123456789abcdef0123456789abcdef0123456789abcdef"
				    "0123456789abcdef0123456789abcdef0123456789abcdef"
				    "0123456789abcdef0123456789abcdef0123456789abcdef",
				    seqs[i].seq,
				    tail ? "" : "0123456789abcdef0123456789abcdef0123"
				    "0123456789abcdef0123456789abcdef",
				    o, "0123456789abcdef0123456789abcdef0123456789abcdef"
				    "0123456789abcdef0123456789") == -1)
					abort();
				snprintf(what, sizeof what, "%s at %d%s", seqs[i].what,
				    o, tail ? ", last" : "");
				good &= same(what, arr, seqs[i].kept);
				free(arr);
			}
		}
		ok(good, "%s at every offset of two blocks: %s", seqs[i].what,
		    seqs[i].kept ? "kept" : "parsed whole");
	}
}

/* Feed line to r in pieces of step; the status after the last piece. */
static enum rpc_read_status
feed_steps(struct rpc_reader *r, const char *line, size_t step,
    struct rpc_msg *m, struct rpc_bad *bad)
{
	enum rpc_read_status st = RPC_READ_MORE;
	size_t i, n, len = strlen(line);

	for (i = 0; i < len && st == RPC_READ_MORE; i += n) {
		n = len - i < step ? len - i : step;
		rpc_reader_feed(r, line + i, n);
		st = rpc_reader_next(r, m, bad);
	}
	return st;
}

/* Whether m holds kept bytes of n updates at path. */
static int
kept_n(struct rpc_msg *m, size_t n)
{
	json_object *a = m->root, *p;
	struct rpc_raw *raw;
	size_t i;

	for (i = 0; path[i] != NULL && a != NULL; i++)
		a = json_object_object_get_ex(a, path[i], &p) ? p : NULL;
	return (raw = rpc_raw_of(a)) != NULL && raw->n == n;
}

/*
 * The array is checked as its bytes come, not when the newline does: with
 * all of it but the newline fed, its bytes are already kept; and one
 * reader's state does not leak from a line into the next (an unrelated
 * long line, an oversize line dropped in the middle of an array).
 */
/* The kept bytes of m's array, as text (the elements, comma-separated). */
static char *
kept_text(struct rpc_msg *m)
{
	json_object *a = m->root, *p;
	struct rpc_raw *raw;
	char *s = NULL, *old;
	size_t i;

	for (i = 0; path[i] != NULL && a != NULL; i++)
		a = json_object_object_get_ex(a, path[i], &p) ? p : NULL;
	if ((raw = rpc_raw_of(a)) == NULL)
		return strdup("(none)");
	for (i = 0; i < raw->n; i++) {
		old = s;
		if (asprintf(&s, "%s%s%.*s", old ? old : "", old ? "," : "",
		    (int)raw->el[i].len, raw->bytes + raw->el[i].off) == -1)
			abort();
		free(old);
	}
	return s != NULL ? s : strdup("");
}

/*
 * The kept bytes stay in the buffer they were read into, which the
 * message takes: lines after the answer in the same read move to a new
 * one.  Two answers and a long line in one feed; the messages outlive
 * the reader and each other's reads.
 */
static void
check_lent(const char *line, const char *arr, const char *big)
{
	struct rpc_reader *r = rpc_reader_new(0);
	struct rpc_msg m1, m2, m3;
	struct rpc_bad bad;
	char *all, *t1, *t2;

	if (asprintf(&all, "%s%s%s", line, big, line) == -1)
		abort();
	rpc_reader_splice(r, marker, path);
	rpc_reader_feed(r, all, strlen(all));
	free(all);
	is_int(rpc_reader_next(r, &m1, &bad), RPC_READ_MSG, "lent: first answer");
	is_int(rpc_reader_next(r, &m2, &bad), RPC_READ_MSG, "lent: the long line");
	ok(!kept_n(&m2, 0), "lent: the long line kept nothing");
	rpc_msg_clear(&m2);
	is_int(rpc_reader_next(r, &m3, &bad), RPC_READ_MSG, "lent: second answer");
	rpc_reader_feed(r, line, strlen(line) / 2);
	is_int(rpc_reader_next(r, &m2, &bad), RPC_READ_MORE, "lent: half a third");
	rpc_reader_free(r);
	t1 = kept_text(&m1);
	t2 = kept_text(&m3);
	ok(strcmp(t1, arr) == 0, "lent: first answer's bytes intact");
	ok(strcmp(t2, arr) == 0, "lent: second answer's bytes intact");
	rpc_msg_clear(&m1);
	rpc_msg_clear(&m3);
	free(t1);
	free(t2);
}

static void
check_incremental(void)
{
	struct rpc_reader *r = rpc_reader_new(0);
	struct rpc_msg m;
	struct rpc_bad bad;
	char *arr = NULL, *line, *old, *big;
	size_t i, len;
	enum rpc_read_status st;

	for (i = 0; i < 200; i++) {
		old = arr;
		if (asprintf(&arr, "%s%s{\"n\":%zu,\"t\":\"caf\xc3\xa9\"}",
		    old ? old : "", old ? "," : "", i) == -1)
			abort();
		free(old);
	}
	line = answer(arr, "");
	len = strlen(line);
	rpc_reader_splice(r, marker, path);
	/* Nothing buffered yet (no buffer at all): nothing to scan. */
	is_int(rpc_reader_next(r, &m, &bad), RPC_READ_MORE, "incremental: nothing fed");
	rpc_reader_feed(r, line, len - 1);
	st = rpc_reader_next(r, &m, &bad);
	is_int(st, RPC_READ_MORE, "incremental: no message before the newline");
	ok(rpc_reader_spliced(r) > strlen(arr) - 64,
	    "incremental: the array is checked before the newline (%zu of %zu)",
	    rpc_reader_spliced(r), strlen(arr));
	rpc_reader_feed(r, "\n", 1);
	st = rpc_reader_next(r, &m, &bad);
	ok(st == RPC_READ_MSG && kept_n(&m, 200), "incremental: 200 updates kept");
	rpc_msg_clear(&m);
	is_int(rpc_reader_spliced(r), 0, "incremental: nothing left for the next line");

	/* A long line without the marker, then the answer, 100 bytes a feed. */
	if (asprintf(&big, "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":"
	    "{\"s\":\"%0*d\"}}\n", 3000, 0) == -1)
		abort();
	st = feed_steps(r, big, 100, &m, &bad);
	ok(st == RPC_READ_MSG && !kept_n(&m, 0), "after a line without it: a message");
	rpc_msg_clear(&m);
	st = feed_steps(r, line, 100, &m, &bad);
	ok(st == RPC_READ_MSG && kept_n(&m, 200), "after a line without it: kept");
	rpc_msg_clear(&m);
	check_lent(line, arr, big);

	/* An oversize line cut in its array, then the answer. */
	rpc_reader_free(r);
	r = rpc_reader_new(len + 16);
	rpc_reader_splice(r, marker, path);
	free(big);
	if (asprintf(&big, "%.*s%s", (int)(len - 1), line, arr) == -1)
		abort();
	st = feed_steps(r, big, 1000, &m, &bad);
	is_int(st, RPC_READ_BAD, "oversize in the array: a bad frame");
	rpc_bad_clear(&bad);
	is_int(rpc_reader_spliced(r), 0, "oversize in the array: its scan dropped");
	rpc_reader_feed(r, "]}}}}\n", 6);
	while ((st = rpc_reader_next(r, &m, &bad)) == RPC_READ_BAD)
		rpc_bad_clear(&bad);
	st = feed_steps(r, line, 1000, &m, &bad);
	ok(st == RPC_READ_MSG && kept_n(&m, 200), "after an oversize line: kept");
	rpc_msg_clear(&m);
	rpc_reader_free(r);
	free(big);
	free(line);
	free(arr);
}

/* A second marker (rpc_reader_splice_also): a page's events, after the
   load's updates, kept in the lines that hold it, and the first marker
   still kept in the lines that hold that one. */
static void
check_also(void)
{
	static const char page[] = "\"result\":{\"events\":[";
	static const char *const ppath[] = { "result", "events", NULL };
	static const char *const lines[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"events\":"
		    "[{\"v\":1},{\"v\":2}],\"hasMore\":false}}\n",
		NULL
	};
	struct rpc_reader *r = rpc_reader_new(0);
	struct rpc_msg m;
	struct rpc_bad bad;
	struct rpc_raw *raw;
	json_object *a;
	char *load = answer("{\"a\":1}", "");

	rpc_reader_splice(r, marker, path);
	rpc_reader_splice_also(r, page, ppath);
	rpc_reader_feed(r, lines[0], strlen(lines[0]));
	rpc_reader_feed(r, load, strlen(load));
	is_int(rpc_reader_next(r, &m, &bad), RPC_READ_MSG, "also: a page");
	a = json_object_object_get(json_object_object_get(m.root, "result"), "events");
	raw = rpc_raw_of(a);
	ok(raw != NULL && raw->n == 2, "also: the page's events kept as bytes");
	if (raw != NULL)
		is_int(raw->len, strlen("{\"v\":1},{\"v\":2}"), "also: their bytes");
	rpc_msg_clear(&m);
	is_int(rpc_reader_next(r, &m, &bad), RPC_READ_MSG, "also: a load");
	a = json_object_object_get(json_object_object_get(json_object_object_get(
	    json_object_object_get(m.root, "result"), "_meta"),
	    "qwen.session.loadReplay"), "updates");
	raw = rpc_raw_of(a);
	ok(raw != NULL && raw->n == 1, "also: the load's updates still kept");
	rpc_msg_clear(&m);
	rpc_reader_free(r);
	free(load);
}

int
main(void)
{
	check_also();
	check_incremental();
	check_offsets();
	check("canonical updates", "{\"a\":1,\"b\":[true,false,null]},"
	    "{\"t\":\"caf\xc3\xa9 \\\"q\\\" \\\\ \\n \\u001f \\u0000 /\x7f\"},"
	    "1.50e+1,-3,0,1e400,\"\",[],{}", "", 1);
	check("no updates", "", "", 1);
	/* Long strings: escapes and non-ASCII on and across 16-byte blocks. */
	check("long strings", "\"0123456789abcd\\n0123456789abcdef\xc3\xa9" "0123456789abc"
	    "\xe2\x82\xac" "0123456789abcdef0123456789abcde\\\"\",\"0123456789abcdef"
	    "0123456789abcdef\"", "", 1);
	check("control byte after a long run", "\"0123456789abcdef0123456789abcdef"
	    "0\x01" "\"", "", 0);
	check("invalid UTF-8 after a long run", "\"0123456789abcdef0123456789abc"
	    "\xe2\x82" "\"", "", 0);
	check("one update", "{\"sessionUpdate\":\"x\"}", "", 1);
	check("whitespace", "{\"a\": 1}", "", 0);
	check("escaped slash", "\"a\\/b\"", "", 0);
	check("escaped non-ASCII", "\"caf\\u00e9\"", "", 0);
	check("short escape as \\u", "\"\\u000a\"", "", 0);
	check("uppercase hex", "\"\\u001F\"", "", 0);
	check("minus zero", "-0", "", 0);
	check("huge integer", "123456789012345678901234567890", "", 0);
	check("leading zero", "01", "", 0);
	check("NaN", "NaN", "", 0);
	check("single quote", "{'a':1}", "", 0);
	check("raw control byte", "\"a\tb\"", "", 0);
	check("invalid UTF-8", "\"\xc3\x28\"", "", 0);
	check("UTF-8 surrogate", "\"\xed\xa0\x80\"", "", 0);
	check("overlong UTF-8", "\"\xc0\xaf\"", "", 0);
	check("trailing comma", "1,", "", 0);
	check("unterminated string", "\"abc", "", 0);
	check("too deep",
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1"
	    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", "", 0);
	check("garbage after the line", "1", "x", 0);
	/* The marker inside a string is not the array. */
	{
		const char *l = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"s\":"
		    "\"\\\"qwen.session.loadReplay\\\":{\\\"v\\\":1,\\\"updates\\\":[1]\","
		    "\"_meta\":{\"qwen.session.loadReplay\":{\"updates\":[]}}}}\n";
		char *p, *s;
		int k1, k2;

		p = read_one(l, 0, 1 << 20, &k1);
		s = read_one(l, 1, 1 << 20, &k2);
		ok(strcmp(p, s) == 0 && k2 == 0, "marker inside a string: not spliced");
		free(p);
		free(s);
	}
	/* Elsewhere than at path: parsed whole. */
	{
		char *l, *p, *s;
		int k1, k2;

		if (asprintf(&l, "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{%s1,2]}}}\n",
		    marker) == -1)
			abort();
		p = read_one(l, 0, 1 << 20, &k1);
		s = read_one(l, 1, 1 << 20, &k2);
		ok(strcmp(p, s) == 0 && k2 == 0, "not at the path: not spliced");
		free(l);
		free(p);
		free(s);
	}
	/* A value completed before the marker (a bare number cut by a NUL)
	   is refused as the plain read refuses it, and put (found by
	   fuzz-rpc-frame: LSan in the sanitizer run). */
	{
		static const char head[] = "888\0\0\0888881,\"result\":{";
		enum rpc_read_status st[2];
		struct rpc_reader *r;
		struct rpc_msg m;
		struct rpc_bad bad;
		int sp;

		for (sp = 0; sp < 2; sp++) {
			r = rpc_reader_new(0);
			if (sp)
				rpc_reader_splice(r, marker, path);
			rpc_reader_feed(r, head, sizeof head - 1);
			rpc_reader_feed(r, marker, strlen(marker));
			rpc_reader_feed(r, "1]}}\n", 5);
			st[sp] = rpc_reader_next(r, &m, &bad);
			if (st[sp] == RPC_READ_BAD)
				rpc_bad_clear(&bad);
			else if (st[sp] == RPC_READ_MSG)
				rpc_msg_clear(&m);
			rpc_reader_free(r);
		}
		ok(st[0] == RPC_READ_BAD && st[1] == RPC_READ_BAD,
		    "a value completed before the marker: bad either way");
	}
	return done_testing();
}
