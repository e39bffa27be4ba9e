/*
 * delegate-warm.c: keeping the --agent-acp agent warm.  The agent starts
 * with the child (its Node start costs seconds a first prompt should not
 * pay), each restored session is resumed there once its load or resume
 * answer is queued (the agent's own read of the transcript runs in its
 * process, off our answer's path), and an agent that exits is started
 * again after a backoff that doubles with each exit in a row, not by
 * every prompt.  --agent-prestart=no keeps the old way: the first prompt
 * starts the agent and resumes its session.
 */
#include "config.h"

#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "child.h"
#include "clock.h"
#include "delegate.h"
#include "delegate-int.h"
#include "log.h"

#define WARM_BACKOFF_MS		500	/* the first restart's delay */
#define WARM_BACKOFF_STEPS	6	/* doubled at most this often */
#define WARM_STABLE_MS		60000	/* a run this long resets the backoff */

/* Whether s should be resumed at the agent now. */
static int
warm_due(struct child *c, struct session *s)
{
	struct call *k;

	if (!c->opts.agent_prestart || !s->warm || s->delegated ||
	    s->agent_resuming || dlg.state != D_READY || c->closing)
		return 0;
	TAILQ_FOREACH(k, &dlg.waiting, entry)
		if (strcmp(k->sid, s->id) == 0)
			return 0;	/* its prompt resumes it */
	return 1;
}

void
delegate_restored(struct child *c, struct session *s)
{
	if (c->opts.agent_acp == NULL)
		return;
	s->warm = 1;
	if (warm_due(c, s))
		dlg_resume(c, s, NULL, NULL);
}

void
warm_ready(struct child *c)
{
	struct session *s;

	RB_FOREACH(s, session_tree, &c->sessions)
		if (warm_due(c, s))
			dlg_resume(c, s, NULL, NULL);
}

/* Start the agent; a failed start is retried after the backoff. */
static void
warm_start(struct child *c)
{
	char *cause = NULL;

	if (dlg_start(c, &cause) == 0)
		return;
	log_warnx("agent: cannot start it: %s", cause != NULL ? cause : "?");
	free(cause);
	warm_gone(c);
}

/* The backoff is over: start the agent if someone wants it. */
static void
warm_on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;

	(void)fd; (void)what;
	if (dlg.state != D_DOWN || c->closing)
		return;
	if (c->opts.agent_prestart || !TAILQ_EMPTY(&dlg.waiting))
		warm_start(c);
}

void
warm_gone(struct child *c)
{
	struct timeval tv;
	long long ms;

	if (c->closing)
		return;
	if (dlg.started_ms != 0 && clock_mono_ms() - dlg.started_ms >= WARM_STABLE_MS)
		dlg.failures = 0;
	ms = (long long)WARM_BACKOFF_MS << (dlg.failures < WARM_BACKOFF_STEPS ?
	    dlg.failures : WARM_BACKOFF_STEPS);
	dlg.failures++;
	if (dlg.ev_restart == NULL &&
	    (dlg.ev_restart = evtimer_new(c->base, warm_on_timer, c)) == NULL) {
		log_warnx("agent: no restart timer");
		return;
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(dlg.ev_restart, &tv);
	log_info("agent: restarting it in %lld ms", ms);
}

int
warm_pending(void)
{
	return dlg.ev_restart != NULL && evtimer_pending(dlg.ev_restart, NULL);
}

void
warm_stop(void)
{
	if (dlg.ev_restart != NULL)
		event_free(dlg.ev_restart);
	dlg.ev_restart = NULL;
}

void
delegate_boot(struct child *c)
{
	if (c->opts.agent_acp != NULL && c->opts.agent_prestart)
		warm_start(c);
}
