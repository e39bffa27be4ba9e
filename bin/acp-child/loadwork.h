/* SPDX-License-Identifier: ISC */
/*
 * loadwork.h: worker threads that run session loads off the event loop.
 *
 * A job's run() executes on a worker thread; its done() then runs on the
 * event loop's thread (woken through a pipe), so the loop keeps answering
 * every other session while a huge transcript is indexed.  run() must
 * touch nothing the loop thread uses; done() owns the job again.
 */
#ifndef QWEN_ACP_LOADWORK_H
#define QWEN_ACP_LOADWORK_H

#include <stddef.h>
#include <sys/queue.h>

struct event_base;
struct loadwork;

struct lw_job {
	void	(*run)(struct lw_job *);	/* on a worker thread */
	void	(*done)(struct lw_job *);	/* on the loop thread */
	int	small;				/* quick job: may use the fast lane */
	int	background;			/* not a load: the test gate lets it by */
	TAILQ_ENTRY(lw_job) entry;
};

/*
 * Start nthreads workers plus one fast-lane worker that takes small jobs
 * only, so small sessions are restored even while every other worker is
 * busy with a huge transcript.  Small jobs also go before big ones.  NULL
 * on failure (errno set).
 */
struct loadwork	*loadwork_new(struct event_base *, int nthreads);

/*
 * Stop: wait for running and queued jobs to finish (their done() runs,
 * unless the loop is no longer running: then they are dropped after run()
 * with done() still called here), join the threads, free.  NULL-safe.
 */
void		 loadwork_free(struct loadwork *);

/* Queue a job (the caller fills run and done). */
void		 loadwork_submit(struct loadwork *, struct lw_job *);

/* Jobs submitted whose done() has not run yet. */
size_t		 loadwork_inflight(const struct loadwork *);

#endif
