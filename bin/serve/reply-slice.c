/* SPDX-License-Identifier: ISC */
/*
 * reply-slice.c: a big JSON reply written a slice per loop turn.
 *
 * A load's answer carries its compactedReplay, a few MiB of envelopes.
 * Encoding all of it and copying it into the connection in one callback
 * held the daemon's loop for milliseconds, and every other session's
 * heartbeat waited behind it.  Here the body is encoded without the big
 * array (a stand-in records where the array goes), the header goes out
 * with the exact Content-Length, and the array's elements follow a slice
 * of about REPLY_SLICE_BYTES per loop turn.  The bytes are those
 * http_reply_json() would send: json-c's encoding of the whole body.
 *
 * Nothing changes for the output's limits: the elements are added to the
 * connection's buffer as fast as the loop turns, as the whole body was
 * before; a client that stops reading meets the connection's write
 * timeout, and its reply is dropped at the next slice.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <json-c/printbuf.h>

#include "log.h"
#include "serve.h"
#include "xmalloc.h"

#define REPLY_SLICE_BYTES	(128 * 1024)
#define REPLY_JSON_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define REPLY_PLAIN_MAX		64	/* elements encoded by json-c to count them */
#define REPLY_SNDBUF_MAX	(4 * 1024 * 1024)

struct reply_slice {
	TAILQ_ENTRY(reply_slice) entry;
	struct evhttp_request	*req;
	struct event		*ev;
	json_object		*arr;		/* a reference */
	size_t			 next, n;
	size_t			 slices;
	char			*tail;		/* the body after the array */
	size_t			 ntail;
};

static TAILQ_HEAD(, reply_slice) slicers = TAILQ_HEAD_INITIALIZER(slicers);

/* Bytes per slice: QWEN_SERVE_TEST_REPLY_SLICE lets tests make it tiny. */
static size_t
slice_bytes(void)
{
	static size_t bytes;
	const char *v, *errstr;

	if (bytes == 0) {
		bytes = REPLY_SLICE_BYTES;
		if ((v = getenv("QWEN_SERVE_TEST_REPLY_SLICE")) != NULL) {
			bytes = (size_t)strtonum(v, 1, 1 << 30, &errstr);
			if (errstr != NULL)
				bytes = REPLY_SLICE_BYTES;
		}
	}
	return bytes;
}

/*
 * The elements' encoded length with their commas, or 0 when slicing is
 * not worth it: under two slices of envelopes kept as the child's bytes,
 * or many other elements, which json-c would have to encode first just to
 * count them (the few others, a history_truncated marker, it does).
 */
static size_t
array_len(json_object *arr)
{
	size_t i, n = json_object_array_length(arr), total = 0, raw = 0, plain = 0;
	size_t len;
	json_object *el;

	for (i = 0; i < n; i++) {
		if ((len = replay_raw_len(json_object_array_get_idx(arr, i))) == 0 &&
		    ++plain > REPLY_PLAIN_MAX)
			return 0;
		raw += len;
		total += len + (i > 0);
	}
	if (raw < 2 * slice_bytes())
		return 0;
	for (i = 0; i < n && plain > 0; i++) {
		el = json_object_array_get_idx(arr, i);
		if (el == NULL)
			total += 4;
		else if (replay_raw_len(el) == 0)
			total += strlen(json_object_to_json_string_ext(el,
			    REPLY_JSON_FLAGS));
	}
	return total;
}

/* The stand-in's encoding: nothing, but where it would go. */
static int
hole_to_string(json_object *o, struct printbuf *pb, int level, int flags)
{
	size_t *at = json_object_get_userdata(o);

	(void)level;
	(void)flags;
	*at = (size_t)pb->bpos;
	return 0;
}

/* The top-level key of body whose value is arr, or NULL. */
static const char *
key_of(json_object *body, json_object *arr)
{
	json_object_object_foreach(body, key, val)
		if (val == arr)
			return key;
	return NULL;
}

static void
slicer_free(struct reply_slice *rs)
{
	TAILQ_REMOVE(&slicers, rs, entry);
	event_free(rs->ev);
	json_object_put(rs->arr);
	free(rs->tail);
	free(rs);
}

/* Add elements from rs->next to out until a slice is full. */
static void
slice_fill(struct reply_slice *rs, struct evbuffer *out)
{
	size_t limit = slice_bytes(), start = evbuffer_get_length(out);
	json_object *el;
	const char *s;

	while (rs->next < rs->n && evbuffer_get_length(out) - start < limit) {
		if (rs->next > 0)
			evbuffer_add(out, ",", 1);
		el = json_object_array_get_idx(rs->arr, rs->next++);
		if (el == NULL)
			evbuffer_add(out, "null", 4);
		else if (replay_raw_add(el, out) == -1) {
			s = json_object_to_json_string_ext(el,
			    REPLY_JSON_FLAGS);
			evbuffer_add(out, s, strlen(s));
		}
	}
}

/* One loop turn: a slice, or the end of the body. */
static void
slicer_step(evutil_socket_t fd, short what, void *arg)
{
	struct reply_slice *rs = arg;
	struct timeval zero = { 0, 0 };
	struct evbuffer *out;

	(void)fd;
	(void)what;
	if (evhttp_request_get_connection(rs->req) == NULL) {
		/* The client went away: evhttp left the request to us. */
		log_debug("a sliced reply's client is gone after %zu of %zu "
		    "elements", rs->next, rs->n);
		evhttp_send_reply_end(rs->req);
		slicer_free(rs);
		return;
	}
	if ((out = evbuffer_new()) == NULL ||
	    evbuffer_expand(out, slice_bytes() + 1024) == -1)
		fatalx("out of memory (evbuffer)");
	slice_fill(rs, out);
	rs->slices++;
	if (rs->next == rs->n) {
		evbuffer_add(out, "]", 1);
		evbuffer_add(out, rs->tail, rs->ntail);
	}
	evhttp_send_reply_chunk(rs->req, out);
	evbuffer_free(out);
	if (rs->next < rs->n) {
		event_add(rs->ev, &zero);
		return;
	}
	log_debug("a reply of %zu elements written in %zu slices", rs->n,
	    rs->slices);
	evhttp_send_reply_end(rs->req);
	slicer_free(rs);
}

/* Encode body with a stand-in for arr at key: the text before it into
   out, the text after it into rs->tail.  -1 if json-c fails. */
static int
encode_around(struct reply_slice *rs, json_object *body, const char *key,
    struct evbuffer *out)
{
	json_object *hole = xjson_object_new_array();
	size_t at = SIZE_MAX, len;
	const char *s;
	char *k = xstrdup(key);

	json_object_set_serializer(hole, hole_to_string, &at, NULL);
	json_object_object_add(body, k, hole);		/* arr: rs holds it */
	free(k);
	if ((s = json_object_to_json_string_length(body, REPLY_JSON_FLAGS,
	    &len)) == NULL || at > len)
		return -1;
	evbuffer_add(out, s, at);
	evbuffer_add(out, "[", 1);
	rs->ntail = len - at;
	rs->tail = xmalloc(rs->ntail + 1);
	memcpy(rs->tail, s + at, rs->ntail);
	return 0;
}

/*
 * Let the kernel hold up to the whole body (within net.core.wmem_max): with
 * the default 208 KiB send buffer, a few MiB went out in a score of
 * wake-ups of the client and of us, a millisecond or two of a load's time.
 * The bytes are queued here either way (the slices are added as fast as
 * the loop turns); this only moves them into the socket sooner.
 */
static void
reply_sndbuf(struct evhttp_connection *evcon, size_t total)
{
	int size = total < REPLY_SNDBUF_MAX ? (int)total : REPLY_SNDBUF_MAX;
	int fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon));

	if (fd != -1)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

void
reply_slice_json(struct evhttp_request *req, int status, json_object *body,
    json_object *arr)
{
	struct reply_slice *rs;
	struct evhttp_connection *evcon;
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *out;
	struct timeval zero = { 0, 0 };
	const char *key;
	char clen[32];
	size_t alen, total;

	/*
	 * An in-process caller's (an ACP call's; a branch's resume has no
	 * connection and would reach http_reply_json() below all the same).
	 */
	if (http_captured(req, status, body, NULL)) {
		json_object_put(body);
		return;
	}
	if (arr == NULL || (key = key_of(body, arr)) == NULL ||
	    (evcon = evhttp_request_get_connection(req)) == NULL ||
	    (alen = array_len(arr)) == 0) {
		http_reply_json(req, status, body);
		return;
	}
	rs = xcalloc(1, sizeof *rs);
	rs->req = req;
	rs->arr = json_object_get(arr);
	rs->n = json_object_array_length(arr);
	if ((out = evbuffer_new()) == NULL)
		fatalx("out of memory (evbuffer)");
	if (encode_around(rs, body, key, out) == -1)
		fatalx("a reply could not be encoded");
	json_object_put(body);
	total = evbuffer_get_length(out) + alen + 1 + rs->ntail;
	snprintf(clen, sizeof clen, "%zu", total);
	gate_cors_headers(req);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "Content-Length", clen);
	bufferevent_set_max_single_write(evhttp_connection_get_bufferevent(evcon),
	    1024 * 1024);
	reply_sndbuf(evcon, total);
	evhttp_send_reply_start(req, status, NULL);
	evhttp_send_reply_chunk(req, out);
	evbuffer_free(out);
	rs->ev = evtimer_new(serve_base, slicer_step, rs);
	TAILQ_INSERT_TAIL(&slicers, rs, entry);
	event_add(rs->ev, &zero);
}

void
reply_slice_free_all(void)
{
	struct reply_slice *rs;

	while ((rs = TAILQ_FIRST(&slicers)) != NULL) {
		/* A detached request is ours to free; evhttp frees the rest. */
		if (evhttp_request_get_connection(rs->req) == NULL)
			evhttp_send_reply_end(rs->req);
		slicer_free(rs);
	}
}
