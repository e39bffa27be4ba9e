/* SPDX-License-Identifier: ISC */
/*
 * routes-manage.c: session management with upstream's paths and shapes:
 * POST /sessions/{delete,archive,unarchive} (catalog.c does the disk),
 * GET /workspaces/:ws/session-info, GET /workspaces/:ws/sessions/live-state,
 * GET /session/:id/export (and an archived session's under a workspace)
 * and the session search (listing.c runs it).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "clock.h"
#include "errors.h"
#include "json.h"
#include "paths.h"
#include "serve.h"
#include "uuid.h"
#include "xmalloc.h"

#define MANAGE_BATCH_MAX	1000	/* session ids in one request */
#define SEARCH_QUERY_MAX	256

static char generation[UUID_LEN + 1];

/* ---- the batch routes -------------------------------------------------- */

/* The body's sessionIds: an array of at most 1000 strings, else NULL. */
static json_object *
batch_ids(struct http_ctx *ctx)
{
	json_object *ids = json_get(ctx->body, "sessionIds", json_type_array);
	size_t n;

	if (ids == NULL || (n = json_object_array_length(ids)) > MANAGE_BATCH_MAX) {
		http_send_qerr(ctx->req, qerr_new("bad_request",
		    "sessionIds must be an array of at most %d session ids",
		    MANAGE_BATCH_MAX));
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(ids, i),
		    json_type_string)) {
			http_send_qerr(ctx->req, qerr_new("bad_request",
			    "sessionIds must hold strings"));
			return NULL;
		}
	return ids;
}

/*
 * Under /workspaces/:ws/ the batch is that workspace's (the segment is the
 * body's cwd); the unqualified routes take every workspace.  -1 after
 * answering.
 */
static int
batch_workspace(struct http_ctx *ctx)
{
	ctx->workspace = NULL;
	if (!json_object_object_get_ex(ctx->body, "cwd", NULL))
		return 0;
	return routes_check_cwd(ctx);
}

/* Whether id's data lives outside the batch's workspace (when it has one). */
static int
batch_elsewhere(struct http_ctx *ctx, const char *id)
{
	const char *ws;

	return ctx->workspace != NULL && (ws = catalog_workspace_of(id)) != NULL &&
	    strcmp(ws, ctx->workspace) != 0;
}

/* Append {sessionId, code, error} to errs. */
static void
batch_error(json_object *errs, const char *id, const char *code, char *cause)
{
	json_object *o = xjson_object_new_object();
	struct qerr *e = qerr_new(code, NULL);

	if (e != NULL)
		qerr_set_str(e, "sessionId", id);
	json_object_object_add(o, "sessionId", xjson_object_new_string(id));
	json_object_object_add(o, "code", xjson_object_new_string(code));
	json_object_object_add(o, "error", xjson_object_new_string(
	    cause != NULL ? cause : e != NULL ? qerr_message(e) : code));
	json_object_array_add(errs, o);
	qerr_free(e);
	free(cause);
}

/* A new object with empty arrays under the names (NULL-terminated). */
static json_object *
batch_result(const char *const *names)
{
	json_object *o = xjson_object_new_object();

	for (; *names != NULL; names++)
		json_object_object_add(o, *names, xjson_object_new_array());
	json_object_object_add(o, "errors", xjson_object_new_array());
	return o;
}

/* Add id to the result's array named key. */
static void
batch_add(json_object *res, const char *key, const char *id)
{
	json_object_array_add(json_get(res, key, json_type_array),
	    xjson_object_new_string(id));
}

/* POST /sessions/delete {sessionIds}: {removed, notFound, errors}. */
void
route_sessions_delete(struct http_ctx *ctx)
{
	static const char *const names[] = { "removed", "notFound", NULL };
	json_object *ids, *res, *errs;
	const char *id, *code;
	char *cause;
	size_t i;

	if (batch_workspace(ctx) == -1 || (ids = batch_ids(ctx)) == NULL)
		return;
	res = batch_result(names);
	errs = json_get(res, "errors", json_type_array);
	for (i = 0; i < json_object_array_length(ids); i++) {
		id = json_object_get_string(json_object_array_get_idx(ids, i));
		code = "internal";
		cause = NULL;
		if (!paths_valid_session_id(id)) {
			batch_error(errs, id, "invalid_session_id", NULL);
			continue;
		}
		if (batch_elsewhere(ctx, id)) {
			batch_add(res, "notFound", id);
			continue;
		}
		switch (catalog_delete(id, &code, &cause)) {
		case 0:
			batch_add(res, "removed", id);
			break;
		case 1:
			batch_add(res, "notFound", id);
			break;
		default:
			batch_error(errs, id, code, cause);
		}
	}
	http_reply_json(ctx->req, 200, res);
}

/* The body's resolveConflicts: 0 or 1, or -1 after answering. */
static int
batch_resolve(struct http_ctx *ctx)
{
	json_object *v;

	if (!json_object_object_get_ex(ctx->body, "resolveConflicts", &v))
		return 0;
	if (!json_object_is_type(v, json_type_boolean)) {
		http_send_qerr(ctx->req, qerr_new("bad_request",
		    "`resolveConflicts` must be a boolean"));
		return -1;
	}
	return json_object_get_boolean(v);
}

/*
 * The archive and unarchive routes: one walk, two vocabularies; with
 * resolveConflicts, a session with a copy on both sides keeps the copy
 * of the side it goes to (listed there and in resolvedConflicts).
 */
static void
archive_batch(struct http_ctx *ctx, int archive)
{
	static const char *const anames[] = { "archived", "alreadyArchived",
	    "notFound", "resolvedConflicts", NULL };
	static const char *const unames[] = { "unarchived", "alreadyActive",
	    "notFound", "resolvedConflicts", NULL };
	const char *const *names = archive ? anames : unames;
	json_object *ids, *res, *errs;
	const char *id, *code;
	char *cause;
	size_t i;
	int rc, resolve;

	if (batch_workspace(ctx) == -1 || (ids = batch_ids(ctx)) == NULL ||
	    (resolve = batch_resolve(ctx)) == -1)
		return;
	res = batch_result(names);
	errs = json_get(res, "errors", json_type_array);
	for (i = 0; i < json_object_array_length(ids); i++) {
		id = json_object_get_string(json_object_array_get_idx(ids, i));
		code = "internal";
		cause = NULL;
		if (!paths_valid_session_id(id)) {
			batch_error(errs, id, "invalid_session_id", NULL);
			continue;
		}
		if (batch_elsewhere(ctx, id)) {
			batch_add(res, names[2], id);
			continue;
		}
		if ((rc = catalog_archive(id, archive, resolve, &code, &cause)) == 3) {
			batch_add(res, names[0], id);
			batch_add(res, names[3], id);
		} else if (rc >= 0)
			batch_add(res, names[rc], id);
		else
			batch_error(errs, id, code, cause);
	}
	http_reply_json(ctx->req, 200, res);
}

/* POST /sessions/archive {sessionIds, resolveConflicts?}. */
void
route_sessions_archive(struct http_ctx *ctx)
{
	archive_batch(ctx, 1);
}

/* POST /sessions/unarchive {sessionIds, resolveConflicts?}. */
void
route_sessions_unarchive(struct http_ctx *ctx)
{
	archive_batch(ctx, 0);
}

/*
 * A restore of an archived session is refused (409 session_archived), and
 * of one with a copy on both sides (409 session_conflict): -1 when sent.
 */
int
routes_check_archived(struct http_ctx *ctx)
{
	int where = catalog_where(ctx->workspace, ctx->path_id);

	if (!(where & CATALOG_ARCHIVED))
		return 0;
	http_error(ctx->req, where & CATALOG_ACTIVE ? "session_conflict" :
	    "session_archived", ctx->path_id);
	return -1;
}

/* ---- workspace views --------------------------------------------------- */

/* GET /workspaces/:ws/session-info: the catalog's counts (a disk scan). */
void
route_workspace_session_info(struct http_ctx *ctx)
{
	size_t active, archived, live = 0;
	json_object *o;
	struct session *s;

	if (routes_check_cwd(ctx) == -1)
		return;
	catalog_counts(ctx->workspace, &active, &archived);
	for (s = sessions_first(); s != NULL; s = sessions_next(s))
		live += strcmp(channel_workspace(s->channel),
		    ctx->workspace) == 0;
	o = xjson_object_new_object();
	json_object_object_add(o, "active", xjson_object_new_int64((int64_t)active));
	json_object_object_add(o, "archived", xjson_object_new_int64((int64_t)archived));
	json_object_object_add(o, "total",
	    xjson_object_new_int64((int64_t)(active + archived)));
	json_object_object_add(o, "live", xjson_object_new_int64((int64_t)live));
	json_object_object_add(o, "expensive", xjson_object_new_boolean(1));
	json_object_object_add(o, "cost", xjson_object_new_string("disk_scan"));
	http_reply_json(ctx->req, 200, o);
}

/* One live session's volatile state, as upstream's live-state lists it. */
static json_object *
live_state_of(struct session *s)
{
	json_object *o = xjson_object_new_object();

	json_object_object_add(o, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(o, "clientCount",
	    xjson_object_new_int64((int64_t)clients_count(&s->clients)));
	json_object_object_add(o, "hasActivePrompt",
	    xjson_object_new_boolean(s->active != NULL));
	json_object_object_add(o, "activeWorkState", xjson_object_new_string(
	    s->active != NULL ? "active" : "idle"));
	json_object_object_add(o, "isWaitingForPermission",
	    xjson_object_new_boolean(permission_pending(s) > 0));
	json_object_object_add(o, "isWaitingForUserQuestion",
	    xjson_object_new_boolean(permission_questions(s) > 0));
	return o;
}

/*
 * GET /workspaces/:ws/sessions/live-state: every live session of the
 * workspace from memory; catalogVersion changes with every archive,
 * unarchive and delete made here (generation: this daemon's run).
 */
void
route_workspace_live_state(struct http_ctx *ctx)
{
	json_object *o, *cv, *arr;
	struct session *s;

	if (routes_check_cwd(ctx) == -1)
		return;
	if (generation[0] == '\0')
		uuid_new(generation);
	arr = xjson_object_new_array();
	for (s = sessions_first(); s != NULL; s = sessions_next(s))
		if (strcmp(channel_workspace(s->channel), ctx->workspace) == 0)
			json_object_array_add(arr, live_state_of(s));
	cv = xjson_object_new_object();
	json_object_object_add(cv, "generation", xjson_object_new_string(generation));
	json_object_object_add(cv, "revision",
	    xjson_object_new_int64((int64_t)catalog_revision()));
	o = xjson_object_new_object();
	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(o, "catalogVersion", cv);
	json_object_object_add(o, "sessions", arr);
	http_reply_json(ctx->req, 200, o);
}

/*
 * GET /workspace/:ws/sessions/search?q=&maxResults=: sessions whose title
 * or prompt text holds q (ASCII case folded), newest first, with a snippet.
 */
void
route_workspace_sessions_search(struct http_ctx *ctx)
{
	const char *q = http_query(ctx, "q");
	const char *mr = http_query(ctx, "maxResults");
	const char *errstr = NULL;
	long long max = 20;

	if (routes_check_cwd(ctx) == -1)
		return;
	if (q == NULL || q[0] == '\0' || strlen(q) > SEARCH_QUERY_MAX) {
		http_error(ctx->req, "invalid_search_query", NULL);
		return;
	}
	if (mr != NULL && ((max = strtonum(mr, 1, 50, &errstr)), errstr != NULL)) {
		http_error(ctx->req, "invalid_search_max_results", NULL);
		return;
	}
	listing_search(ctx->req, ctx->workspace, q, (size_t)max);
}

/* ---- export ------------------------------------------------------------ */

/*
 * The transcript of id (archived: the archive's copy): its path, when it
 * is a regular file (a link is not followed), else NULL.
 */
static char *
export_path(const char *ws, const char *id, int archived)
{
	char *dir = names_transcript_dir_ws(ws), *path;
	struct stat st;
	int fd;

	if (dir == NULL)
		return NULL;
	xasprintf(&path, "%s/%s%s.jsonl", dir, archived ? "archive/" : "", id);
	free(dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		free(path);
		path = NULL;
	}
	if (fd != -1)
		close(fd);
	return path;
}

/* 400 invalid_export_format with upstream's format and allowedFormats. */
static void
export_bad_format(struct http_ctx *ctx, const char *fmt)
{
	struct qerr *e = qerr_new("invalid_export_format", NULL);
	json_object *allowed = xjson_object_new_array();

	for (int i = EXPORT_HTML; i <= EXPORT_JSONL; i++)
		json_object_array_add(allowed,
		    xjson_object_new_string(export_format_name(i)));
	if (e != NULL) {
		qerr_set_str(e, "format", fmt);
		qerr_set_json(e, "allowedFormats", allowed);
	} else
		json_object_put(allowed);
	http_send_qerr(ctx->req, e);
}

/*
 * The export of id from the active transcripts, or from the archived
 * ones (archived), streamed from its active chain (export-job.c).
 */
static void
export_run(struct http_ctx *ctx, int archived)
{
	const char *fmtname = http_query(ctx, "format");
	const char *ws = ctx->bound != NULL ? ctx->bound :
	    catalog_workspace_of(ctx->path_id);
	char *path;
	int fmt, where;

	if ((fmt = export_format(fmtname)) == -1) {
		export_bad_format(ctx, fmtname);
		return;
	}
	where = ws != NULL ? catalog_where(ws, ctx->path_id) : 0;
	if (where == 0 || (archived && !(where & CATALOG_ARCHIVED))) {
		http_error(ctx->req, "session_not_found", ctx->path_id);
		return;
	}
	if ((path = export_path(ws, ctx->path_id, archived)) == NULL) {
		http_error(ctx->req, "session_archived", ctx->path_id);
		return;
	}
	export_job_start(ctx->req, path, ctx->path_id, fmt);
	free(path);
}

/* GET /session/:id/export?format=html|md|json|jsonl (html by default). */
void
route_session_export(struct http_ctx *ctx)
{
	export_run(ctx, 0);
}

/* GET /workspaces/:ws/session/:id/archive/export: an archived session's. */
void
route_session_archive_export(struct http_ctx *ctx)
{
	export_run(ctx, 1);
}

/* ---- metadata ---------------------------------------------------------- */

#define META_TITLE_MAX	256

/* displayName: 1 to 256 bytes of text without control characters. */
static const char *
meta_title(struct http_ctx *ctx)
{
	json_object *v;
	const char *t;
	struct qerr *e;

	if (json_object_object_get_ex(ctx->body, "pr", &v) ||
	    !json_object_object_get_ex(ctx->body, "displayName", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    (t = json_object_get_string(v))[0] == '\0' ||
	    strlen(t) > META_TITLE_MAX) {
		t = NULL;
	} else {
		for (const char *c = t; *c != '\0'; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				t = NULL;
	}
	if (t == NULL) {
		e = qerr_new("invalid_metadata", "displayName must be 1 to %d bytes "
		    "of text (pr is not served)", META_TITLE_MAX);
		if (e != NULL)
			qerr_set_str(e, "field", json_object_object_get_ex(ctx->body,
			    "pr", &v) ? "pr" : "displayName");
		http_send_qerr(ctx->req, e);
	}
	return t;
}

/* A live session's title change on its way through the child. */
struct meta_req {
	struct evhttp_request	*req;
	char			 id[SERVE_SESSION_ID_MAX + 1];
	char			 client_id[SERVE_CLIENT_ID_MAX + 1];
};

/* The child's answer: 200 {displayName} and session_metadata_updated. */
static void
on_meta(void *arg, enum channel_outcome o, json_object *payload)
{
	struct meta_req *mr = arg;
	struct session *s = sessions_find(mr->id);
	const char *t = json_get_str(payload, "displayName");
	json_object *body, *d;

	if (o == CHANNEL_RESULT && t != NULL) {
		body = xjson_object_new_object();
		json_object_object_add(body, "sessionId", xjson_object_new_string(mr->id));
		json_object_object_add(body, "displayName", xjson_object_new_string(t));
		if (s != NULL) {
			d = xjson_object_new_object();
			json_object_object_add(d, "sessionId", xjson_object_new_string(mr->id));
			json_object_object_add(d, "displayName", xjson_object_new_string(t));
			bus_publish(s->bus, "session_metadata_updated", d, NULL,
			    mr->client_id[0] != '\0' ? mr->client_id : NULL, 0);
		}
		http_reply_json(mr->req, 200, body);
	} else if (o == CHANNEL_ERROR)
		http_error_rpc(mr->req, payload, mr->id);
	else
		http_error(mr->req, "acp_channel_unavailable", mr->id);
	free(mr);
}

/* A live session's title, appended by its child (which holds the lease). */
static void
meta_live(struct http_ctx *ctx, struct session *s, const char *t)
{
	json_object *params = xjson_object_new_object();
	struct meta_req *mr = xcalloc(1, sizeof(*mr));

	mr->req = ctx->req;
	strlcpy(mr->id, s->id, sizeof(mr->id));
	if (ctx->client_id != NULL && !ctx->client_id_bad)
		strlcpy(mr->client_id, ctx->client_id, sizeof(mr->client_id));
	json_object_object_add(params, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(params, "displayName", xjson_object_new_string(t));
	if (channel_request(s->channel, "_qwen/session/update_metadata", params,
	    (uint64_t)conf.restore_timeout_ms, on_meta, mr) == NULL) {
		free(mr);
		http_error(ctx->req, "acp_channel_unavailable", s->id);
	}
}

/*
 * PATCH /session/:id/metadata {displayName}: the session's title,
 * answered {sessionId, displayName} with the title now in effect.  A
 * persisted session's record is appended here (metadata.c); a live
 * session's by its child, which holds the writer lease, and announced as
 * session_metadata_updated.  Under /workspaces/:ws/ an archived session's
 * title is set too (in its archived copy), as upstream's qualified route.
 */
void
route_session_metadata(struct http_ctx *ctx)
{
	const char *ws = ctx->bound != NULL ? ctx->bound :
	    catalog_workspace_of(ctx->path_id), *t, *code = "internal";
	char *cause = NULL;
	struct session *s;
	json_object *o;
	struct qerr *e;
	int where, archived;

	if ((t = meta_title(ctx)) == NULL)
		return;
	if ((s = sessions_find(ctx->path_id)) != NULL) {
		meta_live(ctx, s, t);
		return;
	}
	if (ws == NULL) {
		http_error(ctx->req, "session_not_found", ctx->path_id);
		return;
	}
	where = catalog_where(ws, ctx->path_id);
	archived = !(where & CATALOG_ACTIVE);
	if (archived && (ctx->bound == NULL || !(where & CATALOG_ARCHIVED))) {
		http_error(ctx->req, where != 0 ? "session_archived" :
		    "session_not_found", ctx->path_id);
		return;
	}
	if (!catalog_idle(ctx->path_id, &code) || metadata_set_title(ws,
	    ctx->path_id, archived, t, &code, &cause) == -1) {
		e = cause != NULL ? qerr_new(code, "%s", cause) : qerr_new(code, NULL);
		if (e != NULL)
			qerr_set_str(e, "sessionId", ctx->path_id);
		http_send_qerr(ctx->req, e);
		free(cause);
		return;
	}
	o = xjson_object_new_object();
	json_object_object_add(o, "sessionId", xjson_object_new_string(ctx->path_id));
	json_object_object_add(o, "displayName", xjson_object_new_string(t));
	http_reply_json(ctx->req, 200, o);
}
