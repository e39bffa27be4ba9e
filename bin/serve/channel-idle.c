/* SPDX-License-Identifier: ISC */
/*
 * channel-idle.c: what becomes of a workspace's child that has nothing
 * left to do.  The idle policy (--channel-idle-timeout-ms, after the
 * derived condemnation of seed 000) ends it, at once or after the
 * timeout; a child kept warm for the real agent (--agent-acp with
 * --agent-prestart) is never ended idle, and is started again when it
 * exits, backing off while it keeps dying young.
 */
#include "config.h"

#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "restore-fsm.h"
#include "rpc-pending.h"
#include "channel-int.h"
#include "serve.h"

void
channel_on_idle(evutil_socket_t fd, short what, void *arg)
{
	struct channel *ch = arg;

	(void)fd; (void)what;
	if (ch->nsessions == 0 && ch->control_ops == 0 && ch->state == CH_READY &&
	    rpc_pending_count(ch->pending) == 0) {
		log_info("child %ld idle: ending it", (long)ch->pid);
		channel_end(ch, 0);
		ch->idle_end = 1;
	}
}

/*
 * The idle policy, after the derived condemnation of seed 000: a drained
 * channel with an unsettled abandoned restore or a quarantine is recycled
 * at once; otherwise, with no session and no request, the configured idle
 * policy ends the child.
 */
void
channel_check_idle(struct channel *ch)
{
	struct rfsm_chan_view v;
	struct timeval tv;

	if (ch->state != CH_READY)
		return;
	channel_hooks->inflight_view(ch, &v);
	switch (rfsm_chan_reap(&v)) {
	case RFSM_REAP_KEEP:
		return;
	case RFSM_REAP_NOW:
		if (v.unsettled > 0 || v.quarantined > 0) {
			log_info("child %ld drained with an unsettled restore: recycling it",
			    (long)ch->pid);
			channel_end(ch, 0);
			return;
		}
		break;
	case RFSM_REAP_IDLE_POLICY:
		break;
	}
	if (ch->nsessions > 0 || ch->control_ops > 0 ||
	    rpc_pending_count(ch->pending) > 0 || channel_kept_warm())
		return;
	if (conf.channel_idle_timeout_ms == 0) {
		channel_on_idle(-1, 0, ch);
		return;
	}
	tv.tv_sec = conf.channel_idle_timeout_ms / 1000;
	tv.tv_usec = (conf.channel_idle_timeout_ms % 1000) * 1000;
	event_add(ch->idle_ev, &tv);
}

/* Kept-warm restarts back off while the child keeps dying young. */
#define WARM_BACKOFF_MIN_MS	1000
#define WARM_BACKOFF_MAX_MS	30000
#define WARM_LIVED_MS		60000

static void
on_warm(evutil_socket_t fd, short what, void *arg)
{
	struct channel *ch = arg;

	(void)fd; (void)what;
	if (ch->state == CH_IDLE && !serve_shutting_down())
		channel_start(ch);
}

/* A kept-warm child that exited is started again, after a backoff. */
void
channel_rewarm(struct channel *ch)
{
	struct timeval tv;

	if (!channel_kept_warm() || ch->state != CH_IDLE || serve_shutting_down())
		return;
	if (clock_mono_ms() - ch->started_ms >= WARM_LIVED_MS || ch->warm_backoff_ms == 0)
		ch->warm_backoff_ms = WARM_BACKOFF_MIN_MS;
	else if ((ch->warm_backoff_ms *= 2) > WARM_BACKOFF_MAX_MS)
		ch->warm_backoff_ms = WARM_BACKOFF_MAX_MS;
	if (ch->warm_ev == NULL &&
	    (ch->warm_ev = evtimer_new(serve_base, on_warm, ch)) == NULL)
		return;
	tv.tv_sec = ch->warm_backoff_ms / 1000;
	tv.tv_usec = (ch->warm_backoff_ms % 1000) * 1000;
	event_add(ch->warm_ev, &tv);
}

int
channel_kept_warm(void)
{
	return conf.agent_acp != NULL && conf.agent_prestart;
}

/*
 * A warm agent waits for the users of a daemon that was (re)started
 * before they came back; a prestarted child is kept, not reaped idle.
 */
void
channel_prestart(void)
{
	struct channel *ch;

	if (!channel_kept_warm())
		return;
	for (size_t i = 0; i < conf.n_workspaces; i++)
		if ((ch = channel_get(conf.workspaces[i])) != NULL &&
		    ch->state == CH_IDLE)
			channel_start(ch);
}
