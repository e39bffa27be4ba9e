/* SPDX-License-Identifier: ISC */
/*
 * continue.c: qwen/control/session/continue, upstream's pre-check for
 * resuming a turn that was cut off, from the persisted history: the
 * session's last record is a user prompt the agent never answered
 * ("interrupted_prompt": accepted, the daemon then sends the
 * continuation as a prompt marked in _meta "qwen.daemon.continueLastTurn", which
 * runs the agent on that prompt again without a second user record), or
 * a tool result the model never followed ("interrupted_turn": this
 * child's agents take text, not tool results, so it is not accepted);
 * anything else is "none".
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "json.h"
#include "transcript.h"
#include "xmalloc.h"

/* The record s's next one hangs from, in its refreshed index, or -1. */
static int64_t
tail_record(struct session *s)
{
	if (s->tx == NULL || s->tail == NULL || transcript_refresh(s->tx, NULL) == -1)
		return -1;
	return transcript_find(s->tx, s->tail);
}

/* What the end of s's history says: "none", "interrupted_prompt" or
   "interrupted_turn". */
static const char *
continue_classify(struct session *s)
{
	int64_t rec = tail_record(s);

	if (rec < 0)
		return "none";
	switch (transcript_type(s->tx, (uint32_t)rec)) {
	case TX_USER:
		return "interrupted_prompt";
	case TX_TOOL_RESULT:
		return "interrupted_turn";
	default:
		return "none";
	}
}

void
continue_request(struct child *c, struct rpc_msg *m, struct session *s)
{
	const char *kind = continue_classify(s);
	json_object *res = xjson_object_new_object();

	json_object_object_add(res, "accepted", xjson_object_new_boolean(
	    strcmp(kind, "interrupted_prompt") == 0 && c->opts.agent_acp == NULL));
	json_object_object_add(res, "interruption", xjson_object_new_string(kind));
	child_send_result(c, m->id, res);
}

int
continue_marked(json_object *params)
{
	json_object *v = json_get(json_get_obj(params, "_meta"), "qwen.daemon.continueLastTurn",
	    json_type_boolean);

	return v != NULL && json_object_get_boolean(v);
}

char *
continue_text(struct session *s, size_t *lenp)
{
	json_object *r, *parts, *t;
	int64_t rec = tail_record(s);
	char *out = NULL, *n;
	size_t len = 0, tl;

	if (rec < 0 || transcript_type(s->tx, (uint32_t)rec) != TX_USER ||
	    (r = transcript_load_record(s->tx, (uint32_t)rec, NULL)) == NULL)
		return NULL;
	parts = json_get(json_get_obj(r, "message"), "parts", json_type_array);
	for (size_t i = 0; parts != NULL && i < json_object_array_length(parts); i++) {
		if ((t = json_get(json_object_array_get_idx(parts, i), "text",
		    json_type_string)) == NULL)
			continue;
		tl = (size_t)json_object_get_string_len(t);
		n = xreallocarray(out, len + tl + 1, 1);
		out = n;
		memcpy(out + len, json_object_get_string(t), tl);
		len += tl;
		out[len] = '\0';
	}
	json_object_put(r);
	*lenp = len;
	return out;
}
