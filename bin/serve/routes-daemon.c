/* SPDX-License-Identifier: ISC */
/*
 * routes-daemon.c: the routes about the daemon and its workspace rather
 * than one session: GET /health, GET /capabilities (only what really
 * works), GET /workspace/sessions (persisted transcripts for a picker).
 */
#include "config.h"

#include <sys/stat.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "clock.h"
#include "errors.h"
#include "otlp.h"
#include "serve.h"
#include "xmalloc.h"
#include "acp.h"
#include "ws.h"

#define SOURCE_ID_MAX	256	/* upstream's MAX_SESSION_SOURCE_ID_LENGTH */

/* ---- health and capabilities -------------------------------------------- */

/* o[key] = n, a count. */
static void
put_count(json_object *o, const char *key, uint64_t n)
{
	json_object_object_add(o, key, xjson_object_new_int64((int64_t)n));
}

/* The OTLP exporter's counters; caller puts. */
static json_object *
health_otlp(void)
{
	struct otlp_stats	 st;
	json_object		*o = xjson_object_new_object();

	otlp_stats(serve_otlp, &st);
	json_object_object_add(o, "endpoint",
	    xjson_object_new_string(otlp_url(serve_otlp)));
	put_count(o, "exported", st.exported);
	put_count(o, "dropped", st.dropped);
	put_count(o, "failed", st.failed);
	put_count(o, "queued", st.queued);
	return o;
}

void
route_health(struct http_ctx *ctx)
{
	json_object *o = xjson_object_new_object();
	const char *deep = http_query(ctx, "deep");
	size_t active, unsettled, overdue, quarantined;

	json_object_object_add(o, "status", xjson_object_new_string(
	    drain_active() ? "draining" : "ok"));
	if (serve_otlp != NULL)
		json_object_object_add(o, "otlp", health_otlp());
	if (deep != NULL && strcmp(deep, "1") == 0) {
		put_count(o, "sessions", sessions_count());
		put_count(o, "activePrompts", sessions_active_prompts());
		json_object_object_add(o, "channelAlive",
		    xjson_object_new_boolean(channel_running() > 0));
		put_count(o, "connections", conn_count());
		put_count(o, "maxConnections", conn_limit());
		put_count(o, "wsConnections", ws_conn_count());
		inflight_stats(&active, &unsettled, &overdue, &quarantined);
		put_count(o, "restoresActive", active);
		put_count(o, "restoresUnsettled", unsettled);
		put_count(o, "restoresOverdue", overdue);
		put_count(o, "restoresQuarantined", quarantined);
		put_count(o, "restoresFenced", inflight_fences_count());
		put_count(o, "inFlight", inflight_count());
		put_count(o, "acpConnections", acp_conn_count());
	}
	/* A proxy's health check takes a draining host out of its pool. */
	http_reply_json(ctx->req, drain_active() ? 503 : 200, o);
}

/* {id, cwd, displayName, primary, trusted, workflowsEnabled, removable}. */
static json_object *
workspace_json(size_t i)
{
	const char *cwd = conf.workspaces[i], *base = strrchr(cwd, '/');
	json_object *w = xjson_object_new_object();
	char id[32];

	names_workspace_id(i, id, sizeof(id));
	json_object_object_add(w, "id", xjson_object_new_string(id));
	json_object_object_add(w, "cwd", xjson_object_new_string(cwd));
	json_object_object_add(w, "displayName", xjson_object_new_string(
	    base != NULL && base[1] != '\0' ? base + 1 : cwd));
	json_object_object_add(w, "primary", xjson_object_new_boolean(i == 0));
	/* --workspace is the operator's word: every one is trusted. */
	json_object_object_add(w, "trusted", xjson_object_new_boolean(1));
	json_object_object_add(w, "workflowsEnabled", xjson_object_new_boolean(0));
	json_object_object_add(w, "removable", xjson_object_new_boolean(0));
	return w;
}

static json_object *
strings(const char *const *v)
{
	json_object *a = xjson_object_new_array();

	for (; *v != NULL; v++)
		json_object_array_add(a, xjson_object_new_string(*v));
	return a;
}

/* Only what this daemon really implements. */
json_object *
routes_capabilities_json(void)
{
	static const char *const features[] = { "health", "capabilities",
	    "session_create", "session_id_override", "session_scope_override",
	    "session_load", "session_resume", "unstable_session_resume",
	    "session_transcript",
	    "session_prompt", "non_blocking_prompt", "session_cancel",
	    "session_events", "slow_client_warning", "typed_event_schema",
	    "client_identity", "client_heartbeat", "session_close",
	    "session_status", "session_detach", "workspace_session_list",
	    "session_set_model", "session_approval_mode_control",
	    "session_branch", "session_side_task", "session_permission_vote",
	    "permission_vote",
	    "permission_mediation",
	    "daemon_status", "session_list", "session_info", "session_archive",
	    "session_export", "workspace_session_live_state", "session_metadata",
	    "session_organization", "session_turn_navigation",
	    "session_turn_status",
	    "workspace_persisted_transcript", "workspace_session_export",
	    "workspace_archived_session_export", "workspace_session_metadata",
	    "session_catalog_batch",
	    /* routes-pass.c: served by passing them to the session's agent */
	    "session_context", "session_context_usage", "session_stats",
	    "session_supported_commands", "session_tasks", "session_agents",
	    "session_lsp", "session_resources", "session_hooks", "session_rewind",
	    "session_recap", "session_btw", "session_language",
	    "session_agent_trace",
	    /* routes-attachments.c: a session's attachments on disk */
	    "session_attachments", "session_attachment_list",
	    /* routes-sources.c: checked here, kept by the session's agent */
	    "session_sources",
	    /* routes-artifacts.c: a session's artifacts, persisted */
	    "session_artifacts", "session_artifacts_persistence",
	    /* routes-generate.c: the agent's generation, streamed */
	    "session_generation",
	    /* routes-midturn.c: the mid-turn queue, drained by the agent */
	    "session_mid_turn_message_mutation", "session_mid_turn_message_query",
	    /* routes-standalone.c: sessions in their own private directory */
	    "standalone_sessions_v1",
	    NULL };
	static const char *const versions[] = { "v1", NULL };
	static const char *const languages[] = { "en", NULL };
	json_object *o = xjson_object_new_object(), *pv = xjson_object_new_object();
	json_object *f = strings(features), *lim = xjson_object_new_object();
	json_object *ws = xjson_object_new_array(), *ts, *pol;

	if (conf.require_auth)
		json_object_array_add(f, xjson_object_new_string("require_auth"));
	if (conf.rate_limit)
		json_object_array_add(f, xjson_object_new_string("rate_limit"));
	if (conf.session_shell)
		json_object_array_add(f, xjson_object_new_string("session_shell_command"));
	if (conf.n_allow_origin > 0)
		json_object_array_add(f, xjson_object_new_string("allow_origin"));
	if (conf.prompt_deadline_ms > 0)
		json_object_array_add(f, xjson_object_new_string("prompt_absolute_deadline"));
	if (conf.writer_idle_timeout_ms > 0)
		json_object_array_add(f, xjson_object_new_string("writer_idle_timeout"));
	if (conf.n_workspaces > 1) {
		json_object_array_add(f, xjson_object_new_string("multi_workspace_sessions"));
		/* /workspaces/:w/acp, as upstream advertises it: with several. */
		json_object_array_add(f, xjson_object_new_string("workspace_qualified_acp"));
	}
	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(pv, "current", xjson_object_new_string("v1"));
	json_object_object_add(pv, "supported", strings(versions));
	json_object_object_add(o, "protocolVersions", pv);
	json_object_object_add(o, "qwenServeVersion", xjson_object_new_string(PACKAGE_VERSION));
	json_object_object_add(o, "mode", xjson_object_new_string("http-bridge"));
	json_object_object_add(o, "features", f);
	json_object_object_add(o, "modelServices", xjson_object_new_array());
	json_object_object_add(o, "workspaceCwd", xjson_object_new_string(conf.workspace));
	json_object_object_add(o, "transports", ts = xjson_object_new_array());
	json_object_array_add(ts, xjson_object_new_string("rest"));
	if (acp_http_enabled())
		json_object_array_add(ts, xjson_object_new_string("acp-http"));
	json_object_array_add(ts, xjson_object_new_string("acp-ws"));	/* ws.c */
	json_object_object_add(lim, "maxPendingPromptsPerSession", conf.max_pending_prompts > 0 ?
	    xjson_object_new_int(conf.max_pending_prompts) : NULL);
	json_object_object_add(lim, "sessionRestoreTimeoutMs",
	    xjson_object_new_int64(conf.restore_timeout_ms));
	json_object_object_add(lim, "maxSessionsPerWorkspace", conf.max_sessions > 0 ?
	    xjson_object_new_int(conf.max_sessions) : NULL);
	json_object_object_add(lim, "maxTotalSessions", conf.max_total_sessions > 0 ?
	    xjson_object_new_int(conf.max_total_sessions) : NULL);
	put_count(lim, "maxEventRingSize", conf.event_ring_size);
	put_count(lim, "compactedReplayMaxBytes", conf.compacted_replay_max_bytes);
	json_object_object_add(o, "limits", lim);
	for (size_t i = 0; i < conf.n_workspaces; i++)
		json_object_array_add(ws, workspace_json(i));
	json_object_object_add(o, "workspaces", ws);
	/* The agent's permission requests wait for the first client's answer. */
	pol = xjson_object_new_object();
	json_object_object_add(pol, "permission", xjson_object_new_string("first-responder"));
	json_object_object_add(o, "policy", pol);
	/* The console and every message are English only. */
	json_object_object_add(o, "supportedLanguages", strings(languages));
	json_object_object_add(o, "sessionLiveStatePollIntervalMs",
	    xjson_object_new_int(SERVE_LIVE_STATE_POLL_MS));
	return o;
}

/* {code, severity, message} when restores are fenced or quarantined. */
static json_object *
status_issues(const char **level)
{
	json_object *a = xjson_object_new_array(), *i;
	size_t active, unsettled, overdue, quarantined;

	*level = "ok";
	inflight_stats(&active, &unsettled, &overdue, &quarantined);
	if (overdue + quarantined == 0)
		return a;
	*level = "warning";
	i = xjson_object_new_object();
	json_object_object_add(i, "code", xjson_object_new_string(quarantined > 0 ?
	    "restore_cleanup_failed" : "restore_settlement_overdue"));
	json_object_object_add(i, "severity", xjson_object_new_string("warning"));
	json_object_object_add(i, "message", xjson_object_new_string(
	    "a timed-out restore has not settled: fresh sessions are refused "
	    "on its child until it does"));
	json_object_object_add(i, "section", xjson_object_new_string("runtime.restores"));
	json_object_array_add(a, i);
	return a;
}

static void
add_ms_or_null(json_object *o, const char *key, int64_t ms)
{
	json_object_object_add(o, key,
	    ms > 0 ? xjson_object_new_int64(ms) : NULL);
}

static json_object *
status_limits(void)
{
	json_object *l = xjson_object_new_object();

	json_object_object_add(l, "maxSessions", conf.max_sessions > 0 ?
	    xjson_object_new_int(conf.max_sessions) : NULL);
	json_object_object_add(l, "maxTotalSessions", conf.max_total_sessions > 0 ?
	    xjson_object_new_int(conf.max_total_sessions) : NULL);
	json_object_object_add(l, "maxPendingPromptsPerSession", conf.max_pending_prompts > 0 ?
	    xjson_object_new_int(conf.max_pending_prompts) : NULL);
	json_object_object_add(l, "listenerMaxConnections",
	    xjson_object_new_int(conf.max_connections));
	put_count(l, "eventRingSize", conf.event_ring_size);
	add_ms_or_null(l, "promptDeadlineMs", conf.prompt_deadline_ms);
	add_ms_or_null(l, "writerIdleTimeoutMs", conf.writer_idle_timeout_ms);
	json_object_object_add(l, "channelIdleTimeoutMs",
	    xjson_object_new_int64(conf.channel_idle_timeout_ms));
	json_object_object_add(l, "sessionIdleTimeoutMs",
	    xjson_object_new_int64(conf.session_idle_timeout_ms));
	json_object_object_add(l, "sessionRestoreTimeoutMs",
	    xjson_object_new_int64(conf.restore_timeout_ms));
	put_count(l, "compactedReplayMaxBytes", conf.compacted_replay_max_bytes);
	return l;
}

static json_object *
status_runtime(void)
{
	json_object *r = xjson_object_new_object(), *o, *acp;

	o = xjson_object_new_object();
	put_count(o, "active", sessions_count());
	put_count(o, "activePrompts", sessions_active_prompts());
	json_object_object_add(r, "sessions", o);
	o = xjson_object_new_object();
	json_object_object_add(o, "pending", xjson_object_new_int(0));
	json_object_object_add(o, "policy", xjson_object_new_string("first-responder"));
	json_object_object_add(r, "permissions", o);
	o = xjson_object_new_object();
	json_object_object_add(o, "live", xjson_object_new_boolean(channel_running() > 0));
	json_object_object_add(r, "channel", o);
	o = xjson_object_new_object();
	put_count(o, "restSseActive", sessions_subscribers());
	acp = xjson_object_new_object();
	json_object_object_add(acp, "enabled", xjson_object_new_boolean(acp_http_enabled()));
	put_count(acp, "connections", acp_conn_count());
	put_count(acp, "wsConnections", ws_conn_count());
	json_object_object_add(o, "acp", acp);
	json_object_object_add(r, "transport", o);
	o = xjson_object_new_object();
	json_object_object_add(o, "enabled", xjson_object_new_boolean(conf.rate_limit));
	json_object_object_add(o, "rejectedSinceStart", ratelimit_rejected_json());
	json_object_object_add(r, "rateLimit", o);
	return r;
}

/*
 * GET /daemon/status[?detail=summary|full]: upstream's triage report, with
 * the parts this daemon has (both details are the same report here).
 */
void
route_daemon_status(struct http_ctx *ctx)
{
	const char *detail = http_query(ctx, "detail"), *level;
	json_object *o, *d, *sec, *caps = routes_capabilities_json(), *v;
	char when[CLOCK_ISO_LEN];

	if (detail != NULL && strcmp(detail, "summary") != 0 && strcmp(detail, "full") != 0) {
		json_object_put(caps);
		http_error(ctx->req, "invalid_detail", NULL);
		return;
	}
	o = xjson_object_new_object();
	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(o, "detail", xjson_object_new_string(detail ? detail : "summary"));
	clock_iso_now(when);
	json_object_object_add(o, "generatedAt", xjson_object_new_string(when));
	d = status_issues(&level);
	json_object_object_add(o, "status", xjson_object_new_string(level));
	json_object_object_add(o, "issues", d);
	d = xjson_object_new_object();
	json_object_object_add(d, "pid", xjson_object_new_int((int)getpid()));
	json_object_object_add(d, "uptimeMs",
	    xjson_object_new_int64((int64_t)(clock_mono_ms() - conf.started_mono_ms)));
	json_object_object_add(d, "mode", xjson_object_new_string("http-bridge"));
	json_object_object_add(d, "workspaceCwd", xjson_object_new_string(conf.workspace));
	json_object_object_add(d, "qwenServeVersion", xjson_object_new_string(PACKAGE_VERSION));
	clock_iso_time(conf.started_wall_ms, when);
	json_object_object_add(d, "startedAt", xjson_object_new_string(when));
	json_object_object_add(o, "daemon", d);
	sec = xjson_object_new_object();
	json_object_object_add(sec, "tokenConfigured", xjson_object_new_boolean(conf.token != NULL));
	json_object_object_add(sec, "requireAuth", xjson_object_new_boolean(conf.require_auth));
	json_object_object_add(sec, "loopbackBind", xjson_object_new_boolean(conf.tcp_loopback));
	json_object_object_add(sec, "allowOriginConfigured",
	    xjson_object_new_boolean(conf.n_allow_origin > 0));
	json_object_object_add(sec, "allowOriginMode", xjson_object_new_string(
	    conf.n_allow_origin > 0 ? "list" : "none"));
	json_object_object_add(sec, "sessionShellCommandEnabled", xjson_object_new_boolean(0));
	json_object_object_add(o, "security", sec);
	json_object_object_add(o, "limits", status_limits());
	d = xjson_object_new_object();
	json_object_object_get_ex(caps, "protocolVersions", &v);
	json_object_object_add(d, "protocolVersions", json_object_get(v));
	json_object_object_get_ex(caps, "features", &v);
	json_object_object_add(d, "features", json_object_get(v));
	json_object_object_add(o, "capabilities", d);
	json_object_object_get_ex(caps, "workspaces", &v);
	json_object_object_add(o, "workspaces", json_object_get(v));
	json_object_object_add(o, "runtime", status_runtime());
	json_object_put(caps);
	http_reply_json(ctx->req, 200, o);
}

void
route_capabilities(struct http_ctx *ctx)
{
	http_reply_json(ctx->req, 200, routes_capabilities_json());
}

/* ---- persisted sessions of the workspace (listing.c) ------------------- */

void
route_workspace_sessions(struct http_ctx *ctx)
{
	const char *cwd = http_query(ctx, "cwd");
	const char *lim = http_query(ctx, "limit"), *errstr = NULL;
	long long max = 100;

	if (cwd != NULL)
		json_object_object_add(ctx->body, "cwd", xjson_object_new_string(cwd));
	if (routes_check_cwd(ctx) == -1)
		return;
	if (lim != NULL && ((max = strtonum(lim, 1, 10000, &errstr)), errstr != NULL)) {
		http_send_qerr(ctx->req, qerr_new("bad_request",
		    "limit must be an integer from 1 to 10000"));
		return;
	}
	listing_start(ctx->req, ctx->workspace, 0, (size_t)max, 0, 0, NULL, NULL);
}

/*
 * ?view and ?group as upstream takes them: view must be "organized", group
 * needs it and names all, pinned, ungrouped or one of the workspace's
 * groups.  *group is NULL for the plain view.  -1 after answering.
 */
static int
page_view(struct http_ctx *ctx, const char **group)
{
	const char *view = http_query(ctx, "view");
	const char *g = http_query(ctx, "group");
	json_object *doc;
	int known;

	*group = NULL;
	if (view != NULL && strcmp(view, "organized") != 0) {
		http_error(ctx->req, "invalid_session_view", NULL);
		return -1;
	}
	if (g != NULL && view == NULL) {
		http_error(ctx->req, "invalid_session_group_filter", NULL);
		return -1;
	}
	if (view == NULL)
		return 0;
	*group = g != NULL ? g : "all";
	if (strcmp(*group, "all") == 0 || strcmp(*group, "pinned") == 0 ||
	    strcmp(*group, "ungrouped") == 0)
		return 0;
	doc = routes_org_load(ctx->workspace);
	known = routes_org_has_group(doc, *group);
	json_object_put(doc);
	if (!known) {
		http_error(ctx->req, "group_not_found", NULL);
		return -1;
	}
	return 0;
}

/* 400 invalid_session_source with upstream's message. */
static int
bad_source(struct http_ctx *ctx, const char *msg)
{
	http_send_qerr(ctx->req, qerr_new("invalid_session_source", "%s", msg));
	return -1;
}

/*
 * parentSessionId (not with view=organized), sourceType and sourceId
 * checked as upstream's parseSessionSource: into *f, or -1 after the 400.
 */
static int
page_filter(struct http_ctx *ctx, const char *group, struct listing_filter *f)
{
	const char *t = http_query(ctx, "sourceType");
	const char *id = http_query(ctx, "sourceId");
	size_t n;

	f->parent = http_query(ctx, "parentSessionId");
	f->source_type = t;
	f->source_id = id;
	if (f->parent != NULL && f->parent[0] == '\0') {
		http_error(ctx->req, "invalid_parent_session_id", NULL);
		return -1;
	}
	if (f->parent != NULL && group != NULL) {
		http_error(ctx->req, "invalid_parent_session_filter", NULL);
		return -1;
	}
	if (t == NULL && id == NULL)
		return 0;
	if (t == NULL || t[0] < 'a' || t[0] > 'z' || (n = strlen(t)) > 64 ||
	    strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n)
		return bad_source(ctx, "`sourceType` must match "
		    "[a-z][a-z0-9_-]{0,63} when provided");
	if (id == NULL)
		return 0;
	for (const char *c = id; *c != '\0'; c++)
		if ((unsigned char)*c <= 31 || *c == 127)
			id = "";
	if (id[0] == '\0' || strlen(id) > SOURCE_ID_MAX)
		return bad_source(ctx, "`sourceId` must be a non-empty string of at "
		    "most 256 characters without control characters");
	return 0;
}

/*
 * GET /workspace/:ws/sessions?size=&cursor=: upstream's paged session
 * list, newest first; the cursor is the offset of the next page;
 * archiveState=archived lists chats/archive/; view=organized (and group)
 * as upstream's organized list; parentSessionId, sourceType and sourceId
 * keep the sessions of that parent or source (listing.c).
 */
void
route_workspace_sessions_page(struct http_ctx *ctx)
{
	struct listing_filter f;
	const char *size = http_query(ctx, "size");
	const char *cur = http_query(ctx, "cursor");
	const char *arch = http_query(ctx, "archiveState");
	const char *errstr = NULL, *group;
	long long max = 50, skip = 0;

	if (routes_check_cwd(ctx) == -1)
		return;
	if (size != NULL && ((max = strtonum(size, 1, 1000, &errstr)), errstr != NULL)) {
		http_send_qerr(ctx->req, qerr_new("bad_request",
		    "size must be an integer from 1 to 1000"));
		return;
	}
	if (cur != NULL && ((skip = strtonum(cur, 0, INT_MAX, &errstr)), errstr != NULL)) {
		http_send_qerr(ctx->req, qerr_new("bad_request", "Invalid cursor"));
		return;
	}
	if (page_view(ctx, &group) == -1 || page_filter(ctx, group, &f) == -1)
		return;
	if (arch != NULL && strcmp(arch, "active") != 0 &&
	    strcmp(arch, "archived") != 0) {
		http_error(ctx->req, "invalid_archive_state", NULL);
		return;
	}
	/* archived: chats/archive/, where POST /sessions/archive moves them. */
	listing_start(ctx->req, ctx->workspace, (size_t)skip, (size_t)max, 1,
	    arch != NULL && strcmp(arch, "archived") == 0, group, &f);
}
