/* SPDX-License-Identifier: ISC */
/*
 * routes-fork.c: POST /session/:id/fork {directive}, upstream's fork of a
 * live session into a background agent that works on the directive.
 * The fork is the agent's work: the request goes to the session's agent
 * under upstream's name (qwen/control/session/fork_agent) and its answer
 * {sessionId, description, launched} comes back as it is, and so does its
 * error, as upstream's daemon and routes-pass.c answer one (an agent
 * without the method, like qwen-acp-child's own: 500 with its -32601).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "errors.h"
#include "json.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

#define FORK_DIRECTIVE_MAX	(64 * 1024)

struct fork_req {
	struct evhttp_request	*req;
	char			 sid[SERVE_SESSION_ID_MAX + 1];
};

/* The agent answered the fork (or could not). */
static void
on_fork(void *arg, enum channel_outcome o, json_object *payload)
{
	struct fork_req *fr = arg;
	if (o == CHANNEL_RESULT && json_object_is_type(payload, json_type_object)) {
		log_info("session %s: forked through its agent", fr->sid);
		http_reply_json(fr->req, 200, json_object_get(payload));
	} else if (o == CHANNEL_ERROR)
		http_error_rpc(fr->req, payload, fr->sid);
	else
		http_error(fr->req, "acp_channel_unavailable", NULL);
	free(fr);
}

void
route_session_fork(struct http_ctx *ctx)
{
	struct session *s;
	struct fork_req *fr;
	json_object *p;
	const char *d;

	if ((s = routes_session(ctx)) == NULL)
		return;
	if ((d = json_get_str(ctx->body, "directive")) == NULL || *d == '\0' ||
	    strlen(d) > FORK_DIRECTIVE_MAX) {
		http_send_qerr(ctx->req, qerr_new("bad_request",
		    "`directive` must be a non-empty string"));
		return;
	}
	fr = xcalloc(1, sizeof(*fr));
	fr->req = ctx->req;
	strlcpy(fr->sid, s->id, sizeof(fr->sid));
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(p, "directive", xjson_object_new_string(d));
	if (channel_request(s->channel, "qwen/control/session/fork_agent", p,
	    (uint64_t)conf.init_timeout_ms, on_fork, fr) == NULL) {
		free(fr);
		http_error(ctx->req, "acp_channel_unavailable", NULL);
	}
}
