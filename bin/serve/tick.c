/* SPDX-License-Identifier: ISC */
/*
 * tick.c: many timers of one interval (every SSE stream's heartbeat, its
 * idle look) as one libevent timer.  Ten thousand streams with a timer
 * each cost a heap operation per event_add and a callback per stream;
 * here a stream is a queue entry: all share the interval, so the queue,
 * appended to in time order, stays sorted by deadline.  The one timer
 * wakes on a TICK_SLOT_MS boundary and runs at most TICK_BATCH entries
 * before it lets the loop read sockets again, so a burst of due streams
 * (all subscribed at once) is spread over loop turns instead of holding
 * a request behind all of them.
 */
#include "config.h"

#include <event2/event.h>

#include "clock.h"
#include "serve.h"

/* Wake-ups are rounded up to this: an entry runs at most this late. */
#define TICK_SLOT_MS	5
/* Entries run per wake-up before the loop turns. */
#define TICK_BATCH	64

static void	tick_run(evutil_socket_t, short, void *);

/* Arm the queue's timer for its first entry (now when one is overdue). */
static void
tick_schedule(struct tick_queue *tq, uint64_t now)
{
	struct tick *t = TAILQ_FIRST(&tq->q);
	struct timeval tv = { 0, 0 };
	uint64_t wake;

	if (t == NULL)
		return;
	if (tq->ev == NULL &&
	    (tq->ev = event_new(serve_base, -1, 0, tick_run, tq)) == NULL)
		return;
	if (t->due > now) {
		wake = (t->due + TICK_SLOT_MS - 1) / TICK_SLOT_MS * TICK_SLOT_MS;
		tv.tv_sec = (time_t)((wake - now) / 1000);
		tv.tv_usec = (suseconds_t)((wake - now) % 1000 * 1000);
	}
	event_add(tq->ev, &tv);
}

/*
 * Run the entries that are due, oldest first, each put back at the tail
 * for its next interval before its function runs (which may disarm and
 * free it), then arm the timer for what is left.
 */
static void
tick_run(evutil_socket_t fd, short what, void *arg)
{
	struct tick_queue *tq = arg;
	uint64_t now = clock_mono_ms();
	struct tick *t;
	int n = 0;

	(void)fd; (void)what;
	while ((t = TAILQ_FIRST(&tq->q)) != NULL && t->due <= now &&
	    n++ < TICK_BATCH) {
		TAILQ_REMOVE(&tq->q, t, entry);
		t->due = now + (uint64_t)tq->every_ms;
		TAILQ_INSERT_TAIL(&tq->q, t, entry);
		t->fn(t->arg);
	}
	tick_schedule(tq, now);
}

void
tick_arm(struct tick_queue *tq, struct tick *t, void (*fn)(void *), void *arg)
{
	uint64_t now = clock_mono_ms();
	int idle = TAILQ_EMPTY(&tq->q);

	if (t->armed || tq->every_ms <= 0)
		return;
	t->fn = fn;
	t->arg = arg;
	t->due = now + (uint64_t)tq->every_ms;
	t->armed = 1;
	TAILQ_INSERT_TAIL(&tq->q, t, entry);
	if (idle || tq->ev == NULL || !event_pending(tq->ev, EV_TIMEOUT, NULL))
		tick_schedule(tq, now);
}

void
tick_disarm(struct tick_queue *tq, struct tick *t)
{
	if (!t->armed)
		return;
	TAILQ_REMOVE(&tq->q, t, entry);
	t->armed = 0;
}
