/* SPDX-License-Identifier: ISC */
/*
 * ws.c: WebSocket connections after the upgrade, driven by wslay on the
 * evhttp connection's bufferevent.
 *
 * Inbound: wslay reassembles fragments, answers pings and checks text for
 * UTF-8; a complete text message is handed to the ACP layer.  Outbound: the
 * ACP layer's sink queues one text message per JSON-RPC message; at most
 * WS_OUT_CHUNK bytes sit in the bufferevent at a time, the rest in wslay's
 * queue, and a peer that lets more than ws_queue_cap() bytes pile up is
 * closed with 1008.  The sink never frees anything (acp.h forbids calling
 * back into it): work it cannot do on the spot is left to the kick event.
 * A connection ends through ws_conn_free() only, from a libevent callback:
 * it closes the ACP connection (every session it held is detached) and
 * frees the evhttp connection, which frees the bufferevent and the socket.
 */
#include "config.h"

#include <sys/queue.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <wslay/wslay.h>

#include "acp.h"
#include "errors.h"
#include "log.h"
#include "serve.h"
#include "ws.h"

struct ws_conn {
	TAILQ_ENTRY(ws_conn)	 entry;
	struct evhttp_connection *evcon;
	struct bufferevent	*bev;
	wslay_event_context_ptr	 ctx;
	struct acp_conn		*acp;
	struct event		*kick;		/* deferred work, next loop turn */
	struct event		*timer;		/* our close waits for the peer's */
	int			 overflow;	/* the outbound queue went over the cap */
	int			 broken;	/* wslay_event_send() failed */
};

static TAILQ_HEAD(, ws_conn) conns = TAILQ_HEAD_INITIALIZER(conns);
static size_t nconns;

static void	ws_sink_send(void *, const char *, const char *, size_t);

static const struct acp_sink ws_sink = { .send = ws_sink_send };

/* For GET /health?deep=1. */
size_t
ws_conn_count(void)
{
	return nconns;
}

/*
 * The largest burst a well-behaved peer must absorb is a load's replay
 * (at most --compacted-replay-max-bytes of updates, each wrapped in a
 * session/update notification), so the cap follows that bound.
 */
size_t
ws_queue_cap(void)
{
	return 4 * conf.compacted_replay_max_bytes + WS_QUEUE_SLACK;
}

/*
 * Bytes waiting to go out: wslay's queue plus the bufferevent's.  Each
 * queued message also costs wslay's bookkeeping, which its length leaves
 * out: a peer sending empty pings without reading queues empty pongs.
 */
static size_t
ws_pending(struct ws_conn *c)
{
	return wslay_event_get_queued_msg_length(c->ctx) +
	    wslay_event_get_queued_msg_count(c->ctx) * WS_MSG_OVERHEAD +
	    evbuffer_get_length(bufferevent_get_output(c->bev));
}

/* The ACP side is over: no message goes to it or comes from it again. */
static void
ws_end_acp(struct ws_conn *c)
{
	struct acp_conn *acp = c->acp;

	c->acp = NULL;
	acp_conn_close(acp);
}

/* A closing connection is dropped WS_CLOSE_WAIT_MS from now at the latest. */
static void
ws_close_deadline(struct ws_conn *c)
{
	struct timeval tv = { WS_CLOSE_WAIT_MS / 1000, (WS_CLOSE_WAIT_MS % 1000) * 1000 };

	if (!evtimer_pending(c->timer, NULL))
		evtimer_add(c->timer, &tv);
}

/* Start our side of the close handshake; the peer has WS_CLOSE_WAIT_MS. */
static void
ws_close(struct ws_conn *c, uint16_t status, const char *reason)
{
	ws_end_acp(c);
	if (!wslay_event_get_close_sent(c->ctx))
		wslay_event_queue_close(c->ctx, status, (const uint8_t *)reason,
		    strlen(reason));
	ws_close_deadline(c);
}

/* The one end of every connection: ACP, wslay, evhttp's connection, us. */
static void
ws_conn_free(struct ws_conn *c)
{
	TAILQ_REMOVE(&conns, c, entry);
	nconns--;
	ws_end_acp(c);
	event_free(c->kick);
	event_free(c->timer);
	wslay_event_context_free(c->ctx);
	/* Frees the bufferevent and the socket, and the pending request. */
	evhttp_connection_free(c->evcon);
	log_debug("websocket: connection closed (%zu open)", nconns);
	free(c);
}

/* Move queued frames into the bufferevent (never frees c). */
static void
ws_flush(struct ws_conn *c)
{
	if (wslay_event_want_write(c->ctx) && wslay_event_send(c->ctx) != 0)
		c->broken = 1;		/* out of memory: nothing sane is left */
}

/*
 * After any event: close on overflow, flush, and free c once both close
 * frames have passed and the output has drained (or it is broken).
 */
static void
ws_settle(struct ws_conn *c)
{
	if (c->overflow == 1) {
		c->overflow = 2;
		log_warnx("websocket: peer is not reading (%zu bytes queued): closing",
		    ws_pending(c));
		ws_close(c, WSLAY_CODE_POLICY_VIOLATION, "outbound queue full");
	}
	ws_flush(c);
	if (wslay_event_get_close_received(c->ctx) && c->acp != NULL)
		ws_end_acp(c);
	if (!wslay_event_get_read_enabled(c->ctx) && !wslay_event_get_close_sent(c->ctx)) {
		/* wslay gave up reading (protocol error): it has queued a close. */
		ws_end_acp(c);
		ws_flush(c);
	}
	/* wslay keeps read_enabled after a close arrives: that ends reading too. */
	if (!c->broken && ((wslay_event_want_read(c->ctx) &&
	    !wslay_event_get_close_received(c->ctx)) || wslay_event_want_write(c->ctx) ||
	    evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)) {
		/*
		 * A close the peer began, or one wslay queued on a protocol
		 * error, still needs our output drained: a peer that stops
		 * reading must not hold the connection for ever.
		 */
		if (wslay_event_get_close_received(c->ctx) ||
		    !wslay_event_get_read_enabled(c->ctx))
			ws_close_deadline(c);
		return;
	}
	ws_conn_free(c);
}

/* wslay wants bytes: from the bufferevent's input. */
static ssize_t
ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
    void *arg)
{
	struct ws_conn *c = arg;
	int n;

	(void)flags;
	n = evbuffer_remove(bufferevent_get_input(c->bev), buf, len);
	if (n <= 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	return n;
}

/* wslay has frame bytes: into the bufferevent, up to WS_OUT_CHUNK. */
static ssize_t
ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
    int flags, void *arg)
{
	struct ws_conn *c = arg;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	size_t have = evbuffer_get_length(out);

	(void)flags;
	if (have >= WS_OUT_CHUNK) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (len > WS_OUT_CHUNK - have)
		len = WS_OUT_CHUNK - have;
	if (evbuffer_add(out, data, len) == -1) {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return (ssize_t)len;
}

/*
 * A whole message: text goes to ACP; binary is refused with 1003.  wslay
 * 1.1 has already checked that text is UTF-8 (1007 otherwise) and that
 * the message fits the cap (1009 otherwise).
 */
static void
ws_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *m,
    void *arg)
{
	struct ws_conn *c = arg;

	(void)ctx;
	if (m->opcode == WSLAY_BINARY_FRAME) {
		ws_close(c, WSLAY_CODE_UNSUPPORTED_DATA, "binary messages are not supported");
		return;
	}
	if (m->opcode != WSLAY_TEXT_FRAME || c->acp == NULL)
		return;
	/* -1: not a JSON-RPC object; the error went out, the connection stays. */
	(void)acp_conn_handle(c->acp, (const char *)m->msg, m->msg_length);
	/* wslay frees the message after this returns. */
	conn_release_later(m->msg_length);
}

/* The ACP sink: one JSON-RPC message as one text frame. */
static void
ws_sink_send(void *arg, const char *session_id, const char *json, size_t len)
{
	struct ws_conn *c = arg;
	struct wslay_event_msg msg = { WSLAY_TEXT_FRAME, (const uint8_t *)json, len };
	size_t pending;

	(void)session_id;
	if (c->overflow || c->acp == NULL || wslay_event_get_close_sent(c->ctx))
		return;
	pending = ws_pending(c);
	/* One message larger than the cap still goes to a peer that keeps up. */
	if (pending > 0 && pending + len > ws_queue_cap()) {
		c->overflow = 1;
		event_active(c->kick, EV_TIMEOUT, 0);
		return;
	}
	if (wslay_event_queue_msg(c->ctx, &msg) != 0)
		log_warnx("websocket: cannot queue a message");
	event_active(c->kick, EV_TIMEOUT, 0);
}

/* Frames arrived: wslay parses them and calls ws_msg_cb per message. */
static void
ws_read_cb(struct bufferevent *bev, void *arg)
{
	struct ws_conn *c = arg;

	(void)bev;
	if (wslay_event_want_read(c->ctx) && wslay_event_recv(c->ctx) != 0) {
		ws_conn_free(c);	/* allocation or callback failure */
		return;
	}
	if (!c->overflow && ws_pending(c) > ws_queue_cap())
		c->overflow = 1;	/* pongs to a peer that does not read */
	/* Bytes after the close handshake are of no use: drop them. */
	if (!wslay_event_get_read_enabled(c->ctx) || wslay_event_get_close_received(c->ctx))
		evbuffer_drain(bufferevent_get_input(c->bev),
		    evbuffer_get_length(bufferevent_get_input(c->bev)));
	ws_settle(c);
}

/* The socket took some output: move more, or finish a closed connection. */
static void
ws_write_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	ws_settle(arg);
}

/* EOF or a socket error: the peer is gone, with or without a close frame. */
static void
ws_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct ws_conn *c = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (!wslay_event_get_close_received(c->ctx))
			log_debug("websocket: peer went away without a close");
		ws_conn_free(c);
	}
}

/* Deferred work: bytes buffered before the takeover, sink output, overflow. */
static void
ws_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ws_conn *c = arg;

	(void)fd; (void)what;
	if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0) {
		ws_read_cb(c->bev, c);
		return;
	}
	ws_settle(c);
}

/* Our close was not answered in time. */
static void
ws_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what;
	log_debug("websocket: no close from the peer: dropping the connection");
	ws_conn_free(arg);
}

/* wslay's server context with our callbacks and the message cap. */
static int
ws_ctx_new(struct ws_conn *c)
{
	struct wslay_event_callbacks cbs = {
		.recv_callback = ws_recv_cb,
		.send_callback = ws_send_cb,
		.on_msg_recv_callback = ws_msg_cb,
	};

	if (wslay_event_context_server_init(&c->ctx, &cbs, c) != 0)
		return -1;
	wslay_event_config_set_max_recv_msg_length(c->ctx, WS_MAX_MESSAGE);
	return 0;
}

/* The bufferevent becomes ours: no evhttp callbacks or timeouts any more. */
static void
ws_take_over(struct ws_conn *c, const char *handshake)
{
	bufferevent_set_timeouts(c->bev, NULL, NULL);
	bufferevent_setcb(c->bev, ws_read_cb, ws_write_cb, ws_event_cb, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
	bufferevent_setwatermark(c->bev, EV_WRITE, WS_OUT_CHUNK / 2, 0);
	bufferevent_write(c->bev, handshake, strlen(handshake));
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	/* Frames the peer sent right behind its request are already buffered. */
	event_active(c->kick, EV_TIMEOUT, 0);
}

/* The ACP connection first, so that its cap is still an HTTP answer. */
struct ws_conn *
ws_conn_start(struct evhttp_request *req, const char *handshake)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct qerr *e = NULL;
	struct ws_conn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		http_error(req, "internal", NULL);
		return NULL;
	}
	c->evcon = evcon;
	c->bev = evhttp_connection_get_bufferevent(evcon);
	conn_taken(req);
	if ((c->kick = event_new(serve_base, -1, 0, ws_kick_cb, c)) == NULL ||
	    (c->timer = evtimer_new(serve_base, ws_timer_cb, c)) == NULL ||
	    ws_ctx_new(c) == -1 ||
	    (c->acp = acp_conn_new(&ws_sink, c, "ws", &e)) == NULL) {
		if (c->kick != NULL)
			event_free(c->kick);
		if (c->timer != NULL)
			event_free(c->timer);
		if (c->ctx != NULL)
			wslay_event_context_free(c->ctx);
		free(c);
		http_send_qerr(req, e != NULL ? e : qerr_new("internal", NULL));
		return NULL;
	}
	TAILQ_INSERT_TAIL(&conns, c, entry);
	nconns++;
	ws_take_over(c, handshake);
	log_debug("websocket: connection %s open (%zu open)", acp_conn_id(c->acp),
	    nconns);
	return c;
}

/* Every connection says 1001; ACP ends for each before acp_shutdown(). */
void
ws_shutdown(void)
{
	struct ws_conn *c, *next;

	TAILQ_FOREACH_SAFE(c, &conns, entry, next) {
		ws_close(c, WSLAY_CODE_GOING_AWAY, "daemon shutting down");
		event_active(c->kick, EV_TIMEOUT, 0);
	}
}

/* After the loop: whatever did not finish its close handshake. */
void
ws_free_all(void)
{
	struct ws_conn *c;

	while ((c = TAILQ_FIRST(&conns)) != NULL)
		ws_conn_free(c);
}
