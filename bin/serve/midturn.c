/* SPDX-License-Identifier: ISC */
/*
 * midturn.c: a live session's mid-turn queue (routes-midturn.c's routes
 * fill it): the agent's drain of it, and what is left promoted to
 * prompts once the session's last turn has ended, as upstream's bridge
 * does both.  s->midturn holds "queue" (the messages, oldest first:
 * {messageId, text, eventDetailMode, content?, clientId?}), "settled" and
 * "promoted" (the last 200 ids of each).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "serve.h"
#include "xmalloc.h"

#define MIDTURN_RING_MAX	200	/* upstream's reconciliation ring */

size_t
midturn_units(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n += (unsigned char)*s >= 0xf0 ? 2 : 1;
	return n;
}

json_object *
midturn_list(struct session *s, const char *k)
{
	json_object *v;

	if (s->midturn == NULL)
		s->midturn = xjson_object_new_object();
	if (!json_object_object_get_ex(s->midturn, k, &v)) {
		v = xjson_object_new_array();
		json_object_object_add(s->midturn, k, v);
	}
	return v;
}

void
midturn_remember(struct session *s, const char *k, const char *id)
{
	json_object *ring = midturn_list(s, k);
	size_t n;

	json_object_array_add(ring, xjson_object_new_string(id));
	if ((n = json_object_array_length(ring)) > MIDTURN_RING_MAX)
		json_object_array_del_idx(ring, 0, n - MIDTURN_RING_MAX);
}

int
midturn_in(json_object *a, const char *id)
{
	size_t i, n = json_object_array_length(a);

	for (i = 0; i < n; i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(a, i)),
		    id) == 0)
			return 1;
	return 0;
}

json_object *
midturn_find(struct session *s, const char *id, size_t *at)
{
	json_object *q = midturn_list(s, "queue"), *m;
	size_t i, n = json_object_array_length(q);

	for (i = 0; i < n; i++) {
		m = json_object_array_get_idx(q, i);
		if (strcmp(json_get_str(m, "messageId"), id) == 0) {
			*at = i;
			return m;
		}
	}
	return NULL;
}

/* A message's blocks: its text, then its media (caller owns). */
static json_object *
midturn_blocks(json_object *m)
{
	json_object *a = xjson_object_new_array(), *t, *c;
	const char *text = json_get_str(m, "text");
	size_t i, n;

	if (text != NULL && text[0] != '\0') {
		t = xjson_object_new_object();
		json_object_object_add(t, "type", xjson_object_new_string("text"));
		json_object_object_add(t, "text", xjson_object_new_string(text));
		json_object_array_add(a, t);
	}
	if (json_object_object_get_ex(m, "content", &c))
		for (i = 0, n = json_object_array_length(c); i < n; i++)
			json_object_array_add(a,
			    json_object_get(json_object_array_get_idx(c, i)));
	return a;
}

/* A reference no file can match: degraded (dropped, marked) when drained. */
static json_object *
midturn_gone_ref(void)
{
	json_object *o = xjson_object_new_object();

	json_object_object_add(o, "type", xjson_object_new_string("resource"));
	json_object_object_add(o, "attachmentId", xjson_object_new_string("."));
	json_object_object_add(o, "mimeType",
	    xjson_object_new_string("application/octet-stream"));
	json_object_object_add(o, "size", xjson_object_new_int64(0));
	return o;
}

/*
 * A drained item's content: the message's blocks, its attachments'
 * content in place of their references (one gone dropped, with upstream's
 * marker), and attachmentReferences, the references it kept.
 */
static void
midturn_item_content(struct session *s, json_object *it, json_object *m,
    json_object *seen)
{
	json_object *blocks = midturn_blocks(m), *refs = xjson_object_new_array();
	json_object *planned = xjson_object_new_array(), *b;
	const char *id;
	size_t i, n;

	/* An attachment already in this drain is dropped, as upstream's. */
	for (i = 0, n = json_object_array_length(blocks); i < n; i++) {
		b = json_object_array_get_idx(blocks, i);
		if (attachments_ref_is(b) &&
		    (id = json_get_str(b, "attachmentId")) != NULL) {
			if (midturn_in(seen, id)) {
				json_object_array_add(planned, midturn_gone_ref());
				continue;
			}
			json_object_array_add(seen, xjson_object_new_string(id));
		}
		json_object_array_add(planned, json_object_get(b));
	}
	json_object_put(blocks);
	blocks = planned;
	json_object_object_add(it, "content", attachments_ref_degrade(
	    channel_workspace(s->channel), s->id, blocks, refs));
	json_object_put(blocks);
	if (json_object_array_length(refs) > 0)
		json_object_object_add(it, "attachmentReferences", refs);
	else
		json_object_put(refs);
}

static json_object *
midturn_empty(void)
{
	json_object *r = xjson_object_new_object();

	json_object_object_add(r, "messages", xjson_object_new_array());
	json_object_object_add(r, "items", xjson_object_new_array());
	json_object_object_add(r, "hasQueuedPrompt", json_object_new_boolean(0));
	return r;
}

/* The stream's echo of what the agent took: mid_turn_message_injected. */
static void
midturn_injected(struct session *s, json_object *q)
{
	json_object *d = xjson_object_new_object(), *msgs, *ids, *items, *m, *it, *c;
	const char *active = prompts_active(s, NULL);
	size_t i, n = json_object_array_length(q);

	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "messages", msgs = xjson_object_new_array());
	json_object_object_add(d, "messageIds", ids = xjson_object_new_array());
	json_object_object_add(d, "items", items = xjson_object_new_array());
	for (i = 0; i < n; i++) {
		m = json_object_array_get_idx(q, i);
		json_object_array_add(msgs, xjson_object_new_string(json_get_str(m, "text")));
		json_object_array_add(ids,
		    xjson_object_new_string(json_get_str(m, "messageId")));
		it = xjson_object_new_object();
		if (json_object_object_get_ex(m, "content", &c))
			json_object_object_add(it, "content", json_object_get(c));
		json_object_array_add(items, it);
	}
	bus_publish(s->bus, "mid_turn_message_injected", d, active, NULL, 0);
}

/*
 * craft/drainMidTurnQueue {sessionId, promptId?} from the child: the
 * queue taken, {messages, items, hasQueuedPrompt} (caller owns).  A
 * session not on ch, or a promptId not the running one's, gets nothing.
 */
json_object *
midturn_drain(struct channel *ch, json_object *params)
{
	const char *sid = json_get_str(params, "sessionId");
	const char *want = json_get_str(params, "promptId"), *active;
	json_object *q, *r, *msgs, *items, *m, *it, *seen;
	struct session *s;
	size_t i, n;

	if (sid == NULL || (s = sessions_find(sid)) == NULL || s->channel != ch ||
	    s->midturn == NULL)
		return midturn_empty();
	/* The running turn: a prompt, or the agent's own (upstream's too). */
	if ((active = prompts_active(s, NULL)) == NULL)
		active = autoturn_prompt_id(s);
	if (want != NULL && (active == NULL || strcmp(want, active) != 0))
		return midturn_empty();
	q = json_object_get(midturn_list(s, "queue"));
	json_object_object_add(s->midturn, "queue", xjson_object_new_array());
	r = xjson_object_new_object();
	seen = xjson_object_new_array();
	json_object_object_add(r, "messages", msgs = xjson_object_new_array());
	json_object_object_add(r, "items", items = xjson_object_new_array());
	for (i = 0, n = json_object_array_length(q); i < n; i++) {
		m = json_object_array_get_idx(q, i);
		midturn_remember(s, "settled", json_get_str(m, "messageId"));
		json_object_array_add(msgs, xjson_object_new_string(json_get_str(m, "text")));
		it = xjson_object_new_object();
		json_object_object_add(it, "messageId",
		    xjson_object_new_string(json_get_str(m, "messageId")));
		json_object_object_add(it, "displayText",
		    xjson_object_new_string(json_get_str(m, "text")));
		midturn_item_content(s, it, m, seen);
		json_object_array_add(items, it);
	}
	json_object_put(seen);
	json_object_object_add(r, "hasQueuedPrompt",
	    json_object_new_boolean(s->queued > 0));
	if (n > 0)
		midturn_injected(s, q);
	json_object_put(q);
	return r;
}

/*
 * The session's last turn has ended: what the agent did not take runs as
 * prompts of their own, in order, each with its messageId as promptId.
 */
void
midturn_settle(struct session *s)
{
	json_object *q, *m, *body, *v;
	size_t i, n;

	if (s->midturn == NULL ||
	    json_object_array_length(midturn_list(s, "queue")) == 0)
		return;
	q = json_object_get(midturn_list(s, "queue"));
	json_object_object_add(s->midturn, "queue", xjson_object_new_array());
	for (i = 0, n = json_object_array_length(q); i < n; i++) {
		m = json_object_array_get_idx(q, i);
		body = xjson_object_new_object();
		json_object_object_add(body, "prompt", midturn_blocks(m));
		if (json_object_object_get_ex(m, "eventDetailMode", &v))
			json_object_object_add(body, "eventDetailMode", json_object_get(v));
		if (prompts_admit_id(s, body, json_get_str(m, "clientId"),
		    json_get_str(m, "messageId")) != NULL)
			midturn_remember(s, "promoted", json_get_str(m, "messageId"));
		json_object_put(body);
	}
	json_object_put(q);
}
