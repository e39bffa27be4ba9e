/* SPDX-License-Identifier: ISC */
/*
 * routes-standalone.c: upstream's standalone (projectless) session
 * routes, /standalone/sessions/...  A standalone session is a session
 * whose workspace is its own private directory (standalone.c): created,
 * restored, renamed and exported by the session routes with that
 * workspace bound, listed, archived and deleted through the catalog.
 */
#include "config.h"

#include <sys/queue.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <json-c/json.h>

#include "approval.h"
#include "errors.h"
#include "json.h"
#include "serve.h"
#include "uuid.h"
#include "xmalloc.h"


/* 400 invalid_request with upstream's message. */
void
route_standalone_bad(struct http_ctx *ctx, const char *msg)
{
	struct qerr *e = qerr_new("invalid_request", "%s", msg);

	http_send_qerr(ctx->req, e);
}

static void
not_found(struct http_ctx *ctx, const char *code, const char *id)
{
	struct qerr *e = qerr_new(code, NULL);

	if (e != NULL && id != NULL)
		qerr_set_str(e, "sessionId", id);
	http_send_qerr(ctx->req, e);
}

/* The body holds only the allowed keys (NULL-ended): 0, or -1 answered. */
static int
body_only(struct http_ctx *ctx, const char *const *allowed)
{
	size_t i;

	if (!json_object_is_type(ctx->body, json_type_object)) {
		route_standalone_bad(ctx, "The request body must be a JSON object.");
		return -1;
	}
	json_object_object_foreach(ctx->body, key, val) {
		(void)val;
		for (i = 0; allowed[i] != NULL; i++)
			if (strcmp(allowed[i], key) == 0)
				break;
		if (allowed[i] == NULL) {
			route_standalone_bad(ctx, "The request body contains unknown fields.");
			return -1;
		}
	}
	return 0;
}

/* The query holds only the allowed keys: 0, or -1 answered. */
int
route_standalone_query_only(struct http_ctx *ctx, const char *const *allowed)
{
	struct evkeyval *kv;
	size_t i;

	if (ctx->query == NULL)
		return 0;
	TAILQ_FOREACH(kv, ctx->query, next) {
		for (i = 0; allowed[i] != NULL; i++)
			if (strcmp(allowed[i], kv->key) == 0)
				break;
		if (allowed[i] == NULL) {
			route_standalone_bad(ctx, "The request query contains unknown fields.");
			return -1;
		}
	}
	return 0;
}

/* The path's id as a standalone session's: its directory, or NULL (404). */
static const char *
path_dir(struct http_ctx *ctx)
{
	const char *dir;

	if (!standalone_known(ctx->path_id) ||
	    (dir = standalone_dir(ctx->path_id, 1)) == NULL) {
		not_found(ctx, "standalone_session_not_found", ctx->path_id);
		return NULL;
	}
	return dir;
}

/*
 * POST /standalone/sessions {sessionId, modelServiceId?, approvalMode?}:
 * a new session in a new private directory, answered as POST /session
 * does, with the standalone members.
 */
void
route_standalone_create(struct http_ctx *ctx)
{
	static const char *const keys[] = { "sessionId", "modelServiceId",
	    "approvalMode", NULL };
	char id[UUID_LEN + 1], **ids;
	const char *sid, *dir, *code, *m;
	struct qerr *e;
	size_t i, n;
	int state;

	if (body_only(ctx, keys) == -1)
		return;
	if ((sid = json_get_str(ctx->body, "sessionId")) == NULL ||
	    !uuid_valid(sid) || strlen(sid) != UUID_LEN) {
		route_standalone_bad(ctx, "`sessionId` must be an RFC UUID v1-v5.");
		return;
	}
	if (json_object_object_get_ex(ctx->body, "modelServiceId", NULL) &&
	    ((m = json_get_str(ctx->body, "modelServiceId")) == NULL ||
	    m[0] == '\0' || strlen(m) > 256)) {
		route_standalone_bad(ctx, "`modelServiceId` must be a non-empty string "
		    "of at most 256 characters.");
		return;
	}
	if (json_object_object_get_ex(ctx->body, "approvalMode", NULL) &&
	    !approval_mode_known(json_get_str(ctx->body, "approvalMode"))) {
		route_standalone_bad(ctx, "`approvalMode` must be a known "
		    "approval mode.");
		return;
	}
	for (i = 0; i < UUID_LEN; i++)
		id[i] = (char)tolower((unsigned char)sid[i]);
	id[UUID_LEN] = '\0';
	if (sessions_find(id) == NULL && inflight_find(id) == NULL)
		standalone_vacate(id);
	if (sessions_find(id) != NULL || inflight_find(id) != NULL ||
	    catalog_workspace_of(id) != NULL || standalone_known(id)) {
		not_found(ctx, "standalone_session_conflict", id);
		return;
	}
	n = standalone_scan(&ids, STANDALONE_MAX);
	for (i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	if (n >= STANDALONE_MAX) {
		if ((e = qerr_new("session_limit_exceeded", NULL)) != NULL) {
			qerr_set_int(e, "limit", STANDALONE_MAX);
			qerr_set_str(e, "scope", "standalone");
		}
		http_send_qerr(ctx->req, e);
		return;
	}
	if ((dir = standalone_dir(id, 0)) == NULL ||
	    standalone_prepare(id, 1, &state, &code) == -1) {
		not_found(ctx, dir == NULL ? "standalone_session_conflict" :
		    code, id);
		return;
	}
	json_object_object_add(ctx->body, "sessionId", xjson_object_new_string(id));
	ctx->bound = dir;
	route_session_create(ctx);
}

/* Load and resume: the session's directory (remade if gone) bound. */
static void
restore(struct http_ctx *ctx, int load)
{
	static const char *const keys[] = { "historyPageSize",
	    "liveReplayMode", "compactedReplayMode", "hideInheritedHistory",
	    "approvalMode", NULL };
	const char *dir, *code;
	json_object *v;
	int state;

	if (body_only(ctx, keys) == -1)
		return;
	if (json_object_object_get_ex(ctx->body, "hideInheritedHistory", &v) &&
	    !json_object_is_type(v, json_type_boolean)) {
		route_standalone_bad(ctx, "`hideInheritedHistory` must be a boolean.");
		return;
	}
	if ((dir = path_dir(ctx)) == NULL)
		return;
	if (sessions_find(ctx->path_id) == NULL &&
	    inflight_find(ctx->path_id) == NULL) {
		if (standalone_prepare(ctx->path_id, 0, &state, &code) == -1) {
			not_found(ctx, code, ctx->path_id);
			return;
		}
		if (state)
			standalone_mark_recreated(ctx->path_id);
	}
	ctx->bound = dir;
	if (load)
		route_session_load(ctx);
	else
		route_session_resume(ctx);
}

void
route_standalone_load(struct http_ctx *ctx)
{
	restore(ctx, 1);
}

void
route_standalone_resume(struct http_ctx *ctx)
{
	restore(ctx, 0);
}

/* POST /standalone/sessions/:id/repair-directory {}: remade if gone. */
void
route_standalone_repair(struct http_ctx *ctx)
{
	static const char *const keys[] = { NULL };
	const char *dir, *code;
	json_object *o;
	int state;

	if (body_only(ctx, keys) == -1 || (dir = path_dir(ctx)) == NULL)
		return;
	if (standalone_prepare(ctx->path_id, 0, &state, &code) == -1) {
		not_found(ctx, code, ctx->path_id);
		return;
	}
	o = xjson_object_new_object();
	json_object_object_add(o, "sessionId", xjson_object_new_string(ctx->path_id));
	json_object_object_add(o, "projectlessOutputDirectory",
	    xjson_object_new_string(dir));
	json_object_object_add(o, "workingDirectory", standalone_state_json(state));
	http_reply_json(ctx->req, 200, o);
}

/* PATCH /standalone/sessions/:id/metadata {displayName}. */
void
route_standalone_metadata(struct http_ctx *ctx)
{
	static const char *const keys[] = { "displayName", NULL };

	if (body_only(ctx, keys) == -1)
		return;
	if (json_get_str(ctx->body, "displayName") == NULL) {
		route_standalone_bad(ctx, "`displayName` must be a string.");
		return;
	}
	if ((ctx->bound = path_dir(ctx)) != NULL)
		route_session_metadata(ctx);
}

/* GET /standalone/sessions/:id/export?format=html|md|json|jsonl. */
void
route_standalone_export(struct http_ctx *ctx)
{
	static const char *const keys[] = { "format", NULL };

	if (route_standalone_query_only(ctx, keys) == -1)
		return;
	if ((ctx->bound = path_dir(ctx)) != NULL)
		route_session_export(ctx);
}

/* body.sessionIds: 1 to 100 strings (its array, borrowed), or NULL. */
static json_object *
batch_ids(struct http_ctx *ctx)
{
	static const char *const keys[] = { "sessionIds", NULL };
	json_object *a;
	size_t i, n;

	if (body_only(ctx, keys) == -1)
		return NULL;
	a = json_get(ctx->body, "sessionIds", json_type_array);
	n = a != NULL ? json_object_array_length(a) : 0;
	for (i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(a, i),
		    json_type_string))
			break;
	if (n < 1 || n > STANDALONE_PAGE_MAX || i < n) {
		route_standalone_bad(ctx, "`sessionIds` must contain between 1 "
		    "and 100 session id strings.");
		return NULL;
	}
	return a;
}

/* One failure of a batch: {sessionId, code, message} (cause freed). */
static void
batch_error(json_object *errors, const char *id, const char *code,
    char *cause)
{
	json_object *o = xjson_object_new_object();
	struct qerr *e = qerr_new(code, NULL);

	json_object_object_add(o, "sessionId", xjson_object_new_string(id));
	json_object_object_add(o, "code", xjson_object_new_string(code));
	json_object_object_add(o, "message", xjson_object_new_string(
	    cause != NULL ? cause : e != NULL ? qerr_message(e) : code));
	json_object_array_add(errors, o);
	qerr_free(e);
	free(cause);
}

/* The answer's lists, named by names (NULL-ended), and errors[]. */
static json_object *
batch_answer(const char *const *names)
{
	json_object *o = xjson_object_new_object();

	for (size_t i = 0; names[i] != NULL; i++)
		json_object_object_add(o, names[i], xjson_object_new_array());
	json_object_object_add(o, "errors", xjson_object_new_array());
	return o;
}

static void
batch_put(json_object *o, const char *list, const char *id)
{
	json_object_array_add(json_get(o, list, json_type_array),
	    xjson_object_new_string(id));
}

/* Archive (archive) or unarchive each standalone session named. */
static void
batch_move(struct http_ctx *ctx, int archive)
{
	static const char *const a[] = { "archived", "alreadyArchived",
	    "notFound", NULL };
	static const char *const u[] = { "unarchived", "alreadyActive",
	    "notFound", NULL };
	const char *const *names = archive ? a : u, *id, *code;
	json_object *ids, *o;
	char *cause;
	size_t i;
	int rc;

	if ((ids = batch_ids(ctx)) == NULL)
		return;
	o = batch_answer(names);
	for (i = 0; i < json_object_array_length(ids); i++) {
		id = json_object_get_string(json_object_array_get_idx(ids, i));
		code = "standalone_session_operation_failed";
		cause = NULL;
		if (standalone_workspace_of(id) == NULL)
			rc = 2;
		else
			rc = catalog_archive(id, archive, 0, &code, &cause);
		if (rc == 0 || rc == 3)
			batch_put(o, names[0], id);
		else if (rc == 1)
			batch_put(o, names[1], id);
		else if (rc == 2)
			batch_put(o, names[2], id);
		else
			batch_error(json_get(o, "errors", json_type_array), id,
			    code, cause);
	}
	http_reply_json(ctx->req, 200, o);
}

void
route_standalone_archive(struct http_ctx *ctx)
{
	batch_move(ctx, 1);
}

void
route_standalone_unarchive(struct http_ctx *ctx)
{
	batch_move(ctx, 0);
}

/*
 * POST /standalone/sessions/delete {sessionIds}: each transcript (live
 * ones refused, as the workspace routes do) and its working directory.
 */
void
route_standalone_delete(struct http_ctx *ctx)
{
	static const char *const names[] = { "removed", "notFound",
	    "fileCleanupPending", NULL };
	const char *id, *code;
	json_object *ids, *o;
	char *cause;
	size_t i;
	int rc;

	if ((ids = batch_ids(ctx)) == NULL)
		return;
	o = batch_answer(names);
	for (i = 0; i < json_object_array_length(ids); i++) {
		id = json_object_get_string(json_object_array_get_idx(ids, i));
		code = "standalone_session_operation_failed";
		cause = NULL;
		if (!standalone_known(id)) {
			batch_put(o, "notFound", id);
			continue;
		}
		rc = standalone_workspace_of(id) == NULL ?
		    (catalog_idle(id, &code) ? 1 : -1) :
		    catalog_delete(id, &code, &cause);
		if (rc == -1) {
			batch_error(json_get(o, "errors", json_type_array), id,
			    code, cause);
			continue;
		}
		batch_put(o, "removed", id);
		if (standalone_remove(id) == -1)
			batch_put(o, "fileCleanupPending", id);
	}
	http_reply_json(ctx->req, 200, o);
}
