/* SPDX-License-Identifier: ISC */
/*
 * routes-agent.c: the routes that talk to the agent about a live session
 * beyond prompts: answers to its permission requests (also by upstream's
 * legacy POST /permission/:requestId), and model and
 * approval-mode switches (POST /session/:id/model {modelId},
 * POST /session/:id/approval-mode {mode}; the work is in modes.c).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "approval.h"
#include "json.h"
#include "serve.h"
#include "xmalloc.h"

/* A 4xx with upstream's body: {error, code?, sessionId?, requestId, optionId?}. */
static void
permission_error(struct http_ctx *ctx, int status, const char *msg,
    const char *code, const char *sid, json_object *outcome)
{
	json_object *o = json_object_new_object(), *v;

	json_object_object_add(o, "error", json_object_new_string(msg));
	if (code != NULL)
		json_object_object_add(o, "code", json_object_new_string(code));
	if (sid != NULL)
		json_object_object_add(o, "sessionId", json_object_new_string(sid));
	json_object_object_add(o, "requestId", json_object_new_string(ctx->path_tail));
	if (outcome != NULL && json_object_object_get_ex(outcome, "optionId", &v))
		json_object_object_add(o, "optionId", json_object_get(v));
	http_reply_json(ctx->req, status, o);
}

/*
 * The answer to a permission answer, for both routes: sid is the
 * session the request was looked up in (NULL: any live one).
 */
static void
permission_reply(struct http_ctx *ctx, const char *sid, json_object *outcome)
{
	switch (permission_answer(sid, ctx->path_tail, outcome, ctx->client_id)) {
	case PERMISSION_ACCEPTED:
		http_reply_json(ctx->req, 200, json_object_new_object());
		break;
	case PERMISSION_BAD_OUTCOME:
		permission_error(ctx, 400, "`outcome` must be `{ outcome: \"cancelled\" }` "
		    "or `{ outcome: \"selected\", optionId: string }`", NULL, NULL, NULL);
		break;
	case PERMISSION_BAD_OPTION:
		permission_error(ctx, 400, "optionId is not one the request offered",
		    "invalid_option_id", NULL, outcome);
		break;
	case PERMISSION_NOT_FOUND:
		permission_error(ctx, 404, sid != NULL ?
		    "No pending permission request for session" :
		    "No pending permission request", NULL, sid, NULL);
		break;
	}
}

/* POST /session/:id/permission/:requestId {outcome}: the first answer wins. */
void
route_session_permission(struct http_ctx *ctx)
{
	struct session *s;
	json_object *outcome = NULL;

	if ((s = routes_session(ctx)) == NULL)
		return;
	(void)json_object_object_get_ex(ctx->body, "outcome", &outcome);
	permission_reply(ctx, s->id, outcome);
}

/*
 * POST /permission/:requestId {outcome}: upstream's legacy form, the
 * request answered in whichever live session holds it (first answer
 * wins, as on the session's route); a client named must be one of that
 * session's.  404 {error, requestId} when no session holds it.
 */
void
route_permission(struct http_ctx *ctx)
{
	const char *sid = permission_session_of(ctx->path_tail);
	struct session *s = sid != NULL ? sessions_find(sid) : NULL;
	json_object *outcome = NULL;

	if (ctx->client_id_bad || (ctx->client_id != NULL && s != NULL &&
	    clients_find(&s->clients, ctx->client_id) == NULL)) {
		http_error(ctx->req, "invalid_client_id", sid);
		return;
	}
	(void)json_object_object_get_ex(ctx->body, "outcome", &outcome);
	permission_reply(ctx, NULL, outcome);
}

/* One REST switch waiting for its agent. */
struct rest_switch {
	struct evhttp_request	*req;
	char			 session_id[SERVE_SESSION_ID_MAX + 1];
};

static struct rest_switch *
rest_switch_new(struct http_ctx *ctx, struct session *s)
{
	struct rest_switch *r = xcalloc(1, sizeof(*r));

	r->req = ctx->req;
	strlcpy(r->session_id, s->id, sizeof(r->session_id));
	return r;
}

/* The agent's answer (the set_model result, or our mode answer), or its error. */
static void
on_switch(void *arg, enum channel_outcome o, json_object *payload)
{
	struct rest_switch *r = arg;

	if (o == CHANNEL_RESULT)
		http_reply_json(r->req, 200, payload != NULL ?
		    json_object_get(payload) : xjson_object_new_object());
	else
		modes_http_error(r->req, o, payload, r->session_id);
	free(r);
}

/* 400 {error} (code and allowed when given). */
static void
bad_body(struct http_ctx *ctx, const char *msg, const char *code, int allowed)
{
	json_object *o = xjson_object_new_object(), *a;
	size_t i;

	json_object_object_add(o, "error", xjson_object_new_string(msg));
	if (code != NULL)
		json_object_object_add(o, "code", xjson_object_new_string(code));
	if (allowed) {
		a = xjson_object_new_array();
		for (i = 0; approval_modes[i] != NULL; i++)
			json_object_array_add(a,
			    xjson_object_new_string(approval_modes[i]));
		json_object_object_add(o, "allowed", a);
	}
	http_reply_json(ctx->req, 400, o);
}

/* POST /session/:id/model {modelId}: switch through the agent. */
void
route_session_model(struct http_ctx *ctx)
{
	struct rest_switch *r;
	struct session *s;
	const char *model;

	if ((s = routes_session(ctx)) == NULL)
		return;
	if ((model = json_get_str(ctx->body, "modelId")) == NULL || model[0] == '\0') {
		bad_body(ctx, "`modelId` is required and must be a non-empty string", NULL, 0);
		return;
	}
	r = rest_switch_new(ctx, s);
	if (modes_model(s, model, ctx->client_id, on_switch, r) == -1) {
		http_error(ctx->req, "acp_channel_unavailable", s->id);
		free(r);
	}
}

/*
 * POST /session/:id/approval-mode {mode, persist?, planMode?}: upstream's
 * route.  persist is accepted and never done (the agent's settings are
 * its own business): the answer says persisted:false.
 */
void
route_session_approval_mode(struct http_ctx *ctx)
{
	struct rest_switch *r;
	struct session *s;
	json_object *v;
	const char *mode;
	int plan = -1;

	if ((s = routes_session(ctx)) == NULL)
		return;
	mode = json_get_str(ctx->body, "mode");
	if (!approval_mode_known(mode)) {
		bad_body(ctx, "`mode` is required and must be one of the allowed values",
		    "invalid_approval_mode", 1);
		return;
	}
	if (json_object_object_get_ex(ctx->body, "persist", &v) &&
	    !json_object_is_type(v, json_type_boolean)) {
		bad_body(ctx, "`persist` must be a boolean when provided",
		    "invalid_persist_flag", 0);
		return;
	}
	if (json_object_object_get_ex(ctx->body, "planMode", &v)) {
		if (!json_object_is_type(v, json_type_boolean) || strcmp(mode, "plan") == 0) {
			bad_body(ctx, "`planMode` must be a boolean with a non-plan "
			    "execution mode", "invalid_plan_mode", 0);
			return;
		}
		plan = json_object_get_boolean(v);
	}
	r = rest_switch_new(ctx, s);
	if (modes_mode(s, mode, plan, ctx->client_id, on_switch, r) == -1) {
		http_error(ctx->req, "acp_channel_unavailable", s->id);
		free(r);
	}
}
