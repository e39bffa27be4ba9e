/* SPDX-License-Identifier: ISC */
/*
 * child.c: the qwen-acp-child process (struct child): its event loop,
 * signals, shutdown and teardown.
 *
 * It knows the layers above it only through struct child_ops (the
 * dispatcher, the session queues, the prompts), the way tmux's proc.c
 * hands messages to a callback: io.c and this file never call rpc.c or
 * prompt.c directly.
 */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "argv.h"
#include "child.h"
#include "json-limit.h"
#include "txpage.h"
#include "lagmon.h"
#include "loadwork.h"
#include "log.h"
#include "otlp.h"
#include "trace.h"
#include "uuid.h"

#define WORKERS		2
#define LAG_INTERVAL_MS	50
#define LAG_WINDOW	1024

/* Whether anything still holds the loop: a load, a prompt, an agent. */
static int
child_busy(struct child *c)
{
	struct session *s;

	if (loadwork_inflight(c->work) > 0 || c->ops->running(c))
		return 1;
	RB_FOREACH(s, session_tree, &c->sessions)
		if (s->busy)
			return 1;
	return 0;
}

/* Shutting down and nothing left: leave the loop. */
void
child_check_done(struct child *c)
{
	if (!c->closing || child_busy(c))
		return;
	if (!c->out_dead && evbuffer_get_length(c->out) > 0)
		return;		/* the write callback calls us again */
	event_base_loopbreak(c->base);
}

/* Stop reading, stop the sessions, leave once the rest is done. */
void
child_begin_shutdown(struct child *c)
{
	if (c->closing) {
		child_check_done(c);
		return;
	}
	c->closing = 1;
	if (!c->in_eof)
		event_del(c->ev_in);
	c->ops->stop_sessions(c);
	child_check_done(c);
}

/* SIGHUP reopens the trace file; SIGTERM and SIGINT shut down. */
static void
child_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct child *c = arg;

	(void)what;
	if (sig == SIGHUP) {
		if (c->trace != NULL && trace_sink_reopen(c->trace) == -1)
			log_warn("reopen trace file");
		return;
	}
	log_info("signal %d: shutting down", (int)sig);
	child_begin_shutdown(c);
}

/* Set up the loop, its signals and stdin/stdout; ops are the layers above. */
int
child_setup(struct child *c, const struct child_ops *ops)
{
	struct event_config *cfg;

	c->ops = ops;
	signal(SIGPIPE, SIG_IGN);
	RB_INIT(&c->sessions);
	uuid_new(c->owner_id);
	if ((cfg = event_config_new()) == NULL)
		return -1;
	/* The lag monitor needs a precise clock, not CLOCK_MONOTONIC_COARSE. */
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	c->base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (c->base == NULL ||
	    (c->out = evbuffer_new()) == NULL ||
	    (c->reader = rpc_reader_new(c->opts.max_frame)) == NULL ||
	    (c->lag = lagmon_new(c->base, LAG_INTERVAL_MS, LAG_WINDOW)) == NULL ||
	    (c->work = loadwork_new(c->base, WORKERS)) == NULL)
		return -1;
	c->ev_term = evsignal_new(c->base, SIGTERM, child_signal_cb, c);
	c->ev_int = evsignal_new(c->base, SIGINT, child_signal_cb, c);
	c->ev_exit = evsignal_new(c->base, SIGHUP, child_signal_cb, c);
	if (c->ev_term == NULL || c->ev_int == NULL || c->ev_exit == NULL ||
	    event_add(c->ev_term, NULL) == -1 || event_add(c->ev_int, NULL) == -1 ||
	    event_add(c->ev_exit, NULL) == -1)
		return -1;
	/*
	 * The daemon forwards what it took under its own budget, inside an
	 * envelope of its own: twice it bounds what this child builds.
	 */
	rpc_reader_limit(c->reader, 2 * JSON_LIMIT_VALUES);
	return child_setup_io(c);
}

/* Everything is idle: free sessions (releasing leases) and the rest. */
void
child_teardown(struct child *c)
{
	struct session *s;

	loadwork_free(c->work);	/* runs done() of loads that finished late */
	txpage_free();
	while ((s = RB_MIN(session_tree, &c->sessions)) != NULL) {
		RB_REMOVE(session_tree, &c->sessions, s);
		session_free(s);
	}
	if (!c->out_dead) {
		fcntl(STDOUT_FILENO, F_SETFL, fcntl(STDOUT_FILENO, F_GETFL) & ~O_NONBLOCK);
		c->out_direct = 1;
		child_flush(c);
	}
	lagmon_free(c->lag);
	if (c->ev_in != NULL)
		event_free(c->ev_in);
	if (c->ev_out != NULL)
		event_free(c->ev_out);
	if (c->ev_term != NULL)
		event_free(c->ev_term);
	if (c->ev_int != NULL)
		event_free(c->ev_int);
	if (c->ev_exit != NULL)
		event_free(c->ev_exit);
	evbuffer_free(c->out);
	rpc_reader_free(c->reader);
	if (c->otlp != NULL) {
		trace_sink_set_export(c->trace, NULL, NULL);
		otlp_stop(c->otlp);
	}
	trace_sink_close(c->trace);
	event_base_free(c->base);
	free(c->opts.data_dir);
	free(c->opts.cache_dir);
	free(c->opts.workspace);
	argv_free(c->opts.agent_acp);
}

/* The session is no longer busy (its owner's policy: rpc.c). */
void
child_session_idle(struct child *c, struct session *s)
{
	c->ops->session_idle(c, s);
}

/* Output drained below the low-water mark (paused 0) or filled up (1). */
void
child_pause_producers(struct child *c, int paused)
{
	c->ops->pause_producers(c, paused);
}
