/* SPDX-License-Identifier: ISC */
/*
 * restore-fsm.c: the in-flight restore lifecycle of seed 000 as one table
 * of states by events, with one small action per cell.  See restore-fsm.h.
 */
#include "config.h"

#include <string.h>

#include "budget.h"
#include "errors.h"
#include "restore-fsm.h"

typedef void	(*rfsm_act)(struct rfsm *, enum rfsm_event);

/*
 * One cell.  defined: the event may happen in the state (an undefined cell
 * is a caller bug, reported as -1).  act NULL with next == the state itself
 * is an explicit no-op.
 */
struct rfsm_trans {
	int		 defined;
	enum rfsm_state	 next;
	rfsm_act	 act;
};

/* ---- actions ------------------------------------------------------------ */

static void
trace(struct rfsm *m, const char *event, const char *key, const char *value)
{
	if (m->ops->trace != NULL)
		m->ops->trace(m->ctx, event, key, value);
}

/* Cancel the one timer (harmless when it is not armed or has fired). */
static void
cancel_timer(struct rfsm *m)
{
	m->ops->cancel_timer(m->ctx);
	m->timer_due_ms = 0;
}

static void
arm_timer(struct rfsm *m, uint64_t ms)
{
	m->timer_due_ms = m->ops->now_ms(m->ctx) + ms;
	if (m->timer_due_ms == 0)
		m->timer_due_ms = 1;
	m->ops->arm_timer(m->ctx, ms);
}

/* The one release of the restore's admission and capacity. */
static void
release(struct rfsm *m)
{
	if (m->released++ == 0)
		m->ops->release_capacity(m->ctx);
}

static void
publish(struct rfsm *m, enum rfsm_result r)
{
	static const char *const names[] = { "success", "failure", "timeout" };

	m->public_ms = m->ops->now_ms(m->ctx);
	if (m->public_ms == 0)
		m->public_ms = 1;
	trace(m, "session.restore.public_result", "result", names[r]);
	m->ops->public_result(m->ctx, r);
}

/* ACTIVE, answered in time: the session registers and takes the capacity. */
static void
act_succeed(struct rfsm *m, enum rfsm_event ev)
{
	(void)ev;
	cancel_timer(m);
	publish(m, RFSM_RESULT_SUCCESS);
	release(m);
}

/* ACTIVE, failed in time: early events go, the tombstone comes back. */
static void
act_fail(struct rfsm *m, enum rfsm_event ev)
{
	(void)ev;
	cancel_timer(m);
	m->ops->purge_early(m->ctx);
	publish(m, RFSM_RESULT_FAILURE);
	release(m);
	m->ops->channel_changed(m->ctx);
}

/*
 * ACTIVE, the deadline won: 504 now, fence the id, and wait one further
 * budget for the settlement.  A channel with nothing else is killed at
 * once (asynchronously: the 504 does not wait); one with siblings stays.
 */
static void
act_abandon(struct rfsm *m, enum rfsm_event ev)
{
	struct rfsm_chan_view v;

	(void)ev;
	cancel_timer(m);
	m->ops->fence_on(m->ctx);
	publish(m, RFSM_RESULT_TIMEOUT);
	arm_timer(m, (uint64_t)m->budget_ms);
	memset(&v, 0, sizeof(v));
	m->ops->channel_view(m->ctx, &v);
	if (!rfsm_chan_visible_work(&v))
		m->ops->kill_channel_async(m->ctx);
	m->ops->channel_changed(m->ctx);
}

/* Abandoned for one further budget: fresh work on the channel stops. */
static void
act_overdue(struct rfsm *m, enum rfsm_event ev)
{
	(void)ev;
	cancel_timer(m);
	m->overdue = 1;
	trace(m, "session.restore.settlement_overdue", NULL, NULL);
	m->ops->channel_changed(m->ctx);
}

/* The late answer: exactly one close, whatever it said. */
static void
act_late(struct rfsm *m, enum rfsm_event ev)
{
	m->late_ok = ev == RFSM_EV_ANSWER_OK;
	cancel_timer(m);
	trace(m, "session.restore.late_result", "result",
	    m->late_ok ? "success" : "failure");
	if (m->closes++ == 0)
		m->ops->send_close(m->ctx);
}

static const char *
cleanup_result(enum rfsm_event ev)
{
	switch (ev) {
	case RFSM_EV_CLOSE_OK:
		return "closed";
	case RFSM_EV_CLOSE_NOT_FOUND:
		return "not_found";
	case RFSM_EV_ID_RECLAIMED:
		return "id_reclaimed";
	case RFSM_EV_CLOSE_FAILED:
	case RFSM_EV_CLOSE_TIMEOUT:
		return "quarantined";
	default:
		return "transport_closed";
	}
}

/* Settled: admission, capacity and the entry go; the fence stays. */
static void
act_settle(struct rfsm *m, enum rfsm_event ev)
{
	cancel_timer(m);
	trace(m, "session.restore.cleanup", "cleanup_result", cleanup_result(ev));
	release(m);
	m->overdue = 0;
	m->ops->channel_changed(m->ctx);
}

/* The cleanup's outcome is unknown: the channel takes no fresh work. */
static void
act_quarantine(struct rfsm *m, enum rfsm_event ev)
{
	cancel_timer(m);
	trace(m, "session.restore.cleanup", "cleanup_result", cleanup_result(ev));
	m->ops->channel_changed(m->ctx);
}

/* ---- the table ---------------------------------------------------------- */

#define T(n, a)		{ 1, RFSM_##n, a }
#define NOOP(s)		{ 1, RFSM_##s, NULL }

static const struct rfsm_trans table[RFSM_NSTATES][RFSM_NEVENTS] = {
	[RFSM_ACTIVE] = {
		[RFSM_EV_ANSWER_OK]		= T(SUCCEEDED, act_succeed),
		[RFSM_EV_ANSWER_ERR]		= T(FAILED, act_fail),
		[RFSM_EV_TRANSPORT_CLOSED]	= T(FAILED, act_fail),
		[RFSM_EV_DEADLINE]		= T(ABANDONED, act_abandon),
	},
	[RFSM_ABANDONED] = {
		[RFSM_EV_ANSWER_OK]		= T(CLEANUP, act_late),
		[RFSM_EV_ANSWER_ERR]		= T(CLEANUP, act_late),
		[RFSM_EV_DEADLINE]		= NOOP(ABANDONED),
		[RFSM_EV_GRACE_EXPIRED]		= T(OVERDUE, act_overdue),
		[RFSM_EV_TRANSPORT_CLOSED]	= T(SETTLED, act_settle),
		[RFSM_EV_ID_RECLAIMED]		= T(SETTLED, act_settle),
	},
	[RFSM_OVERDUE] = {
		[RFSM_EV_ANSWER_OK]		= T(CLEANUP, act_late),
		[RFSM_EV_ANSWER_ERR]		= T(CLEANUP, act_late),
		[RFSM_EV_DEADLINE]		= NOOP(OVERDUE),
		[RFSM_EV_GRACE_EXPIRED]		= NOOP(OVERDUE),
		[RFSM_EV_TRANSPORT_CLOSED]	= T(SETTLED, act_settle),
		[RFSM_EV_ID_RECLAIMED]		= T(SETTLED, act_settle),
	},
	[RFSM_CLEANUP] = {
		[RFSM_EV_ANSWER_OK]		= NOOP(CLEANUP),
		[RFSM_EV_ANSWER_ERR]		= NOOP(CLEANUP),
		[RFSM_EV_DEADLINE]		= NOOP(CLEANUP),
		[RFSM_EV_GRACE_EXPIRED]		= NOOP(CLEANUP),
		[RFSM_EV_CLOSE_OK]		= T(SETTLED, act_settle),
		[RFSM_EV_CLOSE_NOT_FOUND]	= T(SETTLED, act_settle),
		[RFSM_EV_CLOSE_FAILED]		= T(QUARANTINED, act_quarantine),
		[RFSM_EV_CLOSE_TIMEOUT]		= T(QUARANTINED, act_quarantine),
		[RFSM_EV_TRANSPORT_CLOSED]	= T(SETTLED, act_settle),
		[RFSM_EV_ID_RECLAIMED]		= NOOP(CLEANUP),
	},
	[RFSM_QUARANTINED] = {
		[RFSM_EV_ANSWER_OK]		= NOOP(QUARANTINED),
		[RFSM_EV_ANSWER_ERR]		= NOOP(QUARANTINED),
		[RFSM_EV_DEADLINE]		= NOOP(QUARANTINED),
		[RFSM_EV_GRACE_EXPIRED]		= NOOP(QUARANTINED),
		[RFSM_EV_CLOSE_OK]		= NOOP(QUARANTINED),
		[RFSM_EV_CLOSE_NOT_FOUND]	= NOOP(QUARANTINED),
		[RFSM_EV_CLOSE_FAILED]		= NOOP(QUARANTINED),
		[RFSM_EV_CLOSE_TIMEOUT]		= NOOP(QUARANTINED),
		[RFSM_EV_TRANSPORT_CLOSED]	= T(SETTLED, act_settle),
		[RFSM_EV_ID_RECLAIMED]		= NOOP(QUARANTINED),
	},
	/* Terminal states take every event as a no-op (late timers, echoes). */
	[RFSM_SETTLED] = {
		[0 ... RFSM_NEVENTS - 1]	= NOOP(SETTLED),
	},
	[RFSM_SUCCEEDED] = {
		[0 ... RFSM_NEVENTS - 1]	= NOOP(SUCCEEDED),
	},
	[RFSM_FAILED] = {
		[0 ... RFSM_NEVENTS - 1]	= NOOP(FAILED),
	},
};

#undef T
#undef NOOP

/* ---- the machine -------------------------------------------------------- */

void
rfsm_init(struct rfsm *m, const struct rfsm_ops *ops, void *ctx,
    enum rfsm_action action, const char *id, int64_t budget_ms)
{
	rfsm_init_queued(m, ops, ctx, action, id, budget_ms);
	arm_timer(m, (uint64_t)m->budget_ms);
}

void
rfsm_init_queued(struct rfsm *m, const struct rfsm_ops *ops, void *ctx,
    enum rfsm_action action, const char *id, int64_t budget_ms)
{
	memset(m, 0, sizeof(*m));
	m->state = RFSM_ACTIVE;
	m->action = action;
	strlcpy(m->id, id != NULL ? id : "", sizeof(m->id));
	m->budget_ms = budget_ms < 1 ? 1 : budget_ms > BUDGET_MAX_MS ?
	    BUDGET_MAX_MS : budget_ms;
	m->ops = ops;
	m->ctx = ctx;
	m->started_ms = ops->now_ms(ctx);
}

void
rfsm_dispatched(struct rfsm *m)
{
	if (m->state != RFSM_ACTIVE)
		return;
	m->started_ms = m->ops->now_ms(m->ctx);
	arm_timer(m, (uint64_t)m->budget_ms);
}

/* One event through the table; 1 acted, 0 no-op, -1 impossible. */
static int
step(struct rfsm *m, enum rfsm_event ev)
{
	const struct rfsm_trans *t;

	if ((unsigned)ev >= RFSM_NEVENTS)
		return -1;
	t = &table[m->state][ev];
	if (!t->defined)
		return -1;
	if (t->act == NULL && t->next == m->state)
		return 0;
	m->state = t->next;
	if (t->act != NULL)
		t->act(m, ev);
	return 1;
}

int
rfsm_feed(struct rfsm *m, enum rfsm_event ev)
{
	const struct rfsm_ops *ops = m->ops;
	void *ctx = m->ctx;
	enum rfsm_state was = m->state;
	int rv;

	if (m->busy) {
		if (m->nqueue == RFSM_QUEUE)
			return -1;
		m->queue[m->nqueue++] = ev;
		return 2;
	}
	m->busy = 1;
	rv = step(m, ev);
	for (size_t i = 0; i < m->nqueue; i++)
		(void)step(m, m->queue[i]);
	m->nqueue = 0;
	m->busy = 0;
	if (!rfsm_terminal(was) && rfsm_terminal(m->state))
		ops->finish(ctx, m->state);	/* may free m */
	return rv;
}

int
rfsm_timer_event(const struct rfsm *m)
{
	switch (m->state) {
	case RFSM_ACTIVE:
		return RFSM_EV_DEADLINE;
	case RFSM_ABANDONED:
		return RFSM_EV_GRACE_EXPIRED;
	default:
		return -1;
	}
}

int
rfsm_terminal(enum rfsm_state s)
{
	return s == RFSM_SETTLED || s == RFSM_SUCCEEDED || s == RFSM_FAILED;
}

int
rfsm_unsettled(enum rfsm_state s)
{
	return s == RFSM_ABANDONED || s == RFSM_OVERDUE || s == RFSM_CLEANUP ||
	    s == RFSM_QUARANTINED;
}

const char *
rfsm_state_name(enum rfsm_state s)
{
	static const char *const names[RFSM_NSTATES] = {
		"active", "abandoned", "overdue", "cleanup", "quarantined",
		"settled", "succeeded", "failed",
	};

	return (unsigned)s < RFSM_NSTATES ? names[s] : "?";
}

const char *
rfsm_event_name(enum rfsm_event ev)
{
	static const char *const names[RFSM_NEVENTS] = {
		"answer_ok", "answer_err", "deadline", "grace_expired",
		"close_ok", "close_not_found", "close_failed", "close_timeout",
		"transport_closed", "id_reclaimed",
	};

	return (unsigned)ev < RFSM_NEVENTS ? names[ev] : "?";
}

const char *
rfsm_action_name(enum rfsm_action a)
{
	return a == RFSM_LOAD ? "load" : a == RFSM_RESUME ? "resume" : "spawn";
}

/* ---- joining ------------------------------------------------------------ */

enum rfsm_join
rfsm_join(const struct rfsm *owner, enum rfsm_action requested, int same_shape)
{
	if (owner == NULL || rfsm_terminal(owner->state))
		return RFSM_JOIN_NONE;
	if (owner->state != RFSM_ACTIVE)
		return RFSM_JOIN_AWAITING;
	if (owner->action == requested && owner->action != RFSM_SPAWN && same_shape)
		return RFSM_JOIN_COALESCE;
	return RFSM_JOIN_CONFLICT;
}

/* ---- the channel -------------------------------------------------------- */

void
rfsm_chan_view_add(struct rfsm_chan_view *v, const struct rfsm *m)
{
	int spawn = m->action == RFSM_SPAWN;

	if (m->state == RFSM_ACTIVE) {
		if (spawn)
			v->pending_spawns++;
		else
			v->active_restores++;
		return;
	}
	if (!rfsm_unsettled(m->state))
		return;
	v->unsettled++;
	if (m->state == RFSM_QUARANTINED) {
		if (v->quarantined++ == 0) {
			v->quarantine_reason = spawn ?
			    "new_session_cleanup_failed" : "restore_cleanup_failed";
			v->quarantine_budget_ms = m->budget_ms;
		}
	} else if (m->overdue) {
		if (v->overdue++ == 0) {
			v->overdue_reason = spawn ?
			    "new_session_settlement_overdue" :
			    "restore_settlement_overdue";
			v->overdue_budget_ms = m->budget_ms;
		}
	}
}

int
rfsm_chan_visible_work(const struct rfsm_chan_view *v)
{
	return v->live_sessions > 0 || v->pending_spawns > 0 ||
	    v->control_ops > 0 || v->active_restores > 0;
}

enum rfsm_reap
rfsm_chan_reap(const struct rfsm_chan_view *v)
{
	if (rfsm_chan_visible_work(v))
		return RFSM_REAP_KEEP;
	if (v->empty_reap_pending || v->unsettled > 0 || v->quarantined > 0)
		return RFSM_REAP_NOW;
	return RFSM_REAP_IDLE_POLICY;
}

const char *
rfsm_chan_unavailable(const struct rfsm_chan_view *v, int64_t *budget_ms)
{
	const char *reason = NULL;
	int64_t budget = -1;

	if (v->quarantined > 0) {
		reason = v->quarantine_reason;
		budget = v->quarantine_budget_ms;
	} else if (v->overdue > 0) {
		reason = v->overdue_reason;
		budget = v->overdue_budget_ms;
	}
	if (budget_ms != NULL)
		*budget_ms = budget;
	return reason;
}

enum rfsm_admit
rfsm_admit_fresh(const struct rfsm_chan_view *v, int capacity_left)
{
	if (rfsm_chan_unavailable(v, NULL) != NULL)
		return RFSM_ADMIT_UNAVAILABLE;
	return capacity_left > 0 ? RFSM_ADMIT_OK : RFSM_ADMIT_CAPACITY;
}

/* ---- errors ------------------------------------------------------------- */

struct qerr *
rfsm_err_timeout(const struct rfsm *m)
{
	struct qerr *e;

	if (m->action == RFSM_SPAWN) {
		if ((e = qerr_new("init_timeout", "AcpSessionBridge session/new "
		    "timed out after %lldms", (long long)m->budget_ms)) == NULL)
			return NULL;
		qerr_set_int(e, "timeoutMs", m->budget_ms);
		qerr_set_budget(e, m->budget_ms);
		return e;
	}
	if ((e = qerr_new("session_restore_timeout", NULL)) == NULL)
		return NULL;
	qerr_set_str(e, "sessionId", m->id);
	qerr_set_str(e, "action", rfsm_action_name(m->action));
	qerr_set_int(e, "timeoutMs", m->budget_ms);
	qerr_set_budget(e, m->budget_ms);
	return e;
}

struct qerr *
rfsm_err_in_progress(const struct rfsm *owner, enum rfsm_action requested,
    enum rfsm_join j)
{
	struct qerr *e;

	if ((e = qerr_new("restore_in_progress", NULL)) == NULL)
		return NULL;
	if (j == RFSM_JOIN_AWAITING) {
		qerr_set_reason(e, "awaiting_abandoned_cleanup");
		qerr_set_budget(e, owner->budget_ms);
	} else
		qerr_set_reason(e, "restore_in_progress");
	qerr_set_str(e, "sessionId", owner->id);
	qerr_set_str(e, "activeAction", rfsm_action_name(owner->action));
	qerr_set_str(e, "requestedAction", rfsm_action_name(requested));
	return e;
}

struct qerr *
rfsm_err_unavailable(const char *reason, int64_t budget_ms)
{
	struct qerr *e;

	if ((e = qerr_new("acp_channel_unavailable", NULL)) == NULL)
		return NULL;
	qerr_set_reason(e, reason);
	qerr_set_budget(e, budget_ms);
	return e;
}
