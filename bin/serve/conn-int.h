/* SPDX-License-Identifier: ISC */
/*
 * conn-int.h: what conn.c (the accept: the registry, the caps, refusals)
 * and conn-input.c (what a connection sends, request by request) share:
 * one connection's state.
 */
#ifndef QWEN_SERVE_CONN_INT_H
#define QWEN_SERVE_CONN_INT_H

#include <sys/queue.h>
#include <sys/tree.h>

#include <stddef.h>

#include <event2/buffer.h>

#include "serve.h"

#define CONN_HEAD_SEC		10
#define CONN_BODY_SEC		60
/* Bytes that may wait behind a request being answered (pipelining). */
#define CONN_PENDING_MAX	(256u * 1024)
/* A head buffer's first room; it doubles up to SERVE_MAX_HEADERS. */
#define CONN_HEAD_FIRST	1024u
/* Chunked framing on top of the body cap before the guard says 413. */
#define CONN_CHUNK_SLACK	(SERVE_MAX_BODY / 64)

enum conn_phase {
	C_HEAD,		/* reading a request head (deadline running) */
	C_BODY,		/* reading its body (deadline running) */
	C_BUSY,		/* the request is being answered */
	C_STREAM,	/* a response stream: input is discarded */
	C_TAKEN,	/* taken over (WebSocket): its owner reads */
	C_IDLE,		/* keep-alive, between requests */
};

enum conn_refusal { R_NONE, R_TOO_LARGE, R_CLOSING };

struct conn {
	TAILQ_ENTRY(conn)	 entry;
	RB_ENTRY(conn)		 by_evcon;	/* once attached */
	struct bufferevent	*bev;
	struct evhttp_connection *evcon;	/* NULL until attached */
	struct event		*ev;	/* attach, deadlines, refusals */
	struct sse_sub		*sub;
	struct event		*gone_ev;	/* conn_watch_gone: EV_CLOSED */
	void			(*gone)(void *);
	void			*gone_arg;
	enum conn_phase		 phase;
	enum conn_refusal	 refusal;
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

/* conn.c: the connection of req, or NULL. */
struct conn	*conn_of(struct evhttp_request *);
/* conn.c: the watch conn_watch_gone set, if any, ended. */
void		 conn_unwatch(struct conn *);
/* conn.c: arm the deadline of the phase just entered. */
void		 conn_deadline(struct conn *, int seconds);
/* conn-input.c: every change to a connection's input buffer. */
void		 conn_input(struct evbuffer *,
		    const struct evbuffer_cb_info *, void *);

#endif
