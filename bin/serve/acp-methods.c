/* SPDX-License-Identifier: ISC */
/*
 * acp-methods.c: the ACP method table.  Each method turns its params into
 * the body of the REST route that does the work, runs it (acp-call.c) and
 * turns the route's reply into the JSON-RPC result, or its error into the
 * JSON-RPC error through the catalog's one mapping.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "json.h"
#include "log.h"
#include "rpc-frame.h"
#include "acp-int.h"
#include "xmalloc.h"

static const char *const method_names[] = { "initialize", "session/new",
    "session/load", "session/resume", "session/prompt", "session/cancel",
    "session/close", "_qwen/session/heartbeat", "_qwen/session/detach",
    "_qwen/session/attachments", "_qwen/session/artifacts",
    "_qwen/session/artifacts/add", "_qwen/session/artifacts/remove", NULL };

/* -32602 for params the REST route could not even be asked about. */
static void
bad_params(struct acp_conn *c, struct rpc_msg *m, const char *what)
{
	if (m->kind == RPC_REQUEST)
		acp_send(c, NULL, rpc_new_error(json_object_get(m->id),
		    RPC_INVALID_PARAMS, what, NULL));
}

/* params.sessionId, canonical, into id; -1 after answering -32602. */
static int
session_param(struct acp_conn *c, struct rpc_msg *m, char *id, size_t size)
{
	if (acp_canon_id(json_get_str(m->params, "sessionId"), id, size) == -1) {
		bad_params(c, m, "Invalid params: sessionId must be a session id");
		return -1;
	}
	return 0;
}

/* ---- initialize ---------------------------------------------------------- */

/* initialize: capabilities, and the connection may use the rest. */
static void
m_initialize(struct acp_conn *c, struct rpc_msg *m)
{
	json_object *r = xjson_object_new_object(), *caps = xjson_object_new_object();
	json_object *pc = xjson_object_new_object(), *meta = xjson_object_new_object();
	json_object *q = xjson_object_new_object(), *methods = xjson_object_new_array(), *v;
	int64_t pv = 1;

	if (m->params != NULL && json_object_object_get_ex(m->params,
	    "protocolVersion", &v) && json_object_is_type(v, json_type_int))
		pv = json_object_get_int64(v);
	pv = pv < 1 ? 1 : pv > 1 ? 1 : pv;
	for (size_t i = 0; method_names[i] != NULL; i++)
		json_object_array_add(methods,
		    xjson_object_new_string(method_names[i]));
	json_object_object_add(q, "connectionId", xjson_object_new_string(c->id));
	json_object_object_add(q, "transport", xjson_object_new_string(c->transport));
	json_object_object_add(q, "workspaceCwd", xjson_object_new_string(c->workspace));
	json_object_object_add(q, "methods", methods);
	json_object_object_add(meta, "qwen", q);
	json_object_object_add(pc, "image", xjson_object_new_boolean(0));
	json_object_object_add(pc, "audio", xjson_object_new_boolean(0));
	json_object_object_add(pc, "embeddedContext", xjson_object_new_boolean(0));
	json_object_object_add(caps, "loadSession", xjson_object_new_boolean(1));
	json_object_object_add(caps, "promptCapabilities", pc);
	json_object_object_add(caps, "_meta", meta);
	json_object_object_add(r, "protocolVersion", xjson_object_new_int64(pv));
	json_object_object_add(r, "agentCapabilities", caps);
	json_object_object_add(r, "authMethods", xjson_object_new_array());
	c->initialized = 1;
	acp_reply(c, NULL, m->id, r);
}

/* ---- new, load, resume --------------------------------------------------- */

/* The ACP state of a live session (models, modes, configOptions, _meta). */
static json_object *
state_result(const char *id, json_object *rest)
{
	struct session *s = sessions_find(id);
	json_object *r = xjson_object_new_object(), *meta = NULL, *q, *v;

	json_object_object_add(r, "sessionId", xjson_object_new_string(id));
	if (s != NULL && s->state != NULL) {
		json_object_object_foreach(s->state, key, val) {
			if (strcmp(key, "_meta") == 0)
				meta = json_object_get(val);
			else
				json_object_object_add(r, key,
				    json_object_get(val));
		}
	}
	if (meta == NULL)
		meta = xjson_object_new_object();
	q = xjson_object_new_object();
	static const char *const keys[] = { "clientId", "attached", "lastEventId",
	    "eventEpoch", "partial", "replayError", "historyHasMore", NULL };
	for (size_t i = 0; keys[i] != NULL; i++)
		if (json_object_object_get_ex(rest, keys[i], &v))
			json_object_object_add(q, keys[i], json_object_get(v));
	json_object_object_add(meta, "qwen", q);
	json_object_object_add(r, "_meta", meta);
	return r;
}

/* load's bounded snapshot, replayed as notifications before the result. */
static void
replay_snapshot(struct acp_conn *c, const char *id, json_object *rest)
{
	static const char *const arrays[] = { "compactedReplay", "liveJournal", NULL };
	json_object *arr, *env, *type, *data, *p;

	for (size_t k = 0; arrays[k] != NULL; k++) {
		if (!json_object_object_get_ex(rest, arrays[k], &arr) ||
		    !json_object_is_type(arr, json_type_array))
			continue;
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			/* Updates kept as the child's bytes are parsed here. */
			env = replay_raw_expand(json_object_array_get_idx(arr, i));
			if (!json_object_object_get_ex(env, "type", &type) ||
			    !json_object_object_get_ex(env, "data", &data)) {
				json_object_put(env);
				continue;
			}
			if (strcmp(json_object_get_string(type), "session_update") == 0) {
				acp_send(c, id, rpc_new_notification("session/update",
				    json_object_get(data)));
				json_object_put(env);
				continue;
			}
			p = xjson_object_new_object();
			json_object_object_add(p, "sessionId", xjson_object_new_string(id));
			json_object_object_add(p, "kind", json_object_get(type));
			json_object_object_add(p, "data", json_object_get(data));
			acp_send(c, id, rpc_new_notification("_qwen/notify", p));
			json_object_put(env);
		}
	}
}

/* A create/load/resume answered: attach, replay (load), then the result. */
static void
restore_done(struct acp_call *call, int status, json_object *body, struct qerr *e)
{
	struct acp_conn *c = call->conn;
	json_object *v;
	const char *id, *cid;
	int load = (call->flags & ACP_CALL_REPLAY) != 0;
	struct acp_sess *a;

	if (status != 200 || body == NULL ||
	    !json_object_object_get_ex(body, "sessionId", &v) ||
	    (id = json_object_get_string(v)) == NULL ||
	    !json_object_object_get_ex(body, "clientId", &v) ||
	    (cid = json_object_get_string(v)) == NULL) {
		if (call->session_id[0] != '\0')
			acp_sess_unclaim(c, call->session_id);
		acp_call_fail(call, NULL, status, body, e);
		return;
	}
	/*
	 * Attach before the claim ends: a claim that ended first would drop
	 * the entry, and with it the session stream the client opened while
	 * the restore ran, so the replay and the answer went nowhere.
	 */
	a = acp_sess_attach(c, id, cid);
	if (call->session_id[0] != '\0')
		acp_sess_unclaim(c, call->session_id);
	if (a == NULL) {
		acp_call_fail(call, NULL, 500, NULL, NULL);
		return;
	}
	if (load)
		replay_snapshot(c, id, body);
	/* session/new answers on the connection, load/resume on the session. */
	if (call->rpc_id != NULL)
		acp_reply(c, call->session_id[0] != '\0' ? id : NULL, call->rpc_id,
		    state_result(id, body));
}

/* The client id this connection holds on id, or NULL. */
static const char *
held_client(struct acp_conn *c, const char *id)
{
	struct acp_sess *a = acp_sess_find(c, id);

	return a != NULL && a->client_id[0] != '\0' ? a->client_id : NULL;
}

/* session/new: POST /session with a thread scope. */
static void
m_new(struct acp_conn *c, struct rpc_msg *m)
{
	json_object *body = xjson_object_new_object(), *v, *sid;

	if (m->params != NULL && json_object_object_get_ex(m->params, "cwd", &v))
		json_object_object_add(body, "cwd", json_object_get(v));
	else
		json_object_object_add(body, "cwd", xjson_object_new_string(c->workspace));
	if (m->params != NULL && json_object_object_get_ex(m->params, "_meta", &v) &&
	    json_object_object_get_ex(v, "qwen-code/sessionId", &sid))
		json_object_object_add(body, "sessionId", json_object_get(sid));
	/* An ACP session/new is always a fresh session. */
	json_object_object_add(body, "sessionScope", xjson_object_new_string("thread"));
	acp_call_run(c, m->id, NULL, route_session_create, NULL, NULL, body,
	    restore_done, ACP_CALL_UNDO);
	json_object_put(body);
}

/* Load and resume: the REST body from the ACP params. */
static void
m_restore(struct acp_conn *c, struct rpc_msg *m, int load)
{
	json_object *body, *v;
	char id[SERVE_SESSION_ID_MAX + 1];
	static const char *const keys[] = { "cwd", "historyPageSize",
	    "liveReplayMode", "compactedReplayMode", "hideInheritedHistory", NULL };

	if (session_param(c, m, id, sizeof(id)) == -1)
		return;
	if (acp_sess_claim(c, id) == NULL) {
		bad_params(c, m, "too many sessions on this connection");
		return;
	}
	body = xjson_object_new_object();
	for (size_t i = 0; keys[i] != NULL; i++)
		if (json_object_object_get_ex(m->params, keys[i], &v))
			json_object_object_add(body, keys[i],
			    json_object_get(v));
	if (!json_object_object_get_ex(body, "cwd", NULL))
		json_object_object_add(body, "cwd", xjson_object_new_string(c->workspace));
	acp_call_run(c, m->id, id, load ? route_session_load : route_session_resume,
	    id, held_client(c, id), body, restore_done,
	    ACP_CALL_UNDO | (load ? ACP_CALL_REPLAY : 0));
	json_object_put(body);
}

/* session/load: the REST load, then the snapshot replay. */
static void
m_load(struct acp_conn *c, struct rpc_msg *m)
{
	m_restore(c, m, 1);
}

/* session/resume: the REST resume. */
static void
m_resume(struct acp_conn *c, struct rpc_msg *m)
{
	m_restore(c, m, 0);
}

/* ---- session methods on a held session ----------------------------------- */

/* The prompt was queued: its answer waits for its turn to end. */
static void
prompt_done(struct acp_call *call, int status, json_object *body, struct qerr *e)
{
	struct acp_sess *a = acp_sess_find(call->conn, call->session_id);
	json_object *v;

	if (status != 202 || body == NULL || a == NULL ||
	    !json_object_object_get_ex(body, "promptId", &v)) {
		acp_call_fail(call, a != NULL ? a->id : NULL, status, body, e);
		return;
	}
	if (call->rpc_id != NULL)
		acp_sess_prompt(a, json_object_get_string(v), call->rpc_id);
}

/* session/prompt: POST /session/:id/prompt on a held session. */
static void
m_prompt(struct acp_conn *c, struct rpc_msg *m)
{
	char id[SERVE_SESSION_ID_MAX + 1];
	json_object *body = NULL;

	if (session_param(c, m, id, sizeof(id)) == -1)
		return;
	if (held_client(c, id) == NULL && sessions_find(id) != NULL) {
		/* Its end could not be seen here: attach first. */
		bad_params(c, m, "Invalid params: session is not attached to this "
		    "connection (session/load or session/resume it first)");
		return;
	}
	if (json_object_deep_copy(m->params, &body, NULL) != 0) {
		acp_reply_error(c, NULL, m->id, qerr_new("internal", NULL));
		return;
	}
	json_object_object_del(body, "sessionId");
	acp_call_run(c, m->id, id, route_session_prompt, id, held_client(c, id),
	    body, prompt_done, 0);
	json_object_put(body);
}

/* Replies with no content (cancel, close, detach): result {} or the error. */
static void
empty_done(struct acp_call *call, int status, json_object *body, struct qerr *e)
{
	struct acp_sess *a;

	if (status / 100 != 2) {
		acp_call_fail(call, NULL, status, body, e);
		return;
	}
	if ((call->flags & ACP_CALL_RELEASES) && (a = acp_sess_find(call->conn,
	    call->session_id)) != NULL) {
		a->client_id[0] = '\0';	/* released by the route */
		a->pending = 0;
		acp_sess_drop(call->conn, a);
	}
	if (call->rpc_id != NULL)
		acp_reply(call->conn, NULL, call->rpc_id,
		    xjson_object_new_object());
}

/* session/cancel (a notification, or a request answered {}). */
static void
m_cancel(struct acp_conn *c, struct rpc_msg *m)
{
	char id[SERVE_SESSION_ID_MAX + 1];

	if (session_param(c, m, id, sizeof(id)) == 0)
		acp_call_run(c, m->id, id, route_session_cancel, id,
		    held_client(c, id), NULL, empty_done, 0);
}

/* session/close: DELETE /session/:id. */
static void
m_close(struct acp_conn *c, struct rpc_msg *m)
{
	char id[SERVE_SESSION_ID_MAX + 1];

	if (session_param(c, m, id, sizeof(id)) == 0)
		acp_call_run(c, m->id, id, route_session_delete, id,
		    held_client(c, id), NULL, empty_done, ACP_CALL_RELEASES);
}

/* _qwen/session/detach: release this connection's client. */
static void
m_detach(struct acp_conn *c, struct rpc_msg *m)
{
	char id[SERVE_SESSION_ID_MAX + 1];
	const char *cid;

	if (session_param(c, m, id, sizeof(id)) == -1)
		return;
	if ((cid = held_client(c, id)) == NULL) {
		/* Nothing held here: like REST's detach of an unknown id. */
		if (m->kind == RPC_REQUEST)
			acp_reply(c, NULL, m->id, xjson_object_new_object());
		return;
	}
	acp_call_run(c, m->id, id, route_session_detach, id, cid, NULL,
	    empty_done, ACP_CALL_RELEASES);
}

/* The REST answer is the result (the heartbeat's, the stores'). */
static void
heartbeat_done(struct acp_call *call, int status, json_object *body, struct qerr *e)
{
	if (status != 200 || body == NULL) {
		acp_call_fail(call, NULL, status, body, e);
		return;
	}
	if (call->rpc_id != NULL)
		acp_reply(call->conn,
		    held_client(call->conn, call->session_id) != NULL ?
		    call->session_id : NULL, call->rpc_id, json_object_get(body));
}

/* _qwen/session/heartbeat: POST /session/:id/heartbeat. */
static void
m_heartbeat(struct acp_conn *c, struct rpc_msg *m)
{
	char id[SERVE_SESSION_ID_MAX + 1];

	if (session_param(c, m, id, sizeof(id)) == 0)
		acp_call_run(c, m->id, id, route_session_heartbeat, id,
		    held_client(c, id), NULL, heartbeat_done, 0);
}

/*
 * A store's REST answer is the result; its artifact refusal (400 {v,
 * error: {code, message, field?}}) is -32602 with its message and
 * {code, field?} as data.
 */
static void
store_done(struct acp_call *call, int status, json_object *body,
    struct qerr *e)
{
	json_object *err = json_get_obj(body, "error"), *data;
	const char *msg = json_get_str(err, "message");

	if (status != 400 || msg == NULL || call->rpc_id == NULL) {
		heartbeat_done(call, status, body, e);
		return;
	}
	data = xjson_object_new_object();
	json_object_object_foreach(err, k, v)
		if (strcmp(k, "message") != 0)
			json_object_object_add(data, k, json_object_get(v));
	acp_send(call->conn, NULL, rpc_new_error(json_object_get(call->rpc_id),
	    RPC_INVALID_PARAMS, msg, data));
}

/*
 * A session's stores, as upstream's ACP methods: _qwen/session/attachments
 * (GET /session/:id/attachments), _qwen/session/artifacts (GET
 * /session/:id/artifacts), _qwen/session/artifacts/add (POST, the params
 * but sessionId its body) and _qwen/session/artifacts/remove {artifactId}
 * (DELETE), as this connection's client; the REST answer is the result.
 */
static void
m_store(struct acp_conn *c, struct rpc_msg *m)
{
	char id[SERVE_SESSION_ID_MAX + 1];
	void (*route)(struct http_ctx *);
	json_object *body = NULL;

	if (session_param(c, m, id, sizeof(id)) == -1)
		return;
	if (strcmp(m->method, "_qwen/session/attachments") == 0)
		route = route_session_attachments;
	else if (strcmp(m->method, "_qwen/session/artifacts") == 0)
		route = route_session_artifacts;
	else {
		route = strcmp(m->method, "_qwen/session/artifacts/add") == 0 ?
		    route_session_artifact_add : route_session_artifact_remove;
		body = xjson_object_new_object();
		json_object_object_foreach(m->params, k, v)
			if (strcmp(k, "sessionId") != 0)
				json_object_object_add(body, k, json_object_get(v));
	}
	acp_call_run(c, m->id, id, route, id, held_client(c, id), body,
	    store_done, 0);
	json_object_put(body);
}

/* ---- dispatch ------------------------------------------------------------ */

/* new: new work, refused during a drain as its REST route is. */
static const struct {
	const char	*name;
	void		(*fn)(struct acp_conn *, struct rpc_msg *);
	int		 new;
} methods[] = {
	{ "initialize", m_initialize, 0 },
	{ "session/new", m_new, 1 },
	{ "session/load", m_load, 1 },
	{ "session/resume", m_resume, 1 },
	{ "session/prompt", m_prompt, 1 },
	{ "session/cancel", m_cancel, 0 },
	{ "session/close", m_close, 0 },
	{ "_qwen/session/heartbeat", m_heartbeat, 0 },
	{ "_qwen/session/detach", m_detach, 0 },
	{ "_qwen/session/attachments", m_store, 0 },
	{ "_qwen/session/artifacts", m_store, 0 },
	{ "_qwen/session/artifacts/add", m_store, 0 },
	{ "_qwen/session/artifacts/remove", m_store, 0 },
};

/* Run the method of a request or notification; answers are ignored. */
int
acp_dispatch(struct acp_conn *c, struct rpc_msg *m)
{
	size_t i;

	if (m->kind == RPC_RESULT || m->kind == RPC_ERROR) {
		acp_perm_answer(c, m);	/* the only requests we send */
		return 0;
	}
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(methods[i].name, m->method) == 0)
			break;
	if (i == sizeof(methods) / sizeof(methods[0])) {
		if (m->kind == RPC_REQUEST)
			acp_reply_rpc(c, m->id, RPC_METHOD_NOT_FOUND, "Method not found");
		return 0;
	}
	if (!c->initialized && methods[i].fn != m_initialize) {
		if (m->kind == RPC_REQUEST)
			acp_reply_rpc(c, m->id, RPC_INVALID_REQUEST,
			    "Invalid Request: initialize first");
		return -1;
	}
	if (m->params != NULL && !json_object_is_type(m->params, json_type_object)) {
		bad_params(c, m, "params must be an object");
		return 0;
	}
	/* The ACP methods call the routes directly, past http.c's check. */
	if (methods[i].new && drain_active()) {
		if (m->kind == RPC_REQUEST)
			acp_reply_error(c, NULL, m->id,
			    qerr_new("workspace_draining", NULL));
		return 0;
	}
	methods[i].fn(c, m);
	return 0;
}
