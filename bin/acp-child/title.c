/* SPDX-License-Identifier: ISC */
/*
 * title.c: _qwen/session/update_metadata, a live session's title, set as
 * qwen-code records one: a system record of subtype custom_title
 * {customTitle, titleSource: "manual"} appended through the session's own
 * appender (it holds the writer lease) on its tail, so the active chain
 * runs through it.  A session delegated to the --agent-acp agent is that
 * agent's to write: -32601.
 *
 * params: {sessionId, displayName}; result: {sessionId, displayName}.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "append.h"
#include "child.h"
#include "clock.h"
#include "json.h"
#include "log.h"
#include "session.h"
#include "uuid.h"
#include "xmalloc.h"

#define TITLE_MAX	256

/* The custom_title record on s's tail (caller puts); uuid into out. */
static json_object *
title_record(struct session *s, const char *title, char out[UUID_LEN + 1])
{
	json_object *o = xjson_object_new_object(), *p = xjson_object_new_object();
	char when[CLOCK_ISO_LEN];

	uuid_new(out);
	clock_iso_now(when);
	json_object_object_add(o, "uuid", xjson_object_new_string(out));
	json_object_object_add(o, "parentUuid",
	    s->tail != NULL ? xjson_object_new_string(s->tail) : NULL);
	json_object_object_add(o, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(o, "timestamp", xjson_object_new_string(when));
	json_object_object_add(o, "type", xjson_object_new_string("system"));
	json_object_object_add(o, "subtype", xjson_object_new_string("custom_title"));
	json_object_object_add(o, "cwd", xjson_object_new_string(s->cwd));
	json_object_object_add(o, "version", xjson_object_new_string(PACKAGE_VERSION));
	json_object_object_add(p, "customTitle", xjson_object_new_string(title));
	json_object_object_add(p, "titleSource", xjson_object_new_string("manual"));
	json_object_object_add(o, "systemPayload", p);
	return o;
}

int
title_is_method(const char *method)
{
	return strcmp(method, "_qwen/session/update_metadata") == 0;
}

/* Set s's title (s idle and registered). */
void
title_set(struct child *c, struct rpc_msg *m, struct session *s)
{
	const char *t = json_get_str(m->params, "displayName");
	char uuid[UUID_LEN + 1], *cause = NULL;
	json_object *rec, *res;

	if (s->delegated || s->app == NULL) {
		child_send_error(c, m->id, RPC_METHOD_NOT_FOUND,
		    "the session's agent writes its transcript", NULL);
		return;
	}
	if (t == NULL || t[0] == '\0' || strlen(t) > TITLE_MAX) {
		child_send_error(c, m->id, RPC_INVALID_PARAMS,
		    "displayName must be 1 to 256 bytes", child_error_data("invalid_metadata"));
		return;
	}
	rec = title_record(s, t, uuid);
	if (appender_append(s->app, rec, &cause) == -1) {
		log_warnx("session %s: %s", s->id, cause != NULL ? cause : "append failed");
		child_send_error(c, m->id, RPC_INTERNAL_ERROR, "cannot append to the "
		    "transcript", child_error_data("transcript_write_failed"));
	} else {
		free(s->tail);
		s->tail = xstrdup(uuid);
		res = xjson_object_new_object();
		json_object_object_add(res, "sessionId", xjson_object_new_string(s->id));
		json_object_object_add(res, "displayName", xjson_object_new_string(t));
		child_send_result(c, m->id, res);
	}
	free(cause);
	json_object_put(rec);
}
