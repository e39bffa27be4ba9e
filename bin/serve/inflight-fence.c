/* SPDX-License-Identifier: ISC */
/*
 * inflight-fence.c: the session-id fences and early events of in-flight
 * spawns and restores (seed 000).  While a registration for an id is
 * active, session/update notifications for it buffer here and reach the
 * new session in order; a failed attempt purges them and tombstones the
 * id again.  An abandoned restore fences its id: late notifications for
 * it are dropped until a new registration takes ownership or the channel
 * exits (the fence has no TTL).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "inflight-int.h"
#include "xmalloc.h"

/* A fenced id: late notifications for it on ch are dropped. */
struct fence {
	TAILQ_ENTRY(fence)	 entry;
	struct channel		*ch;
	char			 id[SERVE_SESSION_ID_MAX + 1];
};

#define EARLY_MAX	10000	/* buffered early updates per restore */

static TAILQ_HEAD(, fence) fences = TAILQ_HEAD_INITIALIZER(fences);

/* The fence of id on ch (NULL: on any channel), or NULL. */
static struct fence *
fence_find(struct channel *ch, const char *id)
{
	struct fence *f;

	TAILQ_FOREACH(f, &fences, entry)
		if ((ch == NULL || f->ch == ch) && strcmp(f->id, id) == 0)
			return f;
	return NULL;
}

/* Fence id on ch (once). */
void
inflight_fence_add(struct channel *ch, const char *id)
{
	struct fence *f;

	if (fence_find(ch, id) != NULL || (f = calloc(1, sizeof(*f))) == NULL)
		return;
	f->ch = ch;
	strlcpy(f->id, id, sizeof(f->id));
	TAILQ_INSERT_TAIL(&fences, f, entry);
}

/* A new registration for id takes ownership: its fences go. */
void
inflight_fence_take(const char *id)
{
	struct fence *f;

	while ((f = fence_find(NULL, id)) != NULL) {
		TAILQ_REMOVE(&fences, f, entry);
		free(f);
	}
}

/* An update for an id with no live session: buffer it, drop it, or not ours. */
int
inflight_route_early(struct channel *ch, const char *id, json_object *params)
{
	struct inflight *op = inflight_find(id);

	if (op != NULL && op->ch == ch && op->fsm.state == RFSM_ACTIVE) {
		if (op->early == NULL)
			op->early = xjson_object_new_array();
		if (json_object_array_length(op->early) < EARLY_MAX)
			json_object_array_add(op->early,
			    json_object_get(params));
		return 1;
	}
	if (fence_find(ch, id) != NULL) {
		log_debug("update for fenced session %s dropped", id);
		return 1;
	}
	return 0;
}

/* The buffered early updates go to the new session, in order. */
void
inflight_early_drain(struct inflight *op, struct session *s)
{
	size_t n = op->early != NULL ? json_object_array_length(op->early) : 0;

	for (size_t i = 0; i < n; i++)
		bus_publish(s->bus, "session_update",
		    json_object_get(json_object_array_get_idx(op->early, i)),
		    NULL, NULL, 0);
	json_object_put(op->early);
	op->early = NULL;
}

/* A failed attempt: its early updates go, the id is tombstoned again. */
void
inflight_early_purge(struct inflight *op)
{
	json_object_put(op->early);
	op->early = NULL;
	if (op->id[0] != '\0' && sessions_find(op->id) == NULL)
		session_tombstone(op->id);
}

/* Abandoned: out of the pending set, early events gone, the id fenced. */
void
inflight_early_fence(struct inflight *op)
{
	json_object_put(op->early);
	op->early = NULL;
	if (op->id[0] != '\0')
		inflight_fence_add(op->ch, op->id);
}

/* How many ids are fenced, on every channel (GET /health?deep=1). */
size_t
inflight_fences_count(void)
{
	struct fence *f;
	size_t n = 0;

	TAILQ_FOREACH(f, &fences, entry)
		n++;
	return n;
}

/* The channel exited: its fences go with it. */
void
inflight_fences_channel_exited(struct channel *ch)
{
	struct fence *f, *fnext;

	TAILQ_FOREACH_SAFE(f, &fences, entry, fnext)
		if (f->ch == ch) {
			TAILQ_REMOVE(&fences, f, entry);
			free(f);
		}
}
