/* SPDX-License-Identifier: ISC */
/*
 * channel-corpse.c: a child ended for idleness, cut loose from its
 * channel when a request comes while it exits, so that the request starts
 * a fresh child at once rather than waiting out the old one's exit (a
 * close and a reopen of a session: a quarter of a warm resume went on
 * that wait).  It owned nothing when it was ended (no session, request,
 * restore or workspace operation: the idle policy's test), so all that is
 * left of it is to be reaped, to have its last stderr lines logged, and
 * to get TERM then KILL after the grace periods channel_end() gives.  An
 * end for any other reason keeps the child on its channel until it exits:
 * it may still hold a writer lease or an abandoned restore.
 */
#include "config.h"

#include <sys/queue.h>

#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

#include "channel-int.h"
#include "log.h"
#include "serve.h"

struct corpse {
	TAILQ_ENTRY(corpse)	 entry;
	pid_t			 pid;
	int			 pidfd;
	struct event		*pid_ev;
	struct event		*kill_ev;
	struct bufferevent	*err;
	int			 kill_stage;
};

static TAILQ_HEAD(, corpse) corpses = TAILQ_HEAD_INITIALIZER(corpses);

size_t
channel_corpses(void)
{
	struct corpse *c;
	size_t n = 0;

	TAILQ_FOREACH(c, &corpses, entry)
		n++;
	return n;
}

static void
corpse_free(struct corpse *c)
{
	TAILQ_REMOVE(&corpses, c, entry);
	if (c->pid_ev != NULL)
		event_free(c->pid_ev);
	if (c->kill_ev != NULL)
		event_free(c->kill_ev);
	if (c->err != NULL)
		bufferevent_free(c->err);
	if (c->pidfd != -1)
		close(c->pidfd);
	free(c);
}

static void
corpse_on_exit(evutil_socket_t fd, short what, void *arg)
{
	struct corpse *c = arg;
	int code, sig;

	(void)fd; (void)what;
	if (c->err != NULL)
		channel_err_lines(bufferevent_get_input(c->err), c->pid);
	channel_reap(c->pid, 1, &code, &sig);
	corpse_free(c);
}

static void
corpse_on_kill(evutil_socket_t fd, short what, void *arg)
{
	struct corpse *c = arg;

	(void)fd; (void)what;
	channel_kill_step(c->pid, &c->kill_stage, c->kill_ev);
}

static void
corpse_on_err(struct bufferevent *bev, void *arg)
{
	struct corpse *c = arg;

	channel_err_lines(bufferevent_get_input(bev), c->pid);
}

/*
 * Take ch's ending child (its pid, pidfd and stderr) into a corpse and
 * leave ch idle for a fresh one.  -1 when it cannot be watched apart: ch
 * is left as it was and the request waits for the exit as before.
 */
int
channel_corpse_take(struct channel *ch)
{
	struct timeval tv = { CHANNEL_KILL_GRACE_MS / 1000, 0 };
	struct corpse *c;

	if (ch->pidfd == -1 || (c = calloc(1, sizeof(*c))) == NULL)
		return -1;
	c->pid = ch->pid;
	c->pidfd = ch->pidfd;
	c->kill_stage = ch->kill_stage;
	c->pid_ev = event_new(serve_base, c->pidfd, EV_READ, corpse_on_exit, c);
	c->kill_ev = evtimer_new(serve_base, corpse_on_kill, c);
	if (c->pid_ev == NULL || c->kill_ev == NULL || event_add(c->pid_ev, NULL) == -1) {
		if (c->pid_ev != NULL)
			event_free(c->pid_ev);
		if (c->kill_ev != NULL)
			event_free(c->kill_ev);
		free(c);
		return -1;
	}
	TAILQ_INSERT_TAIL(&corpses, c, entry);
	event_add(c->kill_ev, &tv);
	if ((c->err = ch->err) != NULL)
		bufferevent_setcb(c->err, corpse_on_err, NULL, channel_on_err_event, c);
	log_debug("child %ld: still ending; a fresh one serves its workspace",
	    (long)c->pid);
	ch->err = NULL;
	ch->pidfd = -1;
	ch->pid = 0;
	channel_release(ch);
	return 0;
}
