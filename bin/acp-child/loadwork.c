/* loadwork.c: a small pthread pool feeding results back to libevent. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
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
	struct lw_list	 todo;
	struct lw_list	 finished;
	pthread_t	*threads;
	int		 nthreads;
	int		 stopping;
	int		 wake[2];
	struct event	*ev_wake;
	size_t		 inflight;
};

static void *
loadwork_main(void *arg)
{
	struct loadwork *lw = arg;
	struct lw_job *job;
	char b = 1;

	pthread_mutex_lock(&lw->mu);
	for (;;) {
		while (TAILQ_EMPTY(&lw->todo) && !lw->stopping)
			pthread_cond_wait(&lw->cv, &lw->mu);
		if ((job = TAILQ_FIRST(&lw->todo)) == NULL)
			break;
		TAILQ_REMOVE(&lw->todo, job, entry);
		pthread_mutex_unlock(&lw->mu);
		job->run(job);
		pthread_mutex_lock(&lw->mu);
		TAILQ_INSERT_TAIL(&lw->finished, job, entry);
		/* A full pipe already means a wake-up is pending. */
		if (write(lw->wake[1], &b, 1) == -1 && errno != EAGAIN)
			log_warn("loadwork: wake");
	}
	pthread_mutex_unlock(&lw->mu);
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
	TAILQ_INIT(&lw->todo);
	TAILQ_INIT(&lw->finished);
	lw->wake[0] = lw->wake[1] = -1;
	if (pipe2(lw->wake, O_CLOEXEC | O_NONBLOCK) == -1 ||
	    (lw->ev_wake = event_new(base, lw->wake[0], EV_READ | EV_PERSIST,
	    loadwork_wake_cb, lw)) == NULL ||
	    (lw->threads = calloc((size_t)nthreads, sizeof(pthread_t))) == NULL) {
		loadwork_free(lw);
		return NULL;
	}
	event_add(lw->ev_wake, NULL);
	for (i = 0; i < nthreads; i++) {
		if (pthread_create(&lw->threads[i], NULL, loadwork_main, lw) != 0) {
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
	TAILQ_INSERT_TAIL(&lw->todo, job, entry);
	lw->inflight++;
	pthread_cond_signal(&lw->cv);
	pthread_mutex_unlock(&lw->mu);
}

size_t
loadwork_inflight(const struct loadwork *lw)
{
	return lw->inflight;
}
