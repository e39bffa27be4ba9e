/* SPDX-License-Identifier: ISC */
/*
 * routes-midturn.c: a live session's mid-turn messages, upstream's queue
 * of what a client says while a turn runs.
 *
 * POST /session/:id/mid-turn-message {message, messageId?, content?,
 * eventDetailMode?} queues a message while a prompt runs (an idle session
 * answers {accepted: false, reason: "session_idle"}, as upstream's route
 * asks of its bridge); at most 20 wait.  The agent takes them between its
 * tool batches by asking the daemon craft/drainMidTurnQueue {sessionId}
 * (answered {messages, items, hasQueuedPrompt}, the session's stream told
 * mid_turn_message_injected); what it has not taken when the last turn
 * ends runs as a prompt of its own, its promptId the messageId, as
 * upstream promotes it.  GET /session/:id/mid-turn-messages is the
 * snapshot {messages (a client's only), settledMessageIds,
 * promotedMessageIds}; DELETE .../mid-turn-messages/:messageId takes one
 * back ({removed}), a promoted one while its prompt still waits.  The
 * checks and answers are upstream's; content takes inline image and
 * resource blocks only (this daemon stores no attachments).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errors.h"
#include "json.h"
#include "serve.h"
#include "uuid.h"
#include "xmalloc.h"

#define MIDTURN_DEPTH_MAX	20		/* upstream's MAX_MID_TURN_QUEUE_DEPTH */
#define MIDTURN_TEXT_MAX	(16 * 1024)	/* upstream's, in UTF-16 units */
#define MIDTURN_BLOCKS_MAX	256		/* upstream's MEDIA_CONTENT_MAX_BLOCKS */

static void
midturn_bad(struct http_ctx *ctx, const char *msg)
{
	http_send_qerr(ctx->req, qerr_new("bad_request", "%s", msg));
}

/* Whether b carries a reference upstream's parser takes (its kind's size). */
static int
midturn_ref(json_object *b, int image)
{
	const char *id = json_get_str(b, "attachmentId");
	json_object *v;
	int64_t n;

	if (id == NULL || id[0] == '\0' ||
	    !json_object_object_get_ex(b, "size", &v) ||
	    !json_object_is_type(v, json_type_int))
		return 0;
	n = json_object_get_int64(v);
	return n >= 0 && n <= ((int64_t)1 << 53) - 1 && (!image || n > 0);
}

/*
 * An inline image or resource block, or one naming an attachment
 * {type, attachmentId, mimeType, size}, as upstream's parser takes it.
 */
static int
midturn_block_ok(json_object *b)
{
	const char *type = json_get_str(b, "type"), *mime, *data;
	json_object *r;
	int text, blob, image, inline_, ref;

	if (type == NULL || (strcmp(type, "image") != 0 &&
	    strcmp(type, "resource") != 0))
		return 0;
	image = type[0] == 'i';
	ref = midturn_ref(b, image);
	if (!image && !ref) {
		if ((r = json_get_obj(b, "resource")) == NULL ||
		    json_get_str(r, "uri") == NULL || json_get_str(r, "uri")[0] == '\0')
			return 0;
		text = json_get_str(r, "text") != NULL;
		blob = json_get_str(r, "blob") != NULL;
		return text != blob;
	}
	mime = json_get_str(b, "mimeType");
	data = json_get_str(b, "data");
	inline_ = data != NULL && data[0] != '\0';
	if ((image ? inline_ == ref : inline_ || !ref) || mime == NULL ||
	    (image && strncmp(mime, "image/", 6) != 0))
		return 0;
	return !image || strncasecmp(mime, "image/svg+xml", 13) != 0;
}

/* A reference block as upstream keeps it: only its four members. */
static json_object *
midturn_ref_block(json_object *b)
{
	static const char *const keep[] = { "type", "attachmentId", "mimeType",
	    "size" };
	json_object *o = xjson_object_new_object(), *v;

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (json_object_object_get_ex(b, keep[i], &v))
			json_object_object_add(o, keep[i], json_object_get(v));
	return o;
}

/*
 * content, when given: 0 (taken into *out, or none), -1 after the 400
 * (or 410 session_attachment_gone).
 */
static int
midturn_content(struct http_ctx *ctx, struct session *s, json_object **out)
{
	json_object *c, *b;
	struct qerr *e = NULL;
	size_t i, n;

	*out = NULL;
	if (!json_object_object_get_ex(ctx->body, "content", &c))
		return 0;
	if (!json_object_is_type(c, json_type_array) ||
	    (n = json_object_array_length(c)) == 0) {
		midturn_bad(ctx, "`content` must be a non-empty array of media blocks");
		return -1;
	}
	if (n > MIDTURN_BLOCKS_MAX) {
		midturn_bad(ctx, "`content` must carry at most 256 media blocks");
		return -1;
	}
	for (i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(c, i),
		    json_type_object) || !midturn_block_ok(json_object_array_get_idx(c, i))) {
			midturn_bad(ctx, "each `content` entry must be an inline "
			    "content block or carry `attachmentId`, `size`, and "
			    "`mimeType`");
			return -1;
		}
	*out = xjson_object_new_array();
	for (i = 0; i < n; i++) {
		b = json_object_array_get_idx(c, i);
		json_object_array_add(*out, json_get_str(b, "attachmentId") != NULL &&
		    midturn_ref(b, strcmp(json_get_str(b, "type"), "image") == 0) ?
		    midturn_ref_block(b) : json_object_get(b));
	}
	/* Checked against the session's store as a prompt's are. */
	if (attachments_ref_check(channel_workspace(s->channel), s->id, *out,
	    &e) == -1) {
		json_object_put(*out);
		*out = NULL;
		http_send_qerr(ctx->req, e);
		return -1;
	}
	return 0;
}

/* The message, trimmed: caller frees; NULL after the 400. */
static char *
midturn_text(struct http_ctx *ctx, int has_content)
{
	const char *m = json_get_str(ctx->body, "message");
	size_t n;

	while (m != NULL && (*m == ' ' || (*m >= '\t' && *m <= '\r')))
		m++;
	n = m != NULL ? strlen(m) : 0;
	while (n > 0 && (m[n - 1] == ' ' || (m[n - 1] >= '\t' && m[n - 1] <= '\r')))
		n--;
	if (n == 0 && !has_content) {
		midturn_bad(ctx, "`message` must be a non-empty string, or `content` "
		    "must carry at least one media block");
		return NULL;
	}
	m = xstrndup(n > 0 ? m : "", n);
	if (midturn_units(m) > MIDTURN_TEXT_MAX) {
		free((char *)m);
		midturn_bad(ctx, "`message` must be at most 16384 characters");
		return NULL;
	}
	return (char *)m;
}

/* messageId and eventDetailMode, checked: 0, or -1 after the 400. */
static int
midturn_checks(struct http_ctx *ctx, const char **id, const char **mode)
{
	json_object *v;

	*mode = "full";
	if (json_object_object_get_ex(ctx->body, "eventDetailMode", &v)) {
		*mode = json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) : "";
		if (strcmp(*mode, "full") != 0 && strcmp(*mode, "summary") != 0) {
			http_send_qerr(ctx->req, qerr_new("invalid_event_detail_mode",
			    "%s", "`eventDetailMode` must be `full` or `summary`"));
			return -1;
		}
	}
	*id = NULL;
	if (json_object_object_get_ex(ctx->body, "messageId", &v) && v != NULL) {
		*id = json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) : "";
		if ((*id)[0] == '\0' || midturn_units(*id) > SERVE_MIDTURN_ID_MAX) {
			midturn_bad(ctx, "`messageId` must be a non-empty string of at "
			    "most 128 characters");
			return -1;
		}
	}
	return 0;
}

/* {accepted[, messageId][, reason]}. */
static json_object *
midturn_answer(int ok, const char *id, const char *reason)
{
	json_object *r = xjson_object_new_object();

	json_object_object_add(r, "accepted", json_object_new_boolean(ok));
	if (id != NULL)
		json_object_object_add(r, "messageId", xjson_object_new_string(id));
	if (reason != NULL)
		json_object_object_add(r, "reason", xjson_object_new_string(reason));
	return r;
}

/* A retried id: the same message again is accepted, another refused. */
static json_object *
midturn_again(struct session *s, const char *id, const char *text,
    json_object *content, const char *mode)
{
	json_object *m, *c;
	size_t at;

	if ((m = midturn_find(s, id, &at)) != NULL) {
		c = NULL;
		(void)json_object_object_get_ex(m, "content", &c);
		if (strcmp(json_get_str(m, "text"), text) == 0 &&
		    strcmp(json_get_str(m, "eventDetailMode"), mode) == 0 &&
		    json_object_equal(c, content))
			return midturn_answer(1, id, NULL);
		return midturn_answer(0, NULL, NULL);
	}
	if (midturn_in(midturn_list(s, "settled"), id) ||
	    midturn_in(midturn_list(s, "promoted"), id))
		return midturn_answer(1, id, NULL);
	return NULL;
}

/* The message queued (or refused): upstream's answer. */
static json_object *
midturn_enqueue(struct session *s, const char *client, const char *want,
    char *text, json_object *content, const char *mode)
{
	char fresh[UUID_LEN + 1];
	const char *id = want;
	json_object *m, *d, *r;

	if (want != NULL && (r = midturn_again(s, want, text, content, mode)) != NULL)
		return r;
	if (prompts_active(s, NULL) == NULL)
		return midturn_answer(0, NULL, "session_idle");
	if (json_object_array_length(midturn_list(s, "queue")) >= MIDTURN_DEPTH_MAX)
		return midturn_answer(0, NULL, NULL);
	if (id == NULL) {
		uuid_new(fresh);
		id = fresh;
	}
	m = xjson_object_new_object();
	json_object_object_add(m, "messageId", xjson_object_new_string(id));
	json_object_object_add(m, "text", xjson_object_new_string(text));
	json_object_object_add(m, "eventDetailMode", xjson_object_new_string(mode));
	if (content != NULL)
		json_object_object_add(m, "content", json_object_get(content));
	if (client != NULL)
		json_object_object_add(m, "clientId", xjson_object_new_string(client));
	json_object_array_add(midturn_list(s, "queue"), m);
	if (client != NULL) {
		d = xjson_object_new_object();
		json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
		json_object_object_add(d, "promptId", xjson_object_new_string(id));
		json_object_object_add(d, "text", xjson_object_new_string(text));
		json_object_object_add(d, "queuedAt",
		    json_object_new_int64((int64_t)clock_wall_ms()));
		bus_publish(s->bus, "pending_prompt_added", d, id, client, 0);
	}
	return midturn_answer(1, id, NULL);
}

/* POST /session/:id/mid-turn-message. */
void
route_session_midturn_post(struct http_ctx *ctx)
{
	const char *want, *mode;
	json_object *content;
	struct session *s;
	char *text;

	if ((s = routes_session(ctx)) == NULL ||
	    midturn_checks(ctx, &want, &mode) == -1 ||
	    midturn_content(ctx, s, &content) == -1)
		return;
	if ((text = midturn_text(ctx, content != NULL)) == NULL) {
		json_object_put(content);
		return;
	}
	http_reply_json(ctx->req, 200, midturn_enqueue(s, ctx->client_id, want,
	    text, content, mode));
	free(text);
	json_object_put(content);
}

/* GET /session/:id/mid-turn-messages: upstream's snapshot. */
void
route_session_midturn_get(struct http_ctx *ctx)
{
	json_object *r, *msgs, *q, *m, *o, *c;
	struct session *s;
	size_t i, n;

	if ((s = routes_session(ctx)) == NULL)
		return;
	q = midturn_list(s, "queue");
	msgs = xjson_object_new_array();
	for (i = 0, n = json_object_array_length(q); i < n; i++) {
		m = json_object_array_get_idx(q, i);
		if (json_get_str(m, "clientId") == NULL)
			continue;	/* anonymous ones stay off, as upstream's */
		o = xjson_object_new_object();
		json_object_object_add(o, "messageId",
		    xjson_object_new_string(json_get_str(m, "messageId")));
		json_object_object_add(o, "text",
		    xjson_object_new_string(json_get_str(m, "text")));
		if (json_object_object_get_ex(m, "content", &c))
			json_object_object_add(o, "content", json_object_get(c));
		json_object_array_add(msgs, o);
	}
	r = xjson_object_new_object();
	json_object_object_add(r, "messages", msgs);
	json_object_object_add(r, "settledMessageIds",
	    json_object_get(midturn_list(s, "settled")));
	json_object_object_add(r, "promotedMessageIds",
	    json_object_get(midturn_list(s, "promoted")));
	http_reply_json(ctx->req, 200, r);
}

/* DELETE /session/:id/mid-turn-messages/:messageId: {removed}. */
void
route_session_midturn_delete(struct http_ctx *ctx)
{
	struct session *s;
	json_object *r, *m, *d;
	char *raw, *id;
	size_t at;
	int removed = 0;

	if ((s = routes_session(ctx)) == NULL)
		return;
	raw = xstrndup(ctx->path_tail, strcspn(ctx->path_tail, "/"));
	id = http_uridecode(raw);
	free(raw);
	if (id == NULL || id[0] == '\0') {
		free(id);
		midturn_bad(ctx, "`messageId` route parameter is required");
		return;
	}
	if ((m = midturn_find(s, id, &at)) != NULL) {
		d = xjson_object_new_object();
		json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
		json_object_object_add(d, "promptId", xjson_object_new_string(id));
		json_object_object_add(d, "state", xjson_object_new_string("removed"));
		bus_publish(s->bus, "pending_prompt_completed", d, id,
		    json_get_str(m, "clientId"), 0);
		json_object_array_del_idx(midturn_list(s, "queue"), at, 1);
		removed = 1;
	} else if (midturn_in(midturn_list(s, "promoted"), id))
		removed = prompts_remove(s, id);
	if (removed)
		midturn_remember(s, "settled", id);
	r = xjson_object_new_object();
	json_object_object_add(r, "removed", json_object_new_boolean(removed));
	http_reply_json(ctx->req, 200, r);
	free(id);
}
