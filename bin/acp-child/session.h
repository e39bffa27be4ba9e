/* SPDX-License-Identifier: ISC */
/*
 * session.h: the table of sessions a child hosts.
 *
 * A session is registered once its first load/resume/new succeeds.  While
 * a job holds it (a load running on a worker, which then owns its
 * transcript index, or a prompt running) it is busy, and further requests
 * for it wait in its queue, in order, and run when it is idle again.
 */
#ifndef QWEN_ACP_SESSION_H
#define QWEN_ACP_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/tree.h>

#include "rpc-frame.h"

struct appender;
struct lease;
struct mirror;
struct prompt;
struct transcript;

struct session_op {
	TAILQ_ENTRY(session_op)	 entry;
	struct rpc_msg		 msg;
};

struct session {
	RB_ENTRY(session)	 node;
	char			 id[37];
	char			*cwd;
	char			*path;		/* transcript */
	struct transcript	*tx;		/* NULL while a worker has it */
	char			*tail;		/* uuid new records hang from; NULL: root */
	struct lease		*lease;
	struct appender		*app;
	struct prompt		*prompt;	/* running prompt */
	int			 registered;	/* in the table */
	int			 busy;
	int			 fresh;		/* from session/new: no file until the first append */
	int			 delegated;	/* resumed at the --agent-acp agent */
	int			 warming;	/* ... a background resume is on its way */
	int			 warm_later;	/* ... once the index is back */
	int			 compact;	/* the agent resumed a compact transcript */
	int			 compact_refused;	/* ... and refused it once */
	char			*agent_path;	/* its transcript at the agent */
	struct mirror		*mirror;	/* the copy of its records back */
	char			*auto_turn;	/* the agent's own background turn running */
	char			*goal_turn;	/* ... its goal turn's promptId ("": none given) */
	char			 mode[16];	/* approval mode (modes.c) */
	TAILQ_HEAD(, session_op) queue;
	size_t			 nqueue;
};

RB_HEAD(session_tree, session);
int	session_cmp(struct session *, struct session *);
RB_PROTOTYPE(session_tree, session, node, session_cmp)

/* A new, unregistered session.  NULL on allocation failure. */
struct session	*session_new(const char *id, const char *cwd, const char *path);
/* Release the lease, close the transcript, drop queued requests.  NULL-safe. */
void		 session_free(struct session *);

struct session	*session_find(struct session_tree *, const char *id);

/* Move msg into the queue (msg is left empty).  -1 when the queue is full. */
int	session_enqueue(struct session *, struct rpc_msg *msg, size_t max);
/* Take the oldest queued request into *msg.  0, or -1 when empty. */
int	session_dequeue(struct session *, struct rpc_msg *msg);

#endif
