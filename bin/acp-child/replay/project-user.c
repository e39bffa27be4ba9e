/* SPDX-License-Identifier: ISC */
/*
 * project-user.c: user records through json-c, as the agent replays them:
 * their text and images, the displayText of tagged kinds and hooked
 * prompts, and what a prompt's attachments add: the attachment references
 * and resource links its systemPayload holds, each a user_message_chunk of
 * its own after the prompt's text, and the "@attachment:///ID" tokens the
 * daemon appended to the prompt taken off the text shown (the fast path
 * hands such records over whole).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "project-int.h"
#include "xmalloc.h"

#define ATTACH_SCHEME "@attachment:///"

/* Append s to b as JavaScript's encodeURIComponent writes it. */
static void
uri_component(struct jbuf *b, const char *s)
{
	static const char keep[] = "-_.!~*'()";
	char hex[4];

	for (; *s != '\0'; s++) {
		if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		    (*s >= '0' && *s <= '9') || strchr(keep, *s) != NULL)
			jbuf_put(b, s, 1);
		else {
			snprintf(hex, sizeof hex, "%%%02X", (unsigned char)*s);
			jbuf_put(b, hex, 3);
		}
	}
}

/* The tokens of the resource references of sp, one a line, into b;
   whether there were any. */
static int
attachment_tokens(json_object *sp, struct jbuf *b)
{
	json_object *refs = json_get(sp, "attachmentReferences", json_type_array), *ref;
	const char *type, *id;
	size_t i;
	int n = 0;

	for (i = 0; refs != NULL && i < json_object_array_length(refs); i++) {
		ref = json_object_array_get_idx(refs, i);
		if (!json_object_is_type(ref, json_type_object) ||
		    (type = json_get_str(ref, "type")) == NULL ||
		    strcmp(type, "resource") != 0 ||
		    (id = json_get_str(ref, "attachmentId")) == NULL)
			continue;
		if (n++ > 0)
			jbuf_put(b, "\n", 1);
		jbuf_puts(b, ATTACH_SCHEME);
		uri_component(b, id);
	}
	return n > 0;
}

/* display without the attachment tokens the daemon appended for the
   resource references of sp (new). */
static char *
strip_attachment_tokens(const char *display, json_object *sp)
{
	struct jbuf b = { 0 };
	size_t n = strlen(display), tn;
	char *out;

	if (!attachment_tokens(sp, &b) || b.oom) {
		free(b.p);
		return xstrdup(display);
	}
	tn = b.len;
	if (n == tn && memcmp(display, b.p, n) == 0)
		n = 0;
	else if (n >= tn + 2 && memcmp(display + n - tn, b.p, tn) == 0 &&
	    memcmp(display + n - tn - 2, "\n\n", 2) == 0)
		n -= tn + 2;
	free(b.p);
	out = xmalloc(n + 1);
	memcpy(out, display, n);
	out[n] = '\0';
	return out;
}

/* One attachment reference's update (meta taken), when it has the fields
   the agent requires. */
static int
reference_chunk(struct pctx *x, json_object *ref, json_object *meta)
{
	json_object *u, *content, *id, *mime, *size;
	const char *type = json_get_str(ref, "type");

	id = json_get(ref, "attachmentId", json_type_string);
	mime = json_get(ref, "mimeType", json_type_string);
	size = json_get(ref, "size", json_type_int);
	if (size == NULL)
		size = json_get(ref, "size", json_type_double);
	if (type == NULL || (strcmp(type, "image") != 0 &&
	    strcmp(type, "resource") != 0) || id == NULL || mime == NULL ||
	    size == NULL) {
		json_object_put(meta);
		return 0;
	}
	u = project_update("user_message_chunk");
	content = xjson_object_new_object();
	json_object_object_add(content, "type", xjson_object_new_string(type));
	json_object_object_add(content, "attachmentId", json_object_get(id));
	json_object_object_add(content, "mimeType", json_object_get(mime));
	json_object_object_add(content, "size", json_object_get(size));
	json_object_object_add(u, "content", content);
	return project_emit(x, u, meta);
}

/* A resource link's update (meta taken): the link as the prompt sent it,
   when it names a uri and a name. */
static int
link_chunk(struct pctx *x, json_object *link, json_object *meta)
{
	const char *type = json_get_str(link, "type"), *uri = json_get_str(link, "uri");
	json_object *u;

	if (type == NULL || strcmp(type, "resource_link") != 0 || uri == NULL ||
	    *uri == '\0' || json_get(link, "name", json_type_string) == NULL) {
		json_object_put(meta);
		return 0;
	}
	u = project_update("user_message_chunk");
	json_object_object_add(u, "content", json_object_get(link));
	return project_emit(x, u, meta);
}

/* The updates of the attachment references and resource links of user
   record r (subtype sub, may be NULL), after its text. */
static int
user_attachments(struct pctx *x, json_object *r, const char *sub)
{
	json_object *sp = json_get(r, "systemPayload", json_type_object), *a, *e;
	size_t i;
	int rc = 0;

	a = json_get(sp, "attachmentReferences", json_type_array);
	for (i = 0; rc == 0 && a != NULL && i < json_object_array_length(a); i++)
		if (json_object_is_type(e = json_object_array_get_idx(a, i), json_type_object))
			rc = reference_chunk(x, e, project_user_meta(r, sub, 0));
	a = json_get(sp, "resourceLinks", json_type_array);
	for (i = 0; rc == 0 && a != NULL && i < json_object_array_length(a); i++)
		if (json_object_is_type(e = json_object_array_get_idx(a, i), json_type_object))
			rc = link_chunk(x, e, project_user_meta(r, sub, 0));
	return rc;
}

/* A user image part (meta taken, may be NULL). */
static int
image_chunk(struct pctx *x, json_object *inl, json_object *meta)
{
	json_object *u = project_update("user_message_chunk"), *content = xjson_object_new_object();
	const char *mime = json_get_str(inl, "mimeType"), *data = json_get_str(inl, "data");

	json_object_object_add(content, "type", xjson_object_new_string("image"));
	json_object_object_add(content, "mimeType", xjson_object_new_string(mime ? mime : ""));
	json_object_object_add(content, "data", xjson_object_new_string(data ? data : ""));
	json_object_object_add(u, "content", content);
	return project_emit(x, u, meta);
}

/* A realtime message's source, the daemon's prompt id and the input
   annotations it saved, a mid-turn message's source. */
json_object *
project_user_meta(json_object *r, const char *sub, int own)
{
	json_object *m = xjson_object_new_object(), *sp, *v, *a, *e;
	const char *s;
	size_t i;

	sp = json_get(r, "systemPayload", json_type_object);
	if (own && strcmp(sub, "notification") == 0) {
		json_object_object_add(m, "source", xjson_object_new_string("background_notification"));
		json_object_object_add(m, "qwenDiscreteMessage", xjson_object_new_boolean(1));
		if ((v = json_get(sp, "backgroundTask", json_type_object)) != NULL)
			json_object_object_add(m, "backgroundTask", json_object_get(v));
		return m;
	}
	if (own && strcmp(sub, "cron") == 0) {
		json_object_object_add(m, "source", xjson_object_new_string("cron"));
		return m;
	}
	if (sub != NULL && strcmp(sub, "realtime_message") == 0) {
		json_object_object_add(m, "source", xjson_object_new_string("realtime_voice"));
		json_object_object_add(m, "qwenDiscreteMessage", xjson_object_new_boolean(1));
	}
	if ((s = json_get_str(r, "daemonPromptId")) != NULL && s[strspn(s, " \t\n\r")] != '\0')
		json_object_object_add(m, "promptId", xjson_object_new_string(s));
	if ((v = json_get(sp, "inputAnnotations", json_type_array)) != NULL) {
		a = xjson_object_new_array();
		for (i = 0; i < json_object_array_length(v); i++)
			if (json_object_is_type(e = json_object_array_get_idx(v, i), json_type_object))
				json_object_array_add(a, json_object_get(e));
		if (json_object_array_length(a) > 0)
			json_object_object_add(m, "inputAnnotations", a);
		else
			json_object_put(a);
	}
	if (sub != NULL && strcmp(sub, "mid_turn_user_message") == 0) {
		json_object_object_add(m, "source", xjson_object_new_string("mid_turn_message_injected"));
		json_object_object_add(m, "qwenDiscreteMessage", xjson_object_new_boolean(1));
	}
	if (json_object_object_length(m) == 0) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

/* A user subtype replayed as its displayText alone. */
static int
user_tagged(const char *sub)
{
	static const char *const tagged[] = { "notification", "cron",
	    "mid_turn_user_message", "goal_runtime", NULL };
	int k;

	for (k = 0; sub != NULL && tagged[k] != NULL; k++)
		if (strcmp(sub, tagged[k]) == 0)
			return 1;
	return 0;
}

/* A user record's parts: text and images; with display set, its text
   parts shown as display once, where the first one was (the agent's
   replaceTextPartsForDisplay). */
static int
user_parts(struct pctx *x, json_object *r, const char *sub, const char *display)
{
	json_object *msg = json_get(r, "message", json_type_object);
	json_object *parts = json_get(msg, "parts", json_type_array), *part, *v;
	size_t i;
	int shown = 0;

	for (i = 0; parts && i < json_object_array_length(parts); i++) {
		part = json_object_array_get_idx(parts, i);
		if ((v = json_get(part, "text", json_type_string)) != NULL) {
			if (display != NULL) {
				if (!shown++ && *display != '\0' && project_chunk(x,
				    "user_message_chunk", display, project_user_meta(r, sub, 0)) == -1)
					return -1;
			} else if (json_object_get_string_len(v) > 0 &&
			    project_chunk_obj(x, "user_message_chunk", v, project_user_meta(r, sub, 0)) == -1)
				return -1;
		} else if ((v = json_get(part, "inlineData", json_type_object)) != NULL) {
			if (image_chunk(x, v, project_user_meta(r, sub, 0)) == -1)
				return -1;
		}
	}
	if (display != NULL && !shown && *display != '\0')
		return project_chunk(x, "user_message_chunk", display, project_user_meta(r, sub, 0));
	return 0;
}

/* user records (3.8): text parts, images, or the displayText of tagged
   kinds and hooked prompts (a mid-turn message without one shows its
   attachments, or else its parts), without the attachment tokens the
   daemon appended; then the attachments. */
int
project_user(struct pctx *x, json_object *r)
{
	json_object *sp = json_get(r, "systemPayload", json_type_object);
	const char *sub = json_get_str(r, "subtype"), *s;
	char *display = NULL;
	size_t n = x->p->n;
	int rc = 0, hook;

	if ((s = json_get_str(sp, "displayText")) != NULL)
		display = strip_attachment_tokens(s, sp);
	if (user_tagged(sub)) {
		if (display != NULL && *display != '\0') {
			rc = project_chunk(x, "user_message_chunk", display, project_user_meta(r, sub, 1));
			goto attachments;
		}
		if (strcmp(sub, "mid_turn_user_message") != 0)
			goto out;
		if (display != NULL &&
		    ((rc = user_attachments(x, r, sub)) == -1 || x->p->n > n))
			goto out;
	}
	hook = display != NULL && json_object_object_get_ex(sp, "hookContext", NULL);
	rc = user_parts(x, r, sub, hook ? display : NULL);
attachments:
	if (rc == 0)
		rc = user_attachments(x, r, sub);
out:
	free(display);
	return rc;
}
