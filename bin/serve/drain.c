/* SPDX-License-Identifier: ISC */
/*
 * drain.c: SIGTERM with --drain-grace-ms: before the shutdown, a drain.
 * /health answers 503 "draining" (a proxy's checks take the host out),
 * new sessions, loads, resumes, branches and prompts are refused 503
 * workspace_draining, and the turns already running or queued go on.
 * The shutdown follows when the last of them has ended, or when the
 * grace is over, or at a second SIGTERM: a rolling restart loses no turn
 * that fits in the grace.
 */
#include "config.h"

#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "serve.h"

/* How often the drain looks for the end of the last turn. */
#define DRAIN_POLL_MS	50

static int draining;
static struct event *poll_ev, *grace_ev;
static uint64_t drain_started_ms;
/* main.c's shutdown, handed over by drain_begin() (drain.c is below it). */
static void (*drain_shutdown)(void);

int
drain_active(void)
{
	return draining;
}

/* Turns running or queued on every session. */
static size_t
drain_turns_left(void)
{
	size_t queued, perms;

	sessions_totals(&queued, &perms);
	return sessions_active_prompts() + queued;
}

static void
drain_end(const char *why)
{
	log_info("drain: %s after %llu ms: shutting down", why,
	    (unsigned long long)(clock_mono_ms() - drain_started_ms));
	drain_free();
	drain_shutdown();
}

static void
on_poll(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what; (void)arg;
	if (drain_turns_left() == 0)
		drain_end("every turn ended");
}

static void
on_grace(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what; (void)arg;
	log_warn("drain: grace over with %zu turns left", drain_turns_left());
	drain_end("grace over");
}

/*
 * The first SIGTERM with a grace: begin; the second ends the drain.
 * shutdown runs when it ends.
 */
void
drain_begin(void (*shutdown)(void))
{
	struct timeval poll = { 0, DRAIN_POLL_MS * 1000 };
	struct timeval grace = { conf.drain_grace_ms / 1000,
	    (conf.drain_grace_ms % 1000) * 1000 };

	drain_shutdown = shutdown;
	if (draining) {
		drain_end("second signal");
		return;
	}
	draining = 1;
	drain_started_ms = clock_mono_ms();
	log_info("drain: %zu turns running or queued, grace %lld ms",
	    drain_turns_left(), (long long)conf.drain_grace_ms);
	poll_ev = event_new(serve_base, -1, EV_PERSIST, on_poll, NULL);
	grace_ev = evtimer_new(serve_base, on_grace, NULL);
	event_add(poll_ev, &poll);
	evtimer_add(grace_ev, &grace);
}

void
drain_free(void)
{
	if (poll_ev != NULL)
		event_free(poll_ev);
	if (grace_ev != NULL)
		event_free(grace_ev);
	poll_ev = grace_ev = NULL;
}
