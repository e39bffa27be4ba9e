/* SPDX-License-Identifier: ISC */
/* loadwork.c: a small pthread pool feeding results back to libevent. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

#include "loadwork.h"
#include "log.h"

TAILQ_HEAD(lw_list, lw_job);

struct loadwork {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct lw_list	 todo_small;
	struct lw_list	 todo_big;
	struct lw_list	 finished;
	pthread_t	*threads;
	int		 nthreads;
	int		 stopping;
	int		 wake[2];
	struct event	*ev_wake;
	size_t		 inflight;
};

struct lw_thread {
	struct loadwork	*lw;
	int		 fast;		/* takes small jobs only */
};

/* The next job this worker may take, or NULL. */
static struct lw_job *
loadwork_pick(struct loadwork *lw, int fast)
{
	struct lw_job *job;

	if ((job = TAILQ_FIRST(&lw->todo_small)) != NULL) {
		TAILQ_REMOVE(&lw->todo_small, job, entry);
		return job;
	}
	if (!fast && (job = TAILQ_FIRST(&lw->todo_big)) != NULL) {
		TAILQ_REMOVE(&lw->todo_big, job, entry);
		return job;
	}
	return NULL;
}

/*
 * Test hook: with QWEN_ACP_TEST_LOAD_GATE=FIFO a worker reads one byte from
 * FIFO before each big load (background jobs, such as keeping an index,
 * pass), so a test holds a load as long as it wants (it
 * keeps the FIFO open read-write and writes a byte per job to release)
 * instead of hoping a large transcript takes long enough.  The wait polls,
 * so that loadwork_free() (a clean exit) does not hang on a held worker.
 */
static void
loadwork_gate(struct loadwork *lw)
{
	const char *path = getenv("QWEN_ACP_TEST_LOAD_GATE");
	struct pollfd pfd;
	int stopping;
	char b;

	if (path == NULL || *path == '\0')
		return;
	if ((pfd.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		log_warn("loadwork: gate %s", path);
		return;
	}
	pfd.events = POLLIN;
	for (;;) {
		pthread_mutex_lock(&lw->mu);
		stopping = lw->stopping;
		pthread_mutex_unlock(&lw->mu);
		if (stopping || (poll(&pfd, 1, 100) > 0 &&
		    (read(pfd.fd, &b, 1) == 1 || (pfd.revents & POLLHUP))))
			break;	/* else another worker took the byte */
	}
	close(pfd.fd);
}

static void *
loadwork_main(void *arg)
{
	struct lw_thread *t = arg;
	struct loadwork *lw = t->lw;
	struct lw_job *job;
	char b = 1;

	pthread_mutex_lock(&lw->mu);
	for (;;) {
		while ((job = loadwork_pick(lw, t->fast)) == NULL && !lw->stopping)
			pthread_cond_wait(&lw->cv, &lw->mu);
		if (job == NULL)
			break;
		pthread_mutex_unlock(&lw->mu);
		if (!job->small && !job->background)
			loadwork_gate(lw);
		job->run(job);
		pthread_mutex_lock(&lw->mu);
		TAILQ_INSERT_TAIL(&lw->finished, job, entry);
		/* A full pipe already means a wake-up is pending. */
		if (write(lw->wake[1], &b, 1) == -1 && errno != EAGAIN)
			log_warn("loadwork: wake");
	}
	pthread_mutex_unlock(&lw->mu);
	free(t);
	return NULL;
}

/* Run done() for every finished job, outside the lock. */
static void
loadwork_reap(struct loadwork *lw)
{
	struct lw_list done = TAILQ_HEAD_INITIALIZER(done);
	struct lw_job *job;

	pthread_mutex_lock(&lw->mu);
	TAILQ_CONCAT(&done, &lw->finished, entry);
	pthread_mutex_unlock(&lw->mu);
	while ((job = TAILQ_FIRST(&done)) != NULL) {
		TAILQ_REMOVE(&done, job, entry);
		lw->inflight--;
		job->done(job);
	}
}

static void
loadwork_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	char buf[256];

	(void)what;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	loadwork_reap(arg);
}

struct loadwork *
loadwork_new(struct event_base *base, int nthreads)
{
	struct loadwork *lw;
	int i;

	if ((lw = calloc(1, sizeof(*lw))) == NULL)
		return NULL;
	pthread_mutex_init(&lw->mu, NULL);
	pthread_cond_init(&lw->cv, NULL);
	TAILQ_INIT(&lw->todo_small);
	TAILQ_INIT(&lw->todo_big);
	TAILQ_INIT(&lw->finished);
	lw->wake[0] = lw->wake[1] = -1;
	if (pipe2(lw->wake, O_CLOEXEC | O_NONBLOCK) == -1 ||
	    (lw->ev_wake = event_new(base, lw->wake[0], EV_READ | EV_PERSIST,
	    loadwork_wake_cb, lw)) == NULL ||
	    (lw->threads = calloc((size_t)nthreads + 1, sizeof(pthread_t))) == NULL) {
		loadwork_free(lw);
		return NULL;
	}
	event_add(lw->ev_wake, NULL);
	for (i = 0; i <= nthreads; i++) {
		struct lw_thread *t = calloc(1, sizeof(*t));
		if (t != NULL) {
			t->lw = lw;
			t->fast = i == nthreads;
		}
		if (t == NULL ||
		    pthread_create(&lw->threads[i], NULL, loadwork_main, t) != 0) {
			free(t);
			loadwork_free(lw);
			return NULL;
		}
		lw->nthreads++;
	}
	return lw;
}

void
loadwork_free(struct loadwork *lw)
{
	int i;

	if (lw == NULL)
		return;
	pthread_mutex_lock(&lw->mu);
	lw->stopping = 1;
	pthread_cond_broadcast(&lw->cv);
	pthread_mutex_unlock(&lw->mu);
	for (i = 0; i < lw->nthreads; i++)
		pthread_join(lw->threads[i], NULL);
	loadwork_reap(lw);
	if (lw->ev_wake != NULL)
		event_free(lw->ev_wake);
	if (lw->wake[0] != -1)
		close(lw->wake[0]);
	if (lw->wake[1] != -1)
		close(lw->wake[1]);
	pthread_mutex_destroy(&lw->mu);
	pthread_cond_destroy(&lw->cv);
	free(lw->threads);
	free(lw);
}

void
loadwork_submit(struct loadwork *lw, struct lw_job *job)
{
	pthread_mutex_lock(&lw->mu);
	TAILQ_INSERT_TAIL(job->small ? &lw->todo_small : &lw->todo_big, job, entry);
	lw->inflight++;
	/* Wake all: only some workers may take this job. */
	pthread_cond_broadcast(&lw->cv);
	pthread_mutex_unlock(&lw->mu);
}

size_t
loadwork_inflight(const struct loadwork *lw)
{
	return lw->inflight;
}
