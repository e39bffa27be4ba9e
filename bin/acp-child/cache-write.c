/* SPDX-License-Identifier: ISC */
/*
 * cache-write.c: write a session's transcript index to the cache directory
 * after its restore answered, and the index a transcript page or branch
 * built after it answered (transcript.h: transcript_save), with the token
 * sums a page made along its chain (txsums.h), so that a fresh child reads
 * only what its request needs.
 *
 * The worker owns the index while it writes, as during a restore: the
 * session (or the page's entry) is busy, so a load, prompt or page for it
 * waits, and gets the index back when the write is done.  A failed write
 * only costs the next cold read a full pass; it is logged, never answered.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/syscall.h>

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "child.h"
#include "delegate.h"
#include "loadwork.h"
#include "log.h"
#include "session.h"
#include "transcript.h"
#include "txpage-int.h"
#include "txsums.h"
#include "xmalloc.h"

/* Like restore.c's LOAD_JOB_SMALL_BYTES: the fast lane's share. */
#define KEEP_SMALL_BYTES	(16u * 1024 * 1024)

struct keep_job {
	struct lw_job		 lw;		/* first: the worker's handle */
	struct child		*c;
	struct session		*s;		/* a session's index, or */
	struct txpage_entry	*e;		/* a page's */
	struct transcript	*tx;
	const char		*dir;
	int			 index;		/* the index too */
	size_t			 sums;		/* sums to keep */
	char			*cause;
	int			 rc;
};

static void *
keep_save(void *arg)
{
	struct keep_job *k = arg;

	k->rc = 0;
	if (k->index)
		k->rc = transcript_save(k->tx, k->dir, TX_CACHE_MAX_BYTES,
		    TX_CACHE_MAX_FILES, &k->cause);
	/* Beside the index, which they are of: not without it. */
	if (k->rc == 0 && k->sums > 0)
		k->rc = txsums_save(k->tx, k->dir, &k->e->chain,
		    PROJECT_USAGE_EVERY, (const double (*)[3])k->e->usage.sum,
		    k->sums, &k->cause);
	return NULL;
}

/* The write is background work: a thread of its own at the lowest
   priority, so the loop and other loads get the CPU first (a worker's
   priority, once lowered, could not be raised again). */
static void *
keep_low(void *arg)
{
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	return keep_save(arg);
}

static void
keep_run(struct lw_job *lw)
{
	struct keep_job *k = (struct keep_job *)lw;
	pthread_t tid;

	if (pthread_create(&tid, NULL, keep_low, k) != 0)
		keep_save(k);
	else
		pthread_join(tid, NULL);
}

static void
keep_done(struct lw_job *lw)
{
	struct keep_job *k = (struct keep_job *)lw;
	struct session *s = k->s;
	struct txpage_entry *e = k->e;
	struct child *c = k->c;

	if (k->rc == -1)
		log_warnx("session %s: cannot keep the index: %s",
		    s != NULL ? s->id : e->sid, k->cause != NULL ? k->cause : "?");
	if (s != NULL) {
		s->tx = k->tx;
		s->busy = 0;
	}
	free(k->cause);
	free(k);
	if (e != NULL)
		txpage_entry_release(c, e);
	else {
		delegate_index_back(c, s);	/* before the queue runs: s may go */
		child_session_idle(c, s);
	}
}

/* A job writing tx to the cache directory, on a background worker. */
static struct keep_job *
keep_job_new(struct child *c, struct transcript *tx)
{
	struct keep_job *k;

	k = xcalloc(1, sizeof *k);
	k->lw.run = keep_run;
	k->lw.done = keep_done;
	/* A small session's index is small: it must not wait behind big loads. */
	k->lw.small = transcript_size(tx) < KEEP_SMALL_BYTES;
	k->lw.background = 1;
	k->c = c;
	k->tx = tx;
	k->dir = c->opts.cache_dir;
	k->index = 1;
	return k;
}

int
cache_write_entry_start(struct child *c, struct txpage_entry *e)
{
	struct keep_job *k;
	int index;

	if (e->tx == NULL || e->busy || c->opts.cache_dir == NULL)
		return 0;
	index = transcript_index_dirty(e->tx) &&
	    e->kept_at != transcript_size(e->tx);
	/* Sums a page made (the first page of a fresh child makes them all). */
	if (!index && e->usage.n <= e->sums_kept)
		return 0;
	if (index)
		e->kept_at = transcript_size(e->tx);	/* once a size */
	k = keep_job_new(c, e->tx);
	k->e = e;
	k->index = index;
	if (e->usage.n > e->sums_kept)
		k->sums = e->sums_kept = e->usage.n;	/* one try each */
	e->busy = 1;
	loadwork_submit(c->work, &k->lw);
	return 1;
}

void
cache_write_start(struct child *c, struct session *s)
{
	struct keep_job *k;

	if (s->tx == NULL || s->busy || c->opts.cache_dir == NULL ||
	    !transcript_index_dirty(s->tx))
		return;
	k = keep_job_new(c, s->tx);
	k->s = s;
	s->tx = NULL;
	s->busy = 1;
	loadwork_submit(c->work, &k->lw);
}
