/*
 * routes-agent.c: the routes that talk to the agent about a live session
 * beyond prompts: answers to its permission requests, and model switches
 * (POST /session/:id/model {modelId} → ACP session/set_model, announced to
 * every subscriber as model_switched or model_switch_failed).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "log.h"
#include "serve.h"

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

/* POST /session/:id/permission/:requestId {outcome}: the first answer wins. */
void
route_session_permission(struct http_ctx *ctx)
{
	struct session *s;
	json_object *outcome = NULL;

	if ((s = routes_session(ctx)) == NULL)
		return;
	(void)json_object_object_get_ex(ctx->body, "outcome", &outcome);
	switch (perm_answer(s->id, ctx->path_tail, outcome, ctx->client_id)) {
	case PERM_ACCEPTED:
		http_reply_json(ctx->req, 200, json_object_new_object());
		break;
	case PERM_BAD_OUTCOME:
		permission_error(ctx, 400, "`outcome` must be `{ outcome: \"cancelled\" }` "
		    "or `{ outcome: \"selected\", optionId: string }`", NULL, NULL, NULL);
		break;
	case PERM_BAD_OPTION:
		permission_error(ctx, 400, "optionId is not one the request offered",
		    "invalid_option_id", NULL, outcome);
		break;
	case PERM_NOT_FOUND:
		permission_error(ctx, 404, "No pending permission request for session",
		    NULL, s->id, NULL);
		break;
	}
}

/* One model switch in flight: its request and what to announce. */
struct model_switch {
	struct evhttp_request	*req;
	char			 session_id[SERVE_SESSION_ID_MAX + 1];
	char			*model_id;
	char			 client_id[SERVE_CLIENT_ID_MAX + 1];	/* "" none */
};

/* model_switched {sessionId, modelId} or model_switch_failed {..., error}. */
static void
announce(struct model_switch *m, struct session *s, const char *error)
{
	json_object *d = json_object_new_object();

	json_object_object_add(d, "sessionId", json_object_new_string(m->session_id));
	json_object_object_add(d, error == NULL ? "modelId" : "requestedModelId",
	    json_object_new_string(m->model_id));
	if (error != NULL)
		json_object_object_add(d, "error", json_object_new_string(error));
	bus_publish(s->bus, error == NULL ? "model_switched" : "model_switch_failed", d,
	    NULL, m->client_id[0] ? m->client_id : NULL, 0);
}

static void
on_set_model(void *arg, enum chan_outcome o, json_object *payload)
{
	struct model_switch *m = arg;
	struct session *s = sessions_find(m->session_id);
	json_object *msg;
	const char *why;

	if (o == CHAN_RESULT) {
		if (s != NULL)
			announce(m, s, NULL);
		http_reply_json(m->req, 200, payload != NULL ?
		    json_object_get(payload) : json_object_new_object());
	} else {
		why = o == CHAN_TIMEOUT ? "the agent did not answer in time" :
		    o == CHAN_ERROR && json_object_object_get_ex(payload, "message", &msg) ?
		    json_object_get_string(msg) : "the agent is gone";
		if (s != NULL)
			announce(m, s, why);
		if (o == CHAN_ERROR)
			http_error_rpc(m->req, payload, m->session_id);
		else
			http_error(m->req, o == CHAN_TIMEOUT ? "init_timeout" :
			    "acp_channel_unavailable", m->session_id);
	}
	log_info("session %s: model switch %s", m->session_id,
	    o == CHAN_RESULT ? "done" : "failed");
	free(m->model_id);
	free(m);
}

/* POST /session/:id/model {modelId}: switch through the agent. */
void
route_session_model(struct http_ctx *ctx)
{
	struct model_switch *m;
	struct session *s;
	json_object *v, *p;

	if ((s = routes_session(ctx)) == NULL)
		return;
	if (!json_object_object_get_ex(ctx->body, "modelId", &v) ||
	    !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) {
		p = json_object_new_object();
		json_object_object_add(p, "error", json_object_new_string(
		    "`modelId` is required and must be a non-empty string"));
		http_reply_json(ctx->req, 400, p);
		return;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL ||
	    (m->model_id = strdup(json_object_get_string(v))) == NULL) {
		free(m);
		http_error(ctx->req, "internal", NULL);
		return;
	}
	m->req = ctx->req;
	strlcpy(m->session_id, s->id, sizeof(m->session_id));
	if (ctx->client_id != NULL)
		strlcpy(m->client_id, ctx->client_id, sizeof(m->client_id));
	p = json_object_new_object();
	json_object_object_add(p, "sessionId", json_object_new_string(s->id));
	json_object_object_add(p, "modelId", json_object_new_string(m->model_id));
	if (channel_request(s->channel, "session/set_model", p,
	    (uint64_t)conf.init_timeout_ms, on_set_model, m) == NULL) {
		http_error(ctx->req, "acp_channel_unavailable", s->id);
		free(m->model_id);
		free(m);
	}
}
