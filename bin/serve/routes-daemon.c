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

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "errors.h"
#include "otlp.h"
#include "serve.h"
#include "acp.h"
#include "ws.h"
#include "xmalloc.h"

/* ---- health and capabilities -------------------------------------------- */

/* The OTLP exporter's counters; caller puts. */
static json_object *
health_otlp(void)
{
	struct otlp_stats	 st;
	json_object		*o = xjson_object_new_object();

	otlp_stats(serve_otlp, &st);
	json_object_object_add(o, "endpoint",
	    xjson_object_new_string(otlp_url(serve_otlp)));
	json_object_object_add(o, "exported",
	    xjson_object_new_int64((int64_t)st.exported));
	json_object_object_add(o, "dropped",
	    xjson_object_new_int64((int64_t)st.dropped));
	json_object_object_add(o, "failed",
	    xjson_object_new_int64((int64_t)st.failed));
	json_object_object_add(o, "queued",
	    xjson_object_new_int64((int64_t)st.queued));
	return o;
}

void
route_health(struct http_ctx *ctx)
{
	json_object *o = xjson_object_new_object();
	const char *deep = evhttp_find_header(ctx->query, "deep");
	size_t active, unsettled, overdue, quarantined;

	json_object_object_add(o, "status", xjson_object_new_string("ok"));
	if (serve_otlp != NULL)
		json_object_object_add(o, "otlp", health_otlp());
	if (deep != NULL && strcmp(deep, "1") == 0) {
		json_object_object_add(o, "sessions",
		    xjson_object_new_int64((int64_t)sessions_count()));
		json_object_object_add(o, "activePrompts",
		    xjson_object_new_int64((int64_t)sessions_active_prompts()));
		json_object_object_add(o, "channelAlive",
		    xjson_object_new_boolean(channels_running() > 0));
		json_object_object_add(o, "connections",
		    xjson_object_new_int64((int64_t)http_conn_count()));
		json_object_object_add(o, "maxConnections",
		    xjson_object_new_int64((int64_t)guard_limit()));
		json_object_object_add(o, "wsConnections",
		    xjson_object_new_int64((int64_t)ws_conn_count()));
		inflight_stats(&active, &unsettled, &overdue, &quarantined);
		json_object_object_add(o, "restoresActive",
		    xjson_object_new_int64((int64_t)active));
		json_object_object_add(o, "restoresUnsettled",
		    xjson_object_new_int64((int64_t)unsettled));
		json_object_object_add(o, "restoresOverdue",
		    xjson_object_new_int64((int64_t)overdue));
		json_object_object_add(o, "restoresQuarantined",
		    xjson_object_new_int64((int64_t)quarantined));
		json_object_object_add(o, "restoresFenced",
		    xjson_object_new_int64((int64_t)inflight_fences_count()));
		json_object_object_add(o, "inFlight",
		    xjson_object_new_int64((int64_t)inflight_count()));
		json_object_object_add(o, "acpConnections",
		    xjson_object_new_int64((int64_t)acp_conn_count()));
	}
	http_reply_json(ctx->req, 200, o);
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
	    "session_prompt", "non_blocking_prompt", "session_cancel",
	    "session_events", "slow_client_warning", "typed_event_schema",
	    "client_identity", "client_heartbeat", "session_close",
	    "session_status", "session_detach", "workspace_session_list", NULL };
	static const char *const versions[] = { "v1", NULL };
	json_object *o = xjson_object_new_object(), *pv = xjson_object_new_object();
	json_object *f = strings(features), *lim = xjson_object_new_object();
	json_object *ws = xjson_object_new_array(), *w = xjson_object_new_object(), *ts;

	if (conf.require_auth)
		json_object_array_add(f, xjson_object_new_string("require_auth"));
	if (conf.n_allow_origin > 0)
		json_object_array_add(f, xjson_object_new_string("allow_origin"));
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
	json_object_object_add(lim, "maxEventRingSize",
	    xjson_object_new_int64((int64_t)conf.event_ring_size));
	json_object_object_add(lim, "compactedReplayMaxBytes",
	    xjson_object_new_int64((int64_t)conf.compacted_replay_max_bytes));
	json_object_object_add(o, "limits", lim);
	json_object_object_add(w, "id", xjson_object_new_string("primary"));
	json_object_object_add(w, "cwd", xjson_object_new_string(conf.workspace));
	json_object_object_add(w, "primary", xjson_object_new_boolean(1));
	json_object_object_add(w, "trusted", xjson_object_new_boolean(1));
	json_object_array_add(ws, w);
	json_object_object_add(o, "workspaces", ws);
	return o;
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
	const char *cwd = evhttp_find_header(ctx->query, "cwd");
	const char *lim = evhttp_find_header(ctx->query, "limit"), *errstr = NULL;
	long long max = 100;

	if (cwd != NULL) {
		json_object_object_add(ctx->body, "cwd", xjson_object_new_string(cwd));
		if (routes_check_cwd(ctx) == -1)
			return;
	}
	if (lim != NULL && ((max = strtonum(lim, 1, 10000, &errstr)), errstr != NULL)) {
		http_send_qerr(ctx->req, qerr_new("bad_request",
		    "limit must be an integer from 1 to 10000"));
		return;
	}
	listing_start(ctx->req, (size_t)max);
}
