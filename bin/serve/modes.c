/* SPDX-License-Identifier: ISC */
/*
 * modes.c: a live session's model and approval mode, switched through
 * its agent the way upstream's bridge does it.  A model switch is ACP
 * session/set_model with the id as given (upstream passes a
 * modelServiceId through unchanged), announced as model_switched or
 * model_switch_failed.  An approval-mode switch is the qwen extension
 * qwen/control/session/approval_mode {sessionId, mode, planMode?} answered
 * {previous, current, planExecutionMode?}; an agent without it (-32601)
 * gets standard ACP session/set_mode {sessionId, modeId}.  Success is
 * announced as approval_mode_changed.  Also here: what POST /session,
 * load and resume apply before they answer (modelServiceId, approvalMode).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "approval.h"
#include "json.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

/* One switch in flight. */
struct switch_op {
	char		 session_id[SERVE_SESSION_ID_MAX + 1];
	char		 client_id[SERVE_CLIENT_ID_MAX + 1];	/* "" none */
	char		*value;		/* the model id or the mode */
	int		 plan_mode;	/* -1 absent, else the planMode flag */
	int		 fallback;	/* sent as session/set_mode */
	channel_cb		 cb;
	void		*arg;
};

/* The mode the session's agent reported last (session/new, load, resume). */
void
modes_seed(struct session *s)
{
	json_object *modes;
	const char *cur;

	strlcpy(s->approval_mode, "default", sizeof(s->approval_mode));
	if (s->state != NULL && json_object_object_get_ex(s->state, "modes", &modes) &&
	    (cur = json_get_str(modes, "currentModeId")) != NULL && approval_mode_known(cur))
		strlcpy(s->approval_mode, cur, sizeof(s->approval_mode));
}

static struct switch_op *
op_new(struct session *s, const char *value, const char *client_id, channel_cb cb, void *arg)
{
	struct switch_op *op = xcalloc(1, sizeof(*op));

	strlcpy(op->session_id, s->id, sizeof(op->session_id));
	if (client_id != NULL)
		strlcpy(op->client_id, client_id, sizeof(op->client_id));
	op->value = xstrdup(value);
	op->plan_mode = -1;
	op->cb = cb;
	op->arg = arg;
	return op;
}

static void
op_free(struct switch_op *op)
{
	free(op->value);
	free(op);
}

/* Why a switch failed, for model_switch_failed's error. */
static const char *
failure_text(enum channel_outcome o, json_object *payload)
{
	const char *m;

	if (o == CHANNEL_ERROR && (m = json_get_str(payload, "message")) != NULL)
		return m;
	return o == CHANNEL_TIMEOUT ? "the agent did not answer in time" : "the agent is gone";
}

/* ---- model --------------------------------------------------------------- */

/* The switched-to model, in the state a snapshot and an attach report. */
static void
model_remember(struct session *s, const char *model)
{
	json_object *models;

	if (s->state == NULL || !json_object_is_type(s->state, json_type_object))
		return;
	if ((models = json_get_obj(s->state, "models")) == NULL) {
		models = xjson_object_new_object();
		json_object_object_add(s->state, "models", models);
	}
	json_object_object_add(models, "currentModelId", xjson_object_new_string(model));
}

/*
 * session_snapshot's data: {sessionId, currentModelId, currentApprovalMode,
 * recordingDegraded} (caller owns).  The model is null when the agent
 * never named one.
 */
json_object *
modes_snapshot(struct session *s)
{
	json_object *d = xjson_object_new_object(), *models;
	const char *model = NULL;

	if (s->state != NULL && (models = json_get_obj(s->state, "models")) != NULL)
		model = json_get_str(models, "currentModelId");
	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "currentModelId",
	    model != NULL ? xjson_object_new_string(model) : NULL);
	json_object_object_add(d, "currentApprovalMode",
	    xjson_object_new_string(s->approval_mode[0] ? s->approval_mode : "default"));
	json_object_object_add(d, "recordingDegraded", xjson_object_new_boolean(0));
	return d;
}

static void
on_model(void *arg, enum channel_outcome o, json_object *payload)
{
	struct switch_op *op = arg;
	struct session *s = sessions_find(op->session_id);
	const char *cid = op->client_id[0] ? op->client_id : NULL;
	json_object *d;

	if (s != NULL) {
		d = xjson_object_new_object();
		json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
		json_object_object_add(d, o == CHANNEL_RESULT ? "modelId" : "requestedModelId",
		    xjson_object_new_string(op->value));
		if (o != CHANNEL_RESULT)
			json_object_object_add(d, "error",
			    xjson_object_new_string(failure_text(o, payload)));
		else
			model_remember(s, op->value);
		bus_publish(s->bus, o == CHANNEL_RESULT ? "model_switched" : "model_switch_failed",
		    d, prompts_active(s, NULL), cid, 0);
	}
	log_info("session %s: model switch %s", op->session_id,
	    o == CHANNEL_RESULT ? "done" : "failed");
	if (op->cb != NULL)
		op->cb(op->arg, o, payload);
	op_free(op);
}

int
modes_model(struct session *s, const char *model, const char *client_id,
    channel_cb cb, void *arg)
{
	struct switch_op *op = op_new(s, model, client_id, cb, arg);
	json_object *p = xjson_object_new_object();

	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(p, "modelId", xjson_object_new_string(model));
	if (channel_request(s->channel, "session/set_model", p,
	    (uint64_t)conf.init_timeout_ms, on_model, op) == NULL) {
		op_free(op);
		return -1;
	}
	return 0;
}

/* ---- approval mode ------------------------------------------------------- */

static struct channel_req *send_mode(struct session *, struct switch_op *);

/* The REST answer {sessionId, mode, previous, persisted, planExecutionMode?}. */
static json_object *
mode_answer(struct session *s, const char *previous, const char *current,
    const char *plan_exec)
{
	json_object *o = xjson_object_new_object();

	json_object_object_add(o, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(o, "mode", xjson_object_new_string(current));
	json_object_object_add(o, "previous", xjson_object_new_string(previous));
	/* The daemon keeps no agent settings: nothing is ever persisted. */
	json_object_object_add(o, "persisted", xjson_object_new_boolean(0));
	if (plan_exec != NULL)
		json_object_object_add(o, "planExecutionMode", xjson_object_new_string(plan_exec));
	return o;
}

/* approval_mode_changed {sessionId, previous, next, persisted, planExecutionMode?}. */
static void
mode_announce(struct session *s, json_object *answer, const char *client_id)
{
	json_object *d = xjson_object_new_object(), *v;

	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	if (json_object_object_get_ex(answer, "previous", &v))
		json_object_object_add(d, "previous", json_object_get(v));
	if (json_object_object_get_ex(answer, "mode", &v))
		json_object_object_add(d, "next", json_object_get(v));
	json_object_object_add(d, "persisted", xjson_object_new_boolean(0));
	if (json_object_object_get_ex(answer, "planExecutionMode", &v))
		json_object_object_add(d, "planExecutionMode", json_object_get(v));
	bus_publish(s->bus, "approval_mode_changed", d,
	    prompts_active(s, NULL), client_id, 0);
}

/*
 * The agent's answer as ours, or NULL when it names a mode we do not know
 * (upstream fails the switch then).  session/set_mode answers nothing:
 * the previous mode is the one we last saw.
 */
static json_object *
mode_result(struct session *s, struct switch_op *op, json_object *payload)
{
	const char *cur, *prev, *pem;

	if (op->fallback)
		return mode_answer(s, s->approval_mode, op->value, NULL);
	cur = json_get_str(payload, "current");
	prev = json_get_str(payload, "previous");
	pem = json_get_str(payload, "planExecutionMode");
	if (!approval_mode_known(cur))
		return NULL;
	if (pem != NULL && (strcmp(pem, "plan") == 0 || !approval_mode_known(pem)))
		return NULL;
	return mode_answer(s,
	    approval_mode_known(prev) ? prev : s->approval_mode, cur,
	    strcmp(cur, "plan") == 0 ? pem : NULL);
}

static void
on_mode(void *arg, enum channel_outcome o, json_object *payload)
{
	struct switch_op *op = arg;
	struct session *s = sessions_find(op->session_id);
	json_object *answer = NULL, *err, *code;

	if (s != NULL && o == CHANNEL_ERROR && !op->fallback && op->plan_mode == -1 &&
	    (code = json_get(payload, "code", json_type_int)) != NULL &&
	    json_object_get_int(code) == -32601) {
		/* Not a qwen agent: the standard ACP method. */
		op->fallback = 1;
		if (send_mode(s, op) != NULL)
			return;
		o = CHANNEL_CLOSED;
	}
	if (s != NULL && o == CHANNEL_RESULT &&
	    (answer = mode_result(s, op, payload)) == NULL) {
		err = xjson_object_new_object();
		json_object_object_add(err, "code", xjson_object_new_int(-32603));
		json_object_object_add(err, "message", xjson_object_new_string(
		    "Agent returned an unknown approval mode"));
		op->cb(op->arg, CHANNEL_ERROR, err);
		json_object_put(err);
		op_free(op);
		return;
	}
	if (answer != NULL) {
		strlcpy(s->approval_mode, json_get_str(answer, "mode"),
		    sizeof(s->approval_mode));
		mode_announce(s, answer,
		    op->client_id[0] ? op->client_id : NULL);
	}
	log_info("session %s: approval mode switch %s", op->session_id,
	    answer != NULL ? "done" : "failed");
	op->cb(op->arg, answer != NULL ? CHANNEL_RESULT : o == CHANNEL_RESULT ? CHANNEL_CLOSED : o,
	    answer != NULL ? answer : payload);
	json_object_put(answer);
	op_free(op);
}

static struct channel_req *
send_mode(struct session *s, struct switch_op *op)
{
	json_object *p = xjson_object_new_object();

	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(p, op->fallback ? "modeId" : "mode",
	    xjson_object_new_string(op->value));
	if (op->plan_mode != -1)
		json_object_object_add(p, "planMode", xjson_object_new_boolean(op->plan_mode));
	return channel_request(s->channel, op->fallback ? "session/set_mode" :
	    "qwen/control/session/approval_mode", p, (uint64_t)conf.init_timeout_ms,
	    on_mode, op);
}

int
modes_mode(struct session *s, const char *mode, int plan_mode, const char *client_id,
    channel_cb cb, void *arg)
{
	struct switch_op *op = op_new(s, mode, client_id, cb, arg);

	op->plan_mode = plan_mode;
	if (send_mode(s, op) == NULL) {
		op_free(op);
		return -1;
	}
	return 0;
}

/* An HTTP error for a failed switch (the agent's error, a timeout, gone). */
void
modes_http_error(struct evhttp_request *req, enum channel_outcome o, json_object *payload,
    const char *session_id)
{
	if (o == CHANNEL_ERROR)
		http_error_rpc(req, payload, session_id);
	else
		http_error(req, o == CHANNEL_TIMEOUT ? "init_timeout" : "acp_channel_unavailable",
		    session_id);
}

/* ---- before a create, load or resume answers ----------------------------- */

/* The callers of one create, load or resume, answered once the switches ran. */
struct setup {
	char			 session_id[SERVE_SESSION_ID_MAX + 1];
	enum inflight_action	 action;
	int			 attached;	/* the first caller attached */
	int			 model_applied;	/* -1: no modelServiceId */
	char			*mode;		/* approvalMode, or NULL */
	size_t			 n;
	struct setup_caller {
		struct evhttp_request	*req;
		char			 client_id[SERVE_CLIENT_ID_MAX + 1];
	}			*callers;
};

static void	setup_mode(struct setup *);

static void
setup_free(struct setup *st)
{
	free(st->mode);
	free(st->callers);
	free(st);
}

/* Everyone gets the session; later callers attached. */
static void
setup_finish(struct setup *st)
{
	struct session *s = sessions_find(st->session_id);
	json_object *o, *arr;
	size_t i;

	for (i = 0; i < st->n; i++) {
		if (s == NULL) {
			/* Gone (its child died) while the switches ran. */
			http_error(st->callers[i].req, "session_not_found", st->session_id);
			continue;
		}
		o = inflight_session_json(s, st->action, st->attached || i > 0,
		    st->callers[i].client_id[0] ? st->callers[i].client_id : NULL);
		if (st->model_applied != -1)
			json_object_object_add(o, "modelApplied",
			    xjson_object_new_boolean(st->model_applied));
		/* A load's compactedReplay goes out a slice per loop turn. */
		reply_slice_json(st->callers[i].req, 200, o,
		    json_object_object_get_ex(o, "compactedReplay", &arr) ? arr : NULL);
	}
	setup_free(st);
}

/* A model that was not applied only says so (modelApplied, the event). */
static void
on_setup_model(void *arg, enum channel_outcome o, json_object *payload)
{
	struct setup *st = arg;

	(void)payload;
	if (st->model_applied != -1)
		st->model_applied = o == CHANNEL_RESULT;
	setup_mode(st);
}

/*
 * A mode that was not applied fails every caller: a new session is closed
 * again, an attach (or a restore) gives back its registrations.
 */
static void
on_setup_mode(void *arg, enum channel_outcome o, json_object *payload)
{
	struct setup *st = arg;
	struct session *s = sessions_find(st->session_id);
	size_t i;

	if (o == CHANNEL_RESULT) {
		setup_finish(st);
		return;
	}
	for (i = 0; i < st->n; i++)
		modes_http_error(st->callers[i].req, o, payload,
		    st->session_id);
	if (s != NULL && st->action == OP_SPAWN && !st->attached)
		session_close(s, "approval_mode_initialization_failed", NULL);
	else if (s != NULL) {
		for (i = 0; i < st->n; i++) {
			if (st->callers[i].client_id[0] != '\0')
				(void)clients_release(&s->clients,
				    st->callers[i].client_id);
			if (s->attach_count > 0)
				s->attach_count--;
		}
	}
	setup_free(st);
}

static void
setup_mode(struct setup *st)
{
	struct session *s = sessions_find(st->session_id);

	if (st->mode == NULL || s == NULL) {
		setup_finish(st);
		return;
	}
	if (modes_mode(s, st->mode, -1, st->callers[0].client_id[0] ?
	    st->callers[0].client_id : NULL, on_setup_mode, st) == -1)
		on_setup_mode(st, CHANNEL_CLOSED, NULL);
}

/*
 * Answer the n callers of a create, load or resume of s once body's
 * modelServiceId (a create) and approvalMode are applied.  body borrowed.
 */
void
modes_reply(struct session *s, enum inflight_action action, int attached,
    json_object *body, const struct modes_caller *callers, size_t n)
{
	struct setup *st = xcalloc(1, sizeof(*st));
	const char *model = NULL, *mode;
	size_t i;

	strlcpy(st->session_id, s->id, sizeof(st->session_id));
	st->action = action;
	st->attached = attached;
	st->model_applied = -1;
	st->callers = xreallocarray(NULL, n, sizeof(*st->callers));
	st->n = n;
	for (i = 0; i < n; i++) {
		st->callers[i].req = callers[i].req;
		strlcpy(st->callers[i].client_id, callers[i].client_id != NULL ?
		    callers[i].client_id : "", sizeof(st->callers[i].client_id));
	}
	if (action == OP_SPAWN && (model = json_get_str(body, "modelServiceId")) != NULL &&
	    model[0] == '\0')
		model = NULL;
	if ((mode = json_get_str(body, "approvalMode")) != NULL && mode[0] != '\0')
		st->mode = xstrdup(mode);
	if (model == NULL) {
		setup_mode(st);
		return;
	}
	/* Only a new session says whether its model was applied. */
	if (!attached)
		st->model_applied = 0;
	if (modes_model(s, model, st->callers[0].client_id[0] ?
	    st->callers[0].client_id : NULL, on_setup_model, st) == -1)
		setup_mode(st);
}
