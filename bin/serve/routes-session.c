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

#include "clock.h"
#include "errors.h"
#include "log.h"
#include "serve.h"

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

/* body.cwd: absent, or an absolute path naming our workspace. */
int
routes_check_cwd(struct http_ctx *ctx)
{
	json_object *v;
	const char *cwd;
	char *real = NULL;
	struct qerr *e;
	int ok;

	if (!json_object_object_get_ex(ctx->body, "cwd", &v) || v == NULL)
		return 0;
	cwd = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	if (cwd[0] == '/')
		real = realpath(cwd, NULL);
	ok = strcmp(real != NULL ? real : cwd, conf.workspace) == 0;
	free(real);
	if (ok)
		return 0;
	if ((e = qerr_new("workspace_mismatch", NULL)) != NULL) {
		qerr_set_str(e, "boundWorkspace", conf.workspace);
		qerr_set_str(e, "requestedWorkspace", cwd);
		qerr_set_int(e, "workspaceCount", 1);
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

/* ---- health and capabilities -------------------------------------------- */

void
route_health(struct http_ctx *ctx)
{
	json_object *o = json_object_new_object();
	const char *deep = evhttp_find_header(ctx->query, "deep");

	json_object_object_add(o, "status", json_object_new_string("ok"));
	if (deep != NULL && strcmp(deep, "1") == 0) {
		json_object_object_add(o, "sessions",
		    json_object_new_int64((int64_t)sessions_count()));
		json_object_object_add(o, "activePrompts",
		    json_object_new_int64((int64_t)sessions_active_prompts()));
		json_object_object_add(o, "channelAlive",
		    json_object_new_boolean(channels_running() > 0));
		json_object_object_add(o, "connections",
		    json_object_new_int64((int64_t)http_conn_count()));
	}
	http_reply_json(ctx->req, 200, o);
}

static json_object *
strings(const char *const *v)
{
	json_object *a = json_object_new_array();

	for (; *v != NULL; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

/* Only what this daemon really implements. */
json_object *
routes_capabilities_json(void)
{
	static const char *const features[] = { "health", "capabilities",
	    "session_create", "session_id_override", "session_scope_override",
	    "session_load", "session_resume", "unstable_session_resume",
	    "session_prompt", "non_blocking_prompt", "session_cancel",
	    "session_events", "slow_client_warning", "typed_event_schema",
	    "client_identity", "client_heartbeat", "session_close",
	    "session_status", "session_detach", "workspace_session_list", NULL };
	static const char *const versions[] = { "v1", NULL };
	static const char *const transports[] = { "rest", NULL };
	json_object *o = json_object_new_object(), *pv = json_object_new_object();
	json_object *f = strings(features), *lim = json_object_new_object();
	json_object *ws = json_object_new_array(), *w = json_object_new_object();

	if (conf.require_auth)
		json_object_array_add(f, json_object_new_string("require_auth"));
	if (conf.n_allow_origin > 0)
		json_object_array_add(f, json_object_new_string("allow_origin"));
	json_object_object_add(o, "v", json_object_new_int(1));
	json_object_object_add(pv, "current", json_object_new_string("v1"));
	json_object_object_add(pv, "supported", strings(versions));
	json_object_object_add(o, "protocolVersions", pv);
	json_object_object_add(o, "qwenServeVersion", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(o, "mode", json_object_new_string("http-bridge"));
	json_object_object_add(o, "features", f);
	json_object_object_add(o, "modelServices", json_object_new_array());
	json_object_object_add(o, "workspaceCwd", json_object_new_string(conf.workspace));
	json_object_object_add(o, "transports", strings(transports));
	json_object_object_add(lim, "maxPendingPromptsPerSession", conf.max_pending_prompts > 0 ?
	    json_object_new_int(conf.max_pending_prompts) : NULL);
	json_object_object_add(lim, "sessionRestoreTimeoutMs",
	    json_object_new_int64(conf.restore_timeout_ms));
	json_object_object_add(lim, "maxSessionsPerWorkspace", conf.max_sessions > 0 ?
	    json_object_new_int(conf.max_sessions) : NULL);
	json_object_object_add(lim, "maxTotalSessions", conf.max_total_sessions > 0 ?
	    json_object_new_int(conf.max_total_sessions) : NULL);
	json_object_object_add(lim, "maxEventRingSize",
	    json_object_new_int64((int64_t)conf.event_ring_size));
	json_object_object_add(lim, "compactedReplayMaxBytes",
	    json_object_new_int64((int64_t)conf.compacted_replay_max_bytes));
	json_object_object_add(o, "limits", lim);
	json_object_object_add(w, "id", json_object_new_string("primary"));
	json_object_object_add(w, "cwd", json_object_new_string(conf.workspace));
	json_object_object_add(w, "primary", json_object_new_boolean(1));
	json_object_object_add(w, "trusted", json_object_new_boolean(1));
	json_object_array_add(ws, w);
	json_object_object_add(o, "workspaces", ws);
	return o;
}

void
route_capabilities(struct http_ctx *ctx)
{
	http_reply_json(ctx->req, 200, routes_capabilities_json());
}

/* ---- create, load, resume ----------------------------------------------- */

static void
limit_error(struct http_ctx *ctx)
{
	struct qerr *e = qerr_new("session_limit_exceeded", NULL);
	int total = conf.max_total_sessions > 0 &&
	    (conf.max_sessions == 0 || conf.max_total_sessions < conf.max_sessions);

	if (e != NULL) {
		qerr_set_int(e, "limit", total ? conf.max_total_sessions : conf.max_sessions);
		qerr_set_str(e, "scope", total ? "total" : "workspace");
	}
	http_send_qerr(ctx->req, e);
}

static void
id_conflict(struct http_ctx *ctx, const char *id, const char *conflict)
{
	struct qerr *e = qerr_new("session_id_conflict", NULL);

	if (e != NULL) {
		qerr_set_str(e, "sessionId", id);
		qerr_set_str(e, "conflict", conflict);
		if (strcmp(conflict, "live") == 0)
			qerr_set_str(e, "liveWorkspaceCwd", conf.workspace);
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
	if (!serve_is_uuid(sid)) {
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

void
route_session_create(struct http_ctx *ctx)
{
	char id[SERVE_SESSION_ID_MAX + 1];
	const char *scope = "single", *conflict = NULL;
	struct inflight *op;
	struct session *s;
	json_object *v;

	if (check_client_shape(ctx, NULL) == -1 || routes_check_cwd(ctx) == -1 ||
	    body_session_id(ctx, id, sizeof(id)) == -1)
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
		if (sessions_find(id) != NULL)
			conflict = "live";
		else if (inflight_find(id) != NULL)
			conflict = "pending";
		else if (restore_transcript_exists(id))
			conflict = "persisted";
		if (conflict != NULL) {
			id_conflict(ctx, id, conflict);
			return;
		}
	}
	if (strcmp(scope, "single") == 0) {
		if ((s = sessions_default()) != NULL) {
			s->attach_count++;
			restore_reply(ctx->req, s, OP_SPAWN, 1,
			    clients_register(&s->clients, ctx->client_id));
			return;
		}
		if ((op = inflight_default_spawn()) != NULL) {
			inflight_join(op, ctx->req, ctx->client_id);
			return;
		}
	}
	if (sessions_capacity_left() == 0) {
		limit_error(ctx);
		return;
	}
	spawn_start(id[0] != '\0' ? id : NULL, strcmp(scope, "single") == 0,
	    ctx->req, ctx->client_id);
}

/* Load and resume share everything up to the action. */
static void
restore_route(struct http_ctx *ctx, enum op_action action)
{
	struct inflight *op;
	struct session *s;
	json_object *v;
	struct qerr *e;
	int64_t n;

	if (check_client_shape(ctx, ctx->path_id) == -1 || routes_check_cwd(ctx) == -1)
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
		s->attach_count++;
		restore_reply(ctx->req, s, action, 1,
		    clients_register(&s->clients, ctx->client_id));
		return;
	}
	if ((op = inflight_find(ctx->path_id)) != NULL) {
		if (op->action == action)
			inflight_join(op, ctx->req, ctx->client_id);
		else
			restore_in_progress(ctx->req, op, action);
		return;
	}
	if (sessions_capacity_left() == 0) {
		limit_error(ctx);
		return;
	}
	restore_begin(action, ctx->path_id, ctx->body, ctx->req, ctx->client_id);
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
	const char *pid, *err = NULL;
	struct qerr *e;
	json_object *o;

	if ((s = lookup(ctx)) == NULL || check_client(ctx, s) == -1 ||
	    check_prompt_options(ctx) == -1)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "lastEventId",
	    json_object_new_int64((int64_t)bus_last_id(s->bus)));
	json_object_object_add(o, "eventEpoch", json_object_new_string(bus_epoch(s->bus)));
	if ((pid = session_prompt_admit(s, ctx->body, ctx->client_id, &err)) == NULL) {
		json_object_put(o);
		if (strcmp(err, "prompt_queue_full") == 0) {
			if ((e = qerr_new("prompt_queue_full", NULL)) != NULL) {
				qerr_set_str(e, "sessionId", s->id);
				qerr_set_int(e, "limit", conf.max_pending_prompts);
				qerr_set_int(e, "pendingCount",
				    (int64_t)session_pending_prompts(s));
			}
		} else if (strcmp(err, "bad_prompt") == 0)
			e = qerr_new("bad_request",
			    "prompt must be a non-empty array of content blocks");
		else
			e = qerr_new("internal", NULL);
		http_send_qerr(ctx->req, e);
		return;
	}
	json_object_object_add(o, "promptId", json_object_new_string(pid));
	http_reply_json(ctx->req, 202, o);
}

void
route_session_cancel(struct http_ctx *ctx)
{
	struct session *s;

	if ((s = lookup(ctx)) == NULL || check_client(ctx, s) == -1)
		return;
	session_cancel(s, ctx->client_id);
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
	o = json_object_new_object();
	json_object_object_add(o, "sessionId", json_object_new_string(s->id));
	if (c != NULL)
		json_object_object_add(o, "clientId", json_object_new_string(c->id));
	json_object_object_add(o, "lastSeenAt",
	    json_object_new_int64((int64_t)s->last_seen_wall_ms));
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
	char iso[40];

	if ((s = lookup(ctx)) == NULL)
		return;
	serve_iso_time(s->created_wall_ms, iso, sizeof(iso));
	o = json_object_new_object();
	json_object_object_add(o, "sessionId", json_object_new_string(s->id));
	json_object_object_add(o, "workspaceCwd", json_object_new_string(conf.workspace));
	json_object_object_add(o, "createdAt", json_object_new_string(iso));
	json_object_object_add(o, "clientCount",
	    json_object_new_int64((int64_t)clients_count(&s->clients)));
	json_object_object_add(o, "attachCount", json_object_new_int64(s->attach_count));
	json_object_object_add(o, "subscriberCount",
	    json_object_new_int64((int64_t)bus_subscriber_count(s->bus)));
	json_object_object_add(o, "hasActivePrompt", json_object_new_boolean(s->active != NULL));
	json_object_object_add(o, "pendingPrompts",
	    json_object_new_int64((int64_t)session_pending_prompts(s)));
	json_object_object_add(o, "isWaitingForPermission", json_object_new_boolean(0));
	json_object_object_add(o, "pendingInteractionCount", json_object_new_int(0));
	json_object_object_add(o, "lastEventId",
	    json_object_new_int64((int64_t)bus_last_id(s->bus)));
	json_object_object_add(o, "eventEpoch", json_object_new_string(bus_epoch(s->bus)));
	json_object_object_add(o, "lastSeenAt",
	    json_object_new_int64((int64_t)s->last_seen_wall_ms));
	http_reply_json(ctx->req, 200, o);
}

/* ---- events -------------------------------------------------------------- */

/* Last-Event-ID: decimal up to 2^53-1, else ignored (-1). */
static int64_t
last_event_id(struct evhttp_request *req)
{
	const char *v = evhttp_find_header(evhttp_request_get_input_headers(req),
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
	const char *mq = evhttp_find_header(ctx->query, "maxQueued"), *errstr;
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
	bus_subscribe(s->bus, ctx->req, last_event_id(ctx->req),
	    evhttp_find_header(evhttp_request_get_input_headers(ctx->req),
	    "X-Qwen-Event-Epoch"), (int)max);
}

/* ---- persisted sessions of the workspace -------------------------------- */

/* The text of the first user record in the first 64 KiB, or NULL. */
static json_object *
first_prompt(const char *path)
{
	char buf[65536], *line, *save = NULL;
	json_object *rec, *v, *parts, *text = NULL;
	FILE *f;
	size_t n;

	if ((f = fopen(path, "re")) == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line != NULL && text == NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((rec = json_tokener_parse(line)) == NULL)
			continue;
		if (json_object_object_get_ex(rec, "type", &v) &&
		    strcmp(json_object_get_string(v), "user") == 0 &&
		    json_object_object_get_ex(rec, "message", &v) &&
		    json_object_object_get_ex(v, "parts", &parts) &&
		    json_object_is_type(parts, json_type_array))
			for (size_t i = 0; i < json_object_array_length(parts) && !text; i++)
				if (json_object_object_get_ex(json_object_array_get_idx(parts, i),
				    "text", &v) && json_object_is_type(v, json_type_string)) {
					const char *t = json_object_get_string(v);
					size_t len = strlen(t);

					/* At most 200 bytes, cut on a character boundary. */
					if (len > 200)
						for (len = 200; len > 0 && ((unsigned char)t[len] & 0xc0) == 0x80; len--)
							;
					text = json_object_new_string_len(t, (int)len);
				}
		json_object_put(rec);
	}
	return text;
}

static int
by_mtime_desc(const void *a, const void *b)
{
	int64_t ma = json_object_get_int64(json_object_object_get(
	    *(json_object *const *)a, "mtime"));
	int64_t mb = json_object_get_int64(json_object_object_get(
	    *(json_object *const *)b, "mtime"));

	return ma < mb ? 1 : ma > mb ? -1 : 0;
}

static json_object *
list_entry(const char *dir, const char *name)
{
	char path[PATH_MAX], id[SERVE_SESSION_ID_MAX + 1];
	size_t nlen = strlen(name);
	struct stat st;
	json_object *o;

	if (name[0] == '.' || nlen <= 6 || nlen - 6 > SERVE_SESSION_ID_MAX ||
	    strcmp(name + nlen - 6, ".jsonl") != 0 ||
	    (nlen > 13 && strcmp(name + nlen - 13, ".ledger.jsonl") == 0))
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (stat(path, &st) == -1 || !S_ISREG(st.st_mode))
		return NULL;
	memcpy(id, name, nlen - 6);
	id[nlen - 6] = '\0';
	o = json_object_new_object();
	json_object_object_add(o, "sessionId", json_object_new_string(id));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)st.st_size));
	json_object_object_add(o, "mtime", json_object_new_int64(
	    (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000));
	json_object_object_add(o, "firstPrompt", first_prompt(path));
	json_object_object_add(o, "live", json_object_new_boolean(sessions_find(id) != NULL));
	return o;
}

void
route_workspace_sessions(struct http_ctx *ctx)
{
	const char *cwd = evhttp_find_header(ctx->query, "cwd");
	const char *lim = evhttp_find_header(ctx->query, "limit"), *errstr = NULL;
	json_object *o, *list = json_object_new_array(), *e;
	char *dir = serve_transcript_dir();
	long long max = 100;
	struct dirent *de;
	DIR *d;

	if (cwd != NULL) {
		json_object_object_add(ctx->body, "cwd", json_object_new_string(cwd));
		if (routes_check_cwd(ctx) == -1)
			goto out;
	}
	if (lim != NULL && ((max = strtonum(lim, 1, 10000, &errstr)), errstr != NULL)) {
		http_send_qerr(ctx->req, qerr_new("bad_request",
		    "limit must be an integer from 1 to 10000"));
		goto out;
	}
	if (dir != NULL && (d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if ((e = list_entry(dir, de->d_name)) != NULL)
				json_object_array_add(list, e);
		closedir(d);
	}
	json_object_array_sort(list, by_mtime_desc);
	while (json_object_array_length(list) > (size_t)max)
		json_object_array_del_idx(list, json_object_array_length(list) - 1, 1);
	o = json_object_new_object();
	json_object_object_add(o, "workspaceCwd", json_object_new_string(conf.workspace));
	json_object_object_add(o, "sessions", list);
	list = NULL;
	http_reply_json(ctx->req, 200, o);
out:
	json_object_put(list);
	free(dir);
}
