/* SPDX-License-Identifier: ISC */
/*
 * routes.c: the route table and a request's way to its route: the gates,
 * the path's session id or workspace, the body, the audit and the rate
 * limit.  main.c hands routes_request() to http.c (http_set_routes()).
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "errors.h"
#include "json.h"
#include "json-limit.h"
#include "log.h"
#include "serve.h"
#include "acp.h"
#include "uuid.h"
#include "ws.h"
#include "xmalloc.h"

/*
 * R_TAIL: one more path segment after the suffix (ctx.path_tail); a
 * suffix with a "*" takes it there ("/tasks/ * /cancel" without the
 * spaces: /tasks/:taskId/cancel).
 * R_LIVE: the route answers only a live session and a client registered
 * on it (when named): its body is parsed only then, else the route runs
 * with {} and refuses by itself (10 MiB to a missing session's cancel
 * costs no parse).  R_WS: the segment is a workspace (its id or
 * URL-encoded cwd), not a session id.  R_NEW: new work (a session, a
 * restore, a turn), refused while the daemon drains.  R_BOUND: served
 * only as /workspaces/:ws/session/:id/... (ws_session_path()).  R_RAW:
 * the segment is not a session id but the route's own (ctx.path_tail).
 */
enum route_flags { R_ID = 1, R_BODY = 2, R_HEALTH = 4, R_ACP = 8, R_TAIL = 16,
	R_LIVE = 32, R_WS = 64, R_NEW = 128, R_BOUND = 256, R_RAW = 512 };

struct route {
	enum evhttp_cmd_type	 method;
	const char		*prefix;	/* path before the id */
	const char		*suffix;	/* after the id ("" for none) */
	int			 flags;
	void			(*fn)(struct http_ctx *);
};

static const struct route routes[] = {
	{ EVHTTP_REQ_GET, "/health", NULL, R_HEALTH, route_health },
	{ EVHTTP_REQ_GET, "/capabilities", NULL, 0, route_capabilities },
	{ EVHTTP_REQ_GET, "/daemon/status", NULL, 0, route_daemon_status },
	{ EVHTTP_REQ_GET, "/metrics", NULL, 0, route_metrics },
	{ EVHTTP_REQ_POST, "/session", NULL, R_BODY | R_NEW,
	    route_session_create },
	{ EVHTTP_REQ_GET, "/workspace/sessions", NULL, 0,
	    route_workspace_sessions },
	{ EVHTTP_REQ_GET, "/workspace/", "/sessions", R_ID | R_WS,
	    route_workspace_sessions_page },
	{ EVHTTP_REQ_GET, "/workspace/", "/sessions/search", R_ID | R_WS,
	    route_workspace_sessions_search },
	{ EVHTTP_REQ_GET, "/workspaces/", "/sessions/search", R_ID | R_WS,
	    route_workspace_sessions_search },
	{ EVHTTP_REQ_GET, "/workspaces/", "/sessions", R_ID | R_WS,
	    route_workspace_sessions_page },
	{ EVHTTP_REQ_GET, "/workspaces/", "/session-info", R_ID | R_WS,
	    route_workspace_session_info },
	{ EVHTTP_REQ_GET, "/workspace/", "/session-info", R_ID | R_WS,
	    route_workspace_session_info },
	{ EVHTTP_REQ_GET, "/workspaces/", "/sessions/live-state", R_ID | R_WS,
	    route_workspace_live_state },
	{ EVHTTP_REQ_POST, "/sessions/delete", NULL, R_BODY,
	    route_sessions_delete },
	{ EVHTTP_REQ_POST, "/workspaces/", "/sessions/delete",
	    R_ID | R_WS | R_BODY, route_sessions_delete },
	{ EVHTTP_REQ_POST, "/workspaces/", "/sessions/archive",
	    R_ID | R_WS | R_BODY, route_sessions_archive },
	{ EVHTTP_REQ_POST, "/workspaces/", "/sessions/unarchive",
	    R_ID | R_WS | R_BODY, route_sessions_unarchive },
	{ EVHTTP_REQ_POST, "/sessions/archive", NULL, R_BODY,
	    route_sessions_archive },
	{ EVHTTP_REQ_POST, "/sessions/unarchive", NULL, R_BODY,
	    route_sessions_unarchive },
	{ EVHTTP_REQ_POST, "/sessions/catalog", NULL, R_BODY,
	    route_sessions_catalog },
	{ EVHTTP_REQ_POST, "/standalone/sessions/archive", NULL, R_BODY,
	    route_standalone_archive },
	{ EVHTTP_REQ_POST, "/standalone/sessions/unarchive", NULL, R_BODY,
	    route_standalone_unarchive },
	{ EVHTTP_REQ_POST, "/standalone/sessions/delete", NULL, R_BODY,
	    route_standalone_delete },
	{ EVHTTP_REQ_POST, "/standalone/sessions", NULL, R_BODY | R_NEW,
	    route_standalone_create },
	{ EVHTTP_REQ_GET, "/standalone/sessions", NULL, 0,
	    route_standalone_list },
	{ EVHTTP_REQ_GET, "/standalone/sessions/", "", R_ID,
	    route_standalone_get },
	{ EVHTTP_REQ_GET, "/standalone/sessions/", "/export", R_ID,
	    route_standalone_export },
	{ EVHTTP_REQ_POST, "/standalone/sessions/", "/load",
	    R_ID | R_BODY | R_NEW, route_standalone_load },
	{ EVHTTP_REQ_POST, "/standalone/sessions/", "/resume",
	    R_ID | R_BODY | R_NEW, route_standalone_resume },
	{ EVHTTP_REQ_POST, "/standalone/sessions/", "/repair-directory",
	    R_ID | R_BODY, route_standalone_repair },
	{ EVHTTP_REQ_PATCH, "/standalone/sessions/", "/metadata",
	    R_ID | R_BODY, route_standalone_metadata },
	{ EVHTTP_REQ_GET, "/session/", "/export", R_ID, route_session_export },
	{ EVHTTP_REQ_GET, "/session/", "/archive/export", R_ID | R_BOUND,
	    route_session_archive_export },
	{ EVHTTP_REQ_GET, "/session/", "/turn-index", R_ID,
	    route_session_turn_index },
	{ EVHTTP_REQ_PATCH, "/session/", "/metadata", R_ID | R_BODY,
	    route_session_metadata },
	{ EVHTTP_REQ_PATCH, "/session/", "/organization", R_ID | R_BODY,
	    route_session_organization },
	{ EVHTTP_REQ_GET, "/workspace/", "/session-groups", R_ID | R_WS,
	    route_session_groups },
	{ EVHTTP_REQ_GET, "/workspaces/", "/session-groups", R_ID | R_WS,
	    route_session_groups },
	{ EVHTTP_REQ_POST, "/workspace/", "/session-groups",
	    R_ID | R_WS | R_BODY, route_session_group_create },
	{ EVHTTP_REQ_POST, "/workspaces/", "/session-groups",
	    R_ID | R_WS | R_BODY, route_session_group_create },
	{ EVHTTP_REQ_PATCH, "/workspace/", "/session-groups/",
	    R_ID | R_WS | R_BODY | R_TAIL, route_session_group_update },
	{ EVHTTP_REQ_PATCH, "/workspaces/", "/session-groups/",
	    R_ID | R_WS | R_BODY | R_TAIL, route_session_group_update },
	{ EVHTTP_REQ_DELETE, "/workspace/", "/session-groups/",
	    R_ID | R_WS | R_TAIL, route_session_group_delete },
	{ EVHTTP_REQ_DELETE, "/workspaces/", "/session-groups/",
	    R_ID | R_WS | R_TAIL, route_session_group_delete },
	{ EVHTTP_REQ_POST, "/session/", "/load", R_ID | R_BODY | R_NEW,
	    route_session_load },
	{ EVHTTP_REQ_POST, "/session/", "/resume", R_ID | R_BODY | R_NEW,
	    route_session_resume },
	{ EVHTTP_REQ_POST, "/session/", "/prompt",
	    R_ID | R_BODY | R_LIVE | R_NEW, route_session_prompt },
	{ EVHTTP_REQ_POST, "/session/", "/cancel", R_ID | R_BODY | R_LIVE,
	    route_session_cancel },
	{ EVHTTP_REQ_POST, "/session/", "/heartbeat", R_ID | R_BODY | R_LIVE,
	    route_session_heartbeat },
	{ EVHTTP_REQ_POST, "/session/", "/detach", R_ID | R_BODY | R_LIVE,
	    route_session_detach },
	{ EVHTTP_REQ_GET, "/session/", "/status", R_ID, route_session_status },
	{ EVHTTP_REQ_GET, "/session/", "/events", R_ID, route_session_events },
	{ EVHTTP_REQ_GET, "/session/", "/transcript", R_ID,
	    route_session_transcript },
	{ EVHTTP_REQ_POST, "/session/", "/branch", R_ID | R_BODY | R_NEW,
	    route_session_branch },
	{ EVHTTP_REQ_POST, "/session/", "/side-task",
	    R_ID | R_BODY | R_LIVE | R_NEW, route_session_side_task },
	{ EVHTTP_REQ_DELETE, "/session/", "", R_ID, route_session_delete },
	{ EVHTTP_REQ_POST, "/session/", "/permission/",
	    R_ID | R_BODY | R_TAIL | R_LIVE, route_session_permission },
	{ EVHTTP_REQ_POST, "/permission/", "", R_ID | R_RAW | R_BODY,
	    route_permission },
	{ EVHTTP_REQ_POST, "/session/", "/model", R_ID | R_BODY | R_LIVE,
	    route_session_model },
	{ EVHTTP_REQ_GET, "/session/", "/pending-prompts", R_ID,
	    route_session_pending },
	{ EVHTTP_REQ_POST, "/session/", "/continue",
	    R_ID | R_BODY | R_LIVE | R_NEW, route_session_continue },
	{ EVHTTP_REQ_POST, "/session/", "/fork", R_ID | R_BODY | R_LIVE | R_NEW,
	    route_session_fork },
	{ EVHTTP_REQ_DELETE, "/session/", "/pending-prompts/", R_ID | R_TAIL,
	    route_session_pending_remove },
	{ EVHTTP_REQ_GET, "/session/", "/turns/", R_ID | R_TAIL,
	    route_session_turn },
	{ EVHTTP_REQ_POST, "/session/", "/approval-mode",
	    R_ID | R_BODY | R_LIVE, route_session_approval_mode },
	/* The agent's own session calls (routes-pass.c). */
	{ EVHTTP_REQ_GET, "/session/", "/context", R_ID, route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/context-usage", R_ID,
	    route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/stats", R_ID, route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/supported-commands", R_ID,
	    route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/tasks", R_ID, route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/agents", R_ID, route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/lsp", R_ID, route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/resources", R_ID, route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/hooks", R_ID, route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/rewind/snapshots", R_ID,
	    route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/goal", R_ID, route_session_pass },
	{ EVHTTP_REQ_POST, "/session/", "/goal", R_ID | R_BODY | R_LIVE,
	    route_session_pass },
	{ EVHTTP_REQ_POST, "/session/", "/goal/clear", R_ID | R_BODY | R_LIVE,
	    route_session_pass },
	{ EVHTTP_REQ_POST, "/session/", "/rewind", R_ID | R_BODY | R_LIVE,
	    route_session_pass },
	{ EVHTTP_REQ_POST, "/session/", "/recap", R_ID | R_BODY | R_LIVE,
	    route_session_pass },
	{ EVHTTP_REQ_POST, "/session/", "/btw", R_ID | R_BODY | R_LIVE,
	    route_session_pass },
	{ EVHTTP_REQ_POST, "/session/", "/language", R_ID | R_BODY | R_LIVE,
	    route_session_pass },
	{ EVHTTP_REQ_POST, "/session/", "/config-option",
	    R_ID | R_BODY | R_LIVE, route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/agent-trace", R_ID, route_session_pass },
	{ EVHTTP_REQ_GET, "/session/", "/saved-workflows/", R_ID | R_TAIL,
	    route_session_pass_workflow },
	{ EVHTTP_REQ_POST, "/session/", "/tasks/*/cancel", R_ID | R_BODY | R_TAIL |
	    R_LIVE, route_session_pass_task },
	{ EVHTTP_REQ_POST, "/session/", "/tasks/*/workflow-action", R_ID | R_BODY |
	    R_TAIL | R_LIVE, route_session_pass_task },
	/* A session's attachments (routes-attachments.c). */
	{ EVHTTP_REQ_POST, "/session/", "/attachments", R_ID,
	    route_session_attachment_put },
	{ EVHTTP_REQ_GET, "/session/", "/attachments", R_ID,
	    route_session_attachments },
	{ EVHTTP_REQ_GET, "/session/", "/attachments/", R_ID | R_TAIL,
	    route_session_attachment_read },
	{ EVHTTP_REQ_DELETE, "/session/", "/attachments/", R_ID | R_TAIL,
	    route_session_attachment_remove },
	/* A session's artifacts (routes-artifacts.c). */
	{ EVHTTP_REQ_GET, "/session/", "/artifacts", R_ID,
	    route_session_artifacts },
	{ EVHTTP_REQ_POST, "/session/", "/artifacts", R_ID | R_BODY | R_LIVE,
	    route_session_artifact_add },
	{ EVHTTP_REQ_DELETE, "/session/", "/artifacts/", R_ID | R_TAIL,
	    route_session_artifact_remove },
	{ EVHTTP_REQ_GET, "/session/", "/artifacts/*/content", R_ID | R_TAIL,
	    route_session_artifact_content },
	/* A session's sources, kept by its agent (routes-sources.c). */
	{ EVHTTP_REQ_GET, "/session/", "/sources", R_ID, route_session_sources },
	{ EVHTTP_REQ_POST, "/session/", "/sources", R_ID | R_BODY | R_LIVE,
	    route_session_source_upsert },
	{ EVHTTP_REQ_DELETE, "/session/", "/sources/", R_ID | R_TAIL,
	    route_session_source_remove },
	/* A session's subagents, among its agent's tasks (routes-subagent.c). */
	{ EVHTTP_REQ_GET, "/session/", "/subagents/", R_ID | R_TAIL,
	    route_session_subagent },
	{ EVHTTP_REQ_POST, "/session/", "/subagents/*/cancel", R_ID | R_BODY |
	    R_TAIL | R_LIVE, route_session_subagent },
	/* upstream's direct session shell (routes-shell.c). */
	{ EVHTTP_REQ_POST, "/session/", "/shell", R_ID | R_BODY | R_LIVE,
	    route_session_shell },
	/* upstream's stateless generation, streamed (routes-generate.c). */
	{ EVHTTP_REQ_POST, "/session/", "/generate", R_ID | R_BODY | R_LIVE,
	    route_session_generate },
	/* a session's mid-turn messages (routes-midturn.c). */
	{ EVHTTP_REQ_POST, "/session/", "/mid-turn-message",
	    R_ID | R_BODY | R_LIVE, route_session_midturn_post },
	{ EVHTTP_REQ_GET, "/session/", "/mid-turn-messages", R_ID,
	    route_session_midturn_get },
	{ EVHTTP_REQ_DELETE, "/session/", "/mid-turn-messages/", R_ID | R_TAIL,
	    route_session_midturn_delete },
	{ EVHTTP_REQ_POST, "/acp", NULL, R_ACP, route_acp_post },
	{ EVHTTP_REQ_GET, "/acp", NULL, R_ACP, route_acp_get },
	{ EVHTTP_REQ_DELETE, "/acp", NULL, R_ACP, route_acp_delete },
};

/* The workspace segment of a /workspaces/:ws/session/:id/... request. */
static const char	*bound_sel;
static size_t		 bound_sel_len;

/*
 * Decode and check a path session id (names_session_id_ok()).  UUIDs are
 * lower-cased.  Returns a malloc'd id or NULL.
 */
static char *
decode_session_id(const char *seg, size_t seglen)
{
	char *raw, *id;
	size_t n;

	if ((raw = strndup(seg, seglen)) == NULL)
		return NULL;
	id = evhttp_uridecode(raw, 0, &n);
	free(raw);
	if (id == NULL)
		return NULL;
	if (strlen(id) != n || !names_session_id_ok(id)) {
		free(id);
		return NULL;
	}
	if (uuid_valid(id))
		for (size_t i = 0; i < n; i++)
			id[i] = (char)tolower((unsigned char)id[i]);
	return id;
}

/*
 * A workspace path segment as the body {cwd} routes_check_cwd() reads: a
 * workspace id ("primary", "wsN") becomes its cwd, anything else is taken
 * as a URL-encoded cwd (and refused there when it is none of ours).
 */
static json_object *
workspace_selector_body(const char *seg, size_t seglen)
{
	json_object *o = xjson_object_new_object();
	char id[32], *raw, *dec;

	for (size_t i = 0; i < conf.n_workspaces; i++) {
		names_workspace_id(i, id, sizeof(id));
		if (strlen(id) == seglen && strncmp(seg, id, seglen) == 0) {
			json_object_object_add(o, "cwd",
			    xjson_object_new_string(conf.workspaces[i]));
			return o;
		}
	}
	raw = xstrndup(seg, seglen);
	dec = evhttp_uridecode(raw, 0, NULL);
	free(raw);
	json_object_object_add(o, "cwd",
	    xjson_object_new_string(dec != NULL ? dec : ""));
	free(dec);
	return o;
}

/* A route's last segment: one, then end when the route has one. */
static int
tail_match(const char *tail, const char *end)
{
	const char *slash = strchr(tail, '/');

	if (end == NULL)
		return slash == NULL;
	return slash != NULL && slash > tail && strcmp(slash, end) == 0;
}

/* Match path against r; *idp gets the id segment (start, length). */
static int
route_match(const struct route *r, const char *path, const char **seg,
    size_t *seglen)
{
	size_t plen = strlen(r->prefix), slen, rest;
	const char *slash;

	if (!(r->flags & R_ID))
		return strcmp(path, r->prefix) == 0;
	if (strncmp(path, r->prefix, plen) != 0)
		return 0;
	*seg = path + plen;
	slash = strchr(*seg, '/');
	*seglen = slash != NULL ? (size_t)(slash - *seg) : strlen(*seg);
	rest = strlen(*seg + *seglen);
	slen = strlen(r->suffix);
	if (r->flags & R_TAIL) {
		slen = strcspn(r->suffix, "*");
		return *seglen > 0 && rest > slen &&
		    strncmp(*seg + *seglen, r->suffix, slen) == 0 &&
		    tail_match(*seg + *seglen + slen, r->suffix[slen] == '*' ?
		    r->suffix + slen + 1 : NULL);
	}
	return *seglen > 0 && rest == slen &&
	    strcmp(*seg + *seglen, r->suffix) == 0;
}

static void
client_id_header(struct evhttp_request *req, struct http_ctx *ctx)
{
	const char *v = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "X-Qwen-Client-Id");

	if (v == NULL || v[0] == '\0')
		return;
	ctx->client_id = v;
	ctx->client_id_bad = !client_id_valid(v);
}

/* Whether an R_LIVE route's session is live and its caller registered. */
static int
body_wanted(const struct route *r, const struct http_ctx *ctx)
{
	struct session *s;

	if (!(r->flags & R_LIVE))
		return 1;
	if ((s = sessions_find(ctx->path_id)) == NULL)
		return 0;
	return ctx->client_id == NULL || (!ctx->client_id_bad &&
	    clients_find(&s->clients, ctx->client_id) != NULL);
}

/* "DELETE /session/:id", "POST /session/:id/permission/:requestId". */
static void
audit_route(struct evhttp_request *req, const struct route *r, const char *id)
{
	char what[128];

	snprintf(what, sizeof(what), "%s %s%s%s%s",
	    r->method == EVHTTP_REQ_POST ? "POST" :
	    r->method == EVHTTP_REQ_PATCH ? "PATCH" : "DELETE", r->prefix,
	    (r->flags & R_ID) ? ":id" : "", r->suffix != NULL ? r->suffix : "",
	    (r->flags & R_TAIL) && strchr(r->suffix, '*') == NULL ?
	    ":requestId" : "");
	audit_begin(req, what, id);
}

/*
 * A workspace route: the segment becomes the body's cwd (a body, when the
 * route takes one, is parsed first; its own cwd is overridden).
 */
static void
ws_dispatch(struct evhttp_request *req, const struct route *r,
    struct http_ctx *ctx, const char *seg, size_t seglen)
{
	json_object *sel = workspace_selector_body(seg, seglen), *cwd;
	int rc;

	if (r->flags & R_TAIL)
		ctx->path_tail = seg + seglen + strcspn(r->suffix, "*");
	if (r->method != EVHTTP_REQ_GET)
		audit_route(req, r, NULL);
	if ((r->flags & R_BODY) &&
	    (rc = http_body_parse(req, &ctx->body)) < 0) {
		json_object_put(sel);
		http_error(req, rc == -2 ? "json_too_complex" : "invalid_json",
		    NULL);
		return;
	}
	if (ctx->body == NULL ||
	    !json_object_is_type(ctx->body, json_type_object)) {
		json_object_put(ctx->body);
		ctx->body = sel;
	} else {
		json_object_object_get_ex(sel, "cwd", &cwd);
		json_object_object_add(ctx->body, "cwd", json_object_get(cwd));
		json_object_put(sel);
	}
	r->fn(ctx);
}

/*
 * Under /workspaces/:ws/session/:id/...: the workspace must be ours
 * (else workspace_mismatch) and hold the session, live there or on its
 * disk (else 404 session_not_found); ctx->bound is then that workspace.
 * -1 after answering.
 */
static int
bound_check(struct http_ctx *ctx)
{
	struct http_ctx t = { .req = ctx->req };
	struct session *s;
	int rc, here;

	t.body = workspace_selector_body(bound_sel, bound_sel_len);
	rc = routes_check_cwd(&t);
	json_object_put(t.body);
	if (rc == -1)
		return -1;
	if ((s = sessions_find(ctx->path_id)) != NULL)
		here = strcmp(channel_workspace(s->channel), t.workspace) == 0;
	else
		here = catalog_where(t.workspace, ctx->path_id) != 0;
	if (!here) {
		http_error(ctx->req, "session_not_found", ctx->path_id);
		return -1;
	}
	ctx->bound = t.workspace;
	return 0;
}

/* Run the matched route with its context. */
static void
dispatch(struct evhttp_request *req, const struct route *r, const char *seg,
    size_t seglen, const char *query)
{
	struct http_ctx ctx = { .req = req };
	struct evkeyvalq q;
	char *id = NULL;
	int rc;

	TAILQ_INIT(&q);
	if (query != NULL && evhttp_parse_query_str(query, &q) == -1) {
		http_error(req, "bad_request", NULL);
		return;
	}
	ctx.query = &q;
	client_id_header(req, &ctx);
	if (r->flags & R_WS) {
		ws_dispatch(req, r, &ctx, seg, seglen);
		goto out;
	}
	if (r->flags & R_RAW) {
		ctx.path_tail = seg;
		audit_route(req, r, NULL);
		if ((rc = http_body_parse(req, &ctx.body)) < 0) {
			http_error(req, rc == -2 ? "json_too_complex" :
			    "invalid_json", NULL);
			goto out;
		}
		if (ctx.body == NULL)
			ctx.body = xjson_object_new_object();
		r->fn(&ctx);
		goto out;
	}
	if ((r->flags & R_ID) &&
	    (id = decode_session_id(seg, seglen)) == NULL) {
		struct qerr *e = qerr_new("invalid_session_id",
		    "Invalid session id");
		char *raw = strndup(seg, seglen);

		if (e != NULL && raw != NULL)
			qerr_set_str(e, "sessionId", raw);
		free(raw);
		http_send_qerr(req, e);
		goto out;
	}
	ctx.path_id = id;
	if (bound_sel != NULL && bound_check(&ctx) == -1)
		goto out;
	if (r->method == EVHTTP_REQ_POST || r->method == EVHTTP_REQ_DELETE ||
	    r->method == EVHTTP_REQ_PATCH)
		audit_route(req, r, id);
	if (r->flags & R_TAIL)
		ctx.path_tail = seg + seglen + strcspn(r->suffix, "*");
	if ((r->flags & R_BODY) && body_wanted(r, &ctx) &&
	    (rc = http_body_parse(req, &ctx.body)) < 0) {
		http_error(req, rc == -2 ? "json_too_complex" : "invalid_json",
		    NULL);
		goto out;
	}
	if (ctx.body == NULL)
		ctx.body = xjson_object_new_object();
	r->fn(&ctx);
	if (id != NULL)
		reqid_session(sessions_find(id));
out:
	json_object_put(ctx.body);
	evhttp_clear_headers(&q);
	free(id);
	json_limit_release(evbuffer_get_length(
	    evhttp_request_get_input_buffer(req)));
}

static const char *workspace_of_acp_path(const char *);
static const char *ws_session_path(const char *);
static void	on_request_routed(struct evhttp_request *,
		    const struct evhttp_uri *, enum evhttp_cmd_type,
		    const char *);
static void	route_request(struct evhttp_request *, const char *,
		    enum evhttp_cmd_type, const struct evhttp_uri *);

/* A request: its log context, the gates, its route (http.c's callback). */
void
routes_request(struct evhttp_request *req)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;

	conn_request(req);
	reqid_begin(req);
	on_request_routed(req, uri, method, path);
	reqid_end();
}

/* routes_request's work, with the request's log context set. */
static void
on_request_routed(struct evhttp_request *req, const struct evhttp_uri *uri,
    enum evhttp_cmd_type method, const char *path)
{
	const char *rest;

	/* A chunked body is measured only whole (conn-input.c cuts it). */
	if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) >
	    SERVE_MAX_BODY) {
		http_error(req, "payload_too_large", NULL);
		return;
	}
	if (path == NULL || path[0] != '/') {
		http_error(req, "bad_request", NULL);
		return;
	}
	/*
	 * /workspaces/:w/acp is /acp bound to workspace w; another w is an
	 * unknown path (404 after the gates, like any other).
	 */
	if (strncmp(path, "/workspaces/", 12) == 0 &&
	    (acp_bound_workspace = workspace_of_acp_path(path)) != NULL) {
		route_request(req, "/acp", method, uri);
		acp_bound_workspace = NULL;
		return;
	}
	/* /workspaces/:w/session/:id/export is /session/:id/export in w. */
	if (strncmp(path, "/workspaces/", 12) == 0 &&
	    (rest = ws_session_path(path)) != NULL) {
		bound_sel = path + 12;
		bound_sel_len = (size_t)(rest - bound_sel);
		route_request(req, rest, method, uri);
		bound_sel = NULL;
		return;
	}
	route_request(req, path, method, uri);
}

/*
 * "/workspaces/<selector>/session/<id>/<route>" for the session routes
 * upstream serves under a workspace: the "/session/..." part, or NULL.
 */
static const char *
ws_session_path(const char *path)
{
	static const char *const tails[] = { "/transcript", "/turn-index",
	    "/export", "/archive/export", "/metadata", "/organization" };
	static const char *const stores[] = { "/attachments", "/sources",
	    "/artifacts" };
	const char *slash = strchr(path + 12, '/'), *id, *end;

	if (slash == NULL || slash == path + 12 ||
	    strncmp(slash, "/session/", 9) != 0)
		return NULL;
	id = slash + 9;
	if ((end = strchr(id, '/')) == NULL || end == id)
		return NULL;
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++)
		if (strcmp(end, tails[i]) == 0)
			return slash;
	/* A session's stores, each item below them too. */
	for (size_t i = 0; i < sizeof(stores) / sizeof(stores[0]); i++)
		if (strncmp(end, stores[i], strlen(stores[i])) == 0 &&
		    (end[strlen(stores[i])] == '\0' ||
		    end[strlen(stores[i])] == '/'))
			return slash;
	return NULL;
}

/*
 * "/workspaces/<selector>/acp": the workspace whose id ("primary",
 * "wsN") or URL-encoded cwd the selector is, or NULL.
 */
static const char *
workspace_of_acp_path(const char *path)
{
	const char *sel = path + 12, *end = strrchr(sel, '/'), *ws = NULL;
	char *raw, *dec, *real;
	size_t n, i;

	if (end == NULL || strcmp(end, "/acp") != 0 || end == sel)
		return NULL;
	n = (size_t)(end - sel);
	for (i = 0; i < conf.n_workspaces; i++) {
		char id[32];

		names_workspace_id(i, id, sizeof(id));
		if (strlen(id) == n && strncmp(sel, id, n) == 0)
			return conf.workspaces[i];
	}
	/* An encoded cwd: "%2Fsrv%2Fa" (its slashes escaped). */
	if ((raw = xstrndup(sel, n)) == NULL ||
	    (dec = evhttp_uridecode(raw, 0, NULL)) == NULL) {
		free(raw);
		return NULL;
	}
	free(raw);
	if (dec[0] == '/' && (real = realpath(dec, NULL)) != NULL) {
		ws = names_workspace(real);
		free(real);
	}
	free(dec);
	return ws;
}

/*
 * The rate limiter's class of r: prompts, other changes, reads; -1 for
 * what upstream exempts (health, heartbeats, event streams, /acp) and
 * for /metrics (a scraper is not a client to starve).
 */
static int
route_rl_class(const struct route *r)
{
	if ((r->flags & (R_HEALTH | R_ACP)) ||
	    strcmp(r->prefix, "/metrics") == 0)
		return -1;
	if (r->suffix != NULL && (strcmp(r->suffix, "/heartbeat") == 0 ||
	    strcmp(r->suffix, "/events") == 0))
		return -1;
	if (r->suffix != NULL && strcmp(r->suffix, "/prompt") == 0)
		return RL_PROMPT;
	return r->method == EVHTTP_REQ_GET ? RL_READ : RL_MUTATION;
}

/* Gates and routing of one request (path may be a rewritten one). */
static void
route_request(struct evhttp_request *req, const char *path,
    enum evhttp_cmd_type method, const struct evhttp_uri *uri)
{
	const char *seg = NULL;
	size_t seglen = 0;
	int path_known = 0;

	/* WebSocket upgrades run the gates themselves (bearer subprotocol). */
	if (strcmp(path, WS_PATH) == 0 && ws_wants_upgrade(req)) {
		ws_upgrade(req);
		return;
	}
	if (gate_preflight(req) || web_route(req, path))
		return;
	if (gate_request(req, strcmp(path, "/health") == 0 ? GATE_HEALTH :
	    GATE_API) == -1)
		return;
	if (serve_shutting_down()) {
		http_error(req, "workspace_draining", NULL);
		return;
	}
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (!route_match(&routes[i], path, &seg, &seglen) ||
		    ((routes[i].flags & R_ACP) && !acp_http_enabled()) ||
		    ((routes[i].flags & R_BOUND) && bound_sel == NULL))
			continue;
		path_known = 1;
		if (routes[i].method == method) {
			if ((routes[i].flags & R_NEW) && drain_active()) {
				http_error(req, "workspace_draining", NULL);
				return;
			}
			if (ratelimit_admit(req,
			    route_rl_class(&routes[i])) == -1)
				return;
			dispatch(req, &routes[i], seg, seglen,
			    evhttp_uri_get_query(uri));
			return;
		}
	}
	if (path_known && method == EVHTTP_REQ_OPTIONS)
		http_reply_empty(req, 204);
	else if (path_known)
		http_error(req, "method_not_allowed", NULL);
	else
		http_error(req, "not_found", NULL);
}
