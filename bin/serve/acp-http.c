/* SPDX-License-Identifier: ISC */
/*
 * acp-http.c: ACP over HTTP.  POST /acp carries one JSON-RPC message;
 * initialize is answered inline with an Acp-Connection-Id header, later
 * messages name that connection and are acknowledged 202, their answers
 * travelling on GET /acp: the connection stream, or with Acp-Session-Id
 * the stream of a session the connection holds.  Each stream is a message
 * bus of bus.c (ring, Last-Event-ID replay, back-pressure, heartbeat).
 * DELETE /acp ends the connection; so does idleness with no stream open
 * (QWEN_SERVE_ACP_IDLE_MS, default 300000).  The gates (bearer, Host,
 * Origin) are http.c's, as for every route.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "errors.h"
#include "json-limit.h"
#include "log.h"
#include "rpc-frame.h"
#include "serve.h"
#include "acp.h"
#include "xmalloc.h"

#define AH_RING			4096	/* messages kept per stream */
#define AH_IDLE_DEFAULT_MS	300000

struct ah_stream {
	TAILQ_ENTRY(ah_stream)	 entry;
	char			 session_id[SERVE_SESSION_ID_MAX + 1];
	struct bus		*bus;
};

struct ah_conn {
	TAILQ_ENTRY(ah_conn)	 entry;
	struct acp_conn		*c;
	struct bus		*main;		/* the connection stream */
	TAILQ_HEAD(, ah_stream)	 streams;	/* session streams */
	char			*inline_reply;	/* initialize's answer */
	int			 capturing;
	struct event		*idle;
};

static TAILQ_HEAD(, ah_conn) ahs = TAILQ_HEAD_INITIALIZER(ahs);

static void	ah_send(void *, const char *, const char *, size_t);
static void	ah_session_gone(void *, const char *);

static const struct acp_sink ah_sink = {
	.send = ah_send,
	.session_gone = ah_session_gone,
};

/* ACP over HTTP is on unless QWEN_SERVE_ACP_HTTP=0. */
int
acp_http_enabled(void)
{
	const char *v = getenv("QWEN_SERVE_ACP_HTTP");

	return v == NULL || strcmp(v, "0") != 0;
}

/* QWEN_SERVE_ACP_IDLE_MS, or the default when unset or bad. */
static int64_t
idle_ms(void)
{
	const char *v = getenv("QWEN_SERVE_ACP_IDLE_MS"), *errstr;
	long long n;

	if (v == NULL)
		return AH_IDLE_DEFAULT_MS;
	n = strtonum(v, 1, 86400000, &errstr);
	return errstr != NULL ? AH_IDLE_DEFAULT_MS : n;
}

/* ---- streams -------------------------------------------------------------- */

/* The stream of session sid, or NULL. */
static struct ah_stream *
stream_find(struct ah_conn *a, const char *sid)
{
	struct ah_stream *st;

	TAILQ_FOREACH(st, &a->streams, entry)
		if (strcmp(st->session_id, sid) == 0)
			return st;
	return NULL;
}

/* The stream for sid (NULL: the connection stream), made on first use. */
static struct bus *
stream_get(struct ah_conn *a, const char *sid)
{
	struct ah_stream *st;

	if (sid == NULL)
		return a->main;
	if ((st = stream_find(a, sid)) != NULL)
		return st->bus;
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->bus = bus_new_raw(sid, AH_RING)) == NULL) {
		free(st);
		return NULL;
	}
	strlcpy(st->session_id, sid, sizeof(st->session_id));
	TAILQ_INSERT_TAIL(&a->streams, st, entry);
	return st->bus;
}

/* Drop a session stream; its open GET ends. */
static void
stream_free(struct ah_conn *a, struct ah_stream *st)
{
	TAILQ_REMOVE(&a->streams, st, entry);
	bus_free(st->bus);	/* ends its GET, if one is open */
	free(st);
}

/* The sink: initialize's answer is kept for the POST, the rest is streamed. */
static void
ah_send(void *arg, const char *sid, const char *json, size_t len)
{
	struct ah_conn *a = arg;
	struct bus *b;

	if (a->capturing && sid == NULL && a->inline_reply == NULL) {
		a->inline_reply = xstrndup(json, len);
		return;
	}
	if ((b = stream_get(a, sid)) != NULL)
		bus_publish_raw(b, json, len);
}

/* The connection let go of sid: its stream goes. */
static void
ah_session_gone(void *arg, const char *sid)
{
	struct ah_conn *a = arg;
	struct ah_stream *st = stream_find(a, sid);

	if (st != NULL)
		stream_free(a, st);
}

/* ---- connections ---------------------------------------------------------- */

/* End an HTTP connection: its ACP connection, streams and timer. */
static void
ah_free(struct ah_conn *a)
{
	struct ah_stream *st;

	TAILQ_REMOVE(&ahs, a, entry);
	acp_conn_close(a->c);
	while ((st = TAILQ_FIRST(&a->streams)) != NULL)
		stream_free(a, st);
	bus_free(a->main);
	if (a->idle != NULL)
		event_free(a->idle);
	free(a->inline_reply);
	free(a);
}

/* Whether a GET is open on any stream of a. */
static int
ah_streaming(struct ah_conn *a)
{
	struct ah_stream *st;

	if (bus_subscriber_count(a->main) > 0)
		return 1;
	TAILQ_FOREACH(st, &a->streams, entry)
		if (bus_subscriber_count(st->bus) > 0)
			return 1;
	return 0;
}

/* Activity: restart the idle timer. */
static void
ah_touch(struct ah_conn *a)
{
	int64_t ms = idle_ms();
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };

	if (a->idle != NULL)
		evtimer_add(a->idle, &tv);
}

/* No stream open and no request for the idle time: the client is gone. */
static void
on_idle(evutil_socket_t fd, short what, void *arg)
{
	struct ah_conn *a = arg;

	(void)fd; (void)what;
	if (ah_streaming(a)) {
		ah_touch(a);
		return;
	}
	log_info("acp: http connection %s idle: closed", acp_conn_id(a->c));
	ah_free(a);
}

/* A new HTTP connection with its connection stream, or NULL with *errp. */
static struct ah_conn *
ah_new(struct qerr **errp)
{
	struct ah_conn *a;

	if ((a = calloc(1, sizeof(*a))) == NULL) {
		*errp = qerr_new("internal", NULL);
		return NULL;
	}
	TAILQ_INIT(&a->streams);
	if ((a->c = acp_conn_new(&ah_sink, a, "http", errp)) == NULL ||
	    (a->main = bus_new_raw(acp_conn_id(a->c), AH_RING)) == NULL ||
	    (a->idle = evtimer_new(serve_base, on_idle, a)) == NULL) {
		if (a->c != NULL && *errp == NULL)
			*errp = qerr_new("internal", NULL);
		acp_conn_close(a->c);
		bus_free(a->main);
		free(a);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&ahs, a, entry);
	ah_touch(a);
	return a;
}

/* ---- replies -------------------------------------------------------------- */

/* A transport error as a JSON-RPC error body with the catalog's status. */
static void
ah_fail(struct evhttp_request *req, struct qerr *e)
{
	int status = e != NULL ? qerr_status(e) : 500;
	int ra = e != NULL ? qerr_retry_after(e) : -1;

	if (ra >= 0)
		http_set_retry_after(req, ra);
	http_reply_json(req, status, acp_error_message(NULL, e));
}

/* 400 with a JSON-RPC -32600 (the reference's code for a malformed body). */
static void
ah_malformed(struct evhttp_request *req, json_object *id, const char *why)
{
	http_reply_json(req, 400,
	    rpc_new_error(id, RPC_INVALID_REQUEST, why, NULL));
}

/* A non-empty request header, or NULL. */
static const char *
in_header(struct evhttp_request *req, const char *name)
{
	const char *v = evhttp_find_header(evhttp_request_get_input_headers(req), name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The connection the request names; else the 400/404 was sent. */
static struct ah_conn *
ah_lookup(struct evhttp_request *req)
{
	const char *id = in_header(req, "Acp-Connection-Id");
	struct acp_conn *c;

	if (id == NULL) {
		ah_fail(req, qerr_new("acp_connection_required", NULL));
		return NULL;
	}
	if ((c = acp_conn_find(id)) == NULL || strcmp(acp_conn_transport(c), "http") != 0) {
		ah_fail(req, qerr_new("acp_connection_not_found", NULL));
		return NULL;
	}
	return acp_conn_arg(c);
}

/* Content-Type application/json, parameters allowed. */
static int
is_json(struct evhttp_request *req)
{
	const char *v = in_header(req, "Content-Type");
	size_t n = strlen("application/json");

	if (v == NULL || strncasecmp(v, "application/json", n) != 0)
		return 0;
	v += n;
	while (*v == ' ' || *v == '\t')
		v++;
	return *v == '\0' || *v == ';';
}

/* The body's first significant byte, or 0. */
static char
first_byte(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isspace((unsigned char)p[i]))
			return p[i];
	return 0;
}

/* An initialize request. */
static int
is_initialize(struct rpc_msg *m)
{
	return m->kind == RPC_REQUEST && strcmp(m->method, "initialize") == 0;
}

/* initialize: a new connection (or the named one), answered inline. */
static void
post_initialize(struct evhttp_request *req, struct rpc_msg *m, struct ah_conn *a)
{
	struct qerr *e = NULL;
	char *reply;

	if (a == NULL && (a = ah_new(&e)) == NULL) {
		log_info("acp: http connection refused: %s", e != NULL ?
		    qerr_code(e) : "internal");
		ah_fail(req, e);
		return;
	}
	a->capturing = 1;
	(void)acp_conn_handle_json(a->c, m->root);
	a->capturing = 0;
	reply = a->inline_reply;
	a->inline_reply = NULL;
	evhttp_add_header(evhttp_request_get_output_headers(req), "Acp-Connection-Id",
	    acp_conn_id(a->c));
	http_reply_json(req, 200,
	    reply != NULL ? json_tokener_parse(reply) : NULL);
	free(reply);
}

/* POST /acp: one JSON-RPC message. */
void
route_acp_post(struct http_ctx *ctx)
{
	struct evhttp_request *req = ctx->req;
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const char *p;
	struct ah_conn *a = NULL;
	struct rpc_msg m;
	struct rpc_bad bad;

	if (!is_json(req)) {
		ah_fail(req, qerr_new("unsupported_media_type", NULL));
		return;
	}
	p = len > 0 ? (const char *)evbuffer_pullup(in, -1) : "";
	if (first_byte(p, len) == '[') {
		ah_fail(req, qerr_new("not_implemented", "Batches are not supported"));
		return;
	}
	/* A named connection is known before its message is parsed. */
	if (in_header(req, "Acp-Connection-Id") != NULL &&
	    (a = ah_lookup(req)) == NULL)
		return;
	if (rpc_parse_limited(p, len, JSON_LIMIT_VALUES, &m, &bad) ==
	    RPC_READ_BAD) {
		ah_malformed(req, bad.id, bad.message);
		bad.id = NULL;
		rpc_bad_clear(&bad);
		return;
	}
	if (a == NULL && !is_initialize(&m) && (a = ah_lookup(req)) == NULL)
		goto out;
	if (a != NULL)
		ah_touch(a);
	if (is_initialize(&m))
		post_initialize(req, &m, a);
	else {
		(void)acp_conn_handle_json(a->c, m.root);
		http_reply_empty(req, 202);
	}
out:
	rpc_msg_clear(&m);
}

/* Accept names text/event-stream (or anything). */
static int
accepts_sse(struct evhttp_request *req)
{
	const char *v = in_header(req, "Accept");

	return v == NULL || strstr(v, "text/event-stream") != NULL ||
	    strstr(v, "*/*") != NULL;
}

/* GET /acp: the connection stream, or a session stream. */
void
route_acp_get(struct http_ctx *ctx)
{
	struct evhttp_request *req = ctx->req;
	const char *raw = in_header(req, "Acp-Session-Id");
	char id[SERVE_SESSION_ID_MAX + 1];
	const char *sid = NULL;
	struct ah_conn *a;
	struct bus *b;

	if (!accepts_sse(req)) {
		ah_fail(req, qerr_new("not_acceptable", NULL));
		return;
	}
	if ((a = ah_lookup(req)) == NULL)
		return;
	ah_touch(a);
	if (raw != NULL && !acp_conn_owns(a->c, raw)) {
		ah_fail(req, qerr_new("acp_stream_forbidden", NULL));
		return;
	}
	/* The stream is keyed as the session is: one stream per session. */
	if (raw != NULL && acp_canon_id(raw, id, sizeof(id)) == 0)
		sid = id;
	if ((b = stream_get(a, sid)) == NULL) {
		ah_fail(req, qerr_new("internal", NULL));
		return;
	}
	/* A whole ring's worth: a load's snapshot may arrive in one burst. */
	sse_subscribe(b, req, routes_last_event_id(req),
	    in_header(req, "X-Qwen-Event-Epoch"), AH_RING, NULL);
}

/* DELETE /acp: end the connection. */
void
route_acp_delete(struct http_ctx *ctx)
{
	struct ah_conn *a;

	if ((a = ah_lookup(ctx->req)) == NULL)
		return;
	log_info("acp: http connection %s deleted", acp_conn_id(a->c));
	ah_free(a);
	http_reply_empty(ctx->req, 202);
}

/* Shutdown: every HTTP connection ends. */
void
acp_http_shutdown(void)
{
	struct ah_conn *a;

	while ((a = TAILQ_FIRST(&ahs)) != NULL)
		ah_free(a);
}
