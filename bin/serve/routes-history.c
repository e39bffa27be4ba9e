/* SPDX-License-Identifier: ISC */
/*
 * routes-history.c: a session's history without loading it.
 * GET /session/:id/transcript pages it (live or not); the query is
 * checked here with upstream's rules and errors, and the page comes from
 * the workspace's child (qwen/status/session/transcript, upstream's name,
 * so that a real agent as the child answers it too), which answers from
 * its index cache of the transcript, so a page costs what its records
 * cost.  (POST /session/:id/branch: routes-branch.c.)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "errors.h"
#include "json.h"
#include "log.h"
#include "restore-fsm.h"
#include "rpc-frame.h"
#include "serve.h"
#include "xmalloc.h"

#define TRANSCRIPT_MAX_LIMIT		500	/* SESSION_TRANSCRIPT_MAX_LIMIT */
#define TRANSCRIPT_CURSOR_MAX_BYTES	(64 * 1024)
#define TRANSCRIPT_RECORD_ID_MAX	200

struct page_req {
	struct evhttp_request	*req;
	struct channel		*ch;	/* counts it as control work (seed 000) */
	char			 id[SERVE_SESSION_ID_MAX + 1];
};

static void
bad_query(struct evhttp_request *req, const char *code, const char *msg)
{
	http_send_qerr(req, qerr_new(code, "%s", msg));
}

/* limit: digits only, 1..500.  0, or -1 after the 400. */
static int
page_limit(struct http_ctx *ctx, json_object *params)
{
	const char *s = http_query(ctx, "limit");
	struct qerr *e;
	long long n;

	if (s == NULL)
		return 0;
	if (s[0] == '\0' || strspn(s, "0123456789") != strlen(s)) {
		bad_query(ctx->req, "invalid_transcript_limit",
		    "`limit` must be a positive integer");
		return -1;
	}
	n = strlen(s) > 6 ? 0 : atoll(s);
	if (n < 1 || n > TRANSCRIPT_MAX_LIMIT) {
		e = qerr_new("invalid_transcript_limit", "`limit` must be between 1 and %d",
		    TRANSCRIPT_MAX_LIMIT);
		if (e != NULL)
			qerr_set_int(e, "maxLimit", TRANSCRIPT_MAX_LIMIT);
		http_send_qerr(ctx->req, e);
		return -1;
	}
	json_object_object_add(params, "limit", xjson_object_new_int((int)n));
	return 0;
}

/*
 * cursor, direction, beforeRecordId: their shapes and combinations (a
 * cursor carries its own direction; beforeRecordId starts a backward
 * page).  0, or -1 after the 400 invalid_transcript_cursor.
 */
static int
page_anchor(struct http_ctx *ctx, json_object *params)
{
	const char *cur = http_query(ctx, "cursor");
	const char *dir = http_query(ctx, "direction");
	const char *before = http_query(ctx, "beforeRecordId");
	const char *mode = http_query(ctx, "compactedReplayMode");
	const char *msg = NULL;

	if (cur != NULL && (cur[0] == '\0' || strlen(cur) > TRANSCRIPT_CURSOR_MAX_BYTES))
		msg = "`cursor` must be a non-empty string";
	else if (dir != NULL && strcmp(dir, "backward") != 0)
		msg = "`direction` must be `backward`";
	else if (before != NULL && (before[0] == '\0' ||
	    strlen(before) > TRANSCRIPT_RECORD_ID_MAX))
		msg = "`beforeRecordId` must be a non-empty record id";
	else if ((dir != NULL && (cur != NULL || before != NULL)) ||
	    (cur != NULL && before != NULL))
		msg = "`direction`, `cursor` and `beforeRecordId` cannot be combined";
	else if (http_query(ctx, "atRecordId") != NULL ||
	    http_query(ctx, "snapshot") != NULL)
		msg = "`atRecordId` and `snapshot` anchors are not supported";
	if (msg != NULL) {
		bad_query(ctx->req, "invalid_transcript_cursor", msg);
		return -1;
	}
	if (mode != NULL && strcmp(mode, "full") != 0 && strcmp(mode, "summary") != 0) {
		http_error(ctx->req, "invalid_compacted_replay_mode", NULL);
		return -1;
	}
	if (cur != NULL)
		json_object_object_add(params, "cursor", xjson_object_new_string(cur));
	if (dir != NULL)
		json_object_object_add(params, "direction", xjson_object_new_string(dir));
	if (before != NULL)
		json_object_object_add(params, "beforeRecordId", xjson_object_new_string(before));
	return 0;
}

/* The child's page: {v, sessionId, events, hasMore, nextCursor?}. */
static void
on_page(void *arg, enum channel_outcome o, json_object *payload)
{
	struct page_req *pr = arg;
	json_object *body, *v;
	struct rpc_raw *raw;
	struct qerr *e;

	if (o == CHANNEL_RESULT && json_object_is_type(payload, json_type_object)) {
		body = xjson_object_new_object();
		json_object_object_add(body, "v", xjson_object_new_int(1));
		json_object_object_add(body, "sessionId", xjson_object_new_string(pr->id));
		/* The child's bytes (replay-raw.c): written as they came. */
		if (!json_object_object_get_ex(payload, "events", &v))
			v = xjson_object_new_array();
		else if ((raw = rpc_raw_of(v)) != NULL) {
			log_debug("session %s: transcript page of %zu events "
			    "forwarded as the child's bytes", pr->id, raw->n);
			v = replay_raw_array(raw);
		} else
			v = json_object_get(v);
		json_object_object_add(body, "events", v);
		json_object_object_add(body, "hasMore", xjson_object_new_boolean(
		    json_object_object_get_ex(payload, "hasMore", &v) &&
		    json_object_get_boolean(v)));
		if (json_object_object_get_ex(payload, "nextCursor", &v))
			json_object_object_add(body, "nextCursor", json_object_get(v));
		http_reply_json(pr->req, 200, body);
	} else if (o == CHANNEL_ERROR)
		http_error_rpc(pr->req, payload, pr->id);
	else if (o == CHANNEL_TIMEOUT) {
		if ((e = qerr_new("transcript_read_timeout", NULL)) != NULL) {
			qerr_set_str(e, "sessionId", pr->id);
			qerr_set_int(e, "timeoutMs", conf.restore_timeout_ms);
		}
		http_send_qerr(pr->req, e);
	} else
		routes_unavailable(pr->req);
	channel_control_end(pr->ch);
	free(pr);
}

void
route_session_transcript(struct http_ctx *ctx)
{
	json_object *params = xjson_object_new_object();
	struct session *s = sessions_find(ctx->path_id);
	struct channel *ch;
	struct page_req *pr;

	const char *cwd = http_query(ctx, "cwd");

	if (cwd != NULL)
		json_object_object_add(ctx->body, "cwd", xjson_object_new_string(cwd));
	if (routes_check_cwd(ctx) == -1 || page_limit(ctx, params) == -1 ||
	    page_anchor(ctx, params) == -1) {
		json_object_put(params);
		return;
	}
	/* A live session is read where it lives. */
	ch = s != NULL ? s->channel : channel_get(ctx->workspace);
	json_object_object_add(params, "sessionId", xjson_object_new_string(ctx->path_id));
	json_object_object_add(params, "cwd", xjson_object_new_string(
	    ch != NULL ? channel_workspace(ch) : ctx->workspace));
	if (ch == NULL || (pr = calloc(1, sizeof(*pr))) == NULL) {
		json_object_put(params);
		http_error(ctx->req, "internal", NULL);
		return;
	}
	pr->req = ctx->req;
	pr->ch = ch;
	strlcpy(pr->id, ctx->path_id, sizeof(pr->id));
	/* Counted before it goes: a request that fails at once is answered now. */
	channel_control_begin(ch);
	if (channel_request(ch, "qwen/status/session/transcript", params,
	    (uint64_t)conf.restore_timeout_ms, on_page, pr) == NULL) {
		channel_control_end(ch);
		free(pr);
		routes_unavailable(ctx->req);
	}
}

/* ---- GET /session/:id/turn-index ---------------------------------------- */

/* The child's turns: {v, sessionId, snapshot, totalTurns, start, turns}. */
static void
on_turns(void *arg, enum channel_outcome o, json_object *payload)
{
	static const char *const keys[] = { "snapshot", "totalTurns", "start",
	    "turns", NULL };
	struct page_req *pr = arg;
	json_object *body, *v;

	if (o == CHANNEL_RESULT && json_object_is_type(payload, json_type_object)) {
		body = xjson_object_new_object();
		json_object_object_add(body, "v", xjson_object_new_int(1));
		json_object_object_add(body, "sessionId", xjson_object_new_string(pr->id));
		for (size_t i = 0; keys[i] != NULL; i++)
			if (json_object_object_get_ex(payload, keys[i], &v))
				json_object_object_add(body, keys[i],
				    json_object_get(v));
		http_reply_json(pr->req, 200, body);
	} else if (o == CHANNEL_ERROR)
		http_error_rpc(pr->req, payload, pr->id);
	else
		routes_unavailable(pr->req);
	channel_control_end(pr->ch);
	free(pr);
}

/* start: digits only, at most 10^9.  0, or -1 after the 400. */
static int
turns_start(struct http_ctx *ctx, json_object *params)
{
	const char *s = http_query(ctx, "start");
	const char *snap = http_query(ctx, "snapshot");

	if (s != NULL && (s[0] == '\0' || strlen(s) > 9 ||
	    strspn(s, "0123456789") != strlen(s))) {
		bad_query(ctx->req, "bad_request", "`start` must be a non-negative integer");
		return -1;
	}
	if (snap != NULL && (snap[0] == '\0' || strlen(snap) > 64)) {
		bad_query(ctx->req, "bad_request", "`snapshot` must be a short string");
		return -1;
	}
	json_object_object_add(params, "start", xjson_object_new_int64(
	    s != NULL ? atoll(s) : 0));
	return 0;
}

/*
 * GET /session/:id/turn-index?start=&limit=: a page of the session's turns
 * (its user prompts on the active history) from the child's index cache.
 * The snapshot a client sends back is accepted; the page is always of the
 * transcript as it is now (it only grows, so ordinals stay).
 */
void
route_session_turn_index(struct http_ctx *ctx)
{
	json_object *params = xjson_object_new_object();
	struct session *s = sessions_find(ctx->path_id);
	struct channel *ch;
	struct page_req *pr;

	if (routes_check_cwd(ctx) == -1 || page_limit(ctx, params) == -1 ||
	    turns_start(ctx, params) == -1) {
		json_object_put(params);
		return;
	}
	ch = s != NULL ? s->channel : channel_get(ctx->workspace);
	json_object_object_add(params, "sessionId", xjson_object_new_string(ctx->path_id));
	json_object_object_add(params, "cwd", xjson_object_new_string(
	    ch != NULL ? channel_workspace(ch) : ctx->workspace));
	if (ch == NULL) {
		json_object_put(params);
		http_error(ctx->req, "internal", NULL);
		return;
	}
	pr = xcalloc(1, sizeof(*pr));
	pr->req = ctx->req;
	pr->ch = ch;
	strlcpy(pr->id, ctx->path_id, sizeof(pr->id));
	channel_control_begin(ch);
	if (channel_request(ch, "qwen/status/session/turn_index", params,
	    (uint64_t)conf.restore_timeout_ms, on_turns, pr) == NULL) {
		channel_control_end(ch);
		free(pr);
		routes_unavailable(ctx->req);
	}
}
