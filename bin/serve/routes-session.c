/* SPDX-License-Identifier: ISC */
/*
 * routes-session.c: the REST session routes.  Each handler validates in
 * the order of the protocol (session lookup, then the client id, then the
 * body) and answers before any side effect when something is wrong.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "approval.h"
#include "clock.h"
#include "errors.h"
#include "log.h"
#include "restore-fsm.h"
#include "serve.h"
#include "xmalloc.h"

/* ---- shared checks ------------------------------------------------------ */

static struct session *
lookup(struct http_ctx *ctx)
{
	struct session *s = sessions_find(ctx->path_id);

	if (s == NULL)
		http_error(ctx->req, "session_not_found", ctx->path_id);
	return s;
}

static void
invalid_client(struct http_ctx *ctx, const char *session_id)
{
	struct qerr *e = qerr_new("invalid_client_id", NULL);

	if (e != NULL) {
		qerr_set_str(e, "sessionId", session_id != NULL ? session_id : "");
		qerr_set_str(e, "clientId", ctx->client_id);
	}
	http_send_qerr(ctx->req, e);
}

/* A malformed X-Qwen-Client-Id: 400 before anything happens. */
static int
check_client_shape(struct http_ctx *ctx, const char *session_id)
{
	if (ctx->client_id != NULL && ctx->client_id_bad) {
		invalid_client(ctx, session_id);
		return -1;
	}
	return 0;
}

/* An admission route: a present id must be registered on the session. */
static int
check_client(struct http_ctx *ctx, struct session *s)
{
	if (ctx->client_id != NULL &&
	    (ctx->client_id_bad || clients_find(&s->clients, ctx->client_id) == NULL)) {
		invalid_client(ctx, s->id);
		return -1;
	}
	return 0;
}

/* The live session of the path whose client (if any) is registered, or NULL. */
struct session *
routes_session(struct http_ctx *ctx)
{
	struct session *s;

	if ((s = lookup(ctx)) == NULL || check_client(ctx, s) == -1)
		return NULL;
	return s;
}

/* 503 acp_channel_unavailable (channel_closed): the child went away, or
   cannot take requests, before it answered. */
void
routes_unavailable(struct evhttp_request *req)
{
	struct qerr *e = qerr_new("acp_channel_unavailable",
	    "The agent process is not available");

	if (e != NULL)
		qerr_set_reason(e, "channel_closed");
	http_send_qerr(req, e);
}

/*
 * body.cwd picks the workspace (ctx->workspace): absent, the primary;
 * else an absolute path naming one of ours, or 400 workspace_mismatch.
 * Under /workspaces/:ws/session/:id/ the path's workspace is taken.
 */
int
routes_check_cwd(struct http_ctx *ctx)
{
	json_object *v;
	const char *cwd, *ws = NULL;
	char *real = NULL;
	struct qerr *e;

	ctx->workspace = ctx->bound != NULL ? ctx->bound : conf.workspace;
	if (ctx->bound != NULL ||
	    !json_object_object_get_ex(ctx->body, "cwd", &v) || v == NULL)
		return 0;
	cwd = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	if (cwd[0] == '/')
		real = realpath(cwd, NULL);
	ws = names_workspace(real != NULL ? real : cwd);
	free(real);
	if (ws != NULL) {
		ctx->workspace = ws;
		return 0;
	}
	if ((e = qerr_new("workspace_mismatch", NULL)) != NULL) {
		qerr_set_str(e, "boundWorkspace", conf.workspace);
		qerr_set_str(e, "requestedWorkspace", cwd);
		qerr_set_int(e, "workspaceCount", (int64_t)conf.n_workspaces);
	}
	http_send_qerr(ctx->req, e);
	return -1;
}

/* 409 session_workspace_conflict: s is live in another workspace. */
static int
check_live_workspace(struct http_ctx *ctx, struct session *s)
{
	const char *live = channel_workspace(s->channel);
	struct qerr *e;

	if (strcmp(live, ctx->workspace) == 0)
		return 0;
	if ((e = qerr_new("session_workspace_conflict", NULL)) != NULL) {
		qerr_set_str(e, "sessionId", s->id);
		qerr_set_str(e, "workspaceCwd", ctx->workspace);
		qerr_set_str(e, "liveWorkspaceCwd", live);
	}
	http_send_qerr(ctx->req, e);
	return -1;
}

/* "full" or "summary" when present. */
static int
check_mode(struct http_ctx *ctx, const char *key, const char *code)
{
	json_object *v;
	const char *m;

	if (!json_object_object_get_ex(ctx->body, key, &v) || v == NULL)
		return 0;
	m = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	if (strcmp(m, "full") == 0 || strcmp(m, "summary") == 0)
		return 0;
	http_error(ctx->req, code, NULL);
	return -1;
}

/* approvalMode: absent, or one of upstream's modes (400 with allowed). */
static int
check_approval_mode(struct http_ctx *ctx)
{
	json_object *v, *allowed;
	struct qerr *e;
	size_t i;

	if (!json_object_object_get_ex(ctx->body, "approvalMode", &v) || v == NULL ||
	    approval_mode_known(json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) : NULL))
		return 0;
	if ((e = qerr_new("invalid_approval_mode", NULL)) != NULL) {
		allowed = xjson_object_new_array();
		for (i = 0; approval_modes[i] != NULL; i++)
			json_object_array_add(allowed,
			    xjson_object_new_string(approval_modes[i]));
		qerr_set_json(e, "allowed", allowed);
	}
	http_send_qerr(ctx->req, e);
	return -1;
}

/* ---- create, load, resume ----------------------------------------------- */

static void
limit_error(struct http_ctx *ctx, int total)
{
	struct qerr *e = qerr_new("session_limit_exceeded", NULL);

	if (e != NULL) {
		qerr_set_int(e, "limit", total ? conf.max_total_sessions : conf.max_sessions);
		qerr_set_str(e, "scope", total ? "total" : "workspace");
	}
	http_send_qerr(ctx->req, e);
}

/* Fresh work through the daemon's one admission rule; -1: answered. */
static int
admit_fresh(struct http_ctx *ctx)
{
	int total = 0;

	switch (inflight_admit(ctx->req, channel_get(ctx->workspace))) {
	case RFSM_ADMIT_OK:
		return 0;
	case RFSM_ADMIT_CAPACITY:
		(void)sessions_capacity_left(ctx->workspace, &total);
		limit_error(ctx, total);
		return -1;
	case RFSM_ADMIT_UNAVAILABLE:
		break;
	}
	return -1;
}

static void
id_conflict(struct http_ctx *ctx, const char *id, const char *conflict)
{
	struct qerr *e = qerr_new("session_id_conflict", NULL);

	if (e != NULL) {
		qerr_set_str(e, "sessionId", id);
		qerr_set_str(e, "conflict", conflict);
		if (strcmp(conflict, "live") == 0)
			qerr_set_str(e, "liveWorkspaceCwd",
			    channel_workspace(sessions_find(id)->channel));
	}
	http_send_qerr(ctx->req, e);
}

/* body.sessionId: absent/null, or a UUID v1-v5 (lower-cased into id). */
static int
body_session_id(struct http_ctx *ctx, char *id, size_t size)
{
	json_object *v;
	const char *sid;
	struct qerr *e;
	size_t i;

	id[0] = '\0';
	if (!json_object_object_get_ex(ctx->body, "sessionId", &v) || v == NULL)
		return 0;
	sid = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	if (!uuid_valid(sid)) {
		if ((e = qerr_new("invalid_session_id", NULL)) != NULL)
			qerr_set_str(e, "sessionId", sid);
		http_send_qerr(ctx->req, e);
		return -1;
	}
	for (i = 0; sid[i] != '\0' && i + 1 < size; i++)
		id[i] = (char)tolower((unsigned char)sid[i]);
	id[i] = '\0';
	return 0;
}

/* Attach to the live s; its modelServiceId and approvalMode go first. */
static void
attach(struct http_ctx *ctx, struct session *s, enum inflight_action action)
{
	struct modes_caller c;

	s->attach_count++;
	c.req = ctx->req;
	c.client_id = clients_register(&s->clients, ctx->client_id);
	modes_reply(s, action, 1, ctx->body, &c, 1);
}

void
route_session_create(struct http_ctx *ctx)
{
	char id[SERVE_SESSION_ID_MAX + 1];
	const char *scope = "single", *conflict = NULL;
	struct inflight *op;
	struct session *s;
	json_object *v;

	if (check_client_shape(ctx, NULL) == -1 || routes_check_cwd(ctx) == -1 ||
	    body_session_id(ctx, id, sizeof(id)) == -1 || check_approval_mode(ctx) == -1)
		return;
	if (json_object_object_get_ex(ctx->body, "sessionScope", &v) && v != NULL) {
		scope = json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) : "";
		if (strcmp(scope, "single") != 0 && strcmp(scope, "thread") != 0) {
			http_error(ctx->req, "invalid_session_scope", NULL);
			return;
		}
	}
	if (id[0] != '\0') {
		scope = "thread";
		if (sessions_find(id) == NULL && (op = inflight_find(id)) != NULL &&
		    !inflight_is_active_spawn(op)) {
			/*
			 * A restore of the id, active or awaiting its
			 * cleanup, or a spawn awaiting its cleanup.
			 */
			inflight_same_id(op, ctx->req, ctx->client_id, OP_SPAWN,
			    ctx->body);
			return;
		}
		if (sessions_find(id) != NULL)
			conflict = "live";
		else if (inflight_find(id) != NULL)
			conflict = "pending";
		else if (inflight_transcript_exists(id) ||
		    catalog_workspace_of(id) != NULL)	/* archived too */
			conflict = "persisted";
		if (conflict != NULL) {
			id_conflict(ctx, id, conflict);
			return;
		}
	}
	if (strcmp(scope, "single") == 0) {
		if ((s = sessions_default(ctx->workspace)) != NULL) {
			attach(ctx, s, OP_SPAWN);
			return;
		}
		if ((op = inflight_default_spawn(ctx->workspace)) != NULL) {
			inflight_join(op, ctx->req, ctx->client_id);
			return;
		}
	}
	if (admit_fresh(ctx) == -1)
		return;
	inflight_spawn(ctx->workspace, id[0] != '\0' ? id : NULL,
	    strcmp(scope, "single") == 0, ctx->body, ctx->req, ctx->client_id);
}

/* Load and resume share everything up to the action. */
static void
restore_route(struct http_ctx *ctx, enum inflight_action action)
{
	struct inflight *op;
	struct session *s;
	json_object *v;
	struct qerr *e;
	int64_t n;

	if (check_client_shape(ctx, ctx->path_id) == -1 || routes_check_cwd(ctx) == -1 ||
	    check_approval_mode(ctx) == -1)
		return;
	if (action == OP_LOAD &&
	    json_object_object_get_ex(ctx->body, "historyPageSize", &v) && v != NULL &&
	    (!json_object_is_type(v, json_type_int) ||
	    (n = json_object_get_int64(v)) < 1 || n > 500)) {
		if ((e = qerr_new("invalid_transcript_limit", NULL)) != NULL)
			qerr_set_int(e, "maxLimit", 500);
		http_send_qerr(ctx->req, e);
		return;
	}
	if (check_mode(ctx, "liveReplayMode", "invalid_live_replay_mode") == -1 ||
	    check_mode(ctx, "compactedReplayMode", "invalid_compacted_replay_mode") == -1)
		return;
	if ((s = sessions_find(ctx->path_id)) != NULL) {
		if (check_live_workspace(ctx, s) == -1)
			return;
		attach(ctx, s, action);
		return;
	}
	if ((op = inflight_find(ctx->path_id)) != NULL) {
		inflight_same_id(op, ctx->req, ctx->client_id, action,
		    ctx->body);
		return;
	}
	if (routes_check_archived(ctx) == -1 || admit_fresh(ctx) == -1)
		return;
	inflight_restore(ctx->workspace, action, ctx->path_id, ctx->body,
	    ctx->req, ctx->client_id);
}

void
route_session_load(struct http_ctx *ctx)
{
	restore_route(ctx, OP_LOAD);
}

void
route_session_resume(struct http_ctx *ctx)
{
	restore_route(ctx, OP_RESUME);
}

/* ---- prompt, cancel, heartbeat, detach, close, status -------------------- */

/* deadlineMs (positive integer) and eventDetailMode (full|summary). */
static int
check_prompt_options(struct http_ctx *ctx)
{
	json_object *v;

	if (json_object_object_get_ex(ctx->body, "deadlineMs", &v) && v != NULL &&
	    (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1)) {
		http_error(ctx->req, "invalid_deadline_ms", NULL);
		return -1;
	}
	if (json_object_object_get_ex(ctx->body, "eventDetailMode", &v) && v != NULL &&
	    check_mode(ctx, "eventDetailMode", "invalid_event_detail_mode") == -1)
		return -1;
	return 0;
}

void
route_session_prompt(struct http_ctx *ctx)
{
	struct session *s;
	const char *pid;
	struct qerr *e;
	int error;
	json_object *o;

	if ((s = lookup(ctx)) == NULL || check_client(ctx, s) == -1 ||
	    check_prompt_options(ctx) == -1)
		return;
	if (json_object_object_get_ex(ctx->body, "prompt", &o) &&
	    json_object_is_type(o, json_type_array) &&
	    attachments_ref_check(channel_workspace(s->channel), s->id, o,
	    &e) == -1) {
		http_send_qerr(ctx->req, e);
		return;
	}
	o = xjson_object_new_object();
	json_object_object_add(o, "lastEventId",
	    xjson_object_new_int64((int64_t)bus_last_id(s->bus)));
	json_object_object_add(o, "eventEpoch", xjson_object_new_string(bus_epoch(s->bus)));
	if ((pid = prompts_admit(s, ctx->body, ctx->client_id, 0)) == NULL) {
		error = errno;
		json_object_put(o);
		if (error == ENOBUFS) {
			if ((e = qerr_new("prompt_queue_full", NULL)) != NULL) {
				qerr_set_str(e, "sessionId", s->id);
				qerr_set_int(e, "limit", conf.max_pending_prompts);
				qerr_set_int(e, "pendingCount",
				    (int64_t)prompts_pending(s));
			}
		} else if (error == EINVAL)
			e = qerr_new("bad_request",
			    "prompt must be a non-empty array of content blocks");
		else
			e = qerr_new("internal", NULL);
		http_send_qerr(ctx->req, e);
		return;
	}
	json_object_object_add(o, "promptId", xjson_object_new_string(pid));
	http_reply_json(ctx->req, 202, o);
}

void
route_session_cancel(struct http_ctx *ctx)
{
	struct session *s;

	if ((s = lookup(ctx)) == NULL || check_client(ctx, s) == -1)
		return;
	prompts_cancel(s, ctx->client_id);
	http_reply_empty(ctx->req, 204);
}

void
route_session_heartbeat(struct http_ctx *ctx)
{
	struct session *s;
	struct client *c = NULL;
	json_object *o;

	if ((s = lookup(ctx)) == NULL || check_client(ctx, s) == -1)
		return;
	s->last_seen_wall_ms = clock_wall_ms();
	s->last_active_mono_ms = clock_mono_ms();
	if (ctx->client_id != NULL && (c = clients_find(&s->clients, ctx->client_id)) != NULL)
		c->last_seen_ms = s->last_seen_wall_ms;
	o = xjson_object_new_object();
	json_object_object_add(o, "sessionId", xjson_object_new_string(s->id));
	if (c != NULL)
		json_object_object_add(o, "clientId", xjson_object_new_string(c->id));
	json_object_object_add(o, "lastSeenAt",
	    xjson_object_new_int64((int64_t)s->last_seen_wall_ms));
	http_reply_json(ctx->req, 200, o);
}

void
route_session_detach(struct http_ctx *ctx)
{
	struct session *s = sessions_find(ctx->path_id);

	if (s != NULL && ctx->client_id != NULL && !ctx->client_id_bad &&
	    clients_release(&s->clients, ctx->client_id)) {
		if (s->attach_count > 0)
			s->attach_count--;
		if (!session_held(s))
			session_close(s, "last_client_detached", ctx->client_id);
	}
	http_reply_empty(ctx->req, 204);
}

void
route_session_delete(struct http_ctx *ctx)
{
	struct session *s;

	if ((s = lookup(ctx)) == NULL || check_client(ctx, s) == -1)
		return;
	session_close(s, "client_close", ctx->client_id);
	http_reply_empty(ctx->req, 204);
}

void
route_session_status(struct http_ctx *ctx)
{
	struct session *s;
	json_object *o;
	char iso[CLOCK_ISO_LEN];

	if ((s = lookup(ctx)) == NULL)
		return;
	clock_iso_time(s->created_wall_ms, iso);
	o = xjson_object_new_object();
	json_object_object_add(o, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(o, "workspaceCwd",
	    xjson_object_new_string(channel_workspace(s->channel)));
	json_object_object_add(o, "createdAt", xjson_object_new_string(iso));
	json_object_object_add(o, "clientCount",
	    xjson_object_new_int64((int64_t)clients_count(&s->clients)));
	json_object_object_add(o, "attachCount", xjson_object_new_int64(s->attach_count));
	json_object_object_add(o, "subscriberCount",
	    xjson_object_new_int64((int64_t)bus_subscriber_count(s->bus)));
	json_object_object_add(o, "hasActivePrompt", xjson_object_new_boolean(s->active != NULL));
	json_object_object_add(o, "pendingPrompts",
	    xjson_object_new_int64((int64_t)prompts_pending(s)));
	json_object_object_add(o, "isWaitingForPermission",
	    xjson_object_new_boolean(permission_pending(s) > 0));
	json_object_object_add(o, "isWaitingForUserQuestion",
	    xjson_object_new_boolean(permission_questions(s) > 0));
	json_object_object_add(o, "pendingInteractionCount",
	    xjson_object_new_int64((int64_t)permission_pending(s)));
	json_object_object_add(o, "pendingInteractions", permission_interactions(s));
	prompts_status(s, o);
	json_object_object_add(o, "lastEventId",
	    xjson_object_new_int64((int64_t)bus_last_id(s->bus)));
	json_object_object_add(o, "eventEpoch", xjson_object_new_string(bus_epoch(s->bus)));
	json_object_object_add(o, "lastSeenAt",
	    xjson_object_new_int64((int64_t)s->last_seen_wall_ms));
	http_reply_json(ctx->req, 200, o);
}

/* ---- events -------------------------------------------------------------- */

/* Last-Event-ID: decimal up to 2^53-1, else ignored (-1). */
int64_t
routes_last_event_id(struct evhttp_request *req)
{
	const char *v = http_header(req,
	    "Last-Event-ID");
	int64_t n = 0;

	if (v == NULL || *v == '\0' || strlen(v) > 16)
		return -1;
	for (; *v != '\0'; v++) {
		if (*v < '0' || *v > '9')
			return -1;
		n = n * 10 + (*v - '0');
	}
	return n <= 9007199254740991LL ? n : -1;
}

void
route_session_events(struct http_ctx *ctx)
{
	const char *mq = http_query(ctx, "maxQueued"), *errstr;
	const char *snap = http_query(ctx, "snapshot");
	struct session *s;
	struct client *c;
	long long max = 256;

	if ((s = lookup(ctx)) == NULL)
		return;
	if (mq != NULL) {
		max = strtonum(mq, 16, 2048, &errstr);
		if (errstr != NULL) {
			http_error(ctx->req, "invalid_max_queued", NULL);
			return;
		}
	}
	if (ctx->client_id != NULL && !ctx->client_id_bad &&
	    (c = clients_find(&s->clients, ctx->client_id)) != NULL)
		c->last_seen_ms = clock_wall_ms();
	s->last_active_mono_ms = clock_mono_ms();
	sse_subscribe(s->bus, ctx->req, routes_last_event_id(ctx->req),
	    http_header(ctx->req,
	    "X-Qwen-Event-Epoch"), (int)max,
	    snap != NULL && strcmp(snap, "1") == 0 ? modes_snapshot(s) : NULL);
}
