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

#include "errors.h"
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
	{ EVHTTP_REQ_GET, "/agent-trace", "qwen/status/session/agent_trace", NULL,
	    { "rootAgentId", NULL } },
};

#define ROOT_AGENT_ID_MAX	500	/* upstream's MAX_VIRTUAL_SESSION_ID_PART_LENGTH */

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

/* The request to the agent (params taken), answered when it answers. */
static void
pass_send(struct http_ctx *ctx, struct session *s, const char *method,
    json_object *params)
{
	struct pass_req *pr = xcalloc(1, sizeof(*pr));

	pr->req = ctx->req;
	pr->ch = s->channel;
	strlcpy(pr->id, s->id, sizeof(pr->id));
	channel_control_begin(pr->ch);
	if (channel_request(s->channel, method, params,
	    (uint64_t)conf.init_timeout_ms, on_pass, pr) == NULL) {
		channel_control_end(pr->ch);
		free(pr);
		http_error(ctx->req, "acp_channel_unavailable", s->id);
	}
}

/* upstream's 400 for a bad route parameter or body member. */
static void
pass_bad(struct http_ctx *ctx, const char *code, const char *msg)
{
	http_send_qerr(ctx->req, qerr_new(code, "%s", msg));
}

/* agent-trace's rootAgentId, when given: 1 to 500 bytes; 0, or -1 after the 400. */
static int
pass_check(const struct pass_route *r, struct http_ctx *ctx)
{
	const char *v;

	if (strcmp(r->suffix, "/agent-trace") != 0 || ctx->query == NULL ||
	    (v = http_query(ctx, "rootAgentId")) == NULL)
		return 0;
	if (v[0] != '\0' && strlen(v) <= ROOT_AGENT_ID_MAX)
		return 0;
	pass_bad(ctx, "invalid_root_agent_id", "`rootAgentId` must be a non-empty "
	    "agent id");
	return -1;
}

/* GET or POST /session/:id/<one of pass_routes>: ask the agent. */
void
route_session_pass(struct http_ctx *ctx)
{
	const struct pass_route *r;
	struct session *s;

	if ((s = routes_session(ctx)) == NULL)
		return;
	if ((r = pass_find(ctx->req, s->id)) == NULL) {
		http_error(ctx->req, "not_found", NULL);
		return;
	}
	if (pass_check(r, ctx) == -1)
		return;
	pass_send(ctx, s, r->method, pass_params(r, ctx, s->id));
}

/* The route's segment (ctx->path_tail up to its end), decoded: caller frees. */
static char *
pass_segment(struct http_ctx *ctx)
{
	const char *t = ctx->path_tail;
	char *raw = xstrndup(t, strcspn(t, "/")), *v = http_uridecode(raw);

	free(raw);
	return v;
}

/*
 * GET /session/:id/saved-workflows/:name: the agent's saved workflow,
 * qwen/status/session/saved_workflow {sessionId, name}.
 */
void
route_session_pass_workflow(struct http_ctx *ctx)
{
	struct session *s;
	json_object *p;
	char *name;

	if ((s = routes_session(ctx)) == NULL)
		return;
	if ((name = pass_segment(ctx)) == NULL || name[0] == '\0') {
		free(name);
		pass_bad(ctx, "bad_request", "`name` route parameter is required");
		return;
	}
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(p, "name", xjson_object_new_string(name));
	free(name);
	pass_send(ctx, s, "qwen/status/session/saved_workflow", p);
}

/* cancel's kind, checked as upstream's: 0, or -1 after the 400. */
static int
task_cancel_params(struct http_ctx *ctx, json_object *p)
{
	const char *kind = json_get_str(ctx->body, "kind");

	if (kind == NULL || (strcmp(kind, "agent") != 0 &&
	    strcmp(kind, "shell") != 0 && strcmp(kind, "monitor") != 0 &&
	    strcmp(kind, "workflow") != 0)) {
		pass_bad(ctx, "bad_request", "`kind` must be \"agent\", \"shell\", "
		    "\"monitor\", or \"workflow\"");
		return -1;
	}
	json_object_object_add(p, "taskKind", xjson_object_new_string(kind));
	return 0;
}

/* workflow-action's action and its input (args, sourceRef, script): 0 or -1. */
static int
task_action_params(struct http_ctx *ctx, json_object *p)
{
	static const char *const actions[] = { "pause", "resume", "retry",
	    "rerun", "delete-history", "run-saved", "run-script", NULL };
	static const char *const input[] = { "args", "sourceRef", "script", NULL };
	const char *a = json_get_str(ctx->body, "action");
	json_object *v;
	size_t i;

	for (i = 0; a != NULL && actions[i] != NULL; i++)
		if (strcmp(a, actions[i]) == 0)
			break;
	if (a == NULL || actions[i] == NULL) {
		pass_bad(ctx, "bad_request", "`action` must be \"pause\", \"resume\", "
		    "\"retry\", \"rerun\", \"delete-history\", \"run-saved\", or "
		    "\"run-script\"");
		return -1;
	}
	json_object_object_add(p, "action", xjson_object_new_string(a));
	for (i = 0; input[i] != NULL; i++)
		if (json_object_object_get_ex(ctx->body, input[i], &v))
			json_object_object_add(p, input[i], json_object_get(v));
	return 0;
}

/*
 * POST /session/:id/tasks/:taskId/cancel {kind} and .../workflow-action
 * {action, args?, sourceRef?, script?}: upstream's
 * qwen/control/session/task/cancel {sessionId, taskId, taskKind} and
 * qwen/control/session/task/workflow-action {sessionId, taskId, action,
 * ...the input members given}.
 */
void
route_session_pass_task(struct http_ctx *ctx)
{
	int cancel = strstr(ctx->path_tail, "/cancel") != NULL;
	struct session *s;
	json_object *p;
	char *task;

	if ((s = routes_session(ctx)) == NULL)
		return;
	if ((task = pass_segment(ctx)) == NULL || task[0] == '\0') {
		free(task);
		pass_bad(ctx, "bad_request", "`taskId` route parameter is required");
		return;
	}
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(p, "taskId", xjson_object_new_string(task));
	free(task);
	if ((cancel ? task_cancel_params(ctx, p) : task_action_params(ctx, p)) == -1) {
		json_object_put(p);
		return;
	}
	pass_send(ctx, s, cancel ? "qwen/control/session/task/cancel" :
	    "qwen/control/session/task/workflow-action", p);
}
