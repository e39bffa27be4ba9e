/* SPDX-License-Identifier: ISC */
/*
 * inflight-reply.c: the public answers of in-flight spawns and restores.
 * A success registers the session (with load's bounded compactedReplay
 * seeded from the child's bulk replay) and answers every coalesced caller;
 * a failure gives every caller the same classified error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errors.h"
#include "log.h"
#include "inflight-int.h"
#include "rpc-frame.h"
#include "trace.h"
#include "xmalloc.h"

/* The ACP state: the result minus the bulk replay. */
static json_object *
state_of(json_object *result)
{
	json_object *st = xjson_object_new_object(), *v, *meta = NULL;
	static const char *const keys[] = { "models", "modes", "configOptions", NULL };

	for (size_t i = 0; keys[i] != NULL; i++)
		if (json_object_object_get_ex(result, keys[i], &v))
			json_object_object_add(st, keys[i], json_object_get(v));
	if (json_object_object_get_ex(result, "_meta", &v) &&
	    json_object_is_type(v, json_type_object)) {
		/* Shared values, never the bulk replay (a deep copy cost ~MiBs). */
		meta = xjson_object_new_object();
		json_object_object_foreach(v, key, val)
			if (strcmp(key, "qwen.session.loadReplay") != 0)
				json_object_object_add(meta, key,
				    json_object_get(val));
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

/* The envelopes of raw's updates from k on, onto out. */
static void
seed_raw(struct session *s, struct rpc_raw *raw, size_t k, json_object *out)
{
	uint64_t now = clock_wall_ms();
	char *sid = replay_raw_sid(s->id);

	log_debug("session %s: replay of %zu updates forwarded as the child's bytes",
	    s->id, raw->n - k);
	for (; k < raw->n; k++)
		json_object_array_add(out, replay_raw_envelope(raw, k,
		    bus_seed_id(s->bus), sid, now));
	free(sid);
}

/*
 * compactedReplay from the child's bulk replay: the newest updates that
 * fit --compacted-replay-max-bytes, each given a bus id (not kept in the
 * ring), led by a history_truncated marker when history was dropped.
 */
static void
seed_replay(struct session *s, json_object *result)
{
	json_object *lr = NULL, *ups = NULL, *out = xjson_object_new_array();
	json_object *flags = xjson_object_new_object(), *v, *d, *m;
	size_t n = 0, k, bytes = 0, sz, child_trunc = 0;
	struct rpc_raw *raw = NULL;
	int partial = 0;

	if (json_object_object_get_ex(result, "_meta", &v) &&
	    json_object_object_get_ex(v, "qwen.session.loadReplay", &lr) &&
	    json_object_object_get_ex(lr, "updates", &ups) &&
	    json_object_is_type(ups, json_type_array))
		n = json_object_array_length(ups);
	if (ups != NULL && (raw = rpc_raw_of(ups)) != NULL)
		n = raw->n;		/* the child's bytes, not parsed */
	if (lr != NULL && json_object_object_get_ex(lr, "partial", &v))
		partial = json_object_get_boolean(v);
	if (lr != NULL && json_object_object_get_ex(lr, "truncatedRecords", &v))
		child_trunc = (size_t)json_object_get_int64(v);
	for (k = n; k > 0; k--) {
		sz = (raw != NULL ? raw->el[k - 1].len :
		    json_len(json_object_array_get_idx(ups, k - 1))) + 192 + strlen(s->id);
		if (bytes + sz > conf.compacted_replay_max_bytes)
			break;
		bytes += sz;
	}
	if (k > 0 || child_trunc > 0) {
		d = xjson_object_new_object();
		json_object_object_add(d, "reason", xjson_object_new_string("replay_window_exceeded"));
		json_object_object_add(d, "truncatedEvents", xjson_object_new_int64((int64_t)k));
		json_object_object_add(d, "retainedEvents", xjson_object_new_int64((int64_t)(n - k)));
		json_object_object_add(d, "maxBytes",
		    xjson_object_new_int64((int64_t)conf.compacted_replay_max_bytes));
		if (child_trunc > 0)
			json_object_object_add(d, "truncatedRecords",
			    xjson_object_new_int64((int64_t)child_trunc));
		json_object_object_add(d, "fullTranscriptAvailable", xjson_object_new_boolean(1));
		m = xjson_object_new_object();
		json_object_object_add(m, "v", xjson_object_new_int(1));
		json_object_object_add(m, "type", xjson_object_new_string("history_truncated"));
		json_object_object_add(m, "data", d);
		json_object_array_add(out, m);
	}
	if (raw != NULL)
		seed_raw(s, raw, k, out);
	for (size_t i = k; raw == NULL && i < n; i++) {
		d = xjson_object_new_object();
		json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
		json_object_object_add(d, "update", json_object_get(json_object_array_get_idx(ups, i)));
		json_object_array_add(out, bus_seed(s->bus, "session_update", d));
	}
	if (partial)
		json_object_object_add(flags, "partial", xjson_object_new_boolean(1));
	if (lr != NULL && json_object_object_get_ex(lr, "replayError", &v))
		json_object_object_add(flags, "replayError", json_object_get(v));
	if (lr != NULL && json_object_object_get_ex(lr, "hasMore", &v) &&
	    json_object_get_boolean(v))
		json_object_object_add(flags, "historyHasMore", xjson_object_new_boolean(1));
	if (lr != NULL && json_object_object_get_ex(lr, "anchorRecordId", &v) &&
	    json_object_is_type(v, json_type_string))
		json_object_object_add(flags, "historyAnchorRecordId", json_object_get(v));
	/* How the daemon prompts of the history ended (omitted when none). */
	if (lr != NULL && json_object_object_get_ex(lr, "promptTerminals", &v) &&
	    json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0)
		json_object_object_add(flags, "promptTerminals", json_object_get(v));
	s->replay = out;
	s->replay_flags = flags;
}

json_object *
inflight_session_json(struct session *s, enum inflight_action action, int attached,
    const char *client_id)
{
	json_object *o = xjson_object_new_object();
	char iso[CLOCK_ISO_LEN];

	clock_iso_time(s->created_wall_ms, iso);
	json_object_object_add(o, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(o, "workspaceCwd",
	    xjson_object_new_string(channel_workspace(s->channel)));
	json_object_object_add(o, "attached", xjson_object_new_boolean(attached));
	json_object_object_add(o, "clientId", client_id != NULL ?
	    xjson_object_new_string(client_id) : NULL);
	json_object_object_add(o, "createdAt", xjson_object_new_string(iso));
	json_object_object_add(o, "hasActivePrompt", xjson_object_new_boolean(s->active != NULL));
	if (action != OP_SPAWN) {
		json_object_object_add(o, "state", s->state != NULL ?
		    json_object_get(s->state) : xjson_object_new_object());
		json_object_object_add(o, "hasRunningBackgroundTasks",
		    xjson_object_new_boolean(0));
		json_object_object_add(o, "lastEventId",
		    xjson_object_new_int64((int64_t)bus_last_id(s->bus)));
		json_object_object_add(o, "eventEpoch", xjson_object_new_string(bus_epoch(s->bus)));
	}
	if (action == OP_LOAD) {
		json_object_object_add(o, "compactedReplay", s->replay != NULL ?
		    json_object_get(s->replay) : xjson_object_new_array());
		json_object_object_add(o, "liveJournal", xjson_object_new_array());
		if (s->replay_flags != NULL) {
			json_object_object_foreach(s->replay_flags, key, val)
				json_object_object_add(o, key,
				    json_object_get(val));
		}
	}
	standalone_decorate(o, channel_workspace(s->channel));
	return o;
}

/* Every waiter gets the same error. */
static void
reply_error_all(struct inflight *op, enum channel_outcome o, json_object *payload)
{
	struct inflight_waiter *w;
	struct qerr *e;

	TAILQ_FOREACH(w, &op->waiters, entry) {
		switch (o) {
		case CHANNEL_ERROR:
			http_error_rpc(w->req, payload,
			    op->id[0] ? op->id : NULL);
			continue;
		case CHANNEL_TIMEOUT:
		case CHANNEL_INIT_TIMEOUT:
			if ((e = qerr_new("init_timeout", NULL)) == NULL)
				break;
			qerr_set_int(e, "timeoutMs", conf.init_timeout_ms);
			if (o == CHANNEL_INIT_TIMEOUT) {
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
	struct inflight_waiter *w;
	json_object *p;

	if (got == NULL || got[0] == '\0' || strlen(got) > SERVE_SESSION_ID_MAX ||
	    (op->id[0] != '\0' && strcmp(op->id, got) != 0) || sessions_find(got) != NULL) {
		if (got != NULL && sessions_find(got) == NULL) {
			p = xjson_object_new_object();
			json_object_object_add(p, "sessionId", xjson_object_new_string(got));
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
void
inflight_reply(struct inflight *op, enum channel_outcome o, json_object *payload)
{
	struct inflight_waiter *w;
	struct modes_caller *callers;
	struct session *s;
	json_object *v;
	const char *id = op->id;
	size_t n = 0;

	log_info("session %s: %s %s after %llu ms", id[0] ? id : "(new)",
	    inflight_action_name(op->action), o == CHANNEL_RESULT ? "succeeded" : "failed",
	    (unsigned long long)(clock_mono_ms() - op->started_ms));
	if (o != CHANNEL_RESULT) {
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
	reqid_session_set(s, op->log_rid, op->log_tid);
	s->state = state_of(payload);
	modes_seed(s);
	if (op->action == OP_LOAD)
		seed_replay(s, payload);
	inflight_early_drain(op, s);
	TAILQ_FOREACH(w, &op->waiters, entry)
		n++;
	callers = xreallocarray(NULL, n, sizeof(*callers));
	n = 0;
	TAILQ_FOREACH(w, &op->waiters, entry) {
		callers[n].req = w->req;
		callers[n++].client_id = clients_register(&s->clients,
		    w->client_id[0] ? w->client_id : NULL);
		s->attach_count++;
	}
	/* The first caller's modelServiceId and approvalMode, as upstream. */
	modes_reply(s, op->action, 0, op->body, callers, n);
	free(callers);
}
