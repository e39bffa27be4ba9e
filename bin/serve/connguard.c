/* SPDX-License-Identifier: ISC */
/*
 * connguard.c: every HTTP connection from its accept on, on both
 * listeners.  evhttp hides the accept, but asks us for each connection's
 * bufferevent (evhttp_set_bevcb): that is where a connection is counted,
 * and where a watcher goes on its input buffer, which sees every byte the
 * peer sends before evhttp parses it.  With it the guard
 *   - refuses a connection over the cap with 503 at once, then closes;
 *   - keeps TCP connections that have not authenticated to a quarter of
 *     the cap, closing the oldest idle one to make room;
 *   - gives a request head 10 s and its body 60 s, however slowly it
 *     trickles (evhttp's own timeout restarts with every byte);
 *   - answers a body over the cap with the catalog's 413 JSON before
 *     evhttp would send its HTML page;
 *   - discards what a client sends into a response stream (SSE, /acp),
 *     and bounds what may wait behind a request being answered.
 * The registry also carries each connection's SSE subscriber, so that a
 * closed stream is noticed.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/tree.h>

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "errors.h"
#include "log.h"
#include "serve.h"

#define GUARD_HEAD_SEC		10
#define GUARD_BODY_SEC		60
/* Bytes that may wait behind a request being answered (pipelining). */
#define GUARD_PENDING_MAX	(256u * 1024)
/* A head buffer's first room; it doubles up to SERVE_MAX_HEADERS. */
#define GUARD_HEAD_FIRST	1024u
/* Chunked framing on top of the body cap before the guard says 413. */
#define GUARD_CHUNK_SLACK	(SERVE_MAX_BODY / 64)
/* Descriptors kept free for the Unix socket, children, logs and traces. */
#define GUARD_FD_RESERVE	64
/* After a refusal, what the peer still sends is read and dropped this long, */
#define GUARD_LINGER_SEC	2
/* by this many connections at most (the others are closed at once). */
#define GUARD_LINGER_MAX	16
/* What the Unix socket (the operator's way in) may have beyond the
 * descriptor-derived cap. */
#define GUARD_UNIX_EXTRA	8
/* TCP connections not yet authenticated share 1/GUARD_PREAUTH_DIV of the cap. */
#define GUARD_PREAUTH_DIV	4

enum guard_phase {
	G_HEAD,		/* reading a request head (deadline running) */
	G_BODY,		/* reading its body (deadline running) */
	G_BUSY,		/* the request is being answered */
	G_STREAM,	/* a response stream: input is discarded */
	G_TAKEN,	/* taken over (WebSocket): its owner reads */
	G_IDLE,		/* keep-alive, between requests */
};

enum guard_refusal { R_NONE, R_TOO_LARGE, R_CLOSING };

struct guard {
	TAILQ_ENTRY(guard)	 entry;
	RB_ENTRY(guard)		 by_evcon;	/* once attached */
	struct bufferevent	*bev;
	struct evhttp_connection *evcon;	/* NULL until attached */
	struct event		*ev;	/* attach, deadlines, refusals */
	struct sse_sub		*sub;
	enum guard_phase	 phase;
	enum guard_refusal	 refusal;
	int			 live;	/* attached, counted against the cap */
	int			 preauth;	/* TCP, no request authenticated yet */
	int			 chunked;
	int			 is_unix;	/* came in on the Unix socket */
	size_t			 body_left;	/* Content-Length still to come */
	size_t			 body_seen;	/* chunked: raw bytes so far */
	/*
	 * The head so far, grown on demand up to SERVE_MAX_HEADERS and freed
	 * once judged: ten thousand idle streams hold none of it.
	 */
	char			*head;
	size_t			 headlen, headcap;
};

static TAILQ_HEAD(, guard) guards = TAILQ_HEAD_INITIALIZER(guards);
/*
 * The attached guards by evhttp's connection: every request looks its
 * guard up several times, and with ten thousand streams open a walk of
 * the list was most of the daemon's time.
 */
RB_HEAD(guard_tree, guard);
int	guard_cmp(const struct guard *, const struct guard *);
RB_PROTOTYPE(guard_tree, guard, by_evcon, guard_cmp)
static struct guard_tree guards_by_evcon = RB_INITIALIZER(&guards_by_evcon);
static size_t nguards, nlinger, npreauth;
static size_t nlive;	/* attached and not refused: what the cap counts */
static int guard_cap, unix_cap;	/* TCP, and the Unix socket */
static int preauth_cap;		/* TCP connections before authentication */

static void guard_input(struct evbuffer *, const struct evbuffer_cb_info *, void *);

/* The tree's order: the connection's address. */
int
guard_cmp(const struct guard *a, const struct guard *b)
{
	if (a->evcon == b->evcon)
		return 0;
	return (uintptr_t)a->evcon < (uintptr_t)b->evcon ? -1 : 1;
}
RB_GENERATE(guard_tree, guard, by_evcon, guard_cmp)

/* The cap: --max-connections, within what the descriptor limit allows. */
int
guard_limit(void)
{
	return guard_cap;
}

/*
 * Raise the soft descriptor limit to the hard one and fit the caps to
 * it, keeping a reserve so that the Unix socket, the children's pipes and
 * the trace files always find a descriptor.
 */
static void
guard_fit_rlimit(void)
{
	struct rlimit rl;
	long room;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	room = rl.rlim_cur == RLIM_INFINITY ? 65536 :
	    (long)rl.rlim_cur - GUARD_FD_RESERVE;
	if (room < (long)rl.rlim_cur / 2)
		room = (long)rl.rlim_cur / 4;	/* a tiny limit: lingering ones too */
	if (room < guard_cap) {
		log_info("descriptor limit %ld: at most %ld connections",
		    (long)rl.rlim_cur, room);
		guard_cap = (int)room;
	}
	if (room + GUARD_UNIX_EXTRA < unix_cap)
		unix_cap = (int)room + GUARD_UNIX_EXTRA;
}

/* The caps: --max-connections within the descriptor limit, and the share. */
void
guard_init(void)
{
	guard_cap = unix_cap = conf.max_connections;
	guard_fit_rlimit();
	preauth_cap = guard_cap / GUARD_PREAUTH_DIV;
	if (preauth_cap < 1)
		preauth_cap = 1;
}

size_t
http_conn_count(void)
{
	return nguards;
}

/* Unlink and free g; the bufferevent is evhttp's (or already gone). */
static void
guard_free(struct guard *g)
{
	TAILQ_REMOVE(&guards, g, entry);
	nguards--;
	if (g->refusal == R_CLOSING)
		nlinger--;
	if (g->preauth)
		npreauth--;
	if (g->live)
		nlive--;
	if (g->evcon != NULL) {
		RB_REMOVE(guard_tree, &guards_by_evcon, g);
		metrics_conn_closed(g->is_unix);
	}
	event_free(g->ev);
	free(g->head);
	free(g);
	listen_fd_freed();
}

/* evhttp frees the connection: the stream ends, the slot is free. */
static void
guard_closed(struct evhttp_connection *evcon, void *arg)
{
	struct guard *g = arg;
	struct sse_sub *sub = g->sub;

	(void)evcon;
	evbuffer_remove_cb(bufferevent_get_input(g->bev), guard_input, g);
	guard_free(g);
	if (sub != NULL)
		sse_sub_closed(sub);
}

/* Arm the deadline of the phase just entered. */
static void
guard_deadline(struct guard *g, int seconds)
{
	struct timeval tv = { seconds, 0 };

	if (g->evcon != NULL)
		evtimer_add(g->ev, &tv);
}

/*
 * Answer with the catalog's error for code straight on the socket (no
 * request exists yet, or evhttp's would be the wrong one), then close the
 * way evhttp does: our side at once, and after reading and dropping what
 * the peer still sends for a moment (closing with unread input would
 * reset the connection before the peer reads the answer).
 */
static void
guard_refuse(struct guard *g, const char *code)
{
	struct qerr *e = qerr_new(code, NULL);
	json_object *body;
	const char *s;
	char head[256];
	int n, ra = e != NULL ? qerr_retry_after(e) : -1;

	metrics_refusal(g->is_unix, code);
	if (e != NULL && strcmp(code, "connection_limit_exceeded") == 0)
		qerr_set_int(e, "limit", guard_cap);
	body = e != NULL ? qerr_rest_body(e) : NULL;
	s = body != NULL ? json_object_to_json_string_ext(body,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "{}";
	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n", e != NULL ? qerr_status(e) : 500,
	    e != NULL && qerr_status(e) == 413 ? "Payload Too Large" :
	    "Service Unavailable", strlen(s));
	if (ra >= 0 && n > 0 && (size_t)n < sizeof(head))
		n += snprintf(head + n, sizeof(head) - (size_t)n,
		    "Retry-After: %d\r\n", ra);
	/* A fresh socket's send buffer takes this whole; best effort. */
	if (n > 0 && (size_t)n < sizeof(head) - 2) {
		strlcat(head, "\r\n", sizeof(head));
		(void)!send(bufferevent_getfd(g->bev), head, strlen(head), MSG_NOSIGNAL);
		(void)!send(bufferevent_getfd(g->bev), s, strlen(s), MSG_NOSIGNAL);
	}
	json_object_put(body);
	qerr_free(e);
	if (g->live) {
		g->live = 0;	/* closing: no longer a client's slot */
		nlive--;
	}
	if (g->preauth) {
		g->preauth = 0;
		npreauth--;
	}
	if (nlinger >= GUARD_LINGER_MAX) {
		evhttp_connection_free(g->evcon);	/* calls guard_closed */
		return;
	}
	shutdown(bufferevent_getfd(g->bev), SHUT_WR);
	nlinger++;
	g->phase = G_STREAM;
	g->refusal = R_CLOSING;
	evbuffer_drain(bufferevent_get_input(g->bev),
	    evbuffer_get_length(bufferevent_get_input(g->bev)));
	guard_deadline(g, GUARD_LINGER_SEC);
}

/* Whether g came in on the Unix socket. */
static int
guard_is_unix(struct guard *g)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	return getsockname(bufferevent_getfd(g->bev), (struct sockaddr *)&ss,
	    &len) == 0 && ss.ss_family == AF_UNIX;
}

/*
 * The pre-authentication share is full: close the oldest connection in it
 * that is only reading a request (head or body) or idling, so that idle
 * connects cannot hold every slot until their deadlines.  0 when one was
 * closed.
 */
static int
guard_evict_preauth(void)
{
	struct guard *g;

	TAILQ_FOREACH(g, &guards, entry) {
		if (!g->preauth || g->evcon == NULL || g->refusal != R_NONE ||
		    (g->phase != G_HEAD && g->phase != G_BODY && g->phase != G_IDLE))
			continue;
		log_debug("connection: unauthenticated share full, closing the oldest");
		evhttp_connection_free(g->evcon);	/* calls guard_closed */
		return 0;
	}
	return -1;
}

/*
 * A new TCP connection joins the unauthenticated share, making room in it
 * first; -1 when nothing could be closed (all are being answered).
 */
static int
guard_join_preauth(struct guard *g)
{
	if (npreauth >= (size_t)preauth_cap && guard_evict_preauth() == -1)
		return -1;
	g->preauth = 1;
	npreauth++;
	return 0;
}

/*
 * The connection was just created: learn evhttp's connection from the
 * bufferevent's callback argument (NULL when evhttp already freed it),
 * take the close callback, and apply the cap.  -1 when g is gone.
 */
static int
guard_attach(struct guard *g)
{
	struct timeval tv = { GUARD_HEAD_SEC, 0 };
	void *arg = NULL;
	int is_unix;

	bufferevent_getcb(g->bev, NULL, NULL, NULL, &arg);
	if (arg == NULL) {
		bufferevent_decref(g->bev);	/* frees it: evhttp let it go */
		guard_free(g);
		return -1;
	}
	g->evcon = arg;
	RB_INSERT(guard_tree, &guards_by_evcon, g);
	bufferevent_decref(g->bev);
	evhttp_connection_set_closecb(g->evcon, guard_closed, g);
	is_unix = g->is_unix = guard_is_unix(g);
	metrics_conn_open(is_unix);
	g->live = 1;
	nlive++;
	if ((!is_unix && guard_join_preauth(g) == -1) ||
	    nlive > (size_t)(is_unix ? unix_cap : guard_cap))
		guard_refuse(g, "connection_limit_exceeded");
	else
		evtimer_add(g->ev, &tv);
	return 0;
}

/* Timer, attach and refusal: one event per connection. */
static void
guard_event(evutil_socket_t fd, short what, void *arg)
{
	struct guard *g = arg;

	(void)fd; (void)what;
	if (g->evcon == NULL) {
		guard_attach(g);
		return;
	}
	if (g->refusal == R_TOO_LARGE) {
		guard_refuse(g, "payload_too_large");
		return;
	}
	if (g->refusal == R_CLOSING) {
		evhttp_connection_free(g->evcon);	/* calls guard_closed */
		return;
	}
	if (g->phase == G_HEAD || g->phase == G_BODY) {
		/* A head or body past its deadline: nobody waits for it. */
		log_debug("connection: request %s not complete in time, closing",
		    g->phase == G_HEAD ? "head" : "body");
		evhttp_connection_free(g->evcon);
	}
}

/* Leave the request phases: the request is whole, evhttp has it. */
static void
guard_request_whole(struct guard *g)
{
	g->phase = G_BUSY;
	if (g->evcon != NULL && g->refusal == R_NONE)
		evtimer_del(g->ev);
}

/* Refuse the request as too large, from the event (never inside evbuffer). */
static void
guard_too_large(struct guard *g)
{
	g->refusal = R_TOO_LARGE;
	g->phase = G_BUSY;
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
guard_head_room(struct guard *g)
{
	size_t ncap;
	char *n;

	if (g->headlen < g->headcap)
		return 1;
	if (g->headcap >= SERVE_MAX_HEADERS)
		return 0;
	ncap = g->headcap == 0 ? GUARD_HEAD_FIRST : g->headcap * 2;
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
guard_head_forget(struct guard *g)
{
	free(g->head);
	g->head = NULL;
	g->headlen = g->headcap = 0;
}

/* The head is complete: decide on its body. */
static void
guard_head_done(struct guard *g, size_t extra)
{
	const char *cl = head_field(g->head, "Content-Length");
	const char *te = head_field(g->head, "Transfer-Encoding");
	unsigned long long len = cl != NULL ? strtoull(cl, NULL, 10) : 0;

	g->chunked = te != NULL && strncasecmp(te, "chunked", 7) == 0;
	guard_head_forget(g);
	if (!g->chunked && len > SERVE_MAX_BODY) {
		guard_too_large(g);
		return;
	}
	if (!g->chunked && len <= extra) {
		guard_request_whole(g);
		return;
	}
	g->phase = G_BODY;
	g->body_left = (size_t)len - (g->chunked ? 0 : extra);
	g->body_seen = extra;
	guard_deadline(g, GUARD_BODY_SEC);
}

/* Head bytes: copy them (bounded) and look for the blank line. */
static void
guard_head_bytes(struct guard *g, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (guard_head_room(g))
			g->head[g->headlen++] = p[i];
		if (p[i] != '\n' || g->headlen < 2)
			continue;
		if (g->head[g->headlen - 2] == '\n' || (g->headlen >= 3 &&
		    g->head[g->headlen - 2] == '\r' && g->head[g->headlen - 3] == '\n')) {
			g->head[g->headlen] = '\0';
			guard_head_done(g, n - i - 1);
			return;
		}
	}
}

/* Body bytes: count them against the cap and the declared length. */
static void
guard_body_bytes(struct guard *g, size_t n)
{
	g->body_seen += n;
	if (g->chunked) {
		if (g->body_seen > SERVE_MAX_BODY + GUARD_CHUNK_SLACK)
			guard_too_large(g);
		return;
	}
	if (n >= g->body_left)
		guard_request_whole(g);
	else
		g->body_left -= n;
}

/* The bytes just added to the input buffer (the last n of it). */
static void
guard_scan_added(struct guard *g, struct evbuffer *buf, size_t n)
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

		if (g->phase == G_HEAD)
			guard_head_bytes(g, v[i].iov_base, k);
		else if (g->phase == G_BODY)
			guard_body_bytes(g, k);
		n -= k;
	}
}

/*
 * Every change to a connection's input.  Draining here is safe: evbuffer
 * runs the callbacks again with nothing added, and nobody reads a
 * stream's input.
 */
static void
guard_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct guard *g = arg;

	if (info->n_added == 0)
		return;
	switch (g->phase) {
	case G_IDLE:
		g->phase = G_HEAD;
		g->headlen = 0;
		guard_deadline(g, GUARD_HEAD_SEC);
		/* FALLTHROUGH */
	case G_HEAD:
	case G_BODY:
		guard_scan_added(g, buf, info->n_added);
		break;
	case G_STREAM:
		evbuffer_drain(buf, evbuffer_get_length(buf));
		break;
	case G_BUSY:
		if (evbuffer_get_length(buf) > GUARD_PENDING_MAX)
			evbuffer_drain(buf, evbuffer_get_length(buf));
		break;
	case G_TAKEN:
		break;
	}
}

/* evhttp asks for a connection's bufferevent: a connection was accepted. */
static struct bufferevent *
guard_bevcb(struct event_base *base, void *arg)
{
	struct bufferevent *bev;
	struct guard *g;

	(void)arg;
	if ((bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE)) == NULL)
		return NULL;
	if ((g = calloc(1, sizeof(*g))) == NULL ||
	    (g->ev = event_new(base, -1, 0, guard_event, g)) == NULL) {
		free(g);
		return bev;
	}
	/* Well under the cap again: a descriptor shortage, if any, is over. */
	if (nguards < (size_t)guard_cap / 2)
		listen_accepted();
	g->bev = bev;
	g->phase = G_HEAD;
	TAILQ_INSERT_TAIL(&guards, g, entry);
	nguards++;
	/* Keep it until guard_attach() has looked at it. */
	bufferevent_incref(bev);
	evbuffer_add_cb(bufferevent_get_input(bev), guard_input, g);
	event_active(g->ev, EV_TIMEOUT, 1);
	return bev;
}

void
guard_install(struct evhttp *http)
{
	/* Ours is the cap; evhttp's only stops what the guard let through. */
	evhttp_set_max_body_size(http, 2 * SERVE_MAX_BODY);
	evhttp_set_bevcb(http, guard_bevcb, NULL);
}

static struct guard *
guard_of(struct evhttp_request *req)
{
	struct guard key;

	if ((key.evcon = evhttp_request_get_connection(req)) == NULL)
		return NULL;
	return RB_FIND(guard_tree, &guards_by_evcon, &key);
}

/* The reply is sent: the connection waits for its next request. */
static void
guard_reply_done(struct evhttp_request *req, void *arg)
{
	struct guard *g;

	audit_done(req);
	/* g may be gone (a closing connection): look it up by connection. */
	if ((g = guard_of(req)) != NULL && g == arg && g->phase != G_TAKEN) {
		g->phase = G_IDLE;
		g->headlen = 0;
	}
}

/* A request reached the router: its head and body are whole. */
void
guard_request(struct evhttp_request *req)
{
	struct guard *g = guard_of(req);

	audit_forget(req);
	if (g == NULL)
		return;
	guard_request_whole(g);
	evhttp_request_set_on_complete_cb(req, guard_reply_done, g);
}

/* A request on req's connection was authenticated: it leaves the
   unauthenticated share for good. */
void
http_conn_authed(struct evhttp_request *req)
{
	struct guard *g = guard_of(req);

	if (g != NULL && g->preauth) {
		g->preauth = 0;
		npreauth--;
	}
}

/* The response to req is a stream: discard what its client sends. */
void
http_conn_streaming(struct evhttp_request *req)
{
	struct guard *g = guard_of(req);

	if (g != NULL) {
		g->phase = G_STREAM;
		evbuffer_drain(bufferevent_get_input(g->bev),
		    evbuffer_get_length(bufferevent_get_input(g->bev)));
	}
}

/* req's connection is taken over (WebSocket): its owner reads it. */
void
http_conn_taken(struct evhttp_request *req)
{
	struct guard *g = guard_of(req);

	if (g != NULL)
		g->phase = G_TAKEN;
}

void
http_conn_set_sub(struct evhttp_request *req, struct sse_sub *sub)
{
	struct guard *g = guard_of(req);

	if (g == NULL)
		return;
	g->sub = sub;
	if (sub != NULL)
		http_conn_streaming(req);
}
