/* SPDX-License-Identifier: ISC */
/*
 * attachments-ref.c: content blocks naming a session's attachments, as
 * upstream's daemon takes them in a prompt or a mid-turn message.  A
 * block carrying "attachmentId" must be a reference as the store answers
 * one ({type: image|resource, attachmentId, mimeType, size}, an image's
 * mimeType image/..., its size above 0), at most once a prompt (else 400
 * invalid_session_attachment_reference), and must match the stored file
 * by name, size, type and kind (else 410 session_attachment_gone).  As
 * the prompt goes to the agent each reference is replaced by the block
 * upstream makes of the file: an image {type, data (base64), mimeType},
 * or an embedded resource {type: resource, resource: {uri
 * attachment:///<id>, mimeType, text or blob (base64)}}.  A prompt's
 * references are distinct files of one session, so its expansion is
 * bounded by the session's bound on its attachments.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "errors.h"
#include "json.h"
#include "serve.h"
#include "utf8.h"
#include "xmalloc.h"

#define ATTACHMENT_GONE_TEXT	"[Attachment is no longer available]"

/* Whether b names an attachment at all (upstream: "attachmentId" in b). */
int
attachments_ref_is(json_object *b)
{
	return json_object_is_type(b, json_type_object) &&
	    json_object_object_get_ex(b, "attachmentId", NULL);
}

/* Whether b is shaped as upstream's isSessionAttachmentReference. */
static int
ref_shaped(json_object *b)
{
	const char *type = json_get_str(b, "type"), *id, *mime;
	json_object *v;
	int64_t size;
	int image;

	if (type == NULL || (strcmp(type, "image") != 0 &&
	    strcmp(type, "resource") != 0))
		return 0;
	image = type[0] == 'i';
	id = json_get_str(b, "attachmentId");
	mime = json_get_str(b, "mimeType");
	if (id == NULL || id[0] == '\0' || mime == NULL || mime[0] == '\0' ||
	    (image && strncmp(mime, "image/", 6) != 0))
		return 0;
	if (!json_object_object_get_ex(b, "size", &v) ||
	    !json_object_is_type(v, json_type_int))
		return 0;
	size = json_object_get_int64(v);
	return size >= 0 && size <= ((int64_t)1 << 53) - 1 &&
	    (!image || size > 0);
}

/* Whether the stored file matches reference b (upstream's assertStored). */
static int
ref_stored(const char *ws, const char *sid, json_object *b)
{
	const char *id = json_get_str(b, "attachmentId"), *mime;
	json_object *v;
	off_t size;
	int fd;

	if ((fd = attachments_open(ws, sid, id, &size)) == -1)
		return 0;
	close(fd);
	mime = attachments_type(id);
	json_object_object_get_ex(b, "size", &v);
	return (int64_t)size == json_object_get_int64(v) && strcmp(mime, json_get_str(b, "mimeType")) == 0 &&
	    strcmp(attachments_image_type(mime) ? "image" : "resource",
	    json_get_str(b, "type")) == 0;
}

/*
 * Check every reference in content (an array) against the session's
 * store: 0, or -1 with *e (400 invalid_session_attachment_reference,
 * 410 session_attachment_gone).  Other blocks pass untouched.
 */
int
attachments_ref_check(const char *ws, const char *sid, json_object *content,
    struct qerr **e)
{
	json_object *b, *c;
	const char *id;
	size_t i, j, n = json_object_array_length(content);

	for (i = 0; i < n; i++) {
		b = json_object_array_get_idx(content, i);
		if (!attachments_ref_is(b))
			continue;
		if (!ref_shaped(b)) {
			*e = qerr_new("invalid_session_attachment_reference", NULL);
			return -1;
		}
		id = json_get_str(b, "attachmentId");
		for (j = 0; j < i; j++) {
			c = json_object_array_get_idx(content, j);
			if (attachments_ref_is(c) && json_get_str(c,
			    "attachmentId") != NULL && strcmp(json_get_str(c,
			    "attachmentId"), id) == 0) {
				*e = qerr_new("invalid_session_attachment_reference",
				    "Session attachment referenced more than "
				    "once: %s", id);
				return -1;
			}
		}
		if (!ref_stored(ws, sid, b)) {
			*e = qerr_new("session_attachment_gone", "Unknown or "
			    "unavailable session attachment: %s", id);
			return -1;
		}
	}
	return 0;
}

/* Upstream's isTextMimeType. */
static int
text_type(const char *m)
{
	static const char *const exact[] = { "application/json",
	    "application/xml", "application/javascript",
	    "application/typescript", "application/yaml", "application/x-yaml",
	    "application/toml", NULL };
	size_t n = strlen(m);

	for (size_t i = 0; exact[i] != NULL; i++)
		if (strcmp(m, exact[i]) == 0)
			return 1;
	return strncmp(m, "text/", 5) == 0 ||
	    (n >= 5 && strcmp(m + n - 5, "+json") == 0) ||
	    (n >= 4 && strcmp(m + n - 4, "+xml") == 0);
}

/* Upstream's isTextAttachment: a text type, or plain UTF-8 of no kind. */
static int
text_data(const char *d, size_t n, const char *m)
{
	static const char *const binary[] = { "image/", "audio/", "video/",
	    "font/", NULL };

	if (text_type(m))
		return 1;
	for (size_t i = 0; binary[i] != NULL; i++)
		if (strncmp(m, binary[i], strlen(binary[i])) == 0)
			return 0;
	return strcmp(m, "application/pdf") != 0 && memchr(d, '\0', n) == NULL &&
	    utf8_valid(d, n);
}

/* d[0..n) in base64, a new JSON string. */
static json_object *
ref_base64(const char *d, size_t n)
{
	size_t len = base64_encoded_len(BASE64_STD, n);
	char *out = xmalloc(len + 1);
	json_object *o;

	(void)base64_encode(BASE64_STD, d, n, out, len + 1);
	o = xjson_object_new_string_len(out, (int)len);
	free(out);
	return o;
}

/* attachment:///<id, as encodeURIComponent leaves it> (caller frees). */
static char *
ref_uri(const char *id)
{
	static const char keep[] = "-_.!~*'()";
	const unsigned char *p;
	char *u = xmalloc(sizeof("attachment:///") + 3 * strlen(id)), *q;

	q = u + strlcpy(u, "attachment:///", 16);
	for (p = (const unsigned char *)id; *p != '\0'; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr(keep, *p) != NULL)
			*q++ = (char)*p;
		else
			q += snprintf(q, 4, "%%%02X", *p);
	}
	*q = '\0';
	return u;
}

/* The block upstream sends the agent for reference b: new, or NULL. */
static json_object *
ref_block(const char *ws, const char *sid, json_object *b)
{
	const char *id = json_get_str(b, "attachmentId"), *mime;
	json_object *o, *r;
	size_t n;
	char *d, *uri;

	if ((d = attachments_read(ws, sid, id, &n)) == NULL)
		return NULL;
	mime = attachments_type(id);
	o = xjson_object_new_object();
	if (strcmp(json_get_str(b, "type"), "image") == 0) {
		json_object_object_add(o, "type", xjson_object_new_string("image"));
		json_object_object_add(o, "data", ref_base64(d, n));
		json_object_object_add(o, "mimeType", xjson_object_new_string(mime));
		free(d);
		return o;
	}
	r = xjson_object_new_object();
	uri = ref_uri(id);
	json_object_object_add(r, "uri", xjson_object_new_string(uri));
	free(uri);
	json_object_object_add(r, "mimeType", xjson_object_new_string(mime));
	if (text_data(d, n, mime))
		json_object_object_add(r, "text",
		    xjson_object_new_string_len(d, (int)n));
	else
		json_object_object_add(r, "blob", ref_base64(d, n));
	free(d);
	json_object_object_add(o, "type", xjson_object_new_string("resource"));
	json_object_object_add(o, "resource", r);
	return o;
}

/*
 * content with each reference replaced by its block, into out; the
 * references kept into refs when not NULL.  With degrade a reference
 * that cannot be read is dropped (counted in *dropped); without, NULL
 * (out freed) with *e.  out, or NULL.
 */
static json_object *
ref_expand(const char *ws, const char *sid, json_object *content, int degrade,
    json_object *refs, size_t *dropped, struct qerr **e)
{
	json_object *out = xjson_object_new_array(), *b, *r;
	size_t i, n = json_object_array_length(content);

	for (i = 0; i < n; i++) {
		b = json_object_array_get_idx(content, i);
		if (!attachments_ref_is(b) || !ref_shaped(b)) {
			json_object_array_add(out, json_object_get(b));
			continue;
		}
		if ((r = ref_block(ws, sid, b)) != NULL) {
			json_object_array_add(out, r);
			if (refs != NULL)
				json_object_array_add(refs, json_object_get(b));
		} else if (degrade)
			(*dropped)++;
		else {
			json_object_put(out);
			*e = qerr_new("session_attachment_gone", "Unknown or "
			    "unavailable session attachment: %s",
			    json_get_str(b, "attachmentId"));
			return NULL;
		}
	}
	return out;
}

/*
 * content (an array) with each reference replaced by the block upstream
 * makes of its file: a new array, or NULL with *e (410
 * session_attachment_gone: removed since it was checked).
 */
json_object *
attachments_ref_resolve(const char *ws, const char *sid, json_object *content,
    struct qerr **e)
{
	return ref_expand(ws, sid, content, 0, NULL, NULL, e);
}

/* Upstream's marker: on the last text block, else a text block of its own. */
static void
ref_mark(json_object *out)
{
	json_object *b, *t;
	const char *text;
	char *joined;
	size_t i = json_object_array_length(out), ml = strlen(ATTACHMENT_GONE_TEXT);

	while (i-- > 0) {
		b = json_object_array_get_idx(out, i);
		if ((text = json_get_str(b, "type")) == NULL ||
		    strcmp(text, "text") != 0 ||
		    (text = json_get_str(b, "text")) == NULL)
			continue;
		if (strlen(text) >= ml &&
		    strcmp(text + strlen(text) - ml, ATTACHMENT_GONE_TEXT) == 0)
			return;
		xasprintf(&joined, "%s\n%s", text, ATTACHMENT_GONE_TEXT);
		json_object_object_add(b, "text", xjson_object_new_string(joined));
		free(joined);
		return;
	}
	t = xjson_object_new_object();
	json_object_object_add(t, "type", xjson_object_new_string("text"));
	json_object_object_add(t, "text", xjson_object_new_string(ATTACHMENT_GONE_TEXT));
	json_object_array_add(out, t);
}

/*
 * As attachments_ref_resolve, for a mid-turn message (drained or
 * promoted) as upstream degrades one: a reference that cannot be read is
 * dropped and the marker "[Attachment is no longer available]" added;
 * the references kept are added to refs when not NULL.  A new array.
 */
json_object *
attachments_ref_degrade(const char *ws, const char *sid, json_object *content,
    json_object *refs)
{
	json_object *out, *c;
	size_t dropped = 0;

	/* The marker goes on a block of our own, never on the caller's. */
	if (json_object_deep_copy(content, &c, NULL) != 0)
		c = json_object_get(content);
	out = ref_expand(ws, sid, c, 1, refs, &dropped, NULL);
	json_object_put(c);
	if (dropped > 0)
		ref_mark(out);
	return out;
}
