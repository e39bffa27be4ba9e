/* SPDX-License-Identifier: ISC */
/*
 * inflight-int.h: what the files of the in-flight spawns and restores
 * share.  Private to them: inflight.c (the registry and the dispatch),
 * inflight-fence.c (fenced ids and early events), inflight-reply.c (the
 * public answers) and inflight-ops.c (the lifecycle machine's world).
 */
#ifndef QWEN_SERVE_INFLIGHT_INT_H
#define QWEN_SERVE_INFLIGHT_INT_H

#include "restore-fsm.h"
#include "serve.h"

struct inflight_waiter;
struct span;
struct inflight {
	TAILQ_ENTRY(inflight)	 entry;
	char			 id[SERVE_SESSION_ID_MAX + 1];	/* "" for an id-less spawn */
	enum inflight_action	 action;
	int			 is_default;
	TAILQ_HEAD(, inflight_waiter)	 waiters;
	struct channel		*ch;
	struct channel_req		*req;
	json_object		*body;		/* the first caller's body */
	struct span		*span;
	uint64_t		 started_ms;
	/* Spawns and restores run under the seed-000 lifecycle machine. */
	struct rfsm		 fsm;
	struct event		*timer;		/* deadline, then grace */
	json_object		*answer;	/* the in-time ACP answer */
	enum channel_outcome	 answer_o;
	struct channel_req		*close_req;
	json_object		*early;		/* buffered session/update params */
	char			 shape[64];	/* coalescing key of a load */
	int			 summary;	/* compactedReplayMode summary */
	int			 released;	/* capacity given back */
	char			 log_rid[REQID_MAX + 1];	/* reqid.c */
	char			 log_tid[REQID_TRACE_LEN + 1];
};

/* One caller waiting for an in-flight spawn or restore. */
struct inflight_waiter {
	TAILQ_ENTRY(inflight_waiter)	 entry;
	struct evhttp_request	*req;
	char			 client_id[SERVE_CLIENT_ID_MAX + 1];
};

/* inflight.c */
/* Unlink op, give back its capacity unless released, and free it. */
void	inflight_free(struct inflight *);
void	inflight_waiters_free(struct inflight *);
/* op's session id for the log: "(new)" for an id-less spawn. */
const char *inflight_label(const struct inflight *);

/* inflight-fence.c */
void	inflight_fence_add(struct channel *, const char *id);
/* A new registration for id takes ownership: its fences go. */
void	inflight_fence_take(const char *id);
/* ch exited: its fences go. */
void	inflight_fences_channel_exited(struct channel *);
/* The buffered early updates of op go to s, in order. */
void	inflight_early_drain(struct inflight *, struct session *s);
/* A failed attempt: its early updates go, the id is tombstoned again. */
void	inflight_early_purge(struct inflight *);
/* Abandoned: early updates gone, the id (if known) fenced on op's channel. */
void	inflight_early_fence(struct inflight *);

/* inflight-reply.c */
/* The public result: register the session and answer, or fail everyone. */
void	inflight_reply(struct inflight *, enum channel_outcome,
	    json_object *payload);

/* inflight-ops.c */
extern const struct rfsm_ops inflight_fsm_ops;
/* The ACP answer of a spawn or restore (channel_cb). */
void	inflight_on_answer(void *op, enum channel_outcome,
	    json_object *payload);
/* The machine's one timer fired (libevent callback). */
void	inflight_on_timer(evutil_socket_t, short, void *op);

#endif
