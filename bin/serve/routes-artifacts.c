/* SPDX-License-Identifier: ISC */
/*
 * routes-artifacts.c: a live session's artifacts (artifacts.c) as
 * upstream serves them.  GET /session/:id/artifacts lists them; POST adds
 * (or updates) one {title, kind?, storage?, description?, workspacePath |
 * managedId | url, mimeType?, sizeBytes?, metadata?, retention?,
 * clientRetained?}, checked (artifacts-check.c: 400 {v, error: {code:
 * VALIDATION_FAILED, message, field?}}); DELETE
 * /session/:id/artifacts/:artifactId removes one.  A change needs a client
 * id registered on the session (403 client_id_required) and may not touch
 * another client's artifact (403 session_artifact_forbidden); each change
 * is an artifact_changed event {sessionId, change} on the session's bus.
 * GET /session/:id/artifacts/:artifactId/content is upstream's saved
 * webpage: a snapshot only upstream's agent's artifact tool writes and
 * registers (source tool); every artifact here is a client's, so it is
 * upstream's 404 artifact_snapshot_unavailable for each.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "json.h"
#include "serve.h"
#include "xmalloc.h"

/* Upstream's 400 for an artifact it refuses. */
static void
invalid(struct http_ctx *ctx, const struct artifact_err *e)
{
	json_object *o = xjson_object_new_object(), *err;

	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(o, "error", err = xjson_object_new_object());
	json_object_object_add(err, "code",
	    xjson_object_new_string("VALIDATION_FAILED"));
	json_object_object_add(err, "message", xjson_object_new_string(e->msg));
	if (e->field != NULL)
		json_object_object_add(err, "field",
		    xjson_object_new_string(e->field));
	http_reply_json(ctx->req, 400, o);
}

/* A failed change: 403 session_artifact_forbidden, or 500. */
static void
failed(struct http_ctx *ctx, struct session *s, const char *aid, int status,
    const char *cause)
{
	struct qerr *e;

	if (status != 403) {
		http_send_qerr(ctx->req, qerr_new("internal", "%s",
		    cause != NULL ? cause : "Internal error"));
		return;
	}
	e = qerr_new("session_artifact_forbidden", "%s", cause);
	if (e != NULL) {
		qerr_set_str(e, "sessionId", s->id);
		if (aid != NULL)
			qerr_set_str(e, "artifactId", aid);
	}
	http_send_qerr(ctx->req, e);
}

/* Each change of an answer as an artifact_changed event. */
static void
publish(struct session *s, const char *client, json_object *res)
{
	json_object *changes = NULL, *d;

	json_object_object_get_ex(res, "changes", &changes);
	for (size_t i = 0; changes != NULL && i < json_object_array_length(changes);
	    i++) {
		d = xjson_object_new_object();
		json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
		json_object_object_add(d, "change",
		    json_object_get(json_object_array_get_idx(changes, i)));
		bus_publish(s->bus, "artifact_changed", d, NULL, client, 0);
	}
}

/* The live session of a change, its client id given: NULL after answering. */
static struct session *
change_session(struct http_ctx *ctx)
{
	struct session *s;

	if ((s = routes_session(ctx)) == NULL)
		return NULL;
	if (ctx->client_id == NULL) {
		http_send_qerr(ctx->req, qerr_new("client_id_required",
		    "Session artifact access requires a session-bound client id"));
		return NULL;
	}
	return s;
}

/* GET /session/:id/artifacts. */
void
route_session_artifacts(struct http_ctx *ctx)
{
	struct session *s;
	json_object *o;
	char *cause = NULL;

	if ((s = routes_session(ctx)) == NULL)
		return;
	if ((o = artifacts_list(channel_workspace(s->channel), s->id,
	    &cause)) == NULL) {
		failed(ctx, s, NULL, 500, cause);
		free(cause);
		return;
	}
	http_reply_json(ctx->req, 200, o);
}

/* POST /session/:id/artifacts. */
void
route_session_artifact_add(struct http_ctx *ctx)
{
	struct artifact_err e = { NULL, "" };
	struct session *s;
	json_object *in, *res;
	const char *ws;
	char *key, *cause = NULL;
	int status;

	if ((s = change_session(ctx)) == NULL)
		return;
	ws = channel_workspace(s->channel);
	if ((in = artifacts_check(ws, ctx->body, &key, &e)) == NULL) {
		invalid(ctx, &e);
		return;
	}
	res = artifacts_add(ws, s->id, ctx->client_id, in, key, &status, &cause);
	json_object_put(in);
	free(key);
	if (res == NULL)
		failed(ctx, s, NULL, status, cause);
	else {
		publish(s, ctx->client_id, res);
		http_reply_json(ctx->req, 200, res);
	}
	free(cause);
}

/* DELETE /session/:id/artifacts/:artifactId. */
void
route_session_artifact_remove(struct http_ctx *ctx)
{
	struct artifact_err e = { "artifactId",
	    "`artifactId` route parameter is required" };
	struct session *s;
	json_object *res;
	char *raw, *aid, *cause = NULL;
	int status;

	if ((s = change_session(ctx)) == NULL)
		return;
	/* ACP's _qwen/session/artifacts/remove names it in its params. */
	if (ctx->path_tail == NULL)
		aid = json_get_str(ctx->body, "artifactId") != NULL ?
		    xstrdup(json_get_str(ctx->body, "artifactId")) : NULL;
	else {
		raw = xstrndup(ctx->path_tail, strcspn(ctx->path_tail, "/"));
		aid = http_uridecode(raw);
		free(raw);
	}
	if (aid == NULL || aid[0] == '\0') {
		free(aid);
		invalid(ctx, &e);
		return;
	}
	res = artifacts_remove(channel_workspace(s->channel), s->id,
	    ctx->client_id, aid, &status, &cause);
	if (res == NULL)
		failed(ctx, s, aid, status, cause);
	else {
		publish(s, ctx->client_id, res);
		http_reply_json(ctx->req, 200, res);
	}
	free(aid);
	free(cause);
}

/*
 * GET /session/:id/artifacts/:artifactId/content: upstream's 404, its
 * body {error: artifact_snapshot_unavailable, message} as it sends it.
 */
void
route_session_artifact_content(struct http_ctx *ctx)
{
	json_object *o;

	if (routes_session(ctx) == NULL)
		return;
	o = xjson_object_new_object();
	json_object_object_add(o, "error",
	    xjson_object_new_string("artifact_snapshot_unavailable"));
	json_object_object_add(o, "message", xjson_object_new_string(
	    "Saved webpage version is missing or has changed."));
	http_reply_json(ctx->req, 404, o);
}
