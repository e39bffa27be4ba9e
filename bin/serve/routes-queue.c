/* SPDX-License-Identifier: ISC */
/*
 * routes-queue.c: a live session's prompt queue, as upstream shows it:
 * GET /session/:id/pending-prompts (the running prompt, then the queued
 * ones) and DELETE /session/:id/pending-prompts/:promptId (a queued one
 * taken out before it runs; the running one is cancelled, not removed).
 */
#include "config.h"

#include <event2/http.h>

#include "serve.h"
#include "xmalloc.h"

void
route_session_pending(struct http_ctx *ctx)
{
	struct session *s;
	json_object *o;

	if ((s = routes_session(ctx)) == NULL)
		return;
	o = xjson_object_new_object();
	json_object_object_add(o, "pendingPrompts", prompts_list(s));
	http_reply_json(ctx->req, 200, o);
}

void
route_session_pending_remove(struct http_ctx *ctx)
{
	struct session *s;
	json_object *o;

	if ((s = routes_session(ctx)) == NULL)
		return;
	o = xjson_object_new_object();
	json_object_object_add(o, "removed",
	    xjson_object_new_boolean(prompts_remove(s, ctx->path_tail)));
	http_reply_json(ctx->req, 200, o);
}
