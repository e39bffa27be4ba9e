/* SPDX-License-Identifier: ISC */
/*
 * conn-input.c: what a connection sends, request by request, watched on
 * its input buffer before evhttp parses it:
 *   - a request head gets 10 s and its body 60 s, however slowly it
 *     trickles (evhttp's own timeout restarts with every byte);
 *   - a body over the cap is answered with the catalog's 413 JSON before
 *     evhttp would send its HTML page;
 *   - what a client sends into a response stream (SSE, /acp) is
 *     discarded, and what may wait behind a request being answered is
 *     bounded;
 *   - the phase follows the request: head, body, answered, idle, a
 *     stream, or taken over (WebSocket);
 *   - the memory of a large body goes back to the system once evhttp
 *     has freed it, parsed or not.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "conn-int.h"
#include "json-limit.h"
#include "serve.h"

/* Leave the request phases: the request is whole, evhttp has it. */
static void
conn_request_whole(struct conn *g)
{
	g->phase = C_BUSY;
	if (g->evcon != NULL && g->refusal == R_NONE)
		evtimer_del(g->ev);
}

/* Refuse the request as too large, from the event (never inside evbuffer). */
static void
conn_too_large(struct conn *g)
{
	g->refusal = R_TOO_LARGE;
	g->phase = C_BUSY;
	event_active(g->ev, EV_TIMEOUT, 1);
}

/* The value of header name in the head, or NULL (case-insensitive). */
static const char *
head_field(const char *head, const char *name)
{
	size_t n = strlen(name);

	for (const char *l = strchr(head, '\n'); l != NULL; l = strchr(l, '\n')) {
		l++;
		if (strncasecmp(l, name, n) == 0 && l[n] == ':') {
			l += n + 1;
			while (*l == ' ' || *l == '\t')
				l++;
			return l;
		}
	}
	return NULL;
}

/* Room for one more head byte; 0 when the head is at its cap. */
static int
conn_head_room(struct conn *g)
{
	size_t ncap;
	char *n;

	if (g->headlen < g->headcap)
		return 1;
	if (g->headcap >= SERVE_MAX_HEADERS)
		return 0;
	ncap = g->headcap == 0 ? CONN_HEAD_FIRST : g->headcap * 2;
	if (ncap > SERVE_MAX_HEADERS)
		ncap = SERVE_MAX_HEADERS;
	if ((n = realloc(g->head, ncap + 1)) == NULL)
		return 0;	/* judged on what fits, as at the cap */
	g->head = n;
	g->headcap = ncap;
	return 1;
}

/* The head is judged: its bytes go until the next request's. */
static void
conn_head_forget(struct conn *g)
{
	free(g->head);
	g->head = NULL;
	g->headlen = g->headcap = 0;
}

/* The head is complete: decide on its body. */
static void
conn_head_done(struct conn *g, size_t extra)
{
	const char *cl = head_field(g->head, "Content-Length");
	const char *te = head_field(g->head, "Transfer-Encoding");
	unsigned long long len = cl != NULL ? strtoull(cl, NULL, 10) : 0;

	g->chunked = te != NULL && strncasecmp(te, "chunked", 7) == 0;
	conn_head_forget(g);
	if (!g->chunked && len > SERVE_MAX_BODY) {
		conn_too_large(g);
		return;
	}
	if (!g->chunked && len <= extra) {
		conn_request_whole(g);
		return;
	}
	g->phase = C_BODY;
	g->body_left = (size_t)len - (g->chunked ? 0 : extra);
	g->body_seen = extra;
	conn_deadline(g, CONN_BODY_SEC);
}

/* Head bytes: copy them (bounded) and look for the blank line. */
static void
conn_head_bytes(struct conn *g, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (conn_head_room(g))
			g->head[g->headlen++] = p[i];
		if (p[i] != '\n' || g->headlen < 2)
			continue;
		if (g->head[g->headlen - 2] == '\n' || (g->headlen >= 3 &&
		    g->head[g->headlen - 2] == '\r' && g->head[g->headlen - 3] == '\n')) {
			g->head[g->headlen] = '\0';
			conn_head_done(g, n - i - 1);
			return;
		}
	}
}

/* Body bytes: count them against the cap and the declared length. */
static void
conn_body_bytes(struct conn *g, size_t n)
{
	g->body_seen += n;
	if (g->chunked) {
		if (g->body_seen > SERVE_MAX_BODY + CONN_CHUNK_SLACK)
			conn_too_large(g);
		return;
	}
	if (n >= g->body_left)
		conn_request_whole(g);
	else
		g->body_left -= n;
}

/* The bytes just added to the input buffer (the last n of it). */
static void
conn_scan_added(struct conn *g, struct evbuffer *buf, size_t n)
{
	struct evbuffer_iovec v[8];
	struct evbuffer_ptr pos;
	int nv;

	if (evbuffer_ptr_set(buf, &pos, evbuffer_get_length(buf) - n,
	    EVBUFFER_PTR_SET) == -1)
		return;
	nv = evbuffer_peek(buf, (ev_ssize_t)n, &pos, v, 8);
	for (int i = 0; i < nv && i < 8 && n > 0; i++) {
		size_t k = v[i].iov_len < n ? v[i].iov_len : n;

		if (g->phase == C_HEAD)
			conn_head_bytes(g, v[i].iov_base, k);
		else if (g->phase == C_BODY)
			conn_body_bytes(g, k);
		n -= k;
	}
}

/*
 * Every change to a connection's input.  Draining here is safe: evbuffer
 * runs the callbacks again with nothing added, and nobody reads a
 * stream's input.
 */
void
conn_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *g = arg;

	if (info->n_added == 0)
		return;
	switch (g->phase) {
	case C_IDLE:
		g->phase = C_HEAD;
		g->headlen = 0;
		conn_deadline(g, CONN_HEAD_SEC);
		/* FALLTHROUGH */
	case C_HEAD:
	case C_BODY:
		conn_scan_added(g, buf, info->n_added);
		break;
	case C_STREAM:
		evbuffer_drain(buf, evbuffer_get_length(buf));
		break;
	case C_BUSY:
		if (evbuffer_get_length(buf) > CONN_PENDING_MAX)
			evbuffer_drain(buf, evbuffer_get_length(buf));
		break;
	case C_TAKEN:
		break;
	}
}

/* The loop turn after a large request: its body is freed by now. */
static void
release_later(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what;
	json_limit_release((size_t)(uintptr_t)arg);
}

void
conn_release_later(size_t len)
{
	const struct timeval now = { 0, 0 };

	if (len >= 256 * 1024)
		event_base_once(serve_base, -1, EV_TIMEOUT, release_later,
		    (void *)(uintptr_t)len, &now);
}

/* The reply is sent: the connection waits for its next request. */
static void
conn_reply_done(struct evhttp_request *req, void *arg)
{
	struct conn *g;

	audit_done(req);
	/* evhttp frees the body after this returns; glibc keeps its pages
	   (10 MiB to a route that never parses it) unless told. */
	conn_release_later(evbuffer_get_length(evhttp_request_get_input_buffer(req)));
	/* g may be gone (a closing connection): look it up by connection. */
	if ((g = conn_of(req)) != NULL && g == arg && g->phase != C_TAKEN) {
		g->phase = C_IDLE;
		g->headlen = 0;
		conn_unwatch(g);	/* answered: a watch ends with it */
	}
}

/* A request reached the router: its head and body are whole. */
void
conn_request(struct evhttp_request *req)
{
	struct conn *g = conn_of(req);

	audit_forget(req);
	if (g == NULL)
		return;
	conn_request_whole(g);
	evhttp_request_set_on_complete_cb(req, conn_reply_done, g);
}

/* The response to req is a stream: discard what its client sends. */
void
conn_streaming(struct evhttp_request *req)
{
	struct conn *g = conn_of(req);

	if (g != NULL) {
		g->phase = C_STREAM;
		evbuffer_drain(bufferevent_get_input(g->bev),
		    evbuffer_get_length(bufferevent_get_input(g->bev)));
	}
}

/* req's connection is taken over (WebSocket): its owner reads it. */
void
conn_taken(struct evhttp_request *req)
{
	struct conn *g = conn_of(req);

	if (g != NULL)
		g->phase = C_TAKEN;
}

void
conn_set_sub(struct evhttp_request *req, struct sse_sub *sub)
{
	struct conn *g = conn_of(req);

	if (g == NULL)
		return;
	g->sub = sub;
	if (sub != NULL)
		conn_streaming(req);
}
