/*
 * restore.c: in-flight spawns (session/new) and restores (session/load,
 * session/resume).  One entry per session id; callers of the same action
 * and shape coalesce onto it, anything else gets 409 restore_in_progress.
 * restore_start() is the one place a restore goes to the child; from there
 * the lifecycle machine of restore-fsm.c owns it: the deadline, the public
 * result, the abandoned settlement (one close, quarantine), the fence on
 * the id and the capacity slot.  The callbacks at the end of this file
 * are the machine's world.
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
#include "serve.h"
#include "trace.h"

struct op_waiter {
	TAILQ_ENTRY(op_waiter)	 entry;
	struct evhttp_request	*req;
	char			 client_id[SERVE_CLIENT_ID_MAX + 1];
};

/*
 * A fenced id: late notifications for it on ch are dropped.  It outlives
 * the restore until a new registration for the id takes ownership or the
 * channel exits.
 */
struct fence {
	TAILQ_ENTRY(fence)	 entry;
	struct channel		*ch;
	char			 id[SERVE_SESSION_ID_MAX + 1];
};

#define EARLY_MAX	10000	/* buffered early updates per restore */

static TAILQ_HEAD(, inflight) ops = TAILQ_HEAD_INITIALIZER(ops);
static TAILQ_HEAD(, fence) fences = TAILQ_HEAD_INITIALIZER(fences);
static size_t nops;
static const struct rfsm_ops fsm_ops;

static void	on_timer(evutil_socket_t, short, void *);

const char *
op_action_name(enum op_action a)
{
	return a == OP_LOAD ? "load" : a == OP_RESUME ? "resume" : "spawn";
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

struct inflight *
inflight_default_spawn(void)
{
	struct inflight *op;

	TAILQ_FOREACH(op, &ops, entry)
		if (op->action == OP_SPAWN && op->is_default)
			return op;
	return NULL;
}

size_t
inflight_count(void)
{
	return nops;
}

void
inflight_join(struct inflight *op, struct evhttp_request *req, const char *client_id)
{
	struct op_waiter *w;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		http_error(req, "internal", NULL);
		return;
	}
	w->req = req;
	if (client_id != NULL)
		strlcpy(w->client_id, client_id, sizeof(w->client_id));
	TAILQ_INSERT_TAIL(&op->waiters, w, entry);
}

void
restore_in_progress(struct evhttp_request *req, struct inflight *op,
    enum op_action requested)
{
	struct qerr *e = qerr_new("restore_in_progress", NULL);

	if (e != NULL) {
		qerr_set_reason(e, "restore_in_progress");
		qerr_set_str(e, "sessionId", op->id);
		qerr_set_str(e, "activeAction", op_action_name(op->action));
		qerr_set_str(e, "requestedAction", op_action_name(requested));
	}
	http_send_qerr(req, e);
}

int
restore_transcript_exists(const char *id)
{
	char *dir = serve_transcript_dir(), *path = NULL;
	struct stat st;
	int found = 0;

	if (dir != NULL && asprintf(&path, "%s/%s.jsonl", dir, id) != -1)
		found = stat(path, &st) == 0;
	free(path);
	free(dir);
	return found;
}

static struct inflight *
op_new(enum op_action action, const char *id, struct evhttp_request *req,
    const char *client_id)
{
	struct inflight *op;

	if ((op = calloc(1, sizeof(*op))) == NULL ||
	    (op->ch = channel_get(conf.workspace)) == NULL) {
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

static void
waiters_free(struct inflight *op)
{
	struct op_waiter *w;

	while ((w = TAILQ_FIRST(&op->waiters)) != NULL) {
		TAILQ_REMOVE(&op->waiters, w, entry);
		free(w);
	}
}

static void
op_free(struct inflight *op)
{
	TAILQ_REMOVE(&ops, op, entry);
	nops--;
	if (!op->released)
		sessions_inflight_add(-1);
	waiters_free(op);
	if (op->timer != NULL)
		event_free(op->timer);
	channel_forget(op->req);
	channel_forget(op->close_req);
	json_object_put(op->answer);
	json_object_put(op->early);
	json_object_put(op->body);
	free(op);
}

/* ---- fences and early events --------------------------------------------- */

static struct fence *
fence_find(struct channel *ch, const char *id)
{
	struct fence *f;

	TAILQ_FOREACH(f, &fences, entry)
		if ((ch == NULL || f->ch == ch) && strcmp(f->id, id) == 0)
			return f;
	return NULL;
}

static void
fence_add(struct channel *ch, const char *id)
{
	struct fence *f;

	if (fence_find(ch, id) != NULL || (f = calloc(1, sizeof(*f))) == NULL)
		return;
	f->ch = ch;
	strlcpy(f->id, id, sizeof(f->id));
	TAILQ_INSERT_TAIL(&fences, f, entry);
}

/* A new registration for id takes ownership: its fences go. */
static void
fence_take(const char *id)
{
	struct fence *f;

	while ((f = fence_find(NULL, id)) != NULL) {
		TAILQ_REMOVE(&fences, f, entry);
		free(f);
	}
}

int
restore_route_early(struct channel *ch, const char *id, json_object *params)
{
	struct inflight *op = inflight_find(id);

	if (op != NULL && op->ch == ch &&
	    (!op->has_fsm || op->fsm.state == RFSM_ACTIVE)) {
		if (op->early == NULL)
			op->early = json_object_new_array();
		if (json_object_array_length(op->early) < EARLY_MAX)
			json_object_array_add(op->early, json_object_get(params));
		return 1;
	}
	if (fence_find(ch, id) != NULL) {
		log_debug("update for fenced session %s dropped", id);
		return 1;
	}
	return 0;
}

/* The buffered early updates go to the new session, in order. */
static void
early_drain(struct inflight *op, struct session *s)
{
	size_t n = op->early != NULL ? json_object_array_length(op->early) : 0;

	for (size_t i = 0; i < n; i++)
		bus_publish(s->bus, "session_update",
		    json_object_get(json_object_array_get_idx(op->early, i)),
		    NULL, NULL, 0);
	json_object_put(op->early);
	op->early = NULL;
}

/* A failed attempt: its early updates go, the id is tombstoned again. */
static void
early_purge(struct inflight *op)
{
	json_object_put(op->early);
	op->early = NULL;
	if (op->id[0] != '\0' && sessions_find(op->id) == NULL)
		session_tombstone(op->id);
}

/* _meta with the trace context of op's span. */
static json_object *
op_meta(struct inflight *op)
{
	json_object *meta = json_object_new_object();
	struct trace_ctx tc;
	char tp[TRACEPARENT_LEN + 1];

	if (op->span != NULL) {
		span_context(op->span, &tc);
		trace_format_traceparent(&tc, tp, sizeof(tp));
		json_object_object_add(meta, "qwen.telemetry.traceparent",
		    json_object_new_string(tp));
	}
	return meta;
}

/*
 * The ACP answer.  A spawn ends here; a restore's answer is an event for
 * its machine: in time it is the public result, after the deadline it is
 * the late result that the cleanup settles.
 */
static void
on_answer(void *arg, enum chan_outcome o, json_object *payload)
{
	struct inflight *op = arg;
	enum rfsm_event ev;

	op->req = NULL;
	if (!op->has_fsm) {
		restore_settle(op, o, payload);
		return;
	}
	if (op->fsm.state == RFSM_ACTIVE) {
		op->answer_o = o;
		op->answer = json_object_get(payload);
		ev = o == CHAN_RESULT ? RFSM_EV_ANSWER_OK :
		    o == CHAN_CLOSED ? RFSM_EV_TRANSPORT_CLOSED : RFSM_EV_ANSWER_ERR;
	} else if (o == CHAN_CLOSED || o == CHAN_INIT_TIMEOUT)
		ev = RFSM_EV_TRANSPORT_CLOSED;
	else if (sessions_find(op->id) != NULL)
		ev = RFSM_EV_ID_RECLAIMED;
	else
		ev = o == CHAN_RESULT ? RFSM_EV_ANSWER_OK : RFSM_EV_ANSWER_ERR;
	if (op->fsm.state != RFSM_ACTIVE)
		log_info("session %s: late %s %s after %llu ms", op->id,
		    op_action_name(op->action), ev == RFSM_EV_ANSWER_OK ? "success" :
		    rfsm_event_name(ev), (unsigned long long)(clock_mono_ms() - op->started_ms));
	rfsm_feed(&op->fsm, ev);
}

void
spawn_start(const char *id, int is_default, struct evhttp_request *req,
    const char *client_id)
{
	struct inflight *op = op_new(OP_SPAWN, id, req, client_id);
	json_object *p, *meta;

	if (op == NULL)
		return;
	if (id != NULL)
		fence_take(id);	/* the registration owns the id from now on */
	op->is_default = is_default;
	op->span = span_start("qwen-code.daemon.bridge", SPAN_KIND_CLIENT, NULL);
	span_set_str(op->span, "qwen-code.daemon.operation", "session.new");
	meta = op_meta(op);
	json_object_object_add(meta, "qwen.daemon.sessionInitializationDeadlineMs",
	    json_object_new_int64((int64_t)(clock_wall_ms() + (uint64_t)conf.init_timeout_ms)));
	if (id != NULL)
		json_object_object_add(meta, "qwen-code/sessionId", json_object_new_string(id));
	p = json_object_new_object();
	json_object_object_add(p, "cwd", json_object_new_string(conf.workspace));
	json_object_object_add(p, "mcpServers", json_object_new_array());
	json_object_object_add(p, "_meta", meta);
	op->req = channel_request(op->ch, "session/new", p,
	    (uint64_t)conf.init_timeout_ms, on_answer, op);
	if (op->req == NULL)
		restore_settle(op, CHAN_CLOSED, NULL);
}

/*
 * The coalescing key of a restore: load's historyPageSize and
 * hideInheritedHistory; *summary: compactedReplayMode is "summary".
 */
static void
restore_shape(enum op_action action, json_object *body, char *out, size_t size,
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

static enum rfsm_action
fsm_action(enum op_action a)
{
	return a == OP_LOAD ? RFSM_LOAD : a == OP_RESUME ? RFSM_RESUME : RFSM_SPAWN;
}

void
restore_join(struct inflight *op, struct evhttp_request *req, const char *client_id,
    enum op_action action, json_object *body)
{
	char shape[sizeof(op->shape)];
	enum rfsm_join j;
	int summary, same;

	if (!op->has_fsm) {
		restore_in_progress(req, op, action);
		return;
	}
	restore_shape(action, body, shape, sizeof(shape), &summary);
	same = strcmp(shape, op->shape) == 0 && !(op->summary && !summary);
	j = rfsm_join(&op->fsm, fsm_action(action), same);
	if (j == RFSM_JOIN_COALESCE) {
		inflight_join(op, req, client_id);
		return;
	}
	log_info("session %s: %s refused: %s %s", op->id, op_action_name(action),
	    op_action_name(op->action), rfsm_state_name(op->fsm.state));
	http_send_qerr(req, rfsm_err_in_progress(&op->fsm, fsm_action(action), j));
}

void
restore_begin(enum op_action action, const char *id, json_object *body,
    struct evhttp_request *req, const char *client_id)
{
	struct inflight *op = op_new(action, id, req, client_id);

	if (op == NULL)
		return;
	op->body = json_object_get(body);
	restore_shape(action, body, op->shape, sizeof(op->shape), &op->summary);
	restore_start(op);
}

void
restore_start(struct inflight *op)
{
	json_object *p, *meta;
	int load = op->action == OP_LOAD;

	fence_take(op->id);	/* ownership moves here, before the ACP call */
	op->has_fsm = 1;
	op->timer = evtimer_new(serve_base, on_timer, op);
	op->span = span_start("qwen-code.daemon.bridge", SPAN_KIND_CLIENT, NULL);
	span_set_str(op->span, "qwen-code.daemon.operation", "session.restore");
	span_set_str(op->span, "qwen-code.daemon.bridge.operation",
	    load ? "session.load" : "session.resume");
	span_set_str(op->span, "session.id", op->id);
	span_set_int(op->span, "qwen-code.daemon.session_restore.timeout_ms",
	    conf.restore_timeout_ms);
	meta = op_meta(op);
	if (load)
		json_object_object_add(meta, "qwen.session.loadReplayMode",
		    json_object_new_string("bulk"));
	p = json_object_new_object();
	json_object_object_add(p, "sessionId", json_object_new_string(op->id));
	json_object_object_add(p, "cwd", json_object_new_string(conf.workspace));
	json_object_object_add(p, "mcpServers", json_object_new_array());
	json_object_object_add(p, "_meta", meta);
	log_info("session %s: %s requested (budget %lld ms)", op->id,
	    op_action_name(op->action), (long long)conf.restore_timeout_ms);
	rfsm_init(&op->fsm, &fsm_ops, op, fsm_action(op->action), op->id,
	    conf.restore_timeout_ms);
	op->req = channel_request(op->ch, load ? "session/load" : "session/resume",
	    p, 0, on_answer, op);
	span_set_int(op->span, "qwen-code.daemon.channel.id", channel_serial(op->ch));
	if (op->req == NULL) {
		op->answer_o = CHAN_CLOSED;
		rfsm_feed(&op->fsm, RFSM_EV_TRANSPORT_CLOSED);
	}
}

/* ---- answers ------------------------------------------------------------ */

/* The ACP state: the result minus the bulk replay. */
static json_object *
state_of(json_object *result)
{
	json_object *st = json_object_new_object(), *v, *meta = NULL;
	static const char *const keys[] = { "models", "modes", "configOptions", NULL };

	for (size_t i = 0; keys[i] != NULL; i++)
		if (json_object_object_get_ex(result, keys[i], &v))
			json_object_object_add(st, keys[i], json_object_get(v));
	if (json_object_object_get_ex(result, "_meta", &v) &&
	    json_object_is_type(v, json_type_object) &&
	    json_object_deep_copy(v, &meta, NULL) == 0) {
		json_object_object_del(meta, "qwen.session.loadReplay");
		json_object_object_add(st, "_meta", meta);
	}
	return st;
}

static size_t
json_len(json_object *o)
{
	return strlen(json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/*
 * compactedReplay from the child's bulk replay: the newest updates that
 * fit --compacted-replay-max-bytes, each given a bus id (not kept in the
 * ring), led by a history_truncated marker when history was dropped.
 */
static void
seed_replay(struct session *s, json_object *result)
{
	json_object *lr = NULL, *ups = NULL, *out = json_object_new_array();
	json_object *flags = json_object_new_object(), *v, *d, *m;
	size_t n = 0, k, bytes = 0, sz, child_trunc = 0;
	int partial = 0;

	if (json_object_object_get_ex(result, "_meta", &v) &&
	    json_object_object_get_ex(v, "qwen.session.loadReplay", &lr) &&
	    json_object_object_get_ex(lr, "updates", &ups) &&
	    json_object_is_type(ups, json_type_array))
		n = json_object_array_length(ups);
	if (lr != NULL && json_object_object_get_ex(lr, "partial", &v))
		partial = json_object_get_boolean(v);
	if (lr != NULL && json_object_object_get_ex(lr, "truncatedRecords", &v))
		child_trunc = (size_t)json_object_get_int64(v);
	for (k = n; k > 0; k--) {
		sz = json_len(json_object_array_get_idx(ups, k - 1)) + 192 + strlen(s->id);
		if (bytes + sz > conf.compacted_replay_max_bytes)
			break;
		bytes += sz;
	}
	if (k > 0 || child_trunc > 0) {
		d = json_object_new_object();
		json_object_object_add(d, "reason", json_object_new_string("replay_window_exceeded"));
		json_object_object_add(d, "truncatedEvents", json_object_new_int64((int64_t)k));
		json_object_object_add(d, "retainedEvents", json_object_new_int64((int64_t)(n - k)));
		json_object_object_add(d, "maxBytes",
		    json_object_new_int64((int64_t)conf.compacted_replay_max_bytes));
		if (child_trunc > 0)
			json_object_object_add(d, "truncatedRecords",
			    json_object_new_int64((int64_t)child_trunc));
		json_object_object_add(d, "fullTranscriptAvailable", json_object_new_boolean(1));
		m = json_object_new_object();
		json_object_object_add(m, "v", json_object_new_int(1));
		json_object_object_add(m, "type", json_object_new_string("history_truncated"));
		json_object_object_add(m, "data", d);
		json_object_array_add(out, m);
	}
	for (size_t i = k; i < n; i++) {
		d = json_object_new_object();
		json_object_object_add(d, "sessionId", json_object_new_string(s->id));
		json_object_object_add(d, "update", json_object_get(json_object_array_get_idx(ups, i)));
		json_object_array_add(out, bus_seed(s->bus, "session_update", d));
	}
	if (partial)
		json_object_object_add(flags, "partial", json_object_new_boolean(1));
	if (lr != NULL && json_object_object_get_ex(lr, "replayError", &v))
		json_object_object_add(flags, "replayError", json_object_get(v));
	if (lr != NULL && json_object_object_get_ex(lr, "hasMore", &v) &&
	    json_object_get_boolean(v))
		json_object_object_add(flags, "historyHasMore", json_object_new_boolean(1));
	s->replay = out;
	s->replay_flags = flags;
}

void
restore_reply(struct evhttp_request *req, struct session *s, enum op_action action,
    int attached, const char *client_id)
{
	json_object *o = json_object_new_object();
	char iso[40];

	serve_iso_time(s->created_wall_ms, iso, sizeof(iso));
	json_object_object_add(o, "sessionId", json_object_new_string(s->id));
	json_object_object_add(o, "workspaceCwd", json_object_new_string(conf.workspace));
	json_object_object_add(o, "attached", json_object_new_boolean(attached));
	json_object_object_add(o, "clientId", client_id != NULL ?
	    json_object_new_string(client_id) : NULL);
	json_object_object_add(o, "createdAt", json_object_new_string(iso));
	json_object_object_add(o, "hasActivePrompt", json_object_new_boolean(s->active != NULL));
	if (action != OP_SPAWN) {
		json_object_object_add(o, "state", s->state != NULL ?
		    json_object_get(s->state) : json_object_new_object());
		json_object_object_add(o, "hasRunningBackgroundTasks",
		    json_object_new_boolean(0));
		json_object_object_add(o, "lastEventId",
		    json_object_new_int64((int64_t)bus_last_id(s->bus)));
		json_object_object_add(o, "eventEpoch", json_object_new_string(bus_epoch(s->bus)));
	}
	if (action == OP_LOAD) {
		json_object_object_add(o, "compactedReplay", s->replay != NULL ?
		    json_object_get(s->replay) : json_object_new_array());
		json_object_object_add(o, "liveJournal", json_object_new_array());
		if (s->replay_flags != NULL) {
			json_object_object_foreach(s->replay_flags, key, val)
				json_object_object_add(o, key, json_object_get(val));
		}
	}
	http_reply_json(req, 200, o);
}

/* Every waiter gets the same error. */
static void
reply_error_all(struct inflight *op, enum chan_outcome o, json_object *payload)
{
	struct op_waiter *w;
	struct qerr *e;

	TAILQ_FOREACH(w, &op->waiters, entry) {
		switch (o) {
		case CHAN_ERROR:
			http_error_rpc(w->req, payload, op->id[0] ? op->id : NULL);
			continue;
		case CHAN_TIMEOUT:
		case CHAN_INIT_TIMEOUT:
			if ((e = qerr_new("init_timeout", NULL)) == NULL)
				break;
			qerr_set_int(e, "timeoutMs", conf.init_timeout_ms);
			if (o == CHAN_INIT_TIMEOUT) {
				qerr_set_str(e, "phase", "channel.initialize");
				if (op->action == OP_SPAWN) {
					qerr_set_bool(e, "sideEffectPossible", 0);
					qerr_set_retry_after(e, 5);
				} else {
					qerr_set_retryable(e, 0);
					qerr_set_retry_after(e, -1);
				}
			} else
				qerr_set_budget(e, conf.init_timeout_ms);
			break;
		default:
			if ((e = qerr_new("acp_channel_unavailable",
			    "The ACP child is not available")) == NULL)
				break;
			qerr_set_reason(e, "channel_closed");
			qerr_set_retry_after(e, 1);
			break;
		}
		http_send_qerr(w->req, e);
	}
}

/* A spawn whose child picked another id: close the orphan, fail the call. */
static int
spawn_id_ok(struct inflight *op, const char *got)
{
	struct op_waiter *w;
	json_object *p;

	if (got == NULL || got[0] == '\0' || strlen(got) > SERVE_SESSION_ID_MAX ||
	    (op->id[0] != '\0' && strcmp(op->id, got) != 0) || sessions_find(got) != NULL) {
		if (got != NULL && sessions_find(got) == NULL) {
			p = json_object_new_object();
			json_object_object_add(p, "sessionId", json_object_new_string(got));
			(void)channel_request(op->ch, "qwen/control/session/close", p,
			    (uint64_t)conf.init_timeout_ms, NULL, NULL);
		}
		TAILQ_FOREACH(w, &op->waiters, entry)
			http_error(w->req, "session_id_not_honored",
			    op->id[0] ? op->id : got);
		return 0;
	}
	return 1;
}

/* The public result: register the session and answer, or fail everyone. */
static void
op_reply(struct inflight *op, enum chan_outcome o, json_object *payload)
{
	struct op_waiter *w;
	struct session *s;
	json_object *v;
	const char *id = op->id, *cid;
	int first = 1;

	log_info("session %s: %s %s after %llu ms", id[0] ? id : "(new)",
	    op_action_name(op->action), o == CHAN_RESULT ? "succeeded" : "failed",
	    (unsigned long long)(clock_mono_ms() - op->started_ms));
	if (o != CHAN_RESULT) {
		if (!op->has_fsm)
			early_purge(op);
		reply_error_all(op, o, payload);
		return;
	}
	if (op->action == OP_SPAWN) {
		id = json_object_object_get_ex(payload, "sessionId", &v) ?
		    json_object_get_string(v) : NULL;
		if (!spawn_id_ok(op, id))
			return;
	}
	if ((s = session_new(id, op->ch)) == NULL) {
		TAILQ_FOREACH(w, &op->waiters, entry)
			http_error(w->req, "internal", NULL);
		return;
	}
	s->is_default = op->is_default;
	s->state = state_of(payload);
	if (op->action == OP_LOAD)
		seed_replay(s, payload);
	early_drain(op, s);
	TAILQ_FOREACH(w, &op->waiters, entry) {
		cid = clients_register(&s->clients, w->client_id[0] ? w->client_id : NULL);
		s->attach_count++;
		restore_reply(w->req, s, op->action, !first, cid);
		first = 0;
	}
}

/* A spawn ends here (restores end in fsm_finish). */
void
restore_settle(struct inflight *op, enum chan_outcome o, json_object *payload)
{
	span_add_event(op->span, "session.restore.public_result");
	span_event_set_str(op->span, "result", o == CHAN_RESULT ? "success" :
	    o == CHAN_TIMEOUT || o == CHAN_INIT_TIMEOUT ? "timeout" : "failure");
	span_set_int(op->span, "qwen-code.daemon.duration_ms",
	    (int64_t)(clock_mono_ms() - op->started_ms));
	span_end(op->span, serve_trace);
	op->span = NULL;
	op_reply(op, o, payload);
	op_free(op);
}

/* ---- the channel, seen by the restores ------------------------------------ */

void
restore_chan_view(struct channel *ch, struct rfsm_chan_view *v)
{
	struct inflight *op;

	memset(v, 0, sizeof(*v));
	v->live_sessions = (unsigned)channel_nsessions(ch);
	v->empty_reap_pending = channel_idle_pending(ch);
	TAILQ_FOREACH(op, &ops, entry) {
		if (op->ch != ch)
			continue;
		if (op->has_fsm)
			rfsm_chan_view_add(v, &op->fsm);
		else
			v->pending_spawns++;
	}
}

int
restore_admit(struct evhttp_request *req, struct channel *ch)
{
	struct rfsm_chan_view v;
	const char *reason;
	int64_t budget;

	if (ch == NULL)
		return 0;
	restore_chan_view(ch, &v);
	if ((reason = rfsm_chan_unavailable(&v, &budget)) == NULL)
		return 0;
	log_info("fresh work refused: %s", reason);
	http_send_qerr(req, rfsm_err_unavailable(reason, budget));
	return -1;
}

void
restore_channel_exited(struct channel *ch)
{
	struct inflight *op, *next;
	struct fence *f, *fnext;

	TAILQ_FOREACH_SAFE(f, &fences, entry, fnext)
		if (f->ch == ch) {
			TAILQ_REMOVE(&fences, f, entry);
			free(f);
		}
	TAILQ_FOREACH_SAFE(op, &ops, entry, next)
		if (op->ch == ch && op->has_fsm && rfsm_unsettled(op->fsm.state))
			rfsm_feed(&op->fsm, RFSM_EV_TRANSPORT_CLOSED);	/* may free op */
}

void
restore_stats(size_t *active, size_t *unsettled, size_t *overdue, size_t *quarantined)
{
	struct inflight *op;

	*active = *unsettled = *overdue = *quarantined = 0;
	TAILQ_FOREACH(op, &ops, entry) {
		if (!op->has_fsm)
			continue;
		*active += op->fsm.state == RFSM_ACTIVE;
		*unsettled += rfsm_unsettled(op->fsm.state);
		*overdue += rfsm_unsettled(op->fsm.state) && op->fsm.overdue;
		*quarantined += op->fsm.state == RFSM_QUARANTINED;
	}
}

/* ---- the machine's world (struct rfsm_ops) -------------------------------- */

static void
on_timer(evutil_socket_t fd, short what, void *arg)
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
	struct op_waiter *w;

	if (r == RFSM_RESULT_TIMEOUT) {
		log_warnx("session %s: %s timed out after %lld ms", op->id,
		    op_action_name(op->action), (long long)op->fsm.budget_ms);
		TAILQ_FOREACH(w, &op->waiters, entry)
			http_send_qerr(w->req, rfsm_err_timeout(&op->fsm));
	} else
		op_reply(op, op->answer_o, op->answer);
	waiters_free(op);
	json_object_put(op->answer);
	op->answer = NULL;
}

static void
on_close(void *arg, enum chan_outcome o, json_object *payload)
{
	struct inflight *op = arg;
	enum rfsm_event ev = RFSM_EV_CLOSE_FAILED;
	json_object *v;

	op->close_req = NULL;
	switch (o) {
	case CHAN_RESULT:
		if (json_object_object_get_ex(payload, "closed", &v) &&
		    json_object_get_boolean(v))
			ev = RFSM_EV_CLOSE_OK;
		break;
	case CHAN_ERROR:
		if (json_object_object_get_ex(payload, "code", &v) &&
		    json_object_get_int(v) == QERR_RPC_RESOURCE_NOT_FOUND)
			ev = RFSM_EV_CLOSE_NOT_FOUND;
		break;
	case CHAN_TIMEOUT:
		ev = RFSM_EV_CLOSE_TIMEOUT;
		break;
	default:
		ev = RFSM_EV_TRANSPORT_CLOSED;
		break;
	}
	log_info("session %s: cleanup close: %s", op->id, rfsm_event_name(ev));
	rfsm_feed(&op->fsm, ev);
}

/* Exactly one qwen/control/session/close for the late restore. */
static void
fsm_close(void *ctx)
{
	struct inflight *op = ctx;
	json_object *p;

	if (!channel_alive(op->ch)) {
		rfsm_feed(&op->fsm, RFSM_EV_TRANSPORT_CLOSED);	/* queued */
		return;
	}
	p = json_object_new_object();
	json_object_object_add(p, "sessionId", json_object_new_string(op->id));
	json_object_object_add(p, "drainTimeoutMs",
	    json_object_new_int64(conf.init_timeout_ms * 8 / 10));
	op->close_req = channel_request(op->ch, "qwen/control/session/close", p,
	    (uint64_t)conf.init_timeout_ms, on_close, op);
	if (op->close_req == NULL)
		rfsm_feed(&op->fsm, RFSM_EV_TRANSPORT_CLOSED);	/* queued */
}

static void
fsm_kill(void *ctx)
{
	struct inflight *op = ctx;

	log_info("session %s: abandoned on an empty channel: ending its child", op->id);
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
	struct inflight *op = ctx;

	json_object_put(op->early);
	op->early = NULL;
	fence_add(op->ch, op->id);
}

static void
fsm_purge(void *ctx)
{
	early_purge(ctx);
}

static void
fsm_view(void *ctx, struct rfsm_chan_view *v)
{
	restore_chan_view(((struct inflight *)ctx)->ch, v);
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
		log_info("session %s: abandoned %s settled after %llu ms", op->id,
		    op_action_name(op->action),
		    (unsigned long long)(clock_mono_ms() - op->started_ms));
	span_set_str(op->span, "qwen-code.daemon.session_restore.final_state",
	    rfsm_state_name(st));
	span_set_int(op->span, "qwen-code.daemon.duration_ms",
	    (int64_t)(clock_mono_ms() - op->started_ms));
	if (st != RFSM_SUCCEEDED)
		span_set_status(op->span, SPAN_STATUS_ERROR, rfsm_state_name(st));
	span_end(op->span, serve_trace);
	op->span = NULL;
	op_free(op);
}

static const struct rfsm_ops fsm_ops = {
	.now_ms = fsm_now,
	.public_result = fsm_public,
	.send_close = fsm_close,
	.kill_channel_async = fsm_kill,
	.arm_timer = fsm_arm,
	.cancel_timer = fsm_cancel,
	.release_capacity = fsm_release,
	.fence_on = fsm_fence,
	.purge_early = fsm_purge,
	.chan_view = fsm_view,
	.channel_changed = fsm_changed,
	.trace = fsm_trace,
	.finish = fsm_finish,
};
