/* SPDX-License-Identifier: ISC */
/*
 * inflight-ops.c: the world of the in-flight lifecycle machine
 * (restore-fsm.c), as struct rfsm_ops over libevent and the channel.
 * The ACP answer and the machine's timer become its events; its effects
 * are the public result, the one qwen/control/session/close of a late
 * answer and its outcome, the asynchronous kill of an empty channel, the
 * capacity release, the fence and the restore span.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "errors.h"
#include "log.h"
#include "inflight-int.h"
#include "trace.h"
#include "xmalloc.h"

/*
 * A late session/new success names the session the child created after
 * all: that id (not the caller's, when the child picked another) is the
 * one the cleanup closes.
 */
static void
spawn_late_id(struct inflight *op, json_object *payload)
{
	json_object *v;
	const char *got;

	if (!json_object_object_get_ex(payload, "sessionId", &v) ||
	    !json_object_is_type(v, json_type_string))
		return;
	got = json_object_get_string(v);
	if (got[0] == '\0' || strlen(got) > SERVE_SESSION_ID_MAX ||
	    strcmp(got, op->id) == 0)
		return;
	strlcpy(op->id, got, sizeof(op->id));
	strlcpy(op->fsm.id, got, sizeof(op->fsm.id));
}

/* The event a late answer (after the deadline) means to the machine. */
static enum rfsm_event
late_event(struct inflight *op, enum channel_outcome o, json_object *payload)
{
	enum rfsm_event ev;

	if (o == CHANNEL_CLOSED || o == CHANNEL_INIT_TIMEOUT)
		ev = RFSM_EV_TRANSPORT_CLOSED;
	else {
		if (op->action == OP_SPAWN && o == CHANNEL_RESULT)
			spawn_late_id(op, payload);
		if (op->id[0] != '\0' && sessions_find(op->id) != NULL)
			ev = RFSM_EV_ID_RECLAIMED;
		else
			ev = o == CHANNEL_RESULT ? RFSM_EV_ANSWER_OK : RFSM_EV_ANSWER_ERR;
	}
	log_info("session %s: late %s %s after %llu ms",
	    inflight_label(op), inflight_action_name(op->action),
	    ev == RFSM_EV_ANSWER_OK ? "success" : rfsm_event_name(ev),
	    (unsigned long long)(clock_mono_ms() - op->started_ms));
	return ev;
}

/*
 * The ACP answer is an event for the machine: in time (also a channel that
 * failed to start) it is the public result, after the deadline it is the
 * late result that the cleanup settles.
 */
void
inflight_on_answer(void *arg, enum channel_outcome o, json_object *payload)
{
	struct inflight *op = arg;
	enum rfsm_event ev;

	op->req = NULL;
	if (op->fsm.state == RFSM_ACTIVE) {
		op->answer_o = o;
		op->answer = json_object_get(payload);
		ev = o == CHANNEL_RESULT ? RFSM_EV_ANSWER_OK :
		    o == CHANNEL_CLOSED ? RFSM_EV_TRANSPORT_CLOSED : RFSM_EV_ANSWER_ERR;
	} else
		ev = late_event(op, o, payload);
	rfsm_feed(&op->fsm, ev);
}

/* ---- the machine's world (struct rfsm_ops) -------------------------------- */

/* The one timer: the deadline while active, then the settlement grace. */
void
inflight_on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct inflight *op = arg;
	int ev = rfsm_timer_event(&op->fsm);

	(void)fd; (void)what;
	if (ev >= 0)
		rfsm_feed(&op->fsm, (enum rfsm_event)ev);
}

static uint64_t
fsm_now(void *ctx)
{
	(void)ctx;
	return clock_mono_ms();
}

static void
fsm_public(void *ctx, enum rfsm_result r)
{
	struct inflight *op = ctx;
	struct inflight_waiter *w;

	metrics_restore((int)op->action, (int)r,
	    clock_mono_ms() - op->started_ms);
	if (r == RFSM_RESULT_TIMEOUT) {
		log_warnx("session %s: %s timed out after %lld ms", inflight_label(op),
		    inflight_action_name(op->action), (long long)op->fsm.budget_ms);
		TAILQ_FOREACH(w, &op->waiters, entry)
			http_send_qerr(w->req, rfsm_err_timeout(&op->fsm));
	} else
		inflight_reply(op, op->answer_o, op->answer);
	inflight_waiters_free(op);
	json_object_put(op->answer);
	op->answer = NULL;
}

static void
on_close(void *arg, enum channel_outcome o, json_object *payload)
{
	struct inflight *op = arg;
	enum rfsm_event ev = RFSM_EV_CLOSE_FAILED;
	json_object *v;

	op->close_req = NULL;
	switch (o) {
	case CHANNEL_RESULT:
		if (json_object_object_get_ex(payload, "closed", &v) &&
		    json_object_get_boolean(v))
			ev = RFSM_EV_CLOSE_OK;
		break;
	case CHANNEL_ERROR:
		if (json_object_object_get_ex(payload, "code", &v) &&
		    json_object_get_int(v) == QERR_RPC_RESOURCE_NOT_FOUND)
			ev = RFSM_EV_CLOSE_NOT_FOUND;
		break;
	case CHANNEL_TIMEOUT:
		ev = RFSM_EV_CLOSE_TIMEOUT;
		break;
	default:
		ev = RFSM_EV_TRANSPORT_CLOSED;
		break;
	}
	log_info("session %s: cleanup close: %s", inflight_label(op), rfsm_event_name(ev));
	rfsm_feed(&op->fsm, ev);
}

/* Exactly one qwen/control/session/close for the late restore. */
static void
fsm_close(void *ctx)
{
	struct inflight *op = ctx;
	json_object *p;

	if (op->id[0] == '\0') {
		/* An id-less spawn that failed late: the child made nothing. */
		rfsm_feed(&op->fsm, RFSM_EV_CLOSE_NOT_FOUND);	/* queued */
		return;
	}
	if (!channel_alive(op->ch)) {
		rfsm_feed(&op->fsm, RFSM_EV_TRANSPORT_CLOSED);	/* queued */
		return;
	}
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(op->id));
	json_object_object_add(p, "drainTimeoutMs",
	    xjson_object_new_int64(conf.init_timeout_ms * 8 / 10));
	op->close_req = channel_request(op->ch, "qwen/control/session/close", p,
	    (uint64_t)conf.init_timeout_ms, on_close, op);
	if (op->close_req == NULL)
		rfsm_feed(&op->fsm, RFSM_EV_TRANSPORT_CLOSED);	/* queued */
}

static void
fsm_kill(void *ctx)
{
	struct inflight *op = ctx;

	log_info("session %s: abandoned on an empty channel: ending its child", inflight_label(op));
	channel_kill(op->ch);
}

static void
fsm_arm(void *ctx, uint64_t ms)
{
	struct inflight *op = ctx;
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };

	evtimer_add(op->timer, &tv);
}

static void
fsm_cancel(void *ctx)
{
	struct inflight *op = ctx;

	if (op->timer != NULL)
		evtimer_del(op->timer);
}

static void
fsm_release(void *ctx)
{
	struct inflight *op = ctx;

	if (!op->released)
		sessions_inflight_add(-1);
	op->released = 1;
}

/* Abandoned: out of the pending set, early events gone, the id fenced. */
static void
fsm_fence(void *ctx)
{
	inflight_early_fence(ctx);
}

static void
fsm_purge(void *ctx)
{
	inflight_early_purge(ctx);
}

static void
fsm_view(void *ctx, struct rfsm_chan_view *v)
{
	inflight_chan_view(((struct inflight *)ctx)->ch, v);
}

static void
fsm_changed(void *ctx)
{
	channel_reconsider(((struct inflight *)ctx)->ch);
}

static void
fsm_trace(void *ctx, const char *event, const char *key, const char *value)
{
	struct inflight *op = ctx;

	span_add_event(op->span, event);
	if (key != NULL)
		span_event_set_str(op->span, key, value);
}

static void
fsm_finish(void *ctx, enum rfsm_state st)
{
	struct inflight *op = ctx;

	if (st == RFSM_SETTLED)
		log_info("session %s: abandoned %s settled after %llu ms", inflight_label(op),
		    inflight_action_name(op->action),
		    (unsigned long long)(clock_mono_ms() - op->started_ms));
	span_set_str(op->span, "qwen-code.daemon.session_restore.final_state",
	    rfsm_state_name(st));
	span_set_int(op->span, "qwen-code.daemon.duration_ms",
	    (int64_t)(clock_mono_ms() - op->started_ms));
	if (st != RFSM_SUCCEEDED)
		span_set_status(op->span, SPAN_STATUS_ERROR,
		    rfsm_state_name(st));
	span_end(op->span, serve_trace);
	op->span = NULL;
	inflight_free(op);
}

const struct rfsm_ops inflight_fsm_ops = {
	.now_ms = fsm_now,
	.public_result = fsm_public,
	.send_close = fsm_close,
	.kill_channel_async = fsm_kill,
	.arm_timer = fsm_arm,
	.cancel_timer = fsm_cancel,
	.release_capacity = fsm_release,
	.fence_on = fsm_fence,
	.purge_early = fsm_purge,
	.channel_view = fsm_view,
	.channel_changed = fsm_changed,
	.trace = fsm_trace,
	.finish = fsm_finish,
};
