/* SPDX-License-Identifier: ISC */
/*
 * test-rpc-frame.c: the NDJSON JSON-RPC reader, classifier, builders and
 * writer.  Framing is checked by rendering every event of a run as a line of
 * text and comparing runs over every split of the input with one feed.
 */
#include "config.h"

#include <sys/time.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpc-frame.h"
#include "tap.h"

#define PLAIN	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* A growing text buffer. */
struct text {
	char	*s;
	size_t	 len, size;
};

/* Append s. */
static void
text_add(struct text *t, const char *s)
{
	size_t n = strlen(s);

	if (t->len + n + 1 > t->size) {
		t->size = (t->len + n + 1) * 2;
		if ((t->s = realloc(t->s, t->size)) == NULL)
			abort();
	}
	memcpy(t->s + t->len, s, n + 1);
	t->len += n;
}

/* Render one event as a line: MSG kind line json / BAD code line id. */
static void
render(struct text *t, enum rpc_read_status st, struct rpc_msg *msg,
    struct rpc_bad *bad)
{
	char head[64];

	if (st == RPC_READ_MSG) {
		snprintf(head, sizeof(head), "MSG %d %zu ", (int)msg->kind,
		    msg->line_no);
		text_add(t, head);
		text_add(t, json_object_to_json_string_ext(msg->root, PLAIN));
		rpc_msg_clear(msg);
	} else {
		snprintf(head, sizeof(head), "BAD %d %zu ", bad->code,
		    bad->line_no);
		text_add(t, head);
		text_add(t, bad->id != NULL ?
		    json_object_to_json_string_ext(bad->id, PLAIN) : "null");
		rpc_bad_clear(bad);
	}
	text_add(t, "\n");
}

/* Take every ready event from r into t. */
static void
drain(struct rpc_reader *r, struct text *t, int finish)
{
	enum rpc_read_status st;
	struct rpc_msg msg;
	struct rpc_bad bad;

	while ((st = rpc_reader_next(r, &msg, &bad)) != RPC_READ_MORE)
		render(t, st, &msg, &bad);
	if (finish)
		while ((st = rpc_reader_finish(r, &msg, &bad)) != RPC_READ_MORE)
			render(t, st, &msg, &bad);
}

/* Feed in[0..len) cut at cuts[0..n) (ascending); caller frees the text. */
static char *
run_cuts(const char *in, size_t len, size_t max_frame, const size_t *cuts,
    size_t n)
{
	struct rpc_reader *r = rpc_reader_new(max_frame);
	struct text t = { NULL, 0, 0 };
	size_t i, from = 0, to;

	text_add(&t, "");
	for (i = 0; i <= n; i++) {
		to = i < n ? cuts[i] : len;
		if (rpc_reader_feed(r, in + from, to - from) != 0)
			text_add(&t, "FEED FAILED\n");
		drain(r, &t, 0);
		from = to;
	}
	drain(r, &t, 1);
	rpc_reader_free(r);
	return t.s;
}

/* Feed in chunks of chunk bytes; inplace: each read into the reader's
   own space (rpc_reader_space, as room for 64 bytes more than come). */
static char *
run_chunks(const char *in, size_t len, size_t max_frame, size_t chunk,
    int inplace)
{
	struct rpc_reader *r = rpc_reader_new(max_frame);
	struct text t = { NULL, 0, 0 };
	size_t off, n;
	char *p;

	text_add(&t, "");
	for (off = 0; off < len; off += n) {
		n = len - off < chunk ? len - off : chunk;
		if (inplace) {
			if ((p = rpc_reader_space(r, chunk + 64)) == NULL)
				abort();
			memcpy(p, in + off, n);
		} else
			p = (char *)(uintptr_t)(in + off);
		if (rpc_reader_feed(r, p, n) != 0)
			text_add(&t, "FEED FAILED\n");
		drain(r, &t, 0);
	}
	drain(r, &t, 1);
	rpc_reader_free(r);
	return t.s;
}

/* Check that every 2- and 3-piece split and 1-byte feeding give want. */
static void
check_splits(const char *name, const char *in, size_t max_frame,
    const char *want, int pairs)
{
	size_t len = strlen(in), i, j, bad2 = 0, bad3 = 0, cuts[2];
	char *got;

	got = run_cuts(in, len, max_frame, NULL, 0);
	is_str(got, want, "%s: one feed", name);
	free(got);
	for (i = 0; i <= len; i++) {
		cuts[0] = i;
		got = run_cuts(in, len, max_frame, cuts, 1);
		if (strcmp(got, want) != 0 && bad2++ == 0)
			diag("split at %zu gives:\n%s", i, got);
		free(got);
		for (j = i; pairs && j <= len; j++) {
			cuts[1] = j;
			got = run_cuts(in, len, max_frame, cuts, 2);
			if (strcmp(got, want) != 0 && bad3++ == 0)
				diag("split at %zu,%zu gives:\n%s", i, j, got);
			free(got);
		}
	}
	is_int(bad2, 0, "%s: every split point (%zu)", name, len + 1);
	if (pairs)
		is_int(bad3, 0, "%s: every pair of split points", name);
	got = run_chunks(in, len, max_frame, 1, 0);
	is_str(got, want, "%s: one byte at a time", name);
	free(got);
	got = run_chunks(in, len, max_frame, 7, 0);
	is_str(got, want, "%s: 7 bytes at a time", name);
	free(got);
	got = run_chunks(in, len, max_frame, 7, 1);
	is_str(got, want, "%s: 7 bytes at a time, read in place", name);
	free(got);
	got = run_chunks(in, len, max_frame, len, 1);
	is_str(got, want, "%s: all at once, read in place", name);
	free(got);
}

/* Every kind, CRLF, blank lines, bad lines, an unterminated last line. */
static const char mixed_in[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a/b\",\"params\":{\"x\":\"y\\nz\"}}\r\n"
    "\n"
    "\r\n"
    "{\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n"
    "not json\n"
    "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":{\"ok\":true}}\n"
    "{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"old\"}\n"
    "  \t \n"
    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"boom\"}}\r\n"
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":null,\"error\":{\"code\":1,\"message\":\"x\"}}\n"
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"last\"}";

static const char mixed_want[] =
    "MSG 0 1 {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a/b\",\"params\":{\"x\":\"y\\nz\"}}\n"
    "MSG 1 4 {\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n"
    "BAD -32700 5 null\n"
    "MSG 2 6 {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":{\"ok\":true}}\n"
    "BAD -32600 7 7\n"
    "MSG 3 9 {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"boom\"}}\n"
    "BAD -32600 10 2\n"
    "MSG 0 11 {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"last\"}\n";

/* Framing of a mixed buffer under every split. */
static void
test_mixed_splits(void)
{
	check_splits("mixed", mixed_in, 0, mixed_want, 0);
}

/* A shorter buffer under every pair of split points. */
static void
test_pair_splits(void)
{
	static const char in[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\r\n"
	    "\r\n"
	    "{x}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":[]}\n";
	static const char want[] =
	    "MSG 0 1 {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\n"
	    "BAD -32700 3 null\n"
	    "MSG 2 4 {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":[]}\n";

	check_splits("pairs", in, 0, want, 1);
}

/* A line over the cap is reported once and the following lines survive. */
static void
test_oversize(void)
{
	static const char in[] =
	    "{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"b\"}\r\n"
	    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"c\"}\n"
	    "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz";
	static const char want[] =
	    "MSG 1 1 {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n"
	    "BAD -32600 2 null\n"
	    "MSG 1 3 {\"jsonrpc\":\"2.0\",\"method\":\"b\"}\n"
	    "BAD -32600 4 null\n"
	    "MSG 1 5 {\"jsonrpc\":\"2.0\",\"method\":\"c\"}\n"
	    "BAD -32600 6 null\n";

	check_splits("oversize", in, 40, want, 1);
}

/* The cap counts the bytes before '\n', a '\r' included. */
static void
test_cap_boundary(void)
{
	/* Each JSON line below is exactly 32 bytes. */
	static const char in[] =
	    "{\"jsonrpc\":\"2.0\",\"method\":\"abc\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"abc\"}\r\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"abcd\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"ab\"}\r\n";
	static const char want[] =
	    "MSG 1 1 {\"jsonrpc\":\"2.0\",\"method\":\"abc\"}\n"
	    "BAD -32600 2 null\n"
	    "BAD -32600 3 null\n"
	    "MSG 1 4 {\"jsonrpc\":\"2.0\",\"method\":\"ab\"}\n";

	check_splits("cap boundary", in, 32, want, 0);
}

/* Buffered bytes stay bounded by the cap while an oversize line streams. */
static void
test_oversize_bounded(void)
{
	struct rpc_reader *r = rpc_reader_new(64);
	struct rpc_msg msg;
	struct rpc_bad bad;
	size_t i, most = 0, bads = 0;
	char x = 'x';

	for (i = 0; i < 100000; i++) {
		rpc_reader_feed(r, &x, 1);
		while (rpc_reader_next(r, &msg, &bad) != RPC_READ_MORE) {
			bads++;
			rpc_bad_clear(&bad);
		}
		if (rpc_reader_pending(r) > most)
			most = rpc_reader_pending(r);
	}
	is_int(bads, 1, "oversize: one bad frame for a 100000-byte line");
	ok(most <= 65, "oversize: at most cap+1 bytes buffered (%zu)", most);
	rpc_reader_free(r);
}

struct bad_case {
	const char	*line;
	int		 code;		/* 0: a message */
	const char	*id;		/* the recovered id, as JSON */
};

static const struct bad_case bad_cases[] = {
	{ "not json", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"} x", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}{}", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",}", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"a\"}", RPC_PARSE_ERROR, "null" },
	{ "{'jsonrpc':'2.0','id':1,'method':'a'}", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":{\"a\\\\\":1,'b':2}}", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":{\"it's\":{'b':2}}}", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":[NaN]}", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":{\"x\":-Infinity}}", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", RPC_PARSE_ERROR, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\xc3\"}", RPC_PARSE_ERROR, "null" },
	{ "[1,2]", RPC_INVALID_REQUEST, "null" },
	{ "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}]", RPC_INVALID_REQUEST, "null" },
	{ "\"str\"", RPC_INVALID_REQUEST, "null" },
	{ "42", RPC_INVALID_REQUEST, "null" },
	{ "true", RPC_INVALID_REQUEST, "null" },
	{ "null", RPC_INVALID_REQUEST, "null" },
	{ "{}", RPC_INVALID_REQUEST, "null" },
	{ "{\"id\":5,\"method\":\"a\"}", RPC_INVALID_REQUEST, "5" },
	{ "{\"jsonrpc\":\"2.0 \",\"id\":\"x\",\"method\":\"a\"}", RPC_INVALID_REQUEST, "\"x\"" },
	{ "{\"jsonrpc\":2.0,\"id\":6,\"method\":\"a\"}", RPC_INVALID_REQUEST, "6" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"a\"}", RPC_INVALID_REQUEST, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"a\"}", RPC_INVALID_REQUEST, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"a\"}", RPC_INVALID_REQUEST, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"a\"}", RPC_INVALID_REQUEST, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":[1],\"result\":1}", RPC_INVALID_REQUEST, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"\"}", RPC_INVALID_REQUEST, "9" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":5}", RPC_INVALID_REQUEST, "\"q\"" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":null}", RPC_INVALID_REQUEST, "9" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"a\\u0000b\"}", RPC_INVALID_REQUEST, "9" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"a\",\"params\":3}", RPC_INVALID_REQUEST, "10" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"a\",\"params\":\"s\"}", RPC_INVALID_REQUEST, "10" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":17,\"method\":\"a\",\"result\":1}", RPC_INVALID_REQUEST, "17" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":11,\"result\":1,\"error\":{\"code\":1,\"message\":\"m\"}}", RPC_INVALID_REQUEST, "11" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":12}", RPC_INVALID_REQUEST, "12" },
	{ "{\"jsonrpc\":\"2.0\",\"result\":1}", RPC_INVALID_REQUEST, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":1}", RPC_INVALID_REQUEST, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":13,\"error\":{\"code\":\"x\",\"message\":\"m\"}}", RPC_INVALID_REQUEST, "13" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":13,\"error\":{\"code\":1.5,\"message\":\"m\"}}", RPC_INVALID_REQUEST, "13" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":14,\"error\":{\"code\":1}}", RPC_INVALID_REQUEST, "14" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":14,\"error\":{\"code\":1,\"message\":7}}", RPC_INVALID_REQUEST, "14" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":15,\"error\":\"bad\"}", RPC_INVALID_REQUEST, "15" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":15,\"error\":null}", RPC_INVALID_REQUEST, "15" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":16,\"error\":{\"code\":4294967296,\"message\":\"m\"}}", RPC_INVALID_REQUEST, "16" },
	/* These are messages: strings may say NaN or hold quotes, 1e400 is JSON. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":[\"NaN\",\"it's\",\"Infinity\"]}", 0, "1" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"a\",\"params\":[1e400,\"\\\"'\"]}", 0, "2" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"a\",\"params\":[\"x\\\"'y\\\\\",\"it's\"]}", 0, "3" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"a\",\"params\":null}", 0, "null" },
	{ "{\"jsonrpc\":\"2.0\",\"id\":-3,\"result\":null,\"extra\":1}", 0, "-3" },
	{ "  {\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"a\"}  ", 0, "\"\"" },
};

/* Render what one line gives through rpc_parse: "code id" or "0 id". */
static void
parse_one(const char *line, size_t len, int *code, char *id, size_t idsize)
{
	struct rpc_msg msg;
	struct rpc_bad bad;
	json_object *o;

	if (rpc_parse(line, len, &msg, &bad) == RPC_READ_MSG) {
		*code = 0;
		o = msg.id;
	} else {
		*code = bad.code;
		o = bad.id;
	}
	snprintf(id, idsize, "%s",
	    o != NULL ? json_object_to_json_string_ext(o, PLAIN) : "null");
	rpc_msg_clear(&msg);
	rpc_bad_clear(&bad);
}

/* Each malformed line gives its code and id, and the next line survives. */
static void
test_bad_lines(void)
{
	static const char good[] = "{\"jsonrpc\":\"2.0\",\"method\":\"ok\"}";
	const struct bad_case *c;
	char id[256], want[1024], *in, *got;
	size_t i, len;
	int code;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		c = &bad_cases[i];
		parse_one(c->line, strlen(c->line), &code, id, sizeof(id));
		ok(code == c->code && strcmp(id, c->id) == 0,
		    "rpc_parse case %zu: code %d id %s", i, c->code, c->id);
		if (code != c->code || strcmp(id, c->id) != 0)
			diag("got code %d id %s for %s", code, id, c->line);
		len = strlen(c->line) + strlen(good) + 2;
		if ((in = malloc(len + 1)) == NULL)
			abort();
		snprintf(in, len + 1, "%s\n%s\n", c->line, good);
		got = run_chunks(in, len, 0, 3, 0);
		if (c->code != 0)
			snprintf(want, sizeof(want), "BAD %d 1 %s\nMSG 1 2 %s\n",
			    c->code, c->id, good);
		else
			snprintf(want, sizeof(want), "MSG 1 2 %s\n", good);
		ok(c->code != 0 ? strcmp(got, want) == 0 :
		    strncmp(got, "MSG ", 4) == 0 && strstr(got, want) != NULL,
		    "reader case %zu: then the good line", i);
		if (c->code != 0 && strcmp(got, want) != 0)
			diag("got:\n%s", got);
		free(got);
		free(in);
	}
}

/* Nesting deeper than RPC_MAX_DEPTH and a NUL byte are parse errors. */
static void
test_depth_and_nul(void)
{
	char buf[512], id[64];
	size_t n = 0, i;
	int code;

	n += (size_t)snprintf(buf, sizeof(buf),
	    "{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":");
	for (i = 0; i < RPC_MAX_DEPTH + 2; i++)
		buf[n++] = '[';
	for (i = 0; i < RPC_MAX_DEPTH + 2; i++)
		buf[n++] = ']';
	buf[n++] = '}';
	parse_one(buf, n, &code, id, sizeof(id));
	is_int(code, RPC_PARSE_ERROR, "nesting deeper than %d: parse error",
	    RPC_MAX_DEPTH);
	parse_one("{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\0x", 33, &code, id,
	    sizeof(id));
	is_int(code, RPC_PARSE_ERROR, "NUL after the object: parse error");
	parse_one("{\"jsonrpc\":\"2.0\",\"method\":\"a\0b\"}", 32, &code, id,
	    sizeof(id));
	is_int(code, RPC_PARSE_ERROR, "NUL inside a string: parse error");
	parse_one("", 0, &code, id, sizeof(id));
	is_int(code, RPC_PARSE_ERROR, "empty buffer: parse error");
}

/* rpc_parse fills the fields of each kind. */
static void
test_parse_fields(void)
{
	struct rpc_msg msg;
	struct rpc_bad bad;
	const char *s;

	s = "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"session/load\",\"params\":{\"a\":[1]}}";
	is_int(rpc_parse(s, strlen(s), &msg, &bad), RPC_READ_MSG, "request parses");
	is_int(msg.kind, RPC_REQUEST, "request: kind");
	is_str(msg.method, "session/load", "request: method");
	is_str(json_object_get_string(msg.id), "r1", "request: id");
	is_str(json_object_to_json_string_ext(msg.params, PLAIN), "{\"a\":[1]}",
	    "request: params");
	ok(msg.result == NULL && msg.error == NULL && msg.line_no == 0,
	    "request: no result, error or line");
	rpc_msg_clear(&msg);
	rpc_msg_clear(&msg);
	ok(msg.root == NULL, "rpc_msg_clear is idempotent");

	s = "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}";
	rpc_parse(s, strlen(s), &msg, &bad);
	ok(msg.kind == RPC_NOTIFICATION && msg.id == NULL && msg.params == NULL,
	    "notification: no id, no params");
	rpc_msg_clear(&msg);

	s = "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"x\":1}}";
	rpc_parse(s, strlen(s), &msg, &bad);
	ok(msg.kind == RPC_RESULT && json_object_get_int(msg.id) == 4 &&
	    json_object_is_type(msg.result, json_type_object),
	    "result: id and result");
	rpc_msg_clear(&msg);

	s = "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32002,\"message\":\"nf\",\"data\":{\"uri\":\"session:x\"}}}";
	rpc_parse(s, strlen(s), &msg, &bad);
	ok(msg.kind == RPC_ERROR && msg.error_code == RPC_RESOURCE_NOT_FOUND &&
	    msg.error != NULL, "error: code and object");
	rpc_msg_clear(&msg);

	rpc_parse("nope", 4, &msg, &bad);
	ok(bad.message != NULL && strstr(bad.message, "Parse error") == bad.message,
	    "bad frame message: %s", bad.message);
	rpc_bad_clear(&bad);
	rpc_bad_clear(NULL);
	rpc_msg_clear(NULL);
}

/* rpc_classify takes a built object, and refuses non-objects. */
static void
test_classify(void)
{
	struct rpc_msg msg;
	struct rpc_bad bad;

	is_int(rpc_classify(rpc_new_request(json_object_new_int(3), "m", NULL),
	    &msg, &bad), RPC_READ_MSG, "classify a built request");
	is_int(msg.kind, RPC_REQUEST, "classify: request kind");
	rpc_msg_clear(&msg);
	is_int(rpc_classify(json_object_new_array(), &msg, &bad), RPC_READ_BAD,
	    "classify an array");
	is_int(bad.code, RPC_INVALID_REQUEST, "classify an array: -32600");
	rpc_bad_clear(&bad);
	is_int(rpc_classify(NULL, &msg, &bad), RPC_READ_BAD, "classify null");
	rpc_bad_clear(&bad);
}

/* An unterminated last line is taken by rpc_reader_finish. */
static void
test_finish(void)
{
	struct rpc_reader *r = rpc_reader_new(16);
	struct rpc_msg msg;
	struct rpc_bad bad;
	struct text t = { NULL, 0, 0 };
	static const char a[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":2}";

	text_add(&t, "");
	rpc_reader_free(r);
	r = rpc_reader_new(0);
	rpc_reader_feed(r, a, strlen(a));
	is_int(rpc_reader_next(r, &msg, &bad), RPC_READ_MORE,
	    "finish: no newline, no message yet");
	is_int(rpc_reader_pending(r), strlen(a), "finish: the bytes are pending");
	is_int(rpc_reader_finish(r, &msg, &bad), RPC_READ_MSG,
	    "finish: takes the unterminated line");
	ok(msg.kind == RPC_RESULT && msg.line_no == 1, "finish: kind and line");
	rpc_msg_clear(&msg);
	is_int(rpc_reader_finish(r, &msg, &bad), RPC_READ_MORE,
	    "finish: then nothing");
	is_int(rpc_reader_pending(r), 0, "finish: nothing pending");
	rpc_reader_feed(r, "{oops\r", 6);
	is_int(rpc_reader_finish(r, &msg, &bad), RPC_READ_BAD,
	    "finish: a bad unterminated line");
	ok(bad.code == RPC_PARSE_ERROR && bad.line_no == 2,
	    "finish: parse error on line 2");
	rpc_bad_clear(&bad);
	rpc_reader_feed(r, " \r", 2);
	is_int(rpc_reader_finish(r, &msg, &bad), RPC_READ_MORE,
	    "finish: a blank unterminated line is skipped");
	rpc_reader_free(r);

	/* finish also returns complete lines the caller did not take. */
	r = rpc_reader_new(0);
	rpc_reader_feed(r, "{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"b\"}", 61);
	drain(r, &t, 1);
	is_str(t.s, "MSG 1 1 {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n"
	    "MSG 1 2 {\"jsonrpc\":\"2.0\",\"method\":\"b\"}\n",
	    "finish: complete lines first, then the last");
	rpc_reader_free(r);
	free(t.s);
}

/*
 * A 16 MiB line fed in 1 KiB pieces: correct, and not quadratic (a reader
 * that rescans its buffer for the newline on every feed takes ~7 s of CPU).
 */
static void
test_big_line(void)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"";
	static const char tail[] = "\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"after\"}\n";
	size_t body = 16u << 20, len, off, n, msgs = 0, strlen_ok = 0;
	struct rpc_reader *r = rpc_reader_new(0);
	struct timespec t0, t1;
	enum rpc_read_status st;
	struct rpc_msg msg;
	struct rpc_bad bad;
	double secs;
	char *in;

	len = strlen(head) + body + strlen(tail);
	if ((in = malloc(len)) == NULL)
		abort();
	memcpy(in, head, strlen(head));
	memset(in + strlen(head), 'a', body);
	memcpy(in + strlen(head) + body, tail, strlen(tail));
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (off = 0; off < len; off += n) {
		n = len - off < 1024 ? len - off : 1024;
		rpc_reader_feed(r, in + off, n);
		while ((st = rpc_reader_next(r, &msg, &bad)) == RPC_READ_MSG) {
			if (msgs++ == 0 &&
			    json_object_get_string_len(msg.result) == (int)body)
				strlen_ok = 1;
			rpc_msg_clear(&msg);
		}
		if (st == RPC_READ_BAD)
			rpc_bad_clear(&bad);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	is_int(msgs, 2, "big line: both messages");
	ok(strlen_ok, "big line: the 16 MiB string arrives whole");
	ok(secs < 3.0, "big line: 16 MiB in 1 KiB pieces took %.3f s of CPU", secs);
	is_int(rpc_reader_pending(r), 0, "big line: nothing left buffered");
	rpc_reader_free(r);
	free(in);
}

/* Builders and rpc_encode: exact text, one line, no slash escapes. */
static void
test_encode(void)
{
	json_object *m, *params;
	struct rpc_msg msg;
	struct rpc_bad bad;
	size_t len;
	char *line;

	params = json_object_new_object();
	json_object_object_add(params, "path", json_object_new_string("a/b"));
	json_object_object_add(params, "text",
	    json_object_new_string("line1\nline2\r\n\"q\"\t\x01"));
	m = rpc_new_request(json_object_new_int64(42), "session/prompt", params);
	line = rpc_encode(m, &len);
	ok(line != NULL, "encode: a line");
	is_str(line, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"session/prompt\","
	    "\"params\":{\"path\":\"a/b\",\"text\":\"line1\\nline2\\r\\n\\\"q\\\"\\t\\u0001\"}}\n",
	    "encode: exact text");
	is_int(len, strlen(line), "encode: length");
	ok(strstr(line, "\\/") == NULL, "encode: no \\/ escapes");
	ok(strchr(line, '\n') == line + len - 1, "encode: one newline, at the end");
	is_int(rpc_parse(line, len - 1, &msg, &bad), RPC_READ_MSG,
	    "encode: parses back");
	is_str(json_object_get_string(json_object_object_get(msg.params, "text")),
	    "line1\nline2\r\n\"q\"\t\x01", "encode: string round trip");
	rpc_msg_clear(&msg);
	free(line);
	json_object_put(m);

	m = rpc_new_request(NULL, "m", NULL);
	line = rpc_encode(m, &len);
	is_str(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}\n",
	    "request with a null id");
	free(line);
	json_object_put(m);

	m = rpc_new_notification("session/update", json_object_new_array());
	line = rpc_encode(m, &len);
	is_str(line, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":[]}\n",
	    "notification");
	free(line);
	json_object_put(m);

	m = rpc_new_result(json_object_new_string("x"), NULL);
	line = rpc_encode(m, &len);
	is_str(line, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":null}\n",
	    "result with a null result");
	free(line);
	json_object_put(m);

	m = rpc_new_error(json_object_new_int(7), RPC_WRITER_CONFLICT, "busy",
	    json_object_new_string("d"));
	line = rpc_encode(m, &len);
	is_str(line, "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32020,"
	    "\"message\":\"busy\",\"data\":\"d\"}}\n", "error with data");
	free(line);
	json_object_put(m);

	ok(rpc_new_notification(NULL, NULL) == NULL, "notification without a method: NULL");
	ok(rpc_new_request(json_object_new_int(1), NULL,
	    json_object_new_object()) == NULL, "request without a method: NULL (no leak)");
	ok(rpc_encode(NULL, &len) == NULL, "encode NULL: NULL");
}

/* rpc_new_bad_error answers a bad frame with its recovered id. */
static void
test_bad_error(void)
{
	static const char s[] = "{\"jsonrpc\":\"1.0\",\"id\":\"abc\",\"method\":\"x\"}";
	struct rpc_msg msg;
	struct rpc_bad bad;
	json_object *m;
	size_t len;
	char *line;

	rpc_parse(s, strlen(s), &msg, &bad);
	m = rpc_new_bad_error(&bad);
	ok(bad.id == NULL, "bad error: takes the id");
	line = rpc_encode(m, &len);
	ok(line != NULL && strncmp(line,
	    "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"error\":{\"code\":-32600,", 50) == 0,
	    "bad error: id and code: %s", line ? line : "(null)");
	free(line);
	json_object_put(m);
	rpc_bad_clear(&bad);

	rpc_parse("}", 1, &msg, &bad);
	m = rpc_new_bad_error(&bad);
	line = rpc_encode(m, &len);
	ok(line != NULL && strncmp(line,
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,", 50) == 0,
	    "bad error: parse error with id null");
	free(line);
	json_object_put(m);
}

struct pipe_reader {
	int	 fd;
	char	*buf;
	size_t	 len, size;
};

/* Read the pipe to EOF in small pieces. */
static void *
pipe_read_all(void *arg)
{
	struct pipe_reader *p = arg;
	ssize_t n;

	for (;;) {
		if (p->len + 4096 > p->size) {
			p->size = p->size * 2 + 4096;
			if ((p->buf = realloc(p->buf, p->size)) == NULL)
				abort();
		}
		n = read(p->fd, p->buf + p->len, 4096);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p->len += (size_t)n;
	}
	return NULL;
}

static volatile sig_atomic_t alarms;

/* Count SIGALRMs; being there at all makes write() return EINTR or short. */
static void
on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* rpc_write_fd writes whole lines through a pipe despite signals. */
static void
test_write_fd(void)
{
	struct pipe_reader p = { -1, NULL, 0, 0 };
	struct itimerval it = { { 0, 200 }, { 0, 200 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	sigset_t set, old;
	struct rpc_msg msg;
	struct rpc_bad bad;
	pthread_t th;
	json_object *m;
	size_t big = 4u << 20, i;
	char *text;
	int fds[2], rc[3];

	if ((text = malloc(big + 1)) == NULL)
		abort();
	for (i = 0; i < big; i++)
		text[i] = (char)('a' + i % 26);
	text[big] = '\0';
	if (pipe(fds) == -1)
		abort();
	p.fd = fds[0];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;		/* no SA_RESTART: EINTR */
	sigaction(SIGALRM, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	pthread_create(&th, NULL, pipe_read_all, &p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	m = json_object_new_array();
	json_object_array_add(m, json_object_new_string(text));
	m = rpc_new_notification("big", m);
	rc[0] = rpc_write_fd(fds[1], m);
	json_object_put(m);
	m = rpc_new_result(json_object_new_int(1), json_object_new_string(text));
	rc[1] = rpc_write_fd(fds[1], m);
	json_object_put(m);
	setitimer(ITIMER_REAL, &off, NULL);
	close(fds[1]);
	pthread_join(th, NULL);
	diag("%d alarms during the writes", (int)alarms);
	ok(rc[0] == 0 && rc[1] == 0, "write_fd: both writes succeed");
	ok(p.len > 2 * big && p.buf[p.len - 1] == '\n' &&
	    memchr(p.buf, '\n', p.len - 1) != NULL, "write_fd: two lines");
	rc[2] = 0;
	{
		char *nl = memchr(p.buf, '\n', p.len);
		size_t l1 = (size_t)(nl - p.buf);

		rc[2] += rpc_parse(p.buf, l1, &msg, &bad) == RPC_READ_MSG &&
		    msg.kind == RPC_NOTIFICATION && json_object_get_string_len(
		    json_object_array_get_idx(msg.params, 0)) == (int)big;
		rpc_msg_clear(&msg);
		rc[2] += rpc_parse(nl + 1, p.len - l1 - 2, &msg, &bad) ==
		    RPC_READ_MSG && msg.kind == RPC_RESULT &&
		    strcmp(json_object_get_string(msg.result), text) == 0;
		rpc_msg_clear(&msg);
	}
	is_int(rc[2], 2, "write_fd: both lines parse back intact");

	signal(SIGPIPE, SIG_IGN);
	if (pipe(fds) == -1)
		abort();
	close(fds[0]);
	m = rpc_new_notification("x", NULL);
	errno = 0;
	ok(rpc_write_fd(fds[1], m) == -1 && errno == EPIPE,
	    "write_fd: -1 and EPIPE on a closed pipe");
	json_object_put(m);
	close(fds[1]);
	free(p.buf);
	free(text);
}

/* The id of a line the framer rejects is read from its bytes. */
static void
test_scan_id(void)
{
	static const struct { const char *in, *want; } c[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"\xff\":1}}", "7" },
		{ " { \"x\" : {\"id\":1,\"a\":[\"}\\\"\"]}, \"id\" : -42 , ", "-42" },
		{ "{\"result\":\"id\",\"id\":\"req-1\"", "\"req-1\"" },
		{ "{\"result\":{\"id\":5}", NULL },		/* nested only, cut */
		{ "{\"i\\\"d\":3,\"id\":4}", "4" },
		{ "{\"id\":\"a\\\"b\"}", NULL },		/* escaped: not plain */
		{ "{\"id\":1234567890123456789}", NULL },	/* too long */
		{ "[{\"id\":1}]", NULL },
		{ "{\"id\":", NULL },
		{ "", NULL },
	};
	const char *torn = "{\"a\":\"\\ud800\\u\n{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"m\",\"params\":{\"x\":\"\\u00e9\"}}\n";
	struct rpc_reader *r;
	struct rpc_msg msg;
	struct rpc_bad bad;
	json_object *o;
	const char *got, *head;
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		o = rpc_frame_scan_id(c[i].in, strlen(c[i].in));
		got = o != NULL ? json_object_to_json_string(o) : NULL;
		if (c[i].want == NULL)
			ok(got == NULL, "scan id %zu: none (%s)", i, got ? got : "-");
		else
			is_str(got != NULL ? got : "(none)", c[i].want, "scan id %zu", i);
		json_object_put(o);
	}
	/* A line over the cap is reported with the id of its first bytes. */
	r = rpc_reader_new(64);
	head = "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":\"";
	rpc_reader_feed(r, head, strlen(head));
	for (i = 0; i < 8; i++)
		rpc_reader_feed(r, "xxxxxxxxxxxx", 12);
	is_int(rpc_reader_next(r, &msg, &bad), RPC_READ_BAD, "oversize answer: bad");
	ok(bad.id == NULL && bad.frame_id != NULL &&
	    json_object_get_int64(bad.frame_id) == 9, "oversize answer: frame id 9");
	rpc_bad_clear(&bad);
	rpc_reader_free(r);
	/* A torn surrogate in a bad line does not leak into the next one. */
	r = rpc_reader_new(0);
	rpc_reader_feed(r, torn, strlen(torn));
	is_int(rpc_reader_next(r, &msg, &bad), RPC_READ_BAD, "torn surrogate: bad");
	rpc_bad_clear(&bad);
	is_int(rpc_reader_next(r, &msg, &bad), RPC_READ_MSG, "next line: a message");
	json_object_object_get_ex(msg.params, "x", &o);
	is_str(o != NULL ? json_object_get_string(o) : "(none)", "\xc3\xa9",
	    "next line: its \\u escape decodes alone");
	rpc_msg_clear(&msg);
	rpc_reader_free(r);
}

int
main(void)
{
	test_mixed_splits();
	test_pair_splits();
	test_oversize();
	test_cap_boundary();
	test_oversize_bounded();
	test_bad_lines();
	test_depth_and_nul();
	test_parse_fields();
	test_classify();
	test_finish();
	test_big_line();
	test_encode();
	test_bad_error();
	test_write_fd();
	test_scan_id();
	return done_testing();
}
