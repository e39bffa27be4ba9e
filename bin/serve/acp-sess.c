/* SPDX-License-Identifier: ISC */
/*
 * acp-sess.c: the sessions one ACP connection holds.  An attached session
 * is a client registration (the clientId its create/load/resume got) plus
 * a listener on the session's bus that turns its events into ACP
 * messages: session_update becomes the session/update notification, a
 * permission_request the session/request_permission request (its id is
 * our requestId; the client's answer comes back through acp_perm_answer),
 * the end of one of this connection's prompts answers its session/prompt,
 * and every other event is a _qwen/notify notification {sessionId, kind,
 * data}.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "log.h"
#include "rpc-frame.h"
#include "acp-int.h"
#include "xmalloc.h"

static void	on_event(void *arg, json_object *env, int terminal);

/* The entry for id on c, or NULL. */
struct acp_sess *
acp_sess_find(struct acp_conn *c, const char *id)
{
	struct acp_sess *a;

	TAILQ_FOREACH(a, &c->sessions, entry)
		if (strcmp(a->id, id) == 0)
			return a;
	return NULL;
}

/* One more call that may attach id. */
struct acp_sess *
acp_sess_claim(struct acp_conn *c, const char *id)
{
	struct acp_sess *a;

	if ((a = acp_sess_find(c, id)) == NULL) {
		if (c->nsessions >= ACP_MAX_SESSIONS_PER_CONN ||
		    (a = calloc(1, sizeof(*a))) == NULL)
			return NULL;
		strlcpy(a->id, id, sizeof(a->id));
		a->conn = c;
		TAILQ_INIT(&a->prompts);
		TAILQ_INSERT_TAIL(&c->sessions, a, entry);
		c->nsessions++;
	}
	a->pending++;
	return a;
}

/* The session ended: its waiting prompts get an error (not on close). */
static void
prompts_fail(struct acp_conn *c, struct acp_sess *a, const char *why)
{
	struct acp_prompt *p;
	struct qerr *e;

	while ((p = TAILQ_FIRST(&a->prompts)) != NULL) {
		TAILQ_REMOVE(&a->prompts, p, entry);
		if (why != NULL && (e = qerr_new("session_closing", NULL)) != NULL) {
			qerr_set_str(e, "sessionId", a->id);
			qerr_set_str(e, "reason", why);
			acp_reply_error(c, NULL, p->rpc_id, e);
		}
		json_object_put(p->rpc_id);
		free(p);
	}
}

/* Forget the entry: no listener, prompts answered, sink told. */
void
acp_sess_drop(struct acp_conn *c, struct acp_sess *a)
{
	char id[SERVE_SESSION_ID_MAX + 1];

	strlcpy(id, a->id, sizeof(id));
	prompts_fail(c, a, c->closing ? NULL : "session_ended");
	bus_unlisten(a->listener);
	TAILQ_REMOVE(&c->sessions, a, entry);
	c->nsessions--;
	free(a);
	if (!c->closing && c->sink->session_gone != NULL)
		c->sink->session_gone(c->arg, id);
}

/* A claiming call ended; an entry nothing attached goes. */
void
acp_sess_unclaim(struct acp_conn *c, const char *id)
{
	struct acp_sess *a = acp_sess_find(c, id);

	if (a == NULL)
		return;
	if (a->pending > 0)
		a->pending--;
	if (a->pending == 0 && a->client_id[0] == '\0')
		acp_sess_drop(c, a);
}

/* As REST detach: one client reference less, close when unheld. */
void
acp_session_detach(const char *id, const char *client_id)
{
	struct session *s = sessions_find(id);

	if (s == NULL || !clients_release(&s->clients, client_id))
		return;
	if (s->attach_count > 0)
		s->attach_count--;
	if (!session_held(s))
		session_close(s, "last_client_detached", client_id);
}

/* A create/load/resume succeeded: hold the session and listen to it. */
struct acp_sess *
acp_sess_attach(struct acp_conn *c, const char *id, const char *client_id)
{
	struct session *s = sessions_find(id);
	struct acp_sess *a = acp_sess_find(c, id);
	struct client *cl;

	if (s == NULL)
		return NULL;
	if (a == NULL && (a = acp_sess_claim(c, id)) != NULL)
		a->pending--;
	if (a == NULL) {
		acp_session_detach(id, client_id);
		return NULL;
	}
	if (a->client_id[0] != '\0') {
		/* Attached already: the route's new reference is one too many. */
		if (strcmp(a->client_id, client_id) != 0 ||
		    ((cl = clients_find(&s->clients, client_id)) != NULL && cl->refs > 1))
			acp_session_detach(id, client_id);
		return a;
	}
	strlcpy(a->client_id, client_id, sizeof(a->client_id));
	a->listener = bus_listen(s->bus, on_event, a);
	return a;
}

/* Remember a queued prompt of this connection. */
void
acp_sess_prompt(struct acp_sess *a, const char *prompt_id, json_object *rpc_id)
{
	struct acp_prompt *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return;
	strlcpy(p->id, prompt_id, sizeof(p->id));
	p->rpc_id = json_object_get(rpc_id);
	TAILQ_INSERT_TAIL(&a->prompts, p, entry);
}

/* The connection ends: detach everything it holds. */
void
acp_sessions_release(struct acp_conn *c)
{
	struct acp_sess *a;
	char id[SERVE_SESSION_ID_MAX + 1], cid[SERVE_CLIENT_ID_MAX + 1];

	while ((a = TAILQ_FIRST(&c->sessions)) != NULL) {
		strlcpy(id, a->id, sizeof(id));
		strlcpy(cid, a->client_id, sizeof(cid));
		acp_sess_drop(c, a);
		if (cid[0] != '\0')
			acp_session_detach(id, cid);
	}
}

/* ---- bus events ---------------------------------------------------------- */

/* The end of one of our prompts: {stopReason} or the turn's error. */
static void
prompt_end(struct acp_conn *c, struct acp_sess *a, const char *type,
    const char *prompt_id, json_object *data)
{
	struct acp_prompt *p;
	json_object *v, *r;
	struct qerr *e;

	TAILQ_FOREACH(p, &a->prompts, entry)
		if (strcmp(p->id, prompt_id) == 0)
			break;
	if (p == NULL)
		return;
	TAILQ_REMOVE(&a->prompts, p, entry);
	if (strcmp(type, "turn_complete") == 0) {
		r = xjson_object_new_object();
		json_object_object_add(r, "stopReason", json_object_object_get_ex(data,
		    "stopReason", &v) ? json_object_get(v) : xjson_object_new_string("end_turn"));
		acp_reply(c, a->id, p->rpc_id, r);
	} else {
		e = qerr_new("internal", "%s", json_object_object_get_ex(data,
		    "message", &v) ? json_object_get_string(v) : "Prompt failed");
		if (e != NULL && json_object_object_get_ex(data, "code", &v))
			qerr_set_str(e, "turnErrorCode", json_object_get_string(v));
		if (e != NULL && json_object_object_get_ex(data, "errorKind", &v))
			qerr_set_str(e, "turnErrorKind", json_object_get_string(v));
		if (e != NULL)
			qerr_set_str(e, "sessionId", a->id);
		acp_reply_error(c, a->id, p->rpc_id, e);
	}
	json_object_put(p->rpc_id);
	free(p);
}

/* session/request_permission {sessionId, toolCall, options, _meta.qwen.requestId}. */
static void
ask_permission(struct acp_conn *c, struct acp_sess *a, json_object *data)
{
	json_object *p = json_object_new_object(), *meta, *q, *rid, *v;

	if (!json_object_object_get_ex(data, "requestId", &rid)) {
		json_object_put(p);
		return;
	}
	json_object_object_add(p, "sessionId", json_object_new_string(a->id));
	if (json_object_object_get_ex(data, "toolCall", &v))
		json_object_object_add(p, "toolCall", json_object_get(v));
	if (json_object_object_get_ex(data, "options", &v))
		json_object_object_add(p, "options", json_object_get(v));
	meta = json_object_new_object();
	q = json_object_new_object();
	json_object_object_add(q, "requestId", json_object_get(rid));
	json_object_object_add(meta, "qwen", q);
	json_object_object_add(p, "_meta", meta);
	acp_send(c, a->id, rpc_new_request(json_object_get(rid),
	    "session/request_permission", p));
}

/* A client's answer to a session/request_permission we sent it. */
void
acp_perm_answer(struct acp_conn *c, struct rpc_msg *m)
{
	json_object *outcome = NULL;
	struct acp_sess *a;
	const char *sid;

	if (m->kind != RPC_RESULT || !json_object_is_type(m->id, json_type_string) ||
	    (sid = permission_session_of(json_object_get_string(m->id))) == NULL ||
	    (a = acp_sess_find(c, sid)) == NULL)
		return;		/* not ours, already answered, or an error: no vote */
	if (m->result != NULL)
		(void)json_object_object_get_ex(m->result, "outcome", &outcome);
	if (permission_answer(sid, json_object_get_string(m->id), outcome,
	    a->client_id[0] ? a->client_id : NULL) != PERMISSION_ACCEPTED)
		log_info("acp: connection %s: an unusable permission answer", c->id);
}

/* A session event: a notification, maybe a prompt's answer, maybe the end. */
static void
on_event(void *arg, json_object *env, int terminal)
{
	struct acp_sess *a = arg;
	struct acp_conn *c = a->conn;
	json_object *type, *data, *pid, *params;
	const char *t;

	if (env == NULL) {	/* bus freed: the listener goes with it */
		a->listener = NULL;
		acp_sess_drop(c, a);
		return;
	}
	if (!json_object_object_get_ex(env, "type", &type) ||
	    !json_object_object_get_ex(env, "data", &data))
		return;
	t = json_object_get_string(type);
	if (strcmp(t, "session_update") == 0)
		acp_send(c, a->id, rpc_new_notification("session/update",
		    json_object_get(data)));
	else if (strcmp(t, "permission_request") == 0)
		ask_permission(c, a, data);
	else {
		params = xjson_object_new_object();
		json_object_object_add(params, "sessionId", xjson_object_new_string(a->id));
		json_object_object_add(params, "kind", xjson_object_new_string(t));
		json_object_object_add(params, "data", json_object_get(data));
		if (json_object_object_get_ex(env, "promptId", &pid))
			json_object_object_add(params, "promptId", json_object_get(pid));
		acp_send(c, a->id, rpc_new_notification("_qwen/notify", params));
		if ((strcmp(t, "turn_complete") == 0 || strcmp(t, "turn_error") == 0) &&
		    json_object_object_get_ex(env, "promptId", &pid))
			prompt_end(c, a, t, json_object_get_string(pid), data);
	}
	if (terminal) {
		/* session_closed / session_died: this connection holds it no more. */
		a->client_id[0] = '\0';
		a->pending = 0;
		acp_sess_drop(c, a);
	}
}
