/* SPDX-License-Identifier: ISC */
/* session.c: the session table and per-session request queues. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "append.h"
#include "compact.h"
#include "lease.h"
#include "session.h"
#include "transcript.h"

int
session_cmp(struct session *a, struct session *b)
{
	return strcmp(a->id, b->id);
}

RB_GENERATE(session_tree, session, node, session_cmp)

struct session *
session_new(const char *id, const char *cwd, const char *path)
{
	struct session *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	strlcpy(s->id, id, sizeof(s->id));
	strlcpy(s->mode, "default", sizeof(s->mode));
	TAILQ_INIT(&s->queue);
	if ((s->cwd = strdup(cwd)) == NULL || (s->path = strdup(path)) == NULL) {
		session_free(s);
		return NULL;
	}
	return s;
}

void
session_free(struct session *s)
{
	struct session_op *op;

	if (s == NULL)
		return;
	while ((op = TAILQ_FIRST(&s->queue)) != NULL) {
		TAILQ_REMOVE(&s->queue, op, entry);
		rpc_msg_clear(&op->msg);
		free(op);
	}
	mirror_stop(s->mirror);		/* its last whole records first */
	lease_release(s->lease);
	appender_free(s->app);
	free(s->agent_path);
	free(s->auto_turn);
	free(s->goal_turn);
	transcript_free(s->tx);
	free(s->tail);
	free(s->cwd);
	free(s->path);
	free(s);
}

struct session *
session_find(struct session_tree *t, const char *id)
{
	struct session key;

	if (strlen(id) >= sizeof(key.id))
		return NULL;
	strlcpy(key.id, id, sizeof(key.id));
	return RB_FIND(session_tree, t, &key);
}

int
session_enqueue(struct session *s, struct rpc_msg *msg, size_t max)
{
	struct session_op *op;

	if (s->nqueue >= max || (op = calloc(1, sizeof(*op))) == NULL)
		return -1;
	op->msg = *msg;
	memset(msg, 0, sizeof(*msg));
	TAILQ_INSERT_TAIL(&s->queue, op, entry);
	s->nqueue++;
	return 0;
}

int
session_dequeue(struct session *s, struct rpc_msg *msg)
{
	struct session_op *op;

	if ((op = TAILQ_FIRST(&s->queue)) == NULL)
		return -1;
	TAILQ_REMOVE(&s->queue, op, entry);
	s->nqueue--;
	*msg = op->msg;
	free(op);
	return 0;
}
