/* SPDX-License-Identifier: ISC */
/*
 * branch-live.c: a branch made live, as upstream answers POST
 * /session/:id/branch without atRecordId: once the child has written the
 * new transcript, the new session is resumed through the ordinary resume
 * route (admission, the restore budget, the client registered) on a
 * request with no connection, whose reply comes back here; the caller
 * gets 201 with the restored session and the branch's displayName and
 * forkedFrom, or the resume's error as it is.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "errors.h"
#include "json.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

struct branch_live {
	TAILQ_ENTRY(branch_live) entry;
	struct evhttp_request	*req;		/* the caller's */
	struct evhttp_request	*inner;		/* the resume's, connection-less */
	json_object		*branch;	/* {sessionId, displayName, forkedFrom} */
};

static TAILQ_HEAD(, branch_live) lives = TAILQ_HEAD_INITIALIZER(lives);

void
branch_live_start(struct evhttp_request *req, const char *workspace,
    const char *new_id, const char *client_id, json_object *branch)
{
	struct branch_live *bl = xcalloc(1, sizeof(*bl));
	struct http_ctx ctx;
	struct evkeyvalq q;

	if ((bl->inner = evhttp_request_new(NULL, NULL)) == NULL) {
		free(bl);
		http_reply_json(req, 201, branch);	/* persisted, not live */
		return;
	}
	bl->req = req;
	bl->branch = branch;
	TAILQ_INSERT_TAIL(&lives, bl, entry);
	TAILQ_INIT(&q);
	memset(&ctx, 0, sizeof(ctx));
	ctx.req = bl->inner;
	ctx.body = xjson_object_new_object();
	json_object_object_add(ctx.body, "cwd", xjson_object_new_string(workspace));
	ctx.path_id = new_id;
	ctx.query = &q;
	if (client_id != NULL && client_id[0] != '\0') {
		ctx.client_id = client_id;
		ctx.client_id_bad = !client_id_valid(client_id);
	}
	route_session_resume(&ctx);	/* may reply (and free bl) at once */
	json_object_put(ctx.body);
}

/* The resume's 200 body (borrowed) with the branch's keys, as 201. */
static void
live_reply(struct branch_live *bl, json_object *body)
{
	json_object *o = json_object_get(body);

	json_object_object_foreach(bl->branch, k, v)
		json_object_object_add(o, k, json_object_get(v));
	log_info("branch %s is live", json_get_str(o, "sessionId"));
	http_reply_json(bl->req, 201, o);
}

int
branch_live_capture(struct evhttp_request *req, int status, json_object *body,
    struct qerr *e)
{
	struct branch_live *bl;
	json_object *err;
	int ra;

	if (evhttp_request_get_connection(req) != NULL)
		return 0;
	TAILQ_FOREACH(bl, &lives, entry)
		if (bl->inner == req)
			break;
	if (bl == NULL)
		return 0;
	TAILQ_REMOVE(&lives, bl, entry);
	if (status == 200 && json_object_is_type(body, json_type_object))
		live_reply(bl, body);
	else if (e != NULL && (err = qerr_rest_body(e)) != NULL) {
		if ((ra = qerr_retry_after(e)) >= 0)
			http_set_retry_after(bl->req, ra);
		http_reply_json(bl->req, qerr_status(e), err);
	} else
		http_reply_json(bl->req, status,
		    body != NULL ? json_object_get(body) : NULL);
	json_object_put(bl->branch);
	evhttp_request_free(req);
	free(bl);
	return 1;
}
