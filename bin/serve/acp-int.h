/* SPDX-License-Identifier: ISC */
/*
 * acp-int.h: what the files of the transport-independent ACP layer share
 * (acp.c: connections and intake; acp-methods.c: the method table;
 * acp-call.c: REST routes run on a connection-less request; acp-sess.c:
 * the sessions a connection holds and their event streams).
 */
#ifndef QWEN_SERVE_ACP_INT_H
#define QWEN_SERVE_ACP_INT_H

#include <sys/queue.h>

#include <json-c/json.h>

#include "serve.h"
#include "acp.h"

struct rpc_msg;
struct bus_listener;
struct acp_call;

/* A prompt of this connection waiting for its turn_complete/turn_error. */
struct acp_prompt {
	TAILQ_ENTRY(acp_prompt)	 entry;
	char			 id[UUID_LEN + 1];	/* promptId */
	json_object		*rpc_id;			/* owned */
};

/* A session the connection holds (attached) or is restoring (pending). */
struct acp_sess {
	TAILQ_ENTRY(acp_sess)	 entry;
	struct acp_conn		*conn;
	char			 id[SERVE_SESSION_ID_MAX + 1];
	char			 client_id[SERVE_CLIENT_ID_MAX + 1];	/* "" pending */
	int			 pending;	/* calls in flight that may attach it */
	struct bus_listener	*listener;
	TAILQ_HEAD(, acp_prompt) prompts;
};

struct acp_conn {
	TAILQ_ENTRY(acp_conn)	 entry;
	char			 id[ACP_CONN_ID_MAX + 1];
	char			 transport[8];
	const char		*workspace;	/* /workspaces/:w/acp, else the primary */
	const struct acp_sink	*sink;
	void			*arg;
	int			 initialized;
	int			 closing;
	TAILQ_HEAD(, acp_sess)	 sessions;
	size_t			 nsessions;
};

/* What a call's reply is turned into (acp-methods.c). */
typedef void	(*acp_call_done)(struct acp_call *, int status,
		    json_object *body, struct qerr *e);

struct acp_call {
	TAILQ_ENTRY(acp_call)	 entry;
	struct acp_conn		*conn;		/* NULL once orphaned */
	struct evhttp_request	*req;
	json_object		*rpc_id;	/* owned; NULL for notifications */
	char			 session_id[SERVE_SESSION_ID_MAX + 1];
	acp_call_done		 done;
	int			 flags;		/* ACP_CALL_* */
};

#define ACP_CALL_UNDO		1	/* orphaned success: detach its client */
#define ACP_CALL_REPLAY		2	/* session/load: replay the snapshot */
#define ACP_CALL_RELEASES	4	/* success ends this connection's hold */

/* acp.c */
json_object *acp_error_wrap(json_object *id, json_object *err);
void	acp_send(struct acp_conn *, const char *session_id, json_object *msg);
void	acp_reply(struct acp_conn *, const char *session_id, json_object *id,
	    json_object *result);
void	acp_reply_error(struct acp_conn *, const char *session_id,
	    json_object *id, struct qerr *e);
void	acp_reply_rpc(struct acp_conn *, json_object *id, int code,
	    const char *message);

/* acp-methods.c: one classified message; -1 when it was refused. */
int	acp_dispatch(struct acp_conn *, struct rpc_msg *);

/* acp-call.c */
/*
 * Run a REST route for c on a connection-less request: path_id, client_id
 * (may be NULL), body (borrowed; NULL: {}).  done gets the reply, maybe
 * before this returns.  rpc_id borrowed.
 */
void	acp_call_run(struct acp_conn *, json_object *rpc_id,
	    const char *session_id, void (*route)(struct http_ctx *),
	    const char *path_id, const char *client_id, json_object *body,
	    acp_call_done done, int flags);
/* Connection gone: its calls' replies will be dropped (and undone). */
void	acp_calls_orphan(struct acp_conn *);
/* Shutdown: free calls whose replies never came. */
void	acp_calls_free_orphans(void);
/*
 * Answer call with the error of its captured reply: e (borrowed), or one
 * rebuilt from the REST body.  Nothing for a notification.
 */
void	acp_call_fail(struct acp_call *, const char *session_id, int status,
	    json_object *body, struct qerr *e);

/* acp-sess.c */
/* A client's answer (result or error) to one of our permission requests. */
void	acp_perm_answer(struct acp_conn *, struct rpc_msg *);
struct acp_sess	*acp_sess_find(struct acp_conn *, const char *id);
/* Find or add a pending entry for id; NULL at the per-connection cap. */
struct acp_sess	*acp_sess_claim(struct acp_conn *, const char *id);
/* One claim ended without attaching: the entry goes when unused. */
void	acp_sess_unclaim(struct acp_conn *, const char *id);
/*
 * A create/load/resume succeeded with client_id: attach (listen on the
 * session's bus).  A second attach gives back the extra client reference.
 * Returns the entry or NULL (the session is gone).
 */
struct acp_sess	*acp_sess_attach(struct acp_conn *, const char *id,
		    const char *client_id);
/* Drop the entry (detach/close done by the caller); tells the sink. */
void	acp_sess_drop(struct acp_conn *, struct acp_sess *);
/* Wait for promptId's end; rpc_id borrowed. */
void	acp_sess_prompt(struct acp_sess *, const char *prompt_id,
	    json_object *rpc_id);
/* Connection end: detach every session it holds. */
void	acp_sessions_release(struct acp_conn *);
/* Release client_id on session id; close it when nothing holds it. */
void	acp_session_detach(const char *id, const char *client_id);

#define ACP_MAX_SESSIONS_PER_CONN	64

#endif
