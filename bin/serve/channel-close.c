/* SPDX-License-Identifier: ISC */
/*
 * channel-close.c: a session's close at the child, and the restores of
 * its id that wait for it.  A real agent closes a session asynchronously:
 * a load or resume of the same id that reaches it before the close has
 * been answered finds the session still there and is refused.  As
 * upstream's daemon does, such a restore is held here (not sent, so its
 * restore budget has not started) until the close is answered, fails, or
 * the child goes; the close itself is bounded by --initialize-timeout-ms.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "channel-int.h"
#include "xmalloc.h"

/* A close on the wire and the requests for its id that wait for it. */
struct closing {
	TAILQ_ENTRY(closing)	 entry;
	struct channel		*ch;
	char			 id[SERVE_SESSION_ID_MAX + 1];
	TAILQ_HEAD(, channel_req)	 held;
};

static TAILQ_HEAD(, closing) closings = TAILQ_HEAD_INITIALIZER(closings);

static struct closing *
closing_find(const struct channel *ch, const char *id)
{
	struct closing *k;

	TAILQ_FOREACH(k, &closings, entry)
		if (k->ch == ch && strcmp(k->id, id) == 0)
			return k;
	return NULL;
}

/* The close was answered (or failed, or the child went): send what waited. */
static void
on_closed(void *arg, enum channel_outcome o, json_object *payload)
{
	struct closing *k = arg;
	struct channel *ch = k->ch;
	struct channel_req *r;

	(void)payload;
	TAILQ_REMOVE(&closings, k, entry);
	while ((r = TAILQ_FIRST(&k->held)) != NULL) {
		TAILQ_REMOVE(&k->held, r, entry);
		if (ch->state == CH_READY && o != CHANNEL_CLOSED)
			channel_req_send(ch, r);
		else if (ch->state == CH_STARTING)
			TAILQ_INSERT_TAIL(&ch->waiting, r, entry);
		else
			channel_req_finish(r, CHANNEL_CLOSED, NULL);
	}
	free(k);
}

void
channel_close_session(struct channel *ch, const char *id)
{
	struct closing *k = xcalloc(1, sizeof(*k));
	json_object *p = xjson_object_new_object();

	k->ch = ch;
	strlcpy(k->id, id, sizeof(k->id));
	TAILQ_INIT(&k->held);
	json_object_object_add(p, "sessionId", xjson_object_new_string(id));
	TAILQ_INSERT_TAIL(&closings, k, entry);
	if (channel_request(ch, "qwen/control/session/close", p,
	    (uint64_t)conf.init_timeout_ms, on_closed, k) == NULL) {
		TAILQ_REMOVE(&closings, k, entry);
		free(k);
	}
}

/* The session a restore or create of r is for, or NULL. */
static const char *
restore_id(struct channel_req *r)
{
	json_object *params = json_get_obj(r->msg, "params");
	const char *m = json_get_str(r->msg, "method");

	if (m == NULL || (strcmp(m, "session/load") != 0 &&
	    strcmp(m, "session/resume") != 0 && strcmp(m, "session/new") != 0))
		return NULL;
	if (strcmp(m, "session/new") == 0)
		return json_get_str(json_get_obj(params, "_meta"), "qwen-code/sessionId");
	return json_get_str(params, "sessionId");
}

int
channel_close_hold(struct channel *ch, struct channel_req *r)
{
	struct closing *k;
	const char *id;

	if (TAILQ_EMPTY(&closings) || (id = restore_id(r)) == NULL ||
	    (k = closing_find(ch, id)) == NULL)
		return 0;
	log_info("session %s: waiting for its close before the next restore", id);
	TAILQ_INSERT_TAIL(&k->held, r, entry);
	return 1;
}
