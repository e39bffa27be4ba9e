/* SPDX-License-Identifier: ISC */
/*
 * acp.h: ACP for clients, independent of the transport.
 *
 * One struct acp_conn is one ACP client connection: a WebSocket, or an
 * ACP-over-HTTP connection (POST /acp initialize .. DELETE /acp).  The
 * transport feeds it one inbound JSON-RPC message at a time and gets every
 * outbound message (replies, notifications, requests) through its sink.
 * The methods (initialize, session/new, session/load with the bounded
 * snapshot replayed as session/update notifications, session/resume,
 * session/prompt with streamed updates, session/cancel, session/close,
 * _qwen/session/heartbeat, _qwen/session/detach) run the REST routes
 * themselves (acp.c hands them a connection-less request and takes its
 * reply back), so ACP and REST share every check, error and side effect.
 * Daemon errors become JSON-RPC errors through qerr_jsonrpc_error(), the
 * one mapping REST's bodies come from too.
 *
 * Rules for transports:
 * - Authentication, Host and Origin gates, message size caps and framing
 *   are the transport's; acp_conn_handle() gets one complete message.
 * - sink->send() must not call back into acp_* synchronously (no
 *   acp_conn_close() from inside it): queue the bytes, report a dead peer
 *   later from the event loop.
 * - initialize is answered before acp_conn_handle() returns (ACP over HTTP
 *   answers it inline); other requests may be answered later.
 * - Everything runs on the daemon's one libevent loop.
 */
#ifndef QWEN_SERVE_ACP_H
#define QWEN_SERVE_ACP_H

#include <stddef.h>

#include <json-c/json.h>

#define ACP_MAX_CONNECTIONS	64	/* both transports together */
#define ACP_CONN_ID_MAX		64
#define ACP_MAX_MESSAGE		(10u * 1024 * 1024)

struct qerr;
struct acp_conn;

/* Where a connection's outbound messages go. */
struct acp_sink {
	/*
	 * One outbound JSON-RPC message (json: NUL-terminated, len bytes,
	 * borrowed for the call).  session_id: the session the message
	 * belongs to when this connection has that session attached (or a
	 * restore of it pending), else NULL; ACP over HTTP puts it on that
	 * session's stream, WebSocket ignores it.
	 */
	void	(*send)(void *arg, const char *session_id, const char *json,
		    size_t len);
	/*
	 * Optional: the connection no longer owns session_id (detached,
	 * closed, failed load); no more messages for it will follow.
	 */
	void	(*session_gone)(void *arg, const char *session_id);
};

/*
 * A new connection ("http" or "ws"); sink and arg are kept (borrowed; they
 * must outlive the connection).  NULL at the connection cap or on ENOMEM,
 * with *errp (when errp is not NULL) set to the error to answer with
 * (acp_connection_limit_exceeded 503 + Retry-After, or internal); caller
 * frees it with qerr_free().
 */
/*
 * Set by http.c around a request on /workspaces/:w/acp: a connection it
 * opens (initialize, WebSocket upgrade) serves that workspace.
 */
extern const char *acp_bound_workspace;
struct acp_conn	*acp_conn_new(const struct acp_sink *sink, void *arg,
		    const char *transport, struct qerr **errp);

/*
 * One inbound message (need not be NUL-terminated).  Malformed JSON,
 * batches, non-objects and bad requests are answered through the sink
 * with a JSON-RPC error (id null when it cannot be known).  Returns 0, or
 * -1 when the message was not a JSON-RPC object at all (the transport may
 * count or close on it; the error has been sent already).
 */
int	acp_conn_handle(struct acp_conn *, const char *msg, size_t len);

/*
 * The same with a parsed message (borrowed).  ACP over HTTP parses the
 * body itself to answer 400/501 before it needs a connection.
 */
int	acp_conn_handle_json(struct acp_conn *, json_object *msg);

/*
 * The end of the connection (peer gone, DELETE /acp, shutdown): every
 * session it holds is detached the way _qwen/session/detach does (a
 * session nothing else holds is closed, reason last_client_detached),
 * answers still in flight are dropped and their late results cleaned up.
 * NULL-safe; the sink is not called any more.
 */
void	acp_conn_close(struct acp_conn *);

/* The connection's id (the Acp-Connection-Id header of ACP over HTTP). */
const char	*acp_conn_id(const struct acp_conn *);
/* "http" or "ws", as given to acp_conn_new(). */
const char	*acp_conn_transport(const struct acp_conn *);
/* Connection by id, or NULL. */
struct acp_conn	*acp_conn_find(const char *id);
/* Whether c has session_id attached (or a load/resume of it pending). */
int		 acp_conn_owns(const struct acp_conn *, const char *session_id);
/* A session id as the session map keys it (UUIDs lower-cased); -1: bad. */
int		 acp_canon_id(const char *in, char *out, size_t size);
/* The transport's arg of c (as given to acp_conn_new). */
void		*acp_conn_arg(const struct acp_conn *);

/* Open connections (both transports), for /health and tests. */
size_t	acp_conn_count(void);
/*
 * Shutdown: close every connection left (their calls in flight are
 * orphaned).  Transports end their own connections first
 * (acp_http_shutdown(), the WebSocket's): a transport must not use a
 * connection this closed.
 */
void	acp_shutdown(void);
/* After the loop: free the calls whose replies never came. */
void	acp_free(void);

/*
 * The JSON-RPC error member for e (takes ownership of e; NULL: internal).
 * A JSON-RPC message {jsonrpc, id, error} with id (borrowed, NULL: null).
 */
json_object	*acp_error_message(json_object *id, struct qerr *e);

/* ---- the connection-less request seam (acp-call.c) ---------------------- */
struct evhttp_request;

/*
 * Called by http.c's reply functions before they send: 1 when req is a
 * request acp.c made (its reply was taken and req freed), else 0.  e
 * (borrowed) is the error of http_send_qerr(), NULL for plain replies;
 * body (borrowed) may be NULL.
 */
int	acp_call_capture(struct evhttp_request *req, int status,
	    json_object *body, struct qerr *e);

/* ---- ACP over HTTP (acp-http.c) ------------------------------------------ */
struct http_ctx;

/* Whether /acp is served (env QWEN_SERVE_ACP_HTTP is not "0"). */
int	acp_http_enabled(void);
void	route_acp_post(struct http_ctx *);
void	route_acp_get(struct http_ctx *);
void	route_acp_delete(struct http_ctx *);
/* Shutdown: end every ACP-over-HTTP connection (before acp_shutdown()). */
void	acp_http_shutdown(void);

#endif
