/* SPDX-License-Identifier: ISC */
/*
 * inflight.c: in-flight spawns (session/new) and restores (session/load,
 * session/resume).  One entry per session id; callers of the same action
 * and shape coalesce onto it, anything else gets 409 restore_in_progress.
 * inflight_start() is the one place a restore goes to the child; from there
 * the lifecycle machine of restore-fsm.c owns it: the deadline, the public
 * result, the abandoned settlement (one close, quarantine), the fence on
 * the id and the capacity slot.  Its world is inflight-ops.c, the public
 * answers inflight-reply.c, the fences and early events inflight-fence.c.
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>

#include "budget.h"
#include "clock.h"
#include "errors.h"
#include "log.h"
#include "inflight-int.h"
#include "trace.h"
#include "xmalloc.h"

static TAILQ_HEAD(, inflight) ops = TAILQ_HEAD_INITIALIZER(ops);
static size_t nops;

const char *
inflight_action_name(enum inflight_action a)
{
	return a == OP_LOAD ? "load" : a == OP_RESUME ? "resume" : "spawn";
}

int
inflight_is_active_spawn(const struct inflight *op)
{
	return op->action == OP_SPAWN && op->fsm.state == RFSM_ACTIVE;
}

struct inflight *
inflight_find(const char *id)
{
	struct inflight *op;

	TAILQ_FOREACH(op, &ops, entry)
		if (op->id[0] != '\0' && strcmp(op->id, id) == 0)
			return op;
	return NULL;
}

void
inflight_log_ids(const char *id, const char **rid, const char **tid)
{
	struct inflight *op = inflight_find(id);

	if (op != NULL) {
		*rid = op->log_rid;
		*tid = op->log_tid;
	}
}

struct inflight *
inflight_default_spawn(const char *workspace)
{
	struct inflight *op;

	TAILQ_FOREACH(op, &ops, entry)
		if (op->action == OP_SPAWN && op->is_default &&
		    op->fsm.state == RFSM_ACTIVE &&
		    strcmp(channel_workspace(op->ch), workspace) == 0)
			return op;
	return NULL;
}

/* Spawns and restores not yet given back to capacity, in workspace. */
size_t
inflight_count_ws(const char *workspace)
{
	struct inflight *op;
	size_t n = 0;

	TAILQ_FOREACH(op, &ops, entry)
		n += !op->released && strcmp(channel_workspace(op->ch),
		    workspace) == 0;
	return n;
}

const char *
inflight_label(const struct inflight *op)
{
	return op->id[0] != '\0' ? op->id : "(new)";
}

size_t
inflight_count(void)
{
	return nops;
}

void
inflight_join(struct inflight *op, struct evhttp_request *req, const char *client_id)
{
	struct inflight_waiter *w;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		http_error(req, "internal", NULL);
		return;
	}
	w->req = req;
	if (client_id != NULL)
		strlcpy(w->client_id, client_id, sizeof(w->client_id));
	TAILQ_INSERT_TAIL(&op->waiters, w, entry);
	log_debug("session %s: %s joined", op->id, inflight_action_name(op->action));
}

int
inflight_transcript_exists(const char *id)
{
	char *dir, *path;
	struct stat st;
	int found = 0;
	size_t i;

	/* A transcript of id in any workspace of the daemon. */
	for (i = 0; !found && i < conf.n_workspaces; i++) {
		dir = names_transcript_dir_ws(conf.workspaces[i]);
		path = NULL;
		if (dir != NULL && asprintf(&path, "%s/%s.jsonl", dir, id) != -1)
			found = stat(path, &st) == 0;
		free(path);
		free(dir);
	}
	return found;
}

static struct inflight *
inflight_new(const char *workspace, enum inflight_action action, const char *id,
    struct evhttp_request *req, const char *client_id)
{
	struct inflight *op;

	if ((op = calloc(1, sizeof(*op))) == NULL ||
	    (op->ch = channel_get(workspace)) == NULL) {
		free(op);
		http_error(req, "internal", NULL);
		return NULL;
	}
	op->action = action;
	if (id != NULL)
		strlcpy(op->id, id, sizeof(op->id));
	op->started_ms = clock_mono_ms();
	TAILQ_INIT(&op->waiters);
	TAILQ_INSERT_TAIL(&ops, op, entry);
	nops++;
	sessions_inflight_add(1);
	inflight_join(op, req, client_id);
	return op;
}

void
inflight_waiters_free(struct inflight *op)
{
	struct inflight_waiter *w;

	while ((w = TAILQ_FIRST(&op->waiters)) != NULL) {
		TAILQ_REMOVE(&op->waiters, w, entry);
		free(w);
	}
}

void
inflight_free(struct inflight *op)
{
	TAILQ_REMOVE(&ops, op, entry);
	nops--;
	if (!op->released)
		sessions_inflight_add(-1);
	inflight_waiters_free(op);
	if (op->timer != NULL)
		event_free(op->timer);
	channel_forget(op->req);
	channel_forget(op->close_req);
	json_object_put(op->answer);
	json_object_put(op->early);
	json_object_put(op->body);
	free(op);
}

/* _meta with the trace context of op's span. */
static json_object *
inflight_meta(struct inflight *op)
{
	json_object *meta = xjson_object_new_object();
	struct trace_ctx tc;
	char tp[TRACEPARENT_LEN + 1];

	if (op->span != NULL) {
		span_context(op->span, &tc);
		trace_format_traceparent(&tc, tp, sizeof(tp));
		json_object_object_add(meta, "qwen.telemetry.traceparent",
		    xjson_object_new_string(tp));
	}
	return meta;
}

static enum rfsm_action
fsm_action(enum inflight_action a)
{
	return a == OP_LOAD ? RFSM_LOAD : a == OP_RESUME ? RFSM_RESUME : RFSM_SPAWN;
}

/* On the wire: the machine's deadline starts (the channel's start has its own). */
static void
inflight_sent(void *arg)
{
	struct inflight *op = arg;

	span_set_int(op->span, "qwen-code.daemon.channel.id", channel_serial(op->ch));
	rfsm_dispatched(&op->fsm);
}

/*
 * From here op's lifecycle machine owns it: send method (params taken) to
 * the child under budget_ms, counted from when the request goes out.
 */
static void
inflight_dispatch(struct inflight *op, const char *method, json_object *params,
    int64_t budget_ms)
{
	op->timer = evtimer_new(serve_base, inflight_on_timer, op);
	rfsm_init_queued(&op->fsm, &inflight_fsm_ops, op,
	    fsm_action(op->action), op->id, budget_ms);
	op->req = channel_request_sent(op->ch, method, params, 0,
	    inflight_on_answer, inflight_sent, op);
	if (op->req == NULL) {
		op->answer_o = CHANNEL_CLOSED;
		rfsm_feed(&op->fsm, RFSM_EV_TRANSPORT_CLOSED);	/* frees op */
	}
}

void
inflight_spawn(const char *workspace, const char *id, int is_default,
    json_object *body, struct evhttp_request *req, const char *client_id)
{
	struct inflight *op = inflight_new(workspace, OP_SPAWN, id, req,
	    client_id);
	json_object *p, *meta;

	if (op == NULL)
		return;
	op->body = json_object_get(body);
	if (id != NULL)
		inflight_fence_take(id);	/* the registration owns the id from now on */
	op->is_default = is_default;
	op->span = span_start("qwen-code.daemon.bridge", SPAN_KIND_CLIENT, NULL);
	span_set_str(op->span, "qwen-code.daemon.operation", "session.new");
	reqid_current(op->log_rid, op->log_tid, op->span);
	meta = inflight_meta(op);
	json_object_object_add(meta, "qwen.daemon.sessionInitializationDeadlineMs",
	    xjson_object_new_int64((int64_t)(clock_wall_ms() + (uint64_t)conf.init_timeout_ms)));
	if (id != NULL)
		json_object_object_add(meta, "qwen-code/sessionId", xjson_object_new_string(id));
	p = xjson_object_new_object();
	json_object_object_add(p, "cwd", xjson_object_new_string(channel_workspace(op->ch)));
	json_object_object_add(p, "mcpServers", xjson_object_new_array());
	json_object_object_add(p, "_meta", meta);
	if (id != NULL)
		span_set_str(op->span, "session.id", id);
	span_set_int(op->span, "qwen-code.daemon.session_new.timeout_ms",
	    conf.init_timeout_ms);
	inflight_dispatch(op, "session/new", p, conf.init_timeout_ms);
}

/*
 * The coalescing key of a restore: load's historyPageSize and
 * hideInheritedHistory; *summary: compactedReplayMode is "summary".
 */
static void
inflight_shape(enum inflight_action action, json_object *body, char *out, size_t size,
    int *summary)
{
	json_object *v;
	int64_t hps = 0;
	int hide = 0;

	*summary = 0;
	if (action != OP_LOAD) {
		snprintf(out, size, "resume");
		return;
	}
	if (json_object_object_get_ex(body, "historyPageSize", &v) &&
	    json_object_is_type(v, json_type_int))
		hps = json_object_get_int64(v);
	if (json_object_object_get_ex(body, "hideInheritedHistory", &v))
		hide = json_object_get_boolean(v);
	if (json_object_object_get_ex(body, "compactedReplayMode", &v) &&
	    json_object_is_type(v, json_type_string))
		*summary = strcmp(json_object_get_string(v), "summary") == 0;
	snprintf(out, size, "load:%lld:%d", (long long)hps, hide);
}

/*
 * A load's paging options to the child: historyPageSize (checked by the
 * route) and hideInheritedHistory (a branch without what it inherited).
 */
static void
inflight_replay_opts(json_object *body, json_object *meta)
{
	json_object *v;

	if (json_object_object_get_ex(body, "historyPageSize", &v) &&
	    json_object_is_type(v, json_type_int))
		json_object_object_add(meta, "qwen.session.loadReplayPageSize",
		    xjson_object_new_int64(json_object_get_int64(v)));
	if (json_object_object_get_ex(body, "hideInheritedHistory", &v) &&
	    json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v))
		json_object_object_add(meta, "qwen.session.loadReplayHideInherited",
		    xjson_object_new_boolean(1));
}

void
inflight_same_id(struct inflight *op, struct evhttp_request *req, const char *client_id,
    enum inflight_action action, json_object *body)
{
	char shape[sizeof(op->shape)];
	enum rfsm_join j;
	int summary, same;

	inflight_shape(action, body, shape, sizeof(shape), &summary);
	same = strcmp(shape, op->shape) == 0 && !(op->summary && !summary);
	j = rfsm_join(&op->fsm, fsm_action(action), same);
	if (j == RFSM_JOIN_COALESCE) {
		inflight_join(op, req, client_id);
		return;
	}
	log_info("session %s: %s refused: %s %s", op->id, inflight_action_name(action),
	    inflight_action_name(op->action), rfsm_state_name(op->fsm.state));
	http_send_qerr(req,
	    rfsm_err_in_progress(&op->fsm, fsm_action(action), j));
}

void
inflight_restore(const char *workspace, enum inflight_action action, const char *id,
    json_object *body, struct evhttp_request *req, const char *client_id)
{
	struct inflight *op = inflight_new(workspace, action, id, req,
	    client_id);

	if (op == NULL)
		return;
	op->body = json_object_get(body);
	inflight_shape(action, body, op->shape, sizeof(op->shape),
	    &op->summary);
	inflight_start(op);
}

void
inflight_start(struct inflight *op)
{
	json_object *p, *meta;
	int load = op->action == OP_LOAD;

	inflight_fence_take(op->id);	/* ownership moves here, before the ACP call */
	op->span = span_start("qwen-code.daemon.bridge", SPAN_KIND_CLIENT, NULL);
	span_set_str(op->span, "qwen-code.daemon.operation", "session.restore");
	reqid_current(op->log_rid, op->log_tid, op->span);
	span_set_str(op->span, "qwen-code.daemon.bridge.operation",
	    load ? "session.load" : "session.resume");
	span_set_str(op->span, "session.id", op->id);
	span_set_int(op->span, "qwen-code.daemon.session_restore.timeout_ms",
	    conf.restore_timeout_ms);
	meta = inflight_meta(op);
	if (load)
		json_object_object_add(meta, "qwen.session.loadReplayMode",
		    xjson_object_new_string("bulk"));
	if (load)
		inflight_replay_opts(op->body, meta);
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(op->id));
	json_object_object_add(p, "cwd", xjson_object_new_string(channel_workspace(op->ch)));
	json_object_object_add(p, "mcpServers", xjson_object_new_array());
	json_object_object_add(p, "_meta", meta);
	log_info("session %s: %s requested (budget %lld ms)", op->id,
	    inflight_action_name(op->action), (long long)conf.restore_timeout_ms);
	inflight_dispatch(op, load ? "session/load" : "session/resume", p,
	    conf.restore_timeout_ms);
}

/* ---- the channel, seen by the restores ------------------------------------ */

void
inflight_chan_view(struct channel *ch, struct rfsm_chan_view *v)
{
	struct inflight *op;

	memset(v, 0, sizeof(*v));
	v->live_sessions = (unsigned)channel_nsessions(ch);
	v->control_ops = channel_control_ops(ch);
	v->empty_reap_pending = channel_idle_pending(ch);
	TAILQ_FOREACH(op, &ops, entry) {
		if (op->ch != ch)
			continue;
		rfsm_chan_view_add(v, &op->fsm);
	}
}

enum rfsm_admit
inflight_admit(struct evhttp_request *req, struct channel *ch)
{
	struct rfsm_chan_view v;
	enum rfsm_admit a;
	const char *reason;
	int64_t budget;

	if (ch != NULL)
		inflight_chan_view(ch, &v);
	else
		memset(&v, 0, sizeof(v));
	a = rfsm_admit_fresh(&v, sessions_capacity_left(ch != NULL ?
	    channel_workspace(ch) : conf.workspace, NULL));
	if (a == RFSM_ADMIT_UNAVAILABLE) {
		reason = rfsm_chan_unavailable(&v, &budget);
		log_info("fresh work refused: %s", reason);
		http_send_qerr(req, rfsm_err_unavailable(reason, budget));
	}
	return a;
}

int
inflight_admit_control(struct evhttp_request *req, struct channel *ch)
{
	struct rfsm_chan_view v;
	const char *reason;
	int64_t budget;

	inflight_chan_view(ch, &v);
	if ((reason = rfsm_chan_unavailable(&v, &budget)) == NULL)
		return 0;
	log_info("fresh work refused: %s", reason);
	http_send_qerr(req, rfsm_err_unavailable(reason, budget));
	return -1;
}

void
inflight_channel_exited(struct channel *ch)
{
	struct inflight *op, *next;

	inflight_fences_channel_exited(ch);
	TAILQ_FOREACH_SAFE(op, &ops, entry, next)
		if (op->ch == ch && rfsm_unsettled(op->fsm.state))
			rfsm_feed(&op->fsm, RFSM_EV_TRANSPORT_CLOSED);	/* may free op */
}

void
inflight_stats(size_t *active, size_t *unsettled, size_t *overdue, size_t *quarantined)
{
	struct inflight *op;

	*active = *unsettled = *overdue = *quarantined = 0;
	TAILQ_FOREACH(op, &ops, entry) {
		*active += op->fsm.state == RFSM_ACTIVE;
		*unsettled += rfsm_unsettled(op->fsm.state);
		*overdue += rfsm_unsettled(op->fsm.state) && op->fsm.overdue;
		*quarantined += op->fsm.state == RFSM_QUARANTINED;
	}
}
