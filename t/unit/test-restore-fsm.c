/* SPDX-License-Identifier: ISC */
/*
 * test-restore-fsm.c: the restore lifecycle machine (seed 000) on its own,
 * with a fake clock, a fake timer and a recording world.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "budget.h"
#include "errors.h"
#include "restore-fsm.h"
#include "tap.h"

#define BUDGET	300

struct world {
	uint64_t		 now;
	int			 timer_armed;
	uint64_t		 timer_due;
	int			 npublic;
	enum rfsm_result	 result;
	int			 closes, kills, releases, fences, purges;
	int			 changed, finishes;
	enum rfsm_state		 finished;
	struct rfsm_chan_view	 view;		/* the channel's other work */
	char			 trace[1024];
	int			 close_feeds;	/* send_close feeds this + 1 */
	int			 capacity;	/* slots in use */
	struct rfsm		*m;
};

static uint64_t
w_now(void *ctx)
{
	return ((struct world *)ctx)->now;
}

static void
w_public(void *ctx, enum rfsm_result r)
{
	struct world *w = ctx;

	w->npublic++;
	w->result = r;
}

static void
w_close(void *ctx)
{
	struct world *w = ctx;

	w->closes++;
	if (w->close_feeds > 0)
		is_int(rfsm_feed(w->m, (enum rfsm_event)(w->close_feeds - 1)), 2,
		    "an event fed from inside an action is queued");
}

static void
w_kill(void *ctx)
{
	((struct world *)ctx)->kills++;
}

static void
w_arm(void *ctx, uint64_t ms)
{
	struct world *w = ctx;

	w->timer_armed = 1;
	w->timer_due = w->now + ms;
}

static void
w_cancel(void *ctx)
{
	((struct world *)ctx)->timer_armed = 0;
}

static void
w_release(void *ctx)
{
	struct world *w = ctx;

	w->releases++;
	w->capacity--;
}

static void
w_fence(void *ctx)
{
	((struct world *)ctx)->fences++;
}

static void
w_purge(void *ctx)
{
	((struct world *)ctx)->purges++;
}

static void
w_view(void *ctx, struct rfsm_chan_view *out)
{
	*out = ((struct world *)ctx)->view;
}

static void
w_changed(void *ctx)
{
	((struct world *)ctx)->changed++;
}

static void
w_trace(void *ctx, const char *event, const char *key, const char *value)
{
	struct world *w = ctx;
	char buf[160];

	snprintf(buf, sizeof(buf), "%s%s%s%s%s;", event, key ? " " : "",
	    key ? key : "", value ? "=" : "", value ? value : "");
	strlcat(w->trace, buf, sizeof(w->trace));
}

static void
w_finish(void *ctx, enum rfsm_state s)
{
	struct world *w = ctx;

	w->finishes++;
	w->finished = s;
}

static const struct rfsm_ops ops = {
	.now_ms = w_now,
	.public_result = w_public,
	.send_close = w_close,
	.kill_channel_async = w_kill,
	.arm_timer = w_arm,
	.cancel_timer = w_cancel,
	.release_capacity = w_release,
	.fence_on = w_fence,
	.purge_early = w_purge,
	.channel_view = w_view,
	.channel_changed = w_changed,
	.trace = w_trace,
	.finish = w_finish,
};

static void
start(struct world *w, struct rfsm *m, enum rfsm_action a, int siblings)
{
	memset(w, 0, sizeof(*w));
	w->now = 1000;
	w->m = m;
	w->capacity = 1;	/* the caller takes the slot */
	w->view.live_sessions = (unsigned)siblings;
	rfsm_init(m, &ops, w, a, "s-1", BUDGET);
}

/* Advance the fake clock, firing the one timer when due. */
static void
advance(struct world *w, uint64_t ms)
{
	uint64_t until = w->now + ms;
	int ev;

	while (w->timer_armed && w->timer_due <= until) {
		w->now = w->timer_due;	/* timers fire at their due time */
		w->timer_armed = 0;
		if ((ev = rfsm_timer_event(w->m)) >= 0)
			rfsm_feed(w->m, (enum rfsm_event)ev);
	}
	w->now = until;
}

static void
test_success(void)
{
	struct world w;
	struct rfsm m;

	start(&w, &m, RFSM_LOAD, 0);
	is_int(m.state, RFSM_ACTIVE, "starts active");
	ok(w.timer_armed && w.timer_due == 1000 + BUDGET, "deadline armed at budget");
	advance(&w, BUDGET - 1);
	is_int(m.state, RFSM_ACTIVE, "still active 1 ms before the deadline");
	is_int(rfsm_feed(&m, RFSM_EV_ANSWER_OK), 1, "answer ok acts");
	is_int(m.state, RFSM_SUCCEEDED, "answer in time -> succeeded");
	is_int(w.npublic, 1, "one public result");
	is_int(w.result, RFSM_RESULT_SUCCESS, "public result success");
	ok(!w.timer_armed, "deadline cancelled");
	is_int(w.releases, 1, "restore capacity released (moves to the session)");
	is_int(w.finishes, 1, "finish once");
	is_int(w.finished, RFSM_SUCCEEDED, "finish in succeeded");
	is_int(w.closes + w.kills + w.fences + w.purges, 0, "no close, kill, fence or purge");
	is_str(w.trace, "session.restore.public_result result=success;", "trace");
	advance(&w, 10 * BUDGET);
	is_int(m.state, RFSM_SUCCEEDED, "nothing happens later");
	is_int(rfsm_feed(&m, RFSM_EV_DEADLINE), 0, "a stale deadline is a no-op");
	is_int(w.finishes, 1, "still one finish");
}

static void
test_failure(void)
{
	struct world w;
	struct rfsm m;
	enum rfsm_event evs[] = { RFSM_EV_ANSWER_ERR, RFSM_EV_TRANSPORT_CLOSED };

	for (size_t i = 0; i < 2; i++) {
		start(&w, &m, RFSM_RESUME, 1);
		rfsm_feed(&m, evs[i]);
		is_int(m.state, RFSM_FAILED, "%s while active -> failed",
		    rfsm_event_name(evs[i]));
		is_int(w.result, RFSM_RESULT_FAILURE, "public failure");
		is_int(w.purges, 1, "early events purged, tombstone restored");
		is_int(w.releases, 1, "capacity released once");
		is_int(w.fences, 0, "no fence for a failure in time");
		is_int(w.closes, 0, "no close for a failure in time");
		ok(!w.timer_armed, "deadline cancelled");
		is_int(w.finished, RFSM_FAILED, "finish in failed");
	}
}

/* Deadline and answer ready at the same fake time, fed in both orders. */
static void
test_equal_time(void)
{
	struct world w;
	struct rfsm m;
	enum rfsm_event ans[] = { RFSM_EV_ANSWER_OK, RFSM_EV_ANSWER_ERR };

	for (size_t i = 0; i < 2; i++) {
		const char *an = rfsm_event_name(ans[i]);

		start(&w, &m, RFSM_LOAD, 1);
		w.now += BUDGET;
		rfsm_feed(&m, RFSM_EV_DEADLINE);
		rfsm_feed(&m, ans[i]);
		is_int(w.npublic, 1, "deadline then %s: one public result", an);
		is_int(w.result, RFSM_RESULT_TIMEOUT, "deadline then %s: timeout wins", an);
		is_int(m.state, RFSM_CLEANUP, "deadline then %s: cleanup", an);
		is_int(w.closes, 1, "deadline then %s: one close", an);
		is_int(w.releases, 0, "deadline then %s: capacity held", an);

		start(&w, &m, RFSM_LOAD, 1);
		w.now += BUDGET;
		rfsm_feed(&m, ans[i]);
		is_int(rfsm_feed(&m, RFSM_EV_DEADLINE), 0,
		    "%s then deadline: the deadline is a no-op", an);
		is_int(w.npublic, 1, "%s then deadline: one public result", an);
		is_int(w.result, i == 0 ? RFSM_RESULT_SUCCESS : RFSM_RESULT_FAILURE,
		    "%s then deadline: the answer wins", an);
		is_int(w.closes + w.fences, 0, "%s then deadline: no close, no fence", an);
	}
	/* Through the fake timer: at the deadline the timer observes first. */
	start(&w, &m, RFSM_LOAD, 1);
	advance(&w, BUDGET);
	rfsm_feed(&m, RFSM_EV_ANSWER_OK);
	is_int(w.result, RFSM_RESULT_TIMEOUT, "timer fired at the deadline: timeout");
	is_int(w.closes, 1, "and the answer is cleaned up");
}

static void
test_abandon(void)
{
	struct world w;
	struct rfsm m;
	struct rfsm_chan_view v;
	int64_t b;

	start(&w, &m, RFSM_LOAD, 1);
	advance(&w, BUDGET);
	is_int(m.state, RFSM_ABANDONED, "deadline -> abandoned");
	is_int(w.result, RFSM_RESULT_TIMEOUT, "public timeout");
	is_int(w.fences, 1, "fence on");
	is_int(w.kills, 0, "siblings: the child stays");
	ok(w.timer_armed && w.timer_due == w.now + BUDGET, "grace armed at one budget");
	is_int(w.releases, 0, "capacity held while abandoned");
	memset(&v, 0, sizeof(v));
	rfsm_chan_view_add(&v, &m);
	is_int(v.unsettled, 1, "view: unsettled");
	ok(rfsm_chan_unavailable(&v, NULL) == NULL, "abandoned alone rejects nothing");
	advance(&w, BUDGET - 1);
	is_int(m.state, RFSM_ABANDONED, "1 ms before the grace: abandoned");
	advance(&w, 1);
	is_int(m.state, RFSM_OVERDUE, "one further budget -> overdue");
	ok(strstr(w.trace, "session.restore.settlement_overdue;") != NULL,
	    "settlement_overdue traced");
	memset(&v, 0, sizeof(v));
	rfsm_chan_view_add(&v, &m);
	is_str(rfsm_chan_unavailable(&v, &b), "restore_settlement_overdue",
	    "overdue: fresh work gets restore_settlement_overdue");
	is_int(b, BUDGET, "with the restore budget");
	is_int(w.releases, 0, "capacity held while overdue");
	is_int(w.npublic, 1, "still one public result");
	/* Late answer after overdue: one close, then recovery. */
	rfsm_feed(&m, RFSM_EV_ANSWER_ERR);
	is_int(m.state, RFSM_CLEANUP, "late failure -> cleanup");
	is_int(w.closes, 1, "late failure: exactly one close");
	memset(&v, 0, sizeof(v));
	rfsm_chan_view_add(&v, &m);
	ok(rfsm_chan_unavailable(&v, NULL) != NULL, "still overdue until settled");
	rfsm_feed(&m, RFSM_EV_CLOSE_OK);
	is_int(m.state, RFSM_SETTLED, "close ok -> settled");
	memset(&v, 0, sizeof(v));
	rfsm_chan_view_add(&v, &m);
	ok(rfsm_chan_unavailable(&v, NULL) == NULL && v.unsettled == 0,
	    "settled: the channel takes fresh work again");
	is_int(rfsm_chan_reap(&v), RFSM_REAP_IDLE_POLICY, "settled: idle policy again");
	is_int(w.releases, 1, "capacity released at settlement");
	is_int(w.fences, 1, "the fence is not lifted by settlement");
	ok(strstr(w.trace, "session.restore.late_result result=failure;"
	    "session.restore.cleanup cleanup_result=closed;") != NULL,
	    "late_result and cleanup traced");
}

static void
test_empty_kill(void)
{
	struct world w;
	struct rfsm m;
	struct {
		const char	*what;
		unsigned	 live, spawns, ctl, active;
	} cases[] = {
		{ "live session", 1, 0, 0, 0 },
		{ "pending spawn", 0, 1, 0, 0 },
		{ "control operation", 0, 0, 1, 0 },
		{ "other restore", 0, 0, 0, 1 },
	};

	start(&w, &m, RFSM_LOAD, 0);
	advance(&w, BUDGET);
	is_int(w.kills, 1, "empty channel: killed asynchronously at abandonment");
	is_int(w.npublic, 1, "and the 504 is out");
	is_int(m.state, RFSM_ABANDONED, "still abandoned until the transport closes");
	rfsm_feed(&m, RFSM_EV_TRANSPORT_CLOSED);
	is_int(m.state, RFSM_SETTLED, "transport closed -> settled");
	is_int(w.releases, 1, "capacity released");
	ok(strstr(w.trace, "cleanup_result=transport_closed") != NULL, "traced");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		start(&w, &m, RFSM_RESUME, 0);
		w.view.live_sessions = cases[i].live;
		w.view.pending_spawns = cases[i].spawns;
		w.view.control_ops = cases[i].ctl;
		w.view.active_restores = cases[i].active;
		advance(&w, BUDGET);
		is_int(w.kills, 0, "sibling %s: never killed", cases[i].what);
	}
}

static void
test_late_close(void)
{
	struct world w;
	struct rfsm m;
	struct {
		enum rfsm_event	 late, close;
		enum rfsm_state	 want;
		const char	*result;
	} cases[] = {
		{ RFSM_EV_ANSWER_OK, RFSM_EV_CLOSE_OK, RFSM_SETTLED, "closed" },
		{ RFSM_EV_ANSWER_OK, RFSM_EV_CLOSE_NOT_FOUND, RFSM_SETTLED, "not_found" },
		{ RFSM_EV_ANSWER_ERR, RFSM_EV_CLOSE_NOT_FOUND, RFSM_SETTLED, "not_found" },
		{ RFSM_EV_ANSWER_OK, RFSM_EV_CLOSE_FAILED, RFSM_QUARANTINED, "quarantined" },
		{ RFSM_EV_ANSWER_ERR, RFSM_EV_CLOSE_TIMEOUT, RFSM_QUARANTINED, "quarantined" },
		{ RFSM_EV_ANSWER_OK, RFSM_EV_TRANSPORT_CLOSED, RFSM_SETTLED, "transport_closed" },
	};
	char want[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *c = rfsm_event_name(cases[i].close);

		start(&w, &m, RFSM_LOAD, 1);
		advance(&w, BUDGET);
		rfsm_feed(&m, cases[i].late);
		is_int(rfsm_feed(&m, cases[i].late), 0, "%s: a duplicate answer is a no-op", c);
		is_int(w.closes, 1, "%s: exactly one close", c);
		ok(!w.timer_armed, "%s: grace cancelled by the late answer", c);
		advance(&w, 5 * BUDGET);
		is_int(m.state, RFSM_CLEANUP, "%s: cleanup waits for the close", c);
		rfsm_feed(&m, cases[i].close);
		is_int(m.state, cases[i].want, "%s -> %s", c, rfsm_state_name(cases[i].want));
		snprintf(want, sizeof(want), "cleanup_result=%s;", cases[i].result);
		ok(strstr(w.trace, want) != NULL, "%s: traced %s", c, want);
		is_int(w.releases, cases[i].want == RFSM_SETTLED, "%s: capacity %s", c,
		    cases[i].want == RFSM_SETTLED ? "released" : "held");
		is_int(w.closes, 1, "%s: still one close", c);
		is_int(w.npublic, 1, "%s: still one public result", c);
	}
}

static void
test_quarantine(void)
{
	struct world w;
	struct rfsm m;
	struct rfsm_chan_view v;
	int64_t b;

	start(&w, &m, RFSM_LOAD, 1);
	advance(&w, BUDGET);
	rfsm_feed(&m, RFSM_EV_ANSWER_OK);
	rfsm_feed(&m, RFSM_EV_CLOSE_FAILED);
	is_int(m.state, RFSM_QUARANTINED, "close failed -> quarantined");
	memset(&v, 0, sizeof(v));
	v.live_sessions = 2;
	rfsm_chan_view_add(&v, &m);
	is_str(rfsm_chan_unavailable(&v, &b), "restore_cleanup_failed", "reason");
	is_int(b, BUDGET, "budget of the reason");
	is_int(rfsm_admit_fresh(&v, 0), RFSM_ADMIT_UNAVAILABLE,
	    "quarantine is checked before capacity");
	is_int(rfsm_chan_reap(&v), RFSM_REAP_KEEP, "siblings keep working");
	v.live_sessions = 0;
	is_int(rfsm_chan_reap(&v), RFSM_REAP_NOW, "drained: recycled");
	for (int ev = 0; ev < RFSM_NEVENTS; ev++)
		if (ev != RFSM_EV_TRANSPORT_CLOSED)
			rfsm_feed(&m, (enum rfsm_event)ev);
	is_int(m.state, RFSM_QUARANTINED, "only the transport ends a quarantine");
	is_int(w.releases, 0, "capacity held while quarantined");
	is_int(w.closes, 1, "no second close from a quarantine");
	rfsm_feed(&m, RFSM_EV_TRANSPORT_CLOSED);
	is_int(m.state, RFSM_SETTLED, "transport closed -> settled");
	is_int(w.releases, 1, "capacity released");
	memset(&v, 0, sizeof(v));
	rfsm_chan_view_add(&v, &m);
	is_int(rfsm_admit_fresh(&v, 1), RFSM_ADMIT_OK, "recovered");
}

static void
test_transport_and_reclaim(void)
{
	struct world w;
	struct rfsm m;

	start(&w, &m, RFSM_LOAD, 1);
	advance(&w, 2 * BUDGET);
	is_int(m.state, RFSM_OVERDUE, "overdue");
	rfsm_feed(&m, RFSM_EV_TRANSPORT_CLOSED);
	is_int(m.state, RFSM_SETTLED, "overdue, transport closed -> settled");
	is_int(w.closes, 0, "no close over a dead transport");

	start(&w, &m, RFSM_LOAD, 1);
	advance(&w, BUDGET);
	rfsm_feed(&m, RFSM_EV_ANSWER_OK);
	rfsm_feed(&m, RFSM_EV_TRANSPORT_CLOSED);
	is_int(m.state, RFSM_SETTLED, "transport closed during cleanup -> settled");
	ok(strstr(w.trace, "cleanup_result=transport_closed") != NULL, "traced");
	is_int(w.releases, 1, "released once");

	start(&w, &m, RFSM_RESUME, 1);
	advance(&w, BUDGET);
	rfsm_feed(&m, RFSM_EV_ID_RECLAIMED);
	is_int(m.state, RFSM_SETTLED, "id reclaimed -> settled");
	ok(strstr(w.trace, "cleanup_result=id_reclaimed") != NULL, "traced");
	is_int(w.closes, 0, "no close for a reclaimed id");
	ok(!w.timer_armed, "grace cancelled");
}

static void
test_invalid_and_reentry(void)
{
	struct world w;
	struct rfsm m;
	enum rfsm_event bad[] = { RFSM_EV_GRACE_EXPIRED, RFSM_EV_CLOSE_OK,
	    RFSM_EV_CLOSE_NOT_FOUND, RFSM_EV_CLOSE_FAILED, RFSM_EV_CLOSE_TIMEOUT,
	    RFSM_EV_ID_RECLAIMED };

	start(&w, &m, RFSM_LOAD, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		is_int(rfsm_feed(&m, bad[i]), -1, "%s impossible while active",
		    rfsm_event_name(bad[i]));
	is_int(rfsm_feed(&m, (enum rfsm_event)99), -1, "unknown event refused");
	is_int(m.state, RFSM_ACTIVE, "state unchanged");
	is_int(w.npublic, 0, "nothing published");

	start(&w, &m, RFSM_LOAD, 1);
	w.close_feeds = RFSM_EV_CLOSE_FAILED + 1;
	advance(&w, BUDGET);
	rfsm_feed(&m, RFSM_EV_ANSWER_OK);
	is_int(m.state, RFSM_QUARANTINED, "an immediate close failure is applied after");

	start(&w, &m, RFSM_LOAD, 1);
	w.close_feeds = RFSM_EV_TRANSPORT_CLOSED + 1;
	advance(&w, BUDGET);
	is_int(rfsm_feed(&m, RFSM_EV_ANSWER_OK), 1, "late answer acts");
	is_int(m.state, RFSM_SETTLED, "a close that cannot be sent settles");
	is_int(w.finishes, 1, "finish once, after the queued event");
}

static void
test_join(void)
{
	struct world w;
	struct rfsm m;

	start(&w, &m, RFSM_LOAD, 1);
	is_int(rfsm_join(&m, RFSM_LOAD, 1), RFSM_JOIN_COALESCE, "same action+shape coalesce");
	is_int(rfsm_join(&m, RFSM_LOAD, 0), RFSM_JOIN_CONFLICT, "other shape conflicts");
	is_int(rfsm_join(&m, RFSM_RESUME, 1), RFSM_JOIN_CONFLICT, "other action conflicts");
	is_int(rfsm_join(&m, RFSM_SPAWN, 1), RFSM_JOIN_CONFLICT, "spawn conflicts");
	advance(&w, BUDGET);
	is_int(rfsm_join(&m, RFSM_LOAD, 1), RFSM_JOIN_AWAITING, "abandoned: awaiting cleanup");
	is_int(rfsm_join(&m, RFSM_SPAWN, 0), RFSM_JOIN_AWAITING, "abandoned: spawn awaits");
	advance(&w, BUDGET);
	is_int(rfsm_join(&m, RFSM_RESUME, 1), RFSM_JOIN_AWAITING, "overdue: awaiting cleanup");
	rfsm_feed(&m, RFSM_EV_ANSWER_OK);
	rfsm_feed(&m, RFSM_EV_CLOSE_FAILED);
	is_int(rfsm_join(&m, RFSM_LOAD, 1), RFSM_JOIN_AWAITING, "quarantined: awaiting");
	rfsm_feed(&m, RFSM_EV_TRANSPORT_CLOSED);
	is_int(rfsm_join(&m, RFSM_LOAD, 1), RFSM_JOIN_NONE, "settled: go ahead");
	is_int(rfsm_join(NULL, RFSM_LOAD, 1), RFSM_JOIN_NONE, "no owner: go ahead");
	start(&w, &m, RFSM_SPAWN, 1);
	is_int(rfsm_join(&m, RFSM_SPAWN, 1), RFSM_JOIN_CONFLICT, "a spawn owner never coalesces");
}

/* The REST body of e as a string (for field checks). */
static const char *
body_get(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static void
test_errors(void)
{
	struct world w;
	struct rfsm m;
	struct qerr *e;
	json_object *o;
	int64_t budgets[] = { 1, 300, 4001, 5000, 7000, 7001, 60000, 120000,
	    500000, BUDGET_MAX_MS };

	start(&w, &m, RFSM_LOAD, 1);
	e = rfsm_err_in_progress(&m, RFSM_RESUME, rfsm_join(&m, RFSM_RESUME, 1));
	is_int(qerr_status(e), 409, "409");
	is_int(qerr_retry_after(e), 5, "restore_in_progress: Retry-After 5");
	o = qerr_rest_body(e);
	is_str(body_get(o, "code"), "restore_in_progress", "code");
	is_str(body_get(o, "reason"), "restore_in_progress", "reason");
	is_str(body_get(o, "activeAction"), "load", "activeAction");
	is_str(body_get(o, "requestedAction"), "resume", "requestedAction");
	is_str(body_get(o, "sessionId"), "s-1", "sessionId");
	is_str(body_get(o, "retryable"), "true", "retryable");
	ok(body_get(o, "httpStatus") == NULL, "no httpStatus in REST");
	json_object_put(o);
	qerr_free(e);

	for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++) {
		int want = budget_retry_after_s(budgets[i]);

		memset(&w, 0, sizeof(w));
		w.m = &m;
		rfsm_init(&m, &ops, &w, RFSM_LOAD, "s-2", budgets[i]);
		e = rfsm_err_in_progress(&m, RFSM_SPAWN, RFSM_JOIN_AWAITING);
		is_int(qerr_retry_after(e), want, "awaiting, budget %lld: Retry-After %d",
		    (long long)budgets[i], want);
		o = qerr_rest_body(e);
		is_str(body_get(o, "reason"), "awaiting_abandoned_cleanup", "reason");
		json_object_put(o);
		qerr_free(e);
		e = rfsm_err_timeout(&m);
		is_int(qerr_retry_after(e), want, "504, budget %lld: Retry-After %d",
		    (long long)budgets[i], want);
		qerr_free(e);
		e = rfsm_err_unavailable("restore_settlement_overdue", budgets[i]);
		is_int(qerr_retry_after(e), want, "503, budget %lld: Retry-After %d",
		    (long long)budgets[i], want);
		qerr_free(e);
	}
	is_int(budget_retry_after_s(7001), 8, "clamped budget rounds up");

	memset(&w, 0, sizeof(w));
	w.m = &m;
	rfsm_init(&m, &ops, &w, RFSM_RESUME, "s-3", 800);
	e = rfsm_err_timeout(&m);
	is_int(qerr_status(e), 504, "504");
	o = qerr_rest_body(e);
	is_str(body_get(o, "error"), "AcpSessionBridge session/resume timed out after 800ms",
	    "504 message");
	is_str(body_get(o, "code"), "session_restore_timeout", "504 code");
	is_str(body_get(o, "errorKind"), "restore_timeout", "504 errorKind");
	is_str(body_get(o, "retryable"), "true", "504 retryable");
	is_str(body_get(o, "sessionId"), "s-3", "504 sessionId");
	is_str(body_get(o, "action"), "resume", "504 action");
	is_str(body_get(o, "timeoutMs"), "800", "504 timeoutMs");
	json_object_put(o);
	qerr_free(e);

	/* A timed-out session/new: init_timeout, no session or action. */
	rfsm_init(&m, &ops, &w, RFSM_SPAWN, "", 12000);
	e = rfsm_err_timeout(&m);
	is_int(qerr_status(e), 504, "spawn: 504");
	is_int(qerr_retry_after(e), 12, "spawn: Retry-After of the initialize budget");
	o = qerr_rest_body(e);
	is_str(body_get(o, "error"), "AcpSessionBridge session/new timed out after 12000ms",
	    "spawn: 504 message");
	is_str(body_get(o, "code"), "init_timeout", "spawn: code");
	is_str(body_get(o, "errorKind"), "init_timeout", "spawn: errorKind");
	is_str(body_get(o, "timeoutMs"), "12000", "spawn: timeoutMs");
	ok(body_get(o, "sessionId") == NULL && body_get(o, "action") == NULL &&
	    body_get(o, "phase") == NULL, "spawn: no sessionId, action, phase");
	json_object_put(o);
	qerr_free(e);

	e = rfsm_err_unavailable("restore_cleanup_failed", 60000);
	is_int(qerr_status(e), 503, "503");
	is_int(qerr_retry_after(e), 60, "503 Retry-After clamped budget");
	o = qerr_rest_body(e);
	is_str(body_get(o, "code"), "acp_channel_unavailable", "503 code");
	is_str(body_get(o, "errorKind"), "acp_channel_unavailable", "503 errorKind");
	is_str(body_get(o, "reason"), "restore_cleanup_failed", "503 reason");
	is_str(body_get(o, "retryAfterSeconds"), "60", "503 retryAfterSeconds");
	json_object_put(o);
	qerr_free(e);
}

static void
test_channel(void)
{
	struct world w;
	struct rfsm a, b;
	struct rfsm_chan_view v;
	int64_t bud;

	memset(&v, 0, sizeof(v));
	is_int(rfsm_chan_reap(&v), RFSM_REAP_IDLE_POLICY, "empty, clean: idle policy");
	v.empty_reap_pending = 1;
	is_int(rfsm_chan_reap(&v), RFSM_REAP_NOW, "empty reap pending: reap");
	v.live_sessions = 1;
	is_int(rfsm_chan_reap(&v), RFSM_REAP_KEEP, "visible work: keep");
	memset(&v, 0, sizeof(v));
	v.unsettled = 1;
	is_int(rfsm_chan_reap(&v), RFSM_REAP_NOW, "unsettled abandoned restore: reap");
	v.pending_spawns = 1;
	is_int(rfsm_chan_reap(&v), RFSM_REAP_KEEP, "... unless a spawn is pending");
	memset(&v, 0, sizeof(v));
	v.quarantined = 1;
	is_int(rfsm_chan_reap(&v), RFSM_REAP_NOW, "quarantined: reap when drained");
	v.control_ops = 1;
	is_int(rfsm_chan_reap(&v), RFSM_REAP_KEEP, "... not during a control op");

	/* Overdue and quarantined together: quarantine first. */
	start(&w, &a, RFSM_LOAD, 1);
	advance(&w, 2 * BUDGET);
	memset(&v, 0, sizeof(v));
	rfsm_chan_view_add(&v, &a);
	is_int(rfsm_admit_fresh(&v, 5), RFSM_ADMIT_UNAVAILABLE, "overdue refuses fresh work");
	is_int(rfsm_admit_fresh(&v, 0), RFSM_ADMIT_UNAVAILABLE, "before capacity");
	memset(&w, 0, sizeof(w));
	w.m = &b;
	w.view.live_sessions = 1;
	rfsm_init(&b, &ops, &w, RFSM_SPAWN, "s-9", 1000);
	advance(&w, 1000);
	rfsm_feed(&b, RFSM_EV_ANSWER_ERR);
	rfsm_feed(&b, RFSM_EV_CLOSE_TIMEOUT);
	rfsm_chan_view_add(&v, &b);
	is_str(rfsm_chan_unavailable(&v, &bud), "new_session_cleanup_failed",
	    "a spawn's quarantine has its own reason, first");
	is_int(bud, 1000, "with the spawn's budget");
	memset(&v, 0, sizeof(v));
	rfsm_chan_view_add(&v, &a);
	rfsm_chan_view_add(&v, &a);
	is_int(v.overdue, 2, "counts add up");
	memset(&v, 0, sizeof(v));
	is_int(rfsm_admit_fresh(&v, 0), RFSM_ADMIT_CAPACITY, "clean, full: capacity");
	is_int(rfsm_admit_fresh(&v, 1), RFSM_ADMIT_OK, "clean, room: ok");
	/* An active restore is visible work; an abandoned one is not. */
	start(&w, &a, RFSM_LOAD, 0);
	memset(&v, 0, sizeof(v));
	rfsm_chan_view_add(&v, &a);
	is_int(rfsm_chan_reap(&v), RFSM_REAP_KEEP, "active restore keeps the channel");
	is_int(v.active_restores, 1, "an active load counts as an active restore");
	is_int(v.pending_spawns, 0, "... not as a pending spawn");
	/* An active spawn is what the daemon's view counts as a pending spawn. */
	start(&w, &b, RFSM_SPAWN, 0);
	memset(&v, 0, sizeof(v));
	rfsm_chan_view_add(&v, &b);
	is_int(v.pending_spawns, 1, "an active spawn counts as a pending spawn");
	is_int(v.active_restores, 0, "... not as an active restore");
	is_int(rfsm_chan_reap(&v), RFSM_REAP_KEEP, "a pending spawn keeps the channel");
}

/* A request queued behind its channel's start: the deadline counts from dispatch. */
static void
test_queued(void)
{
	struct world w;
	struct rfsm m;

	memset(&w, 0, sizeof(w));
	w.now = 1000;
	w.m = &m;
	w.capacity = 1;
	rfsm_init_queued(&m, &ops, &w, RFSM_SPAWN, "", BUDGET);
	is_int(m.state, RFSM_ACTIVE, "queued: active");
	ok(!w.timer_armed, "queued: no deadline while the channel starts");
	advance(&w, 5 * BUDGET);
	is_int(m.state, RFSM_ACTIVE, "queued: still active long past the budget");
	rfsm_dispatched(&m);
	ok(w.timer_armed && w.timer_due == 1000 + 5 * BUDGET + BUDGET,
	    "dispatched: the deadline counts from now");
	advance(&w, BUDGET - 1);
	is_int(m.state, RFSM_ACTIVE, "1 ms before the dispatched deadline: active");
	advance(&w, 1);
	is_int(m.state, RFSM_ABANDONED, "at the dispatched deadline: abandoned");
	is_int(w.result, RFSM_RESULT_TIMEOUT, "public result timeout");
	rfsm_dispatched(&m);
	ok(w.timer_armed && w.timer_due == m.timer_due_ms &&
	    m.timer_due_ms == 1000 + 6 * BUDGET + BUDGET,
	    "dispatched again when not active: the grace timer stays");

	/* A channel that fails to start answers before any dispatch. */
	memset(&w, 0, sizeof(w));
	w.m = &m;
	w.capacity = 1;
	rfsm_init_queued(&m, &ops, &w, RFSM_LOAD, "s-1", BUDGET);
	is_int(rfsm_feed(&m, RFSM_EV_ANSWER_ERR), 1, "queued, failed start: acts");
	is_int(m.state, RFSM_FAILED, "queued, failed start: failed");
	is_int(w.releases, 1, "queued, failed start: capacity released");
	is_int(w.purges, 1, "queued, failed start: early events purged");
}

/* Random event sequences: the once-only effects stay once-only. */
static void
test_random(void)
{
	struct world w;
	struct rfsm m;
	int bad = 0;

	for (int run = 0; run < 4000; run++) {
		start(&w, &m, (enum rfsm_action)(run % 3), run % 2);
		for (int i = 0; i < 12; i++) {
			if (arc4random_uniform(4) == 0)
				advance(&w, arc4random_uniform(2 * BUDGET));
			else
				rfsm_feed(&m, (enum rfsm_event)arc4random_uniform(RFSM_NEVENTS));
		}
		if (w.npublic > 1 || w.closes > 1 || w.releases > 1 || w.finishes > 1 ||
		    w.releases != rfsm_terminal(m.state) ||
		    w.finishes != rfsm_terminal(m.state) ||
		    (m.state != RFSM_ACTIVE && w.npublic != 1) ||
		    (rfsm_terminal(m.state) && w.timer_armed) ||
		    w.capacity != !rfsm_terminal(m.state))
			bad++;
	}
	is_int(bad, 0, "4000 random walks keep every once-only effect once");
}

int
main(void)
{
	test_success();
	test_queued();
	test_failure();
	test_equal_time();
	test_abandon();
	test_empty_kill();
	test_late_close();
	test_quarantine();
	test_transport_and_reclaim();
	test_invalid_and_reentry();
	test_join();
	test_errors();
	test_channel();
	test_random();
	return done_testing();
}
