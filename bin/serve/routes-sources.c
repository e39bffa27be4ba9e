/* SPDX-License-Identifier: ISC */
/*
 * routes-sources.c: a live session's sources, which its agent keeps (as
 * upstream's agent does, in the transcript): GET /session/:id/sources is
 * qwen/session/sources/list {sessionId}, POST is qwen/session/sources/
 * upsert {sessionId, input} with the body checked first (sources.c; an
 * attachment locator must name one of the session's attachments), and
 * DELETE /session/:id/sources/:sourceId is qwen/session/sources/remove
 * {sessionId, sourceId}.  A change needs a client id registered on the
 * session (403 client_id_required).  The agent's answer is the reply; its
 * {sourceError: {code, message}} is upstream's error of that code
 * (invalid_source 400, source_attachment_not_found 404,
 * source_limit_reached 409, source_persistence_unavailable 503); an agent
 * without the methods is its -32601 (500), as for the other agent calls.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "json.h"
#include "serve.h"
#include "xmalloc.h"

/* One request out to the agent. */
struct source_req {
	struct evhttp_request	*req;
	struct channel		*ch;
	char			 id[SERVE_SESSION_ID_MAX + 1];
};

/* The agent's sourceError as upstream's REST error of its code. */
static void
source_error(struct evhttp_request *req, json_object *err)
{
	static const char *const codes[] = { "invalid_source",
	    "source_attachment_not_found", "source_limit_reached",
	    "source_persistence_unavailable", NULL };
	const char *code = json_get_str(err, "code");
	const char *msg = json_get_str(err, "message");
	size_t i;

	for (i = 0; code != NULL && codes[i] != NULL; i++)
		if (strcmp(code, codes[i]) == 0)
			break;
	http_send_qerr(req, qerr_new(code != NULL && codes[i] != NULL ?
	    codes[i] : "internal", "%s", msg != NULL ? msg :
	    "Source operation failed"));
}

/* The agent's answer. */
static void
on_source(void *arg, enum channel_outcome o, json_object *payload)
{
	struct source_req *sr = arg;
	json_object *err;

	if (o == CHANNEL_RESULT && json_object_object_get_ex(payload,
	    "sourceError", &err) && json_object_is_type(err, json_type_object))
		source_error(sr->req, err);
	else if (o == CHANNEL_RESULT)
		http_reply_json(sr->req, 200, payload != NULL ?
		    json_object_get(payload) : xjson_object_new_object());
	else if (o == CHANNEL_ERROR)
		http_error_rpc(sr->req, payload, sr->id);
	else
		http_error(sr->req, o == CHANNEL_TIMEOUT ? "init_timeout" :
		    "acp_channel_unavailable", sr->id);
	channel_control_end(sr->ch);
	free(sr);
}

/* Ask the agent (params taken, the session id added). */
static void
source_send(struct http_ctx *ctx, struct session *s, const char *method,
    json_object *params)
{
	struct source_req *sr = xcalloc(1, sizeof(*sr));

	json_object_object_add(params, "sessionId", xjson_object_new_string(s->id));
	sr->req = ctx->req;
	sr->ch = s->channel;
	strlcpy(sr->id, s->id, sizeof(sr->id));
	channel_control_begin(sr->ch);
	if (channel_request(s->channel, method, params,
	    (uint64_t)conf.init_timeout_ms, on_source, sr) == NULL) {
		channel_control_end(sr->ch);
		free(sr);
		http_error(ctx->req, "acp_channel_unavailable", s->id);
	}
}

/* The live session of a change, its client id given: NULL after answering. */
static struct session *
source_session(struct http_ctx *ctx)
{
	struct session *s;

	if ((s = routes_session(ctx)) == NULL)
		return NULL;
	if (ctx->client_id == NULL) {
		http_send_qerr(ctx->req, qerr_new("client_id_required",
		    "Source mutations require a session-bound client id"));
		return NULL;
	}
	return s;
}

/* GET /session/:id/sources. */
void
route_session_sources(struct http_ctx *ctx)
{
	struct session *s;

	if ((s = routes_session(ctx)) == NULL)
		return;
	source_send(ctx, s, "qwen/session/sources/list", xjson_object_new_object());
}

/* Whether an attachment locator names none of the session's (after the 404). */
static int
source_attachment_gone(struct http_ctx *ctx, struct session *s,
    json_object *input)
{
	json_object *loc = json_get_obj(input, "locator");
	const char *type = json_get_str(loc, "type");
	const char *aid = json_get_str(loc, "attachmentId");

	if (type == NULL || strcmp(type, "attachment") != 0 ||
	    attachments_has(channel_workspace(s->channel), s->id, aid))
		return 0;
	http_send_qerr(ctx->req, qerr_new("source_attachment_not_found",
	    "Session attachment not found"));
	return 1;
}

/* POST /session/:id/sources {title, description?, locator}. */
void
route_session_source_upsert(struct http_ctx *ctx)
{
	struct session *s;
	json_object *input, *p;
	char *cause = NULL;

	if ((s = source_session(ctx)) == NULL)
		return;
	if ((input = sources_check(ctx->body, &cause)) == NULL) {
		http_send_qerr(ctx->req, qerr_new("invalid_source", "%s", cause));
		free(cause);
		return;
	}
	if (source_attachment_gone(ctx, s, input)) {
		json_object_put(input);
		return;
	}
	p = xjson_object_new_object();
	json_object_object_add(p, "input", input);
	source_send(ctx, s, "qwen/session/sources/upsert", p);
}

/* DELETE /session/:id/sources/:sourceId. */
void
route_session_source_remove(struct http_ctx *ctx)
{
	struct session *s;
	json_object *p;
	char *raw, *id;

	if ((s = source_session(ctx)) == NULL)
		return;
	raw = xstrndup(ctx->path_tail, strcspn(ctx->path_tail, "/"));
	id = http_uridecode(raw);
	free(raw);
	if (id == NULL || id[0] == '\0') {
		free(id);
		http_send_qerr(ctx->req, qerr_new("bad_request",
		    "`sourceId` route parameter is required"));
		return;
	}
	p = xjson_object_new_object();
	json_object_object_add(p, "sourceId", xjson_object_new_string(id));
	free(id);
	source_send(ctx, s, "qwen/session/sources/remove", p);
}
