/* SPDX-License-Identifier: ISC */
/*
 * routes-pass.c: the agent-level session routes, passed to the agent.
 *
 * A session's context, usage, stats, tasks, goal, rewind and the rest
 * are the agent's to know, not the daemon's: each route here is one
 * request to the session's child under upstream's method name, its
 * parameters the request's body (or its known query members) plus the
 * session id, and the answer the agent's result as it is.  A real agent
 * as the child (--child-command) answers them itself; our child passes
 * them to its --agent-acp agent, or answers -32601.  An agent that lacks
 * a method is answered as upstream's daemon answers it (500 with the
 * agent's message and code), one that does not answer in time 504
 * init_timeout, a gone channel 503: never a hang.  Each request counts as
 * workspace-control work on the channel while it is out (seed 000).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "json.h"
#include "serve.h"
#include "xmalloc.h"

/* One route: method, path after the session id, the agent's method. */
struct pass_route {
	enum evhttp_cmd_type	 cmd;
	const char		*suffix;
	const char		*method;
	const char		*wrap;		/* the body goes under this member */
	const char		*query[3];	/* GET members taken from the query */
};

static const struct pass_route pass_routes[] = {
	{ EVHTTP_REQ_GET, "/context", "qwen/status/session/context", NULL, { NULL } },
	{ EVHTTP_REQ_GET, "/context-usage", "qwen/status/session/context_usage", NULL,
	    { "detail", NULL } },
	{ EVHTTP_REQ_GET, "/stats", "qwen/status/session/stats", NULL, { NULL } },
	{ EVHTTP_REQ_GET, "/supported-commands", "qwen/status/session/supported_commands",
	    NULL, { NULL } },
	{ EVHTTP_REQ_GET, "/tasks", "qwen/status/session/tasks", NULL, { NULL } },
	{ EVHTTP_REQ_GET, "/agents", "qwen/status/session/agents", NULL, { NULL } },
	{ EVHTTP_REQ_GET, "/lsp", "qwen/status/session/lsp", NULL, { NULL } },
	{ EVHTTP_REQ_GET, "/resources", "qwen/status/session/resources", NULL, { NULL } },
	{ EVHTTP_REQ_GET, "/hooks", "qwen/status/session/hooks", NULL, { NULL } },
	{ EVHTTP_REQ_GET, "/rewind/snapshots", "qwen/status/session/rewind_snapshots",
	    NULL, { NULL } },
	{ EVHTTP_REQ_GET, "/goal", "qwen/control/session/goal/get", NULL, { NULL } },
	{ EVHTTP_REQ_POST, "/goal", "qwen/control/session/goal/control", "request",
	    { NULL } },
	{ EVHTTP_REQ_POST, "/goal/clear", "qwen/control/session/goal/clear", NULL, { NULL } },
	{ EVHTTP_REQ_POST, "/rewind", "qwen/control/session/rewind", NULL, { NULL } },
	{ EVHTTP_REQ_POST, "/recap", "qwen/control/session/recap", NULL, { NULL } },
	{ EVHTTP_REQ_POST, "/btw", "qwen/control/session/btw", NULL, { NULL } },
	{ EVHTTP_REQ_POST, "/language", "qwen/control/session/language", NULL, { NULL } },
	{ EVHTTP_REQ_POST, "/config-option", "session/set_config_option", NULL, { NULL } },
};

/* One request out to the agent. */
struct pass_req {
	struct evhttp_request	*req;
	struct channel		*ch;
	char			 id[SERVE_SESSION_ID_MAX + 1];
};

/* The route of this request: its method and the path after the id. */
static const struct pass_route *
pass_find(struct evhttp_request *req, const char *id)
{
	const char *path = http_path(req);
	const char *at;
	size_t i;

	if (path == NULL || (at = strstr(path, id)) == NULL)
		return NULL;
	at += strlen(id);
	for (i = 0; i < sizeof(pass_routes) / sizeof(pass_routes[0]); i++)
		if (pass_routes[i].cmd == http_method(req) &&
		    strcmp(pass_routes[i].suffix, at) == 0)
			return &pass_routes[i];
	return NULL;
}

/* The agent's answer as it is, or its error as upstream maps it. */
static void
on_pass(void *arg, enum channel_outcome o, json_object *payload)
{
	struct pass_req *pr = arg;

	if (o == CHANNEL_RESULT)
		http_reply_json(pr->req, 200, payload != NULL ?
		    json_object_get(payload) : xjson_object_new_object());
	else if (o == CHANNEL_ERROR)
		http_error_rpc(pr->req, payload, pr->id);
	else
		http_error(pr->req, o == CHANNEL_TIMEOUT ? "init_timeout" :
		    "acp_channel_unavailable", pr->id);
	channel_control_end(pr->ch);
	free(pr);
}

/* The parameters: the body (under wrap), the query's members, the id. */
static json_object *
pass_params(const struct pass_route *r, struct http_ctx *ctx, const char *id)
{
	json_object *p = xjson_object_new_object();
	const char *v;
	size_t i;

	if (r->wrap != NULL)
		json_object_object_add(p, r->wrap, json_object_get(ctx->body));
	else if (json_object_is_type(ctx->body, json_type_object)) {
		json_object_object_foreach(ctx->body, k, val)
			json_object_object_add(p, k, json_object_get(val));
	}
	for (i = 0; i < 3 && r->query[i] != NULL; i++) {
		if (ctx->query == NULL ||
		    (v = http_query(ctx, r->query[i])) == NULL)
			continue;
		if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0)
			json_object_object_add(p, r->query[i],
			    xjson_object_new_boolean(v[0] == 't'));
		else
			json_object_object_add(p, r->query[i],
			    xjson_object_new_string(v));
	}
	json_object_object_add(p, "sessionId", xjson_object_new_string(id));
	return p;
}

/* GET or POST /session/:id/<one of pass_routes>: ask the agent. */
void
route_session_pass(struct http_ctx *ctx)
{
	const struct pass_route *r;
	struct pass_req *pr;
	struct session *s;

	if ((s = routes_session(ctx)) == NULL)
		return;
	if ((r = pass_find(ctx->req, s->id)) == NULL) {
		http_error(ctx->req, "not_found", NULL);
		return;
	}
	pr = xcalloc(1, sizeof(*pr));
	pr->req = ctx->req;
	pr->ch = s->channel;
	strlcpy(pr->id, s->id, sizeof(pr->id));
	channel_control_begin(pr->ch);
	if (channel_request(s->channel, r->method, pass_params(r, ctx, s->id),
	    (uint64_t)conf.init_timeout_ms, on_pass, pr) == NULL) {
		channel_control_end(pr->ch);
		free(pr);
		http_error(ctx->req, "acp_channel_unavailable", s->id);
	}
}
