/* SPDX-License-Identifier: ISC */
/*
 * acp-call.c: ACP methods run the REST routes themselves.  A call is an
 * evhttp request with no connection, handed to the route like any other;
 * http.c's reply functions give its reply back here (acp_call_capture)
 * instead of sending it, now or when a restore settles.  A call whose
 * connection went away is orphaned: its reply is dropped, and a session
 * it would have attached is detached again so that nothing leaks.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "errors.h"
#include "log.h"
#include "acp-int.h"
#include "xmalloc.h"

static TAILQ_HEAD(, acp_call) calls = TAILQ_HEAD_INITIALIZER(calls);

/* Free a call whose request is gone. */
static void
delegate_call_free(struct acp_call *call)
{
	json_object_put(call->rpc_id);
	free(call);
}

/* Build the connection-less request and hand it to the route. */
void
acp_call_run(struct acp_conn *c, json_object *rpc_id, const char *session_id,
    void (*route)(struct http_ctx *), const char *path_id, const char *client_id,
    json_object *body, acp_call_done done, int flags)
{
	struct http_ctx ctx;
	struct evkeyvalq q;
	struct acp_call *call;

	if ((call = calloc(1, sizeof(*call))) == NULL ||
	    (call->req = evhttp_request_new(NULL, NULL)) == NULL) {
		free(call);
		acp_reply_error(c, NULL, rpc_id, qerr_new("internal", NULL));
		return;
	}
	call->conn = c;
	call->rpc_id = json_object_get(rpc_id);
	call->done = done;
	call->flags = flags;
	if (session_id != NULL)
		strlcpy(call->session_id, session_id, sizeof(call->session_id));
	TAILQ_INSERT_TAIL(&calls, call, entry);
	TAILQ_INIT(&q);
	memset(&ctx, 0, sizeof(ctx));
	ctx.req = call->req;
	ctx.body = body != NULL ? json_object_get(body) : xjson_object_new_object();
	ctx.path_id = path_id;
	ctx.query = &q;
	if (client_id != NULL && client_id[0] != '\0') {
		ctx.client_id = client_id;
		ctx.client_id_bad = !client_id_valid(client_id);
	}
	route(&ctx);	/* may reply (and free call) before it returns */
	json_object_put(ctx.body);
}

/* A late success nobody waits for any more: give its session back. */
static void
orphan_undo(struct acp_call *call, int status, json_object *body)
{
	json_object *sid, *cid;

	if (!(call->flags & ACP_CALL_UNDO) || status != 200 || body == NULL ||
	    !json_object_object_get_ex(body, "sessionId", &sid) ||
	    !json_object_object_get_ex(body, "clientId", &cid) ||
	    !json_object_is_type(cid, json_type_string))
		return;
	log_info("acp: late answer for a closed connection: detaching session %s",
	    json_object_get_string(sid));
	acp_session_detach(json_object_get_string(sid),
	    json_object_get_string(cid));
}

/* A reply of one of our calls: hand it over (or undo it) and free the call. */
int
acp_call_capture(struct evhttp_request *req, int status, json_object *body,
    struct qerr *e)
{
	struct acp_call *call;

	if (evhttp_request_get_connection(req) != NULL)
		return 0;
	TAILQ_FOREACH(call, &calls, entry)
		if (call->req == req)
			break;
	if (call == NULL)
		return 0;
	TAILQ_REMOVE(&calls, call, entry);
	if (call->conn != NULL)
		call->done(call, status, body, e);
	else
		orphan_undo(call, status, body);
	evhttp_request_free(req);
	delegate_call_free(call);
	return 1;
}

/* c is gone: its calls answer nobody from now on. */
void
acp_calls_orphan(struct acp_conn *c)
{
	struct acp_call *call;

	TAILQ_FOREACH(call, &calls, entry)
		if (call->conn == c)
			call->conn = NULL;
}

/* Calls whose routes never answered (the loop is over). */
void
acp_calls_free_orphans(void)
{
	struct acp_call *call;

	while ((call = TAILQ_FIRST(&calls)) != NULL) {
		TAILQ_REMOVE(&calls, call, entry);
		evhttp_request_free(call->req);
		delegate_call_free(call);
	}
}

/*
 * Answer call with the error of its captured reply: e (borrowed) when the
 * route sent a catalogued error, else one rebuilt from the REST body (an
 * unclassified child error: 500 copying the child's code and data).
 */
void
acp_call_fail(struct acp_call *call, const char *session_id, int status,
    json_object *body, struct qerr *e)
{
	json_object *v, *err = NULL;
	struct qerr *own = NULL;
	const char *msg = "Internal error";

	if (e == NULL) {
		if (body != NULL && json_object_object_get_ex(body, "error", &v) &&
		    json_object_is_type(v, json_type_string))
			msg = json_object_get_string(v);
		if ((own = qerr_new("internal", "%s", msg)) != NULL) {
			if (status != 500)
				qerr_set_int(own, "status", status);
			if (body != NULL && json_object_object_get_ex(body, "code", &v))
				qerr_set_json(own, "rpcCode", json_object_get(v));
			if (body != NULL && json_object_object_get_ex(body, "data", &v))
				qerr_set_json(own, "rpcData", json_object_get(v));
		}
		e = own;
	}
	if (e != NULL)
		err = qerr_jsonrpc_error(e);
	qerr_free(own);
	if (call->rpc_id != NULL)
		acp_send(call->conn, session_id,
		    acp_error_wrap(call->rpc_id, err));
	else
		json_object_put(err);	/* a notification gets no answer */
}
