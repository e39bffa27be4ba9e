/* SPDX-License-Identifier: ISC */
/*
 * join.c: pair the daemon's restore span with the child's phase span.
 *
 * The daemon writes `qwen-code.daemon.bridge` (operation session.restore)
 * and injects its context into the ACP load/resume, so the child's
 * `qwen-code.daemon.session_restore` span has the same trace id and the
 * bridge span's id as its parent.  A group is keyed by trace id + bridge
 * span id.  It is complete, and emitted at once, when both spans are in;
 * only incomplete groups are kept, in arrival order, up to a cap beyond
 * which the oldest is emitted as it is and counted as evicted.  A child span
 * with no parent (driven directly) is a restore on its own; every other span
 * is passed on as a generic span.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "clock.h"
#include "trace-dump.h"

struct group {
	char			 key[49];
	struct tspan		*daemon;
	struct tspan		*child;
	uint64_t		 arrived;	/* clock_mono_ns() */
	struct group		*next;		/* hash chain */
	TAILQ_ENTRY(group)	 entry;		/* arrival order */
};

struct join {
	struct group		**buckets;
	size_t			 nbuckets;
	size_t			 count, cap;
	unsigned long		 evicted;
	struct join_out		 out;
	TAILQ_HEAD(, group)	 order;
};

/* A join keeping at most cap incomplete groups.  Caller frees. */
struct join *
join_new(size_t cap, const struct join_out *out)
{
	struct join *j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	j->cap = cap > 0 ? cap : 1;
	for (j->nbuckets = 64; j->nbuckets < j->cap; j->nbuckets *= 2)
		;
	if ((j->buckets = calloc(j->nbuckets, sizeof(*j->buckets))) == NULL) {
		free(j);
		return NULL;
	}
	j->out = *out;
	TAILQ_INIT(&j->order);
	return j;
}

/* Free the join and any groups still held (without emitting them). */
void
join_free(struct join *j)
{
	struct group *g;

	if (j == NULL)
		return;
	while ((g = TAILQ_FIRST(&j->order)) != NULL) {
		TAILQ_REMOVE(&j->order, g, entry);
		tspan_free(g->daemon);
		tspan_free(g->child);
		free(g);
	}
	free(j->buckets);
	free(j);
}

/* How many groups were emitted early because of the cap. */
unsigned long
join_evicted(const struct join *j)
{
	return j->evicted;
}

/* How many incomplete groups are held. */
size_t
join_pending(const struct join *j)
{
	return j->count;
}

/* FNV-1a over the key. */
static size_t
key_hash(const char *key)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *key != '\0'; key++)
		h = (h ^ (unsigned char)*key) * 1099511628211ULL;
	return (size_t)h;
}

/* The group slot for key (pointer to the chain link). */
static struct group **
group_slot(struct join *j, const char *key)
{
	struct group **gp = &j->buckets[key_hash(key) & (j->nbuckets - 1)];

	while (*gp != NULL && strcmp((*gp)->key, key) != 0)
		gp = &(*gp)->next;
	return gp;
}

/* Unlink g and emit what it holds as one restore. */
static void
group_emit(struct join *j, struct group *g)
{
	struct group **gp = group_slot(j, g->key);
	struct restore *r;

	*gp = g->next;
	TAILQ_REMOVE(&j->order, g, entry);
	j->count--;
	r = record_build(g->daemon, g->child);
	free(g);
	if (r != NULL)
		j->out.restore(r, j->out.arg);
}

/* Is this the daemon's restore span? */
static int
is_daemon_restore(const struct tspan *sp)
{
	const char *op = tspan_str(sp, "qwen-code.daemon.operation");
	const char *bop = tspan_str(sp, "qwen-code.daemon.bridge.operation");

	if (strcmp(sp->name, TD_DAEMON_SPAN) != 0)
		return 0;
	if (op != NULL)
		return strcmp(op, "session.restore") == 0;
	return bop != NULL && (strcmp(bop, "session.load") == 0 ||
	    strcmp(bop, "session.resume") == 0);
}

/* Put sp into its group, creating (and maybe evicting) as needed. */
static void
join_place(struct join *j, struct tspan *sp, int daemon)
{
	char key[49];
	struct group **gp, *g;

	snprintf(key, sizeof(key), "%s%s", sp->trace_id,
	    daemon ? sp->span_id : sp->parent_id);
	gp = group_slot(j, key);
	if ((g = *gp) == NULL) {
		if (j->count >= j->cap) {
			j->evicted++;
			group_emit(j, TAILQ_FIRST(&j->order));
			gp = group_slot(j, key);
		}
		if ((g = calloc(1, sizeof(*g))) == NULL) {
			j->out.span(sp, j->out.arg);
			return;
		}
		memcpy(g->key, key, sizeof(key));
		g->arrived = clock_mono_ns();
		*gp = g;
		TAILQ_INSERT_TAIL(&j->order, g, entry);
		j->count++;
	}
	if ((daemon ? g->daemon : g->child) != NULL) {
		/* A second span for the same slot: show it as it is. */
		j->out.span(sp, j->out.arg);
		return;
	}
	if (daemon)
		g->daemon = sp;
	else
		g->child = sp;
	if (g->daemon != NULL && g->child != NULL)
		group_emit(j, g);
}

/* Feed a span (takes ownership). */
void
join_add(struct join *j, struct tspan *sp)
{
	struct restore *r;

	if (is_daemon_restore(sp))
		join_place(j, sp, 1);
	else if (strcmp(sp->name, TD_CHILD_SPAN) != 0)
		j->out.span(sp, j->out.arg);
	else if (sp->parent_id[0] != '\0')
		join_place(j, sp, 0);
	else if ((r = record_build(NULL, sp)) != NULL)
		j->out.restore(r, j->out.arg);
}

/* Emit incomplete groups that arrived before cutoff (all when 0). */
void
join_flush(struct join *j, uint64_t cutoff)
{
	struct group *g;

	while ((g = TAILQ_FIRST(&j->order)) != NULL &&
	    (cutoff == 0 || g->arrived < cutoff))
		group_emit(j, g);
}
