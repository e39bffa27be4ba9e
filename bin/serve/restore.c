/*
 * restore.c: in-flight spawns (session/new) and restores (session/load,
 * session/resume).  One entry per session id; callers of the same action
 * coalesce onto it, a different action gets 409 restore_in_progress.
 * restore_start() is the one place a restore goes to the child and
 * restore_settle() the one place it ends, so that the deadline and
 * lifecycle machinery of seed 000 can wrap exactly these two.
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static TAILQ_HEAD(, inflight) ops = TAILQ_HEAD_INITIALIZER(ops);
static size_t nops;

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
op_free(struct inflight *op)
{
	struct op_waiter *w;

	TAILQ_REMOVE(&ops, op, entry);
	nops--;
	sessions_inflight_add(-1);
	while ((w = TAILQ_FIRST(&op->waiters)) != NULL) {
		TAILQ_REMOVE(&op->waiters, w, entry);
		free(w);
	}
	json_object_put(op->body);
	free(op);
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

static void
on_answer(void *arg, enum chan_outcome o, json_object *payload)
{
	struct inflight *op = arg;

	op->req = NULL;
	restore_settle(op, o, payload);
}

void
spawn_start(const char *id, int is_default, struct evhttp_request *req,
    const char *client_id)
{
	struct inflight *op = op_new(OP_SPAWN, id, req, client_id);
	json_object *p, *meta;

	if (op == NULL)
		return;
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

void
restore_begin(enum op_action action, const char *id, json_object *body,
    struct evhttp_request *req, const char *client_id)
{
	struct inflight *op = op_new(action, id, req, client_id);

	if (op == NULL)
		return;
	op->body = json_object_get(body);
	restore_start(op);
}

void
restore_start(struct inflight *op)
{
	json_object *p, *meta;
	int load = op->action == OP_LOAD;

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
	log_info("session %s: %s requested", op->id, op_action_name(op->action));
	op->req = channel_request(op->ch, load ? "session/load" : "session/resume",
	    p, 0, on_answer, op);
	if (op->req == NULL)
		restore_settle(op, CHAN_CLOSED, NULL);
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

void
restore_settle(struct inflight *op, enum chan_outcome o, json_object *payload)
{
	struct op_waiter *w;
	struct session *s;
	json_object *v;
	const char *id = op->id, *cid;
	int first = 1;

	span_add_event(op->span, "session.restore.public_result");
	span_event_set_str(op->span, "result", o == CHAN_RESULT ? "success" :
	    o == CHAN_TIMEOUT || o == CHAN_INIT_TIMEOUT ? "timeout" : "failure");
	span_set_int(op->span, "qwen-code.daemon.duration_ms",
	    (int64_t)(clock_mono_ms() - op->started_ms));
	span_end(op->span, serve_trace);
	op->span = NULL;
	log_info("session %s: %s %s after %llu ms", id[0] ? id : "(new)",
	    op_action_name(op->action), o == CHAN_RESULT ? "succeeded" : "failed",
	    (unsigned long long)(clock_mono_ms() - op->started_ms));
	if (o != CHAN_RESULT) {
		reply_error_all(op, o, payload);
		op_free(op);
		return;
	}
	if (op->action == OP_SPAWN) {
		id = json_object_object_get_ex(payload, "sessionId", &v) ?
		    json_object_get_string(v) : NULL;
		if (!spawn_id_ok(op, id)) {
			op_free(op);
			return;
		}
	}
	if ((s = session_new(id, op->ch)) == NULL) {
		TAILQ_FOREACH(w, &op->waiters, entry)
			http_error(w->req, "internal", NULL);
		op_free(op);
		return;
	}
	s->is_default = op->is_default;
	s->state = state_of(payload);
	if (op->action == OP_LOAD)
		seed_replay(s, payload);
	TAILQ_FOREACH(w, &op->waiters, entry) {
		cid = clients_register(&s->clients, w->client_id[0] ? w->client_id : NULL);
		s->attach_count++;
		restore_reply(w->req, s, op->action, !first, cid);
		first = 0;
	}
	op_free(op);
}
