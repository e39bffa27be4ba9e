/* SPDX-License-Identifier: ISC */
/*
 * conn.c: every HTTP connection from its accept on, on both listeners:
 * the registry and its caps.  evhttp hides the accept, but asks us for
 * each connection's bufferevent (evhttp_set_bevcb): that is where a
 * connection is counted, and where conn-input.c's watcher goes on its
 * input buffer, which sees every byte the peer sends before evhttp parses
 * it.  Here a connection
 *   - over the cap is refused with 503 at once, then closed;
 *   - over TCP that has not authenticated shares a quarter of the cap, the
 *     oldest idle one closed to make room;
 *   - past its phase's deadline (conn-input.c sets them) is closed;
 *   - refused (too large, over the cap) lingers a moment so that the peer
 *     reads the answer.
 * The registry also carries each connection's SSE subscriber, so that a
 * closed stream is noticed.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/tree.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "conn-int.h"
#include "errors.h"
#include "log.h"
#include "serve.h"

/* Descriptors kept free for the Unix socket, children, logs and traces. */
#define CONN_FD_RESERVE	64
/* After a refusal, what the peer still sends is read and dropped this long, */
#define CONN_LINGER_SEC	2
/* by this many connections at most (the others are closed at once). */
#define CONN_LINGER_MAX	16
/* What the Unix socket (the operator's way in) may have beyond the
 * descriptor-derived cap. */
#define CONN_UNIX_EXTRA	8
/* TCP connections not yet authenticated share 1/CONN_PREAUTH_DIV of the cap. */
#define CONN_PREAUTH_DIV	4

static TAILQ_HEAD(, conn) conns = TAILQ_HEAD_INITIALIZER(conns);
/*
 * The attached connections by evhttp's connection: every request looks
 * its connection up several times, and with ten thousand streams open a
 * walk of the list was most of the daemon's time.
 */
RB_HEAD(conn_tree, conn);
int	conn_cmp(const struct conn *, const struct conn *);
RB_PROTOTYPE(conn_tree, conn, by_evcon, conn_cmp)
static struct conn_tree conns_by_evcon = RB_INITIALIZER(&conns_by_evcon);
static size_t nconns, nlinger, npreauth;
static size_t nlive;	/* attached and not refused: what the cap counts */
static int conn_cap, unix_cap;	/* TCP, and the Unix socket */
static int preauth_cap;		/* TCP connections before authentication */

/* The tree's order: the connection's address. */
int
conn_cmp(const struct conn *a, const struct conn *b)
{
	if (a->evcon == b->evcon)
		return 0;
	return (uintptr_t)a->evcon < (uintptr_t)b->evcon ? -1 : 1;
}
RB_GENERATE(conn_tree, conn, by_evcon, conn_cmp)

/* The cap: --max-connections, within what the descriptor limit allows. */
int
conn_limit(void)
{
	return conn_cap;
}

/*
 * Raise the soft descriptor limit to the hard one and fit the caps to
 * it, keeping a reserve so that the Unix socket, the children's pipes and
 * the trace files always find a descriptor.
 */
static void
conn_fit_rlimit(void)
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
	    (long)rl.rlim_cur - CONN_FD_RESERVE;
	if (room < (long)rl.rlim_cur / 2)
		room = (long)rl.rlim_cur / 4;	/* a tiny limit: lingering ones too */
	if (room < conn_cap) {
		log_info("descriptor limit %ld: at most %ld connections",
		    (long)rl.rlim_cur, room);
		conn_cap = (int)room;
	}
	if (room + CONN_UNIX_EXTRA < unix_cap)
		unix_cap = (int)room + CONN_UNIX_EXTRA;
}

/* The caps: --max-connections within the descriptor limit, and the share. */
void
conn_init(void)
{
	conn_cap = unix_cap = conf.max_connections;
	conn_fit_rlimit();
	preauth_cap = conn_cap / CONN_PREAUTH_DIV;
	if (preauth_cap < 1)
		preauth_cap = 1;
}

size_t
conn_count(void)
{
	return nconns;
}

/* Unlink and free g; the bufferevent is evhttp's (or already gone). */
static void
conn_free(struct conn *g)
{
	TAILQ_REMOVE(&conns, g, entry);
	nconns--;
	if (g->refusal == R_CLOSING)
		nlinger--;
	if (g->preauth)
		npreauth--;
	if (g->live)
		nlive--;
	if (g->evcon != NULL) {
		RB_REMOVE(conn_tree, &conns_by_evcon, g);
		metrics_conn_closed(g->is_unix);
	}
	conn_unwatch(g);
	event_free(g->ev);
	free(g->head);
	free(g);
	listen_fd_freed();
}

void
conn_unwatch(struct conn *g)
{
	if (g->gone_ev != NULL)
		event_free(g->gone_ev);
	g->gone_ev = NULL;
	g->gone = NULL;
	g->gone_arg = NULL;
}

/* The peer closed its end while a watch was set: its owner told once. */
static void
conn_gone(evutil_socket_t fd, short what, void *arg)
{
	struct conn *g = arg;
	void (*gone)(void *) = g->gone;
	void *gone_arg = g->gone_arg;

	(void)fd; (void)what;
	conn_unwatch(g);
	if (gone != NULL)
		gone(gone_arg);
}

/*
 * A run that lives as long as its request (a session shell command) is
 * told when its client closes first, as upstream's request close aborts
 * it.  evhttp reads nothing while a request waits for its answer, so it
 * would only learn of the close when it writes: the socket's close is
 * watched on its own (EPOLLRDHUP), the bytes left for evhttp.
 */
void
conn_watch_gone(struct evhttp_request *req, void (*gone)(void *), void *arg)
{
	struct conn *g = conn_of(req);

	if (g == NULL)
		return;
	conn_unwatch(g);
	if (gone == NULL)
		return;
	g->gone_ev = event_new(bufferevent_get_base(g->bev),
	    bufferevent_getfd(g->bev), EV_CLOSED, conn_gone, g);
	if (g->gone_ev == NULL || event_add(g->gone_ev, NULL) == -1) {
		conn_unwatch(g);
		return;
	}
	g->gone = gone;
	g->gone_arg = arg;
}

/* evhttp frees the connection: the stream ends, the slot is free. */
static void
conn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct conn *g = arg;
	struct sse_sub *sub = g->sub;
	void (*gone)(void *) = g->gone;
	void *gone_arg = g->gone_arg;

	(void)evcon;
	evbuffer_remove_cb(bufferevent_get_input(g->bev), conn_input, g);
	conn_free(g);
	if (sub != NULL)
		sse_sub_closed(sub);
	if (gone != NULL)
		gone(gone_arg);	/* freed unanswered (a refusal, shutdown) */
}

/* Arm the deadline of the phase just entered. */
void
conn_deadline(struct conn *g, int seconds)
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
conn_refuse(struct conn *g, const char *code)
{
	struct qerr *e = qerr_new(code, NULL);
	json_object *body;
	const char *s;
	char head[256];
	int n, ra = e != NULL ? qerr_retry_after(e) : -1;

	metrics_refusal(g->is_unix, code);
	if (e != NULL && strcmp(code, "connection_limit_exceeded") == 0)
		qerr_set_int(e, "limit", conn_cap);
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
		(void)!send(bufferevent_getfd(g->bev), head, strlen(head),
		    MSG_NOSIGNAL);
		(void)!send(bufferevent_getfd(g->bev), s, strlen(s),
		    MSG_NOSIGNAL);
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
	if (nlinger >= CONN_LINGER_MAX) {
		evhttp_connection_free(g->evcon);	/* calls conn_closed */
		return;
	}
	shutdown(bufferevent_getfd(g->bev), SHUT_WR);
	nlinger++;
	g->phase = C_STREAM;
	g->refusal = R_CLOSING;
	evbuffer_drain(bufferevent_get_input(g->bev),
	    evbuffer_get_length(bufferevent_get_input(g->bev)));
	conn_deadline(g, CONN_LINGER_SEC);
}

/* Whether g came in on the Unix socket. */
static int
conn_is_unix(struct conn *g)
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
conn_evict_preauth(void)
{
	struct conn *g;

	TAILQ_FOREACH(g, &conns, entry) {
		if (!g->preauth || g->evcon == NULL || g->refusal != R_NONE ||
		    (g->phase != C_HEAD && g->phase != C_BODY && g->phase != C_IDLE))
			continue;
		log_debug("connection: unauthenticated share full, closing the oldest");
		evhttp_connection_free(g->evcon);	/* calls conn_closed */
		return 0;
	}
	return -1;
}

/*
 * A new TCP connection joins the unauthenticated share, making room in it
 * first; -1 when nothing could be closed (all are being answered).
 */
static int
conn_join_preauth(struct conn *g)
{
	if (npreauth >= (size_t)preauth_cap && conn_evict_preauth() == -1)
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
conn_attach(struct conn *g)
{
	struct timeval tv = { CONN_HEAD_SEC, 0 };
	void *arg = NULL;
	int is_unix;

	bufferevent_getcb(g->bev, NULL, NULL, NULL, &arg);
	if (arg == NULL) {
		bufferevent_decref(g->bev);	/* frees it: evhttp let it go */
		conn_free(g);
		return -1;
	}
	g->evcon = arg;
	RB_INSERT(conn_tree, &conns_by_evcon, g);
	bufferevent_decref(g->bev);
	evhttp_connection_set_closecb(g->evcon, conn_closed, g);
	is_unix = g->is_unix = conn_is_unix(g);
	metrics_conn_open(is_unix);
	g->live = 1;
	nlive++;
	if ((!is_unix && conn_join_preauth(g) == -1) ||
	    nlive > (size_t)(is_unix ? unix_cap : conn_cap))
		conn_refuse(g, "connection_limit_exceeded");
	else
		evtimer_add(g->ev, &tv);
	return 0;
}

/* Timer, attach and refusal: one event per connection. */
static void
conn_event(evutil_socket_t fd, short what, void *arg)
{
	struct conn *g = arg;

	(void)fd; (void)what;
	if (g->evcon == NULL) {
		conn_attach(g);
		return;
	}
	if (g->refusal == R_TOO_LARGE) {
		conn_refuse(g, "payload_too_large");
		return;
	}
	if (g->refusal == R_CLOSING) {
		evhttp_connection_free(g->evcon);	/* calls conn_closed */
		return;
	}
	if (g->phase == C_HEAD || g->phase == C_BODY) {
		/* A head or body past its deadline: nobody waits for it. */
		log_debug("connection: request %s not complete in time, closing",
		    g->phase == C_HEAD ? "head" : "body");
		evhttp_connection_free(g->evcon);
	}
}

/* evhttp asks for a connection's bufferevent: a connection was accepted. */
static struct bufferevent *
conn_bevcb(struct event_base *base, void *arg)
{
	struct bufferevent *bev;
	struct conn *g;

	(void)arg;
	if ((bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE)) == NULL)
		return NULL;
	if ((g = calloc(1, sizeof(*g))) == NULL ||
	    (g->ev = event_new(base, -1, 0, conn_event, g)) == NULL) {
		free(g);
		return bev;
	}
	/* Well under the cap again: a descriptor shortage, if any, is over. */
	if (nconns < (size_t)conn_cap / 2)
		listen_accepted();
	g->bev = bev;
	g->phase = C_HEAD;
	TAILQ_INSERT_TAIL(&conns, g, entry);
	nconns++;
	/* Keep it until conn_attach() has looked at it. */
	bufferevent_incref(bev);
	evbuffer_add_cb(bufferevent_get_input(bev), conn_input, g);
	event_active(g->ev, EV_TIMEOUT, 1);
	return bev;
}

void
conn_install(struct evhttp *http)
{
	/* Ours is the cap; evhttp's only stops what the guard let through. */
	evhttp_set_max_body_size(http, 2 * SERVE_MAX_BODY);
	evhttp_set_bevcb(http, conn_bevcb, NULL);
}

struct conn *
conn_of(struct evhttp_request *req)
{
	struct conn key;

	if ((key.evcon = evhttp_request_get_connection(req)) == NULL)
		return NULL;
	return RB_FIND(conn_tree, &conns_by_evcon, &key);
}

/* A request on req's connection was authenticated: it leaves the
   unauthenticated share for good. */
void
conn_authed(struct evhttp_request *req)
{
	struct conn *g = conn_of(req);

	if (g != NULL && g->preauth) {
		g->preauth = 0;
		npreauth--;
	}
}
