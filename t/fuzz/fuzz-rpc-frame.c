/* SPDX-License-Identifier: ISC */
/*
 * fuzz-rpc-frame.c: libFuzzer harness for the NDJSON JSON-RPC reader.
 *
 * Input: byte 0 picks the frame cap (small, to reach the oversize paths) and
 * a chunk size, byte 1 is the split byte, the rest is the stream.  The stream
 * is read three ways: in one feed, in pieces cut after every occurrence of the
 * split byte, and in fixed-size chunks; the three event sequences must be
 * identical.  Every message must encode to one line that parses back to the
 * same kind, and every bad frame must give an encodable error answer.
 * Then it is read twice more with an array kept as bytes (the splice of
 * result.u, scanned as the bytes come): put back, its elements must give
 * the very events of the plain read, whole or in chunks.
 * ASan/LSan catch memory errors and leaks.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc-frame.h"

#define PLAIN	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char splice_marker[] = "\"u\":[";
static const char *const splice_path[] = { "result", "u", NULL };
static int splicing;

struct text {
	char	*s;
	size_t	 len, size;
};

/* Append n bytes of s. */
static void
text_add(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->size) {
		t->size = (t->len + n + 1) * 2;
		if ((t->s = realloc(t->s, t->size)) == NULL)
			abort();
	}
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len] = '\0';
}

/* Encode m: one line, and (for a message) parsing back gives kind. */
static void
check_encode(json_object *m, int kind)
{
	struct rpc_msg msg;
	struct rpc_bad bad;
	size_t len;
	char *line;

	if ((line = rpc_encode(m, &len)) == NULL)
		abort();
	if (memchr(line, '\n', len) != line + len - 1)
		abort();
	if (kind >= 0) {
		if (rpc_parse(line, len - 1, &msg, &bad) != RPC_READ_MSG ||
		    (int)msg.kind != kind)
			abort();
		rpc_msg_clear(&msg);
	}
	free(line);
}

/* Put the bytes a splice kept back into their array as json-c values. */
static void
unsplice(json_object *root)
{
	json_object *res, *a, *v;
	struct rpc_raw *raw;
	char *el;
	size_t i;

	if (!json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "result", &res) ||
	    !json_object_is_type(res, json_type_object) ||
	    !json_object_object_get_ex(res, "u", &a) ||
	    (raw = rpc_raw_of(a)) == NULL)
		return;
	for (i = 0; i < raw->n; i++) {
		if ((el = strndup(raw->bytes + raw->el[i].off, raw->el[i].len)) == NULL)
			abort();
		/* Kept bytes are json-c's own encoding: they parse. */
		if ((v = json_tokener_parse(el)) == NULL &&
		    strcmp(el, "null") != 0)
			abort();
		json_object_array_add(a, v);
		free(el);
	}
}

/* Render one event and check its encodings. */
static void
render(struct text *t, enum rpc_read_status st, struct rpc_msg *msg,
    struct rpc_bad *bad)
{
	const char *s;
	char head[64];
	json_object *err;

	if (st == RPC_READ_MSG) {
		snprintf(head, sizeof(head), "MSG %d %zu ", (int)msg->kind,
		    msg->line_no);
		text_add(t, head, strlen(head));
		if (splicing)
			unsplice(msg->root);
		s = json_object_to_json_string_ext(msg->root, PLAIN);
		text_add(t, s, strlen(s));
		check_encode(msg->root, (int)msg->kind);
		rpc_msg_clear(msg);
	} else {
		if (bad->code != RPC_PARSE_ERROR &&
		    bad->code != RPC_INVALID_REQUEST)
			abort();
		snprintf(head, sizeof(head), "BAD %d %zu ", bad->code,
		    bad->line_no);
		text_add(t, head, strlen(head));
		s = bad->id != NULL ?
		    json_object_to_json_string_ext(bad->id, PLAIN) : "null";
		text_add(t, s, strlen(s));
		if ((err = rpc_new_bad_error(bad)) == NULL)
			abort();
		check_encode(err, RPC_ERROR);
		json_object_put(err);
		rpc_bad_clear(bad);
	}
	text_add(t, "\n", 1);
}

/* Take every ready event; at the end also finish. */
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

/* Read in[0..len): split after each sep (sep < 0: in chunks of chunk). */
static char *
run(const uint8_t *in, size_t len, size_t cap, int sep, size_t chunk)
{
	struct rpc_reader *r;
	struct text t = { NULL, 0, 0 };
	const uint8_t *p;
	size_t off = 0, n;

	if ((r = rpc_reader_new(cap)) == NULL)
		abort();
	if (splicing)
		rpc_reader_splice(r, splice_marker, splice_path);
	text_add(&t, "", 0);
	while (off < len) {
		if (sep >= 0) {
			p = memchr(in + off, sep, len - off);
			n = p != NULL ? (size_t)(p - (in + off)) + 1 : len - off;
		} else
			n = len - off < chunk ? len - off : chunk;
		if (rpc_reader_feed(r, in + off, n) != 0)
			abort();
		drain(r, &t, 0);
		off += n;
	}
	drain(r, &t, 1);
	if (rpc_reader_pending(r) != 0)
		abort();
	rpc_reader_free(r);
	return t.s;
}

/* One input: three ways of feeding must agree. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *one, *split, *chunked;
	size_t cap, chunk;

	if (size < 2)
		return 0;
	cap = data[0] & 0x80 ? 0 : 8 + (size_t)(data[0] & 0x3f) * 8;
	chunk = 1 + (data[0] & 0x0f);
	one = run(data + 2, size - 2, cap, -1, size);
	split = run(data + 2, size - 2, cap, data[1], 0);
	chunked = run(data + 2, size - 2, cap, -1, chunk);
	if (strcmp(one, split) != 0 || strcmp(one, chunked) != 0)
		abort();
	free(split);
	free(chunked);
	splicing = 1;
	split = run(data + 2, size - 2, cap, -1, size);
	chunked = run(data + 2, size - 2, cap, -1, chunk);
	splicing = 0;
	if (strcmp(one, split) != 0 || strcmp(one, chunked) != 0)
		abort();
	free(one);
	free(split);
	free(chunked);
	return 0;
}
