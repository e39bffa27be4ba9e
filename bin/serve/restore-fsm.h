/* SPDX-License-Identifier: ISC */
/*
 * restore-fsm.h: the lifecycle of one in-flight restore (seed 000), as a
 * table of states by events.
 *
 * One struct rfsm per restoring session id (and per session/new, under the
 * initialize budget, whose reasons are new_session_*).  It owns the split
 * between the public result (what callers get) and the settlement (the
 * real ACP request plus its cleanup).  The machine is pure: no libevent,
 * no I/O.  Time comes from ops->now_ms, and everything it does to the
 * world goes through the rfsm_ops callbacks, so it is unit-tested on its
 * own with a fake clock.
 *
 *   ACTIVE --answer ok--> SUCCEEDED            (terminal)
 *   ACTIVE --answer err / transport closed--> FAILED        (terminal)
 *   ACTIVE --deadline--> ABANDONED  (504 to callers, fence, grace timer)
 *   ABANDONED --grace expired--> OVERDUE
 *   ABANDONED|OVERDUE --late answer--> CLEANUP  (exactly one close)
 *   CLEANUP --close ok / not found--> SETTLED
 *   CLEANUP --close failed / timeout--> QUARANTINED
 *   ABANDONED|OVERDUE|CLEANUP|QUARANTINED --transport closed--> SETTLED
 *   ABANDONED|OVERDUE --id reclaimed--> SETTLED
 *
 * Whichever event observes ACTIVE first decides the public result: the
 * deadline and the answer are plain events, so their order on the loop is
 * the order they are fed, also when both are ready in one loop iteration.
 * The restore's capacity is released exactly once, on SUCCEEDED (it moves
 * to the live session), FAILED or SETTLED; never while hidden work may
 * still run.  The session-id fence set at abandonment is not lifted by the
 * machine: it outlives the entry until a new registration for the id takes
 * ownership or the channel exits (the caller's business).
 */
#ifndef QWEN_SERVE_RESTORE_FSM_H
#define QWEN_SERVE_RESTORE_FSM_H

#include <stddef.h>
#include <stdint.h>

#define RFSM_ID_MAX	128
#define RFSM_QUEUE	8	/* events raised from inside actions */

enum rfsm_state {
	RFSM_ACTIVE,
	RFSM_ABANDONED,
	RFSM_OVERDUE,
	RFSM_CLEANUP,
	RFSM_QUARANTINED,
	RFSM_SETTLED,		/* terminal: the abandoned work is settled */
	RFSM_SUCCEEDED,		/* terminal: answered in time, registered */
	RFSM_FAILED,		/* terminal: failed in time */
	RFSM_NSTATES
};

enum rfsm_event {
	RFSM_EV_ANSWER_OK,		/* the ACP load/resume succeeded */
	RFSM_EV_ANSWER_ERR,		/* ... failed (JSON-RPC error) */
	RFSM_EV_DEADLINE,		/* the restore budget ran out */
	RFSM_EV_GRACE_EXPIRED,		/* one further budget after that */
	RFSM_EV_CLOSE_OK,		/* qwen/control/session/close: closed */
	RFSM_EV_CLOSE_NOT_FOUND,	/* ... -32002: already clean */
	RFSM_EV_CLOSE_FAILED,		/* ... any other error: uncertain */
	RFSM_EV_CLOSE_TIMEOUT,		/* ... no answer in time: uncertain */
	RFSM_EV_TRANSPORT_CLOSED,	/* the channel (child) is gone */
	RFSM_EV_ID_RECLAIMED,		/* a live session owns the id now */
	RFSM_NEVENTS
};

enum rfsm_action { RFSM_SPAWN, RFSM_LOAD, RFSM_RESUME };

/* What the callers of the restore get. */
enum rfsm_result { RFSM_RESULT_SUCCESS, RFSM_RESULT_FAILURE,
	    RFSM_RESULT_TIMEOUT };

/*
 * The world, as seen by the machine.  ctx is rfsm_init()'s.  Every
 * callback is required except trace.  An action may feed the machine again
 * (say send_close fails at once and the caller feeds CLOSE_FAILED): the
 * event is queued and handled after the current one.  finish is called
 * last, once, on reaching a terminal state; the caller may free the
 * machine in it (the machine does not touch itself afterwards).
 */
struct rfsm_chan_view;
struct rfsm_ops {
	uint64_t (*now_ms)(void *ctx);
	/* Answer every waiting caller (success: register the session). */
	void	(*public_result)(void *ctx, enum rfsm_result);
	/* Send the one qwen/control/session/close for the id. */
	void	(*send_close)(void *ctx);
	/* Mark the channel dying now and end its child (TERM, KILL) later. */
	void	(*kill_channel_async)(void *ctx);
	/* One timer per machine: arm (replacing) or cancel. */
	void	(*arm_timer)(void *ctx, uint64_t ms);
	void	(*cancel_timer)(void *ctx);
	/* Give back the restore's admission and capacity slot. */
	void	(*release_capacity)(void *ctx);
	/*
	 * Abandonment: take the id out of the pending set, drop its early
	 * events, fence late notifications for it.
	 */
	void	(*fence_on)(void *ctx);
	/* A failed attempt: purge buffered early events, tombstone the id. */
	void	(*purge_early)(void *ctx);
	/* The channel's other work (this machine excluded or not ACTIVE). */
	void	(*channel_view)(void *ctx, struct rfsm_chan_view *out);
	/* Condemnation may have changed: re-derive the channel's policy. */
	void	(*channel_changed)(void *ctx);
	/* Span event name with one string attribute (key NULL: none). */
	void	(*trace)(void *ctx, const char *event, const char *key,
		    const char *value);
	void	(*finish)(void *ctx, enum rfsm_state);
};

struct rfsm {
	enum rfsm_state		 state;
	enum rfsm_action	 action;
	char			 id[RFSM_ID_MAX + 1];
	int64_t			 budget_ms;	/* restore budget (deadline, grace) */
	const struct rfsm_ops	*ops;
	void			*ctx;
	uint64_t		 started_ms;
	uint64_t		 public_ms;	/* 0 until the public result */
	uint64_t		 timer_due_ms;	/* 0: no timer armed */
	int			 overdue;	/* grace expired before settling */
	int			 late_ok;	/* the late answer was a success */
	unsigned		 closes;	/* close requests sent (<= 1) */
	unsigned		 released;	/* capacity releases (<= 1) */
	int			 busy;		/* inside rfsm_feed */
	enum rfsm_event		 queue[RFSM_QUEUE];
	size_t			 nqueue;
};

/*
 * Start a machine in ACTIVE and arm the deadline (budget_ms, 1..2^31-1).
 * The capacity slot is the caller's, taken before; the machine gives it
 * back.  id is copied (cut at RFSM_ID_MAX).  ops and ctx are borrowed.
 */
void	rfsm_init(struct rfsm *, const struct rfsm_ops *ops, void *ctx,
	    enum rfsm_action, const char *id, int64_t budget_ms);
/*
 * As rfsm_init, for a request still waiting for its channel to start: no
 * deadline until rfsm_dispatched() (the channel's own start has its own).
 */
void	rfsm_init_queued(struct rfsm *, const struct rfsm_ops *ops, void *ctx,
	    enum rfsm_action, const char *id, int64_t budget_ms);
/* The request went on the wire: the deadline counts from now (ACTIVE only). */
void	rfsm_dispatched(struct rfsm *);

/*
 * Feed one event.  Returns 1 when the table moved or acted, 0 when the
 * event is a no-op in this state (a stale timer, a duplicate answer), -1
 * when the event cannot happen in this state (state unchanged), or 2 when
 * it was queued because an action is running.
 */
int	rfsm_feed(struct rfsm *, enum rfsm_event);

/* The event a firing of the one timer means in the current state, or -1. */
int	rfsm_timer_event(const struct rfsm *);

int	rfsm_terminal(enum rfsm_state);
/* Abandoned and not settled: ABANDONED, OVERDUE, CLEANUP, QUARANTINED. */
int	rfsm_unsettled(enum rfsm_state);
const char *rfsm_state_name(enum rfsm_state);
const char *rfsm_event_name(enum rfsm_event);
const char *rfsm_action_name(enum rfsm_action);

/* ---- joining an in-flight restore -------------------------------------- */

enum rfsm_join {
	RFSM_JOIN_NONE,		/* the owner is gone (terminal): go ahead */
	RFSM_JOIN_COALESCE,	/* wait for the owner's result, attached:true */
	RFSM_JOIN_CONFLICT,	/* 409 restore_in_progress, reason restore_in_progress */
	RFSM_JOIN_AWAITING,	/* 409 ..., reason awaiting_abandoned_cleanup */
};

/*
 * A same-id request while owner exists: same action and same shape coalesce
 * while ACTIVE; anything else while ACTIVE conflicts; every request while
 * the owner is abandoned and unsettled waits for its cleanup.
 */
enum rfsm_join	rfsm_join(const struct rfsm *owner, enum rfsm_action requested,
		    int same_shape);

/* ---- the channel, derived ---------------------------------------------- */

/*
 * What a channel holds.  Visible work is what a client can see or wait
 * on; abandoned restores are not visible work.  The caller fills
 * live_sessions, control_ops and empty_reap_pending, rfsm_chan_view_add()
 * the rest from each machine.
 */
struct rfsm_chan_view {
	unsigned	 live_sessions;
	unsigned	 pending_spawns;	/* ACTIVE spawn machines */
	unsigned	 control_ops;
	int		 empty_reap_pending;	/* the ordinary idle reap */
	unsigned	 active_restores;	/* ACTIVE load/resume machines */
	unsigned	 unsettled;		/* abandoned, unsettled machines */
	unsigned	 overdue;
	unsigned	 quarantined;
	const char	*overdue_reason;	/* of the first overdue machine */
	int64_t		 overdue_budget_ms;
	const char	*quarantine_reason;
	int64_t		 quarantine_budget_ms;
};

/* Count m into v (m borrowed; a terminal machine counts for nothing). */
void	rfsm_chan_view_add(struct rfsm_chan_view *v, const struct rfsm *m);

int	rfsm_chan_visible_work(const struct rfsm_chan_view *);

enum rfsm_reap {
	RFSM_REAP_KEEP,		/* visible work: the child stays */
	RFSM_REAP_NOW,		/* drained and condemned: recycle the child */
	RFSM_REAP_IDLE_POLICY,	/* drained, not condemned: the idle policy */
};

/*
 * Condemnation, derived and never sticky: a channel is reaped when its
 * visible work has drained while an empty reap is pending, an abandoned
 * restore is unsettled, or it is quarantined.  A channel with visible work
 * is never reaped.
 */
enum rfsm_reap	rfsm_chan_reap(const struct rfsm_chan_view *);

/*
 * Fresh spawn/load/resume on the channel: the acp_channel_unavailable
 * reason (quarantine first, then overdue) or NULL.  *budget_ms (may be
 * NULL) gets the budget behind the reason's Retry-After.
 */
const char	*rfsm_chan_unavailable(const struct rfsm_chan_view *,
		    int64_t *budget_ms);

enum rfsm_admit {
	RFSM_ADMIT_OK,
	RFSM_ADMIT_UNAVAILABLE,	/* 503 acp_channel_unavailable */
	RFSM_ADMIT_CAPACITY,	/* 503 session_limit_exceeded */
};

/* Admission of fresh work: the channel's state is checked before capacity. */
enum rfsm_admit	rfsm_admit_fresh(const struct rfsm_chan_view *,
	    int capacity_left);

/* ---- errors (lib/errors.h catalog); caller frees with qerr_free() ------- */

struct qerr;

/* 504 session_restore_timeout of m: sessionId, action, timeoutMs. */
struct qerr	*rfsm_err_timeout(const struct rfsm *m);
/*
 * 409 restore_in_progress for a join of requested onto owner: reason
 * restore_in_progress (Retry-After 5) or awaiting_abandoned_cleanup
 * (Retry-After: owner's budget clamped to 5..120 s).
 */
struct qerr	*rfsm_err_in_progress(const struct rfsm *owner,
		    enum rfsm_action requested, enum rfsm_join);
/* 503 acp_channel_unavailable with reason and its budget's Retry-After. */
struct qerr	*rfsm_err_unavailable(const char *reason, int64_t budget_ms);

#endif
