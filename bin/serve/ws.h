/* SPDX-License-Identifier: ISC */
/*
 * ws.h: ACP over WebSocket (RFC 6455) on qwen-serve's evhttp connections.
 *
 * ws-upgrade.c validates a GET /acp upgrade request (the same Host, Origin
 * and bearer gates as every route; the bearer may also come in the
 * qwen-bearer.<base64url token> subprotocol), answers 101 itself and takes
 * the connection over from evhttp.  ws.c then drives wslay on that
 * connection's bufferevent: one JSON-RPC message per text frame in both
 * directions, handed to the transport-independent ACP layer (acp.h).
 *
 * Limits: a message is at most WS_MAX_MESSAGE bytes (1009 beyond); text
 * must be valid UTF-8 (1007); binary messages are refused (1003); the
 * outbound queue holds at most ws_queue_cap() bytes, and a peer that lets
 * it fill is closed with 1008.
 */
#ifndef QWEN_SERVE_WS_H
#define QWEN_SERVE_WS_H

#include <stddef.h>

#define WS_MAX_MESSAGE		(10u * 1024 * 1024)
/* What is handed to the socket at once; the rest waits in wslay's queue. */
#define WS_OUT_CHUNK		(256u * 1024)
/* The outbound cap is 4 x --compacted-replay-max-bytes plus this. */
#define WS_QUEUE_SLACK		(1u * 1024 * 1024)
/* What one queued message costs wslay beyond its payload (a pong: all). */
#define WS_MSG_OVERHEAD		128u
/* How long a close we sent waits for the peer's before the socket goes. */
#define WS_CLOSE_WAIT_MS	5000
#define WS_PATH			"/acp"

struct evhttp_request;
struct evhttp_connection;
struct ws_conn;

/* ---- ws-upgrade.c ------------------------------------------------------ */
/* Whether req asks for a WebSocket upgrade (Upgrade: websocket). */
int	ws_wants_upgrade(struct evhttp_request *req);
/*
 * Run the gates, validate the handshake and switch req's connection to
 * WebSocket; on any failure the HTTP error reply is sent instead.
 */
void	ws_upgrade(struct evhttp_request *req);

/* ---- ws.c -------------------------------------------------------------- */
/*
 * Open the ACP connection, then queue handshake (the 101 response) on
 * req's connection and take it over from evhttp.  Returns the connection,
 * or NULL after answering req with the error (the ACP connection cap:
 * 503 acp_connection_limit_exceeded + Retry-After).
 */
struct ws_conn	*ws_conn_start(struct evhttp_request *req,
	    const char *handshake);
/* Open WebSocket connections. */
size_t	ws_conn_count(void);
/* The outbound queue cap in bytes. */
size_t	ws_queue_cap(void);
/* Shutdown: send 1001 going away to every connection. */
void	ws_shutdown(void);
/* Free every connection (before evhttp_free(), which would free them). */
void	ws_free_all(void);

#endif
