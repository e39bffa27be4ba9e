/* SPDX-License-Identifier: ISC */
/*
 * routes-queue.c: a live session's prompt queue, as upstream shows it:
 * GET /session/:id/pending-prompts (the running prompt, then the queued
 * ones) and DELETE /session/:id/pending-prompts/:promptId (a queued one
 * taken out before it runs; the running one is cancelled, not removed).
 * GET /session/:id/turns/current and /turns/:promptId say where a turn
 * is: the running prompt, else the queue's head, else the newest settled
 * (turns.c, merged with the agent's persisted turn_result, asked for with
 * upstream's qwen/control/session/turn_status), else idle; by id, 404
 * prompt_not_found when none has it.
 * POST /session/:id/continue resumes a turn that was cut off: the agent
 * says from the history whether there is one
 * (qwen/control/session/continue, upstream's name), and if so the
 * continuation is admitted into the queue as a prompt of its own.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "errors.h"
#include "json.h"
#include "log.h"
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

struct turn_req {
	struct evhttp_request	*req;
	char			 sid[SERVE_SESSION_ID_MAX + 1];
	char			*prompt_id;	/* NULL: current */
};

/*
 * Answer tr from the live queue (which wins: a pending prompt has no
 * record yet), else the kept statuses merged with the agent's persisted
 * record rec (borrowed, NULL-safe), else idle or 404 prompt_not_found.
 */
static void
turn_answer(struct turn_req *tr, struct session *s, json_object *rec)
{
	json_object *st;
	struct qerr *e;

	if ((st = prompts_turn(s, tr->prompt_id)) == NULL)
		st = turns_merge(s, tr->prompt_id, rec);
	if (st == NULL && tr->prompt_id == NULL) {
		st = xjson_object_new_object();
		json_object_object_add(st, "sessionId",
		    xjson_object_new_string(s->id));
		json_object_object_add(st, "state",
		    xjson_object_new_string("idle"));
	}
	if (st != NULL) {
		http_reply_json(tr->req, 200, st);
		return;
	}
	if ((e = qerr_new("prompt_not_found", NULL)) != NULL) {
		qerr_set_str(e, "sessionId", s->id);
		qerr_set_str(e, "promptId", tr->prompt_id);
	}
	http_send_qerr(tr->req, e);
}

static void
turn_req_free(struct turn_req *tr)
{
	free(tr->prompt_id);
	free(tr);
}

/*
 * The agent's qwen/control/session/turn_status answered: its turnResult
 * is the persisted record.  An agent without the method (qwen-acp-child)
 * or one that failed leaves the daemon's own statuses alone.
 */
static void
on_turn_status(void *arg, enum channel_outcome o, json_object *payload)
{
	struct turn_req *tr = arg;
	struct session *s = sessions_find(tr->sid);

	if (s == NULL)
		http_error(tr->req, "session_not_found", tr->sid);
	else
		turn_answer(tr, s, o == CHANNEL_RESULT ?
		    json_get_obj(payload, "turnResult") : NULL);
	turn_req_free(tr);
}

void
route_session_turn(struct http_ctx *ctx)
{
	struct session *s;
	struct turn_req *tr;
	json_object *st, *p;

	if ((s = routes_session(ctx)) == NULL)
		return;
	tr = xcalloc(1, sizeof(*tr));
	tr->req = ctx->req;
	strlcpy(tr->sid, s->id, sizeof(tr->sid));
	/* The id as a path segment: percent-decoded (undecodable: kept). */
	if (strcmp(ctx->path_tail, "current") != 0 &&
	    (tr->prompt_id = http_uridecode(ctx->path_tail)) == NULL)
		tr->prompt_id = xstrdup(ctx->path_tail);
	if ((st = prompts_turn(s, tr->prompt_id)) != NULL) {
		http_reply_json(ctx->req, 200, st);
		turn_req_free(tr);
		return;
	}
	/* Settled: the agent may have it in its transcript (upstream's read). */
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	if (tr->prompt_id != NULL)
		json_object_object_add(p, "promptId",
		    xjson_object_new_string(tr->prompt_id));
	if (channel_request(s->channel, "qwen/control/session/turn_status", p,
	    (uint64_t)conf.init_timeout_ms, on_turn_status, tr) == NULL) {
		turn_answer(tr, s, NULL);
		turn_req_free(tr);
	}
}

/* ---- POST /session/:id/continue ---------------------------------------- */

struct cont_req {
	struct evhttp_request	*req;
	char			 sid[SERVE_SESSION_ID_MAX + 1];
	char			 client_id[SERVE_CLIENT_ID_MAX + 1];	/* "" none */
};

/* 200 {accepted: false, interruption}. */
static void
cont_declined(struct evhttp_request *req, const char *interruption)
{
	json_object *o = xjson_object_new_object();

	json_object_object_add(o, "accepted", xjson_object_new_boolean(0));
	json_object_object_add(o, "interruption", xjson_object_new_string(interruption));
	http_reply_json(req, 200, o);
}

/* The agent's interruption, one of upstream's three (else "none"). */
static const char *
cont_kind(json_object *answer)
{
	const char *k = json_get_str(answer, "interruption");

	if (k != NULL && (strcmp(k, "interrupted_prompt") == 0 ||
	    strcmp(k, "interrupted_turn") == 0))
		return k;
	return "none";
}

/* Admit the continuation: 200 {accepted, interruption, promptId, lastEventId, eventEpoch}. */
static void
cont_admit(struct cont_req *cr, struct session *s, const char *kind)
{
	json_object *body = xjson_object_new_object(), *pr, *o;
	const char *pid;
	struct qerr *e;
	int64_t last = (int64_t)bus_last_id(s->bus);
	int error;

	/* As upstream: no content, the agent runs the cut-off turn again. */
	pr = xjson_object_new_array();
	json_object_object_add(body, "prompt", pr);
	pid = prompts_admit(s, body, cr->client_id[0] ? cr->client_id : NULL,
	    1);
	error = errno;
	json_object_put(body);
	if (pid == NULL) {
		if ((e = qerr_new(error == ENOBUFS ?
		    "prompt_queue_full" : "internal", NULL)) != NULL)
			qerr_set_str(e, "sessionId", s->id);
		http_send_qerr(cr->req, e);
		return;
	}
	log_info("session %s: continuing a cut-off turn (%s)", s->id, kind);
	o = xjson_object_new_object();
	json_object_object_add(o, "accepted", xjson_object_new_boolean(1));
	json_object_object_add(o, "interruption", xjson_object_new_string(kind));
	json_object_object_add(o, "promptId", xjson_object_new_string(pid));
	json_object_object_add(o, "lastEventId", xjson_object_new_int64(last));
	json_object_object_add(o, "eventEpoch", xjson_object_new_string(bus_epoch(s->bus)));
	http_reply_json(cr->req, 200, o);
}

/* The agent's pre-check answered (or could not). */
static void
on_continue(void *arg, enum channel_outcome o, json_object *payload)
{
	struct cont_req *cr = arg;
	struct session *s = sessions_find(cr->sid);
	json_object *v;
	const char *kind;

	if (s == NULL)
		http_error(cr->req, "session_not_found", cr->sid);
	else if (o == CHANNEL_ERROR)	/* as routes-pass.c answers the agent's errors */
		http_error_rpc(cr->req, payload, s->id);
	else if (o != CHANNEL_RESULT)
		http_error(cr->req, "acp_channel_unavailable", NULL);
	else {
		kind = cont_kind(payload);
		v = json_get(payload, "accepted", json_type_boolean);
		/* A prompt admitted meanwhile runs first: nothing to continue. */
		if (v == NULL || !json_object_get_boolean(v) || prompts_pending(s) > 0)
			cont_declined(cr->req, kind);
		else
			cont_admit(cr, s, kind);
	}
	free(cr);
}

void
route_session_continue(struct http_ctx *ctx)
{
	struct session *s;
	struct cont_req *cr;
	json_object *p;

	if ((s = routes_session(ctx)) == NULL)
		return;
	/* A prompt running or waiting: nothing was cut off (upstream's no-op). */
	if (prompts_pending(s) > 0) {
		cont_declined(ctx->req, "none");
		return;
	}
	cr = xcalloc(1, sizeof(*cr));
	cr->req = ctx->req;
	strlcpy(cr->sid, s->id, sizeof(cr->sid));
	if (ctx->client_id != NULL)
		strlcpy(cr->client_id, ctx->client_id, sizeof(cr->client_id));
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	if (channel_request(s->channel, "qwen/control/session/continue", p,
	    (uint64_t)conf.init_timeout_ms, on_continue, cr) == NULL) {
		free(cr);
		http_error(ctx->req, "acp_channel_unavailable", NULL);
	}
}
