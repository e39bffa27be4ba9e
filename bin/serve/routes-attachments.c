/* SPDX-License-Identifier: ISC */
/*
 * routes-attachments.c: a live session's attachments (attachments.c), as
 * upstream serves them.  POST /session/:id/attachments?name=NAME takes
 * the raw body (not JSON; at most 8 MiB) of the request's Content-Type:
 * 201 with the stored reference {type, attachmentId, mimeType, size};
 * GET lists them {attachments: [...]}; GET .../attachments/:id sends the
 * file as it is (its type from its name, nosniff, as an attachment);
 * DELETE .../attachments/:id answers {removed}.  The session must be
 * live in this daemon and a client id given must be registered on it.
 */
#include "config.h"

#include <sys/uio.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "serve.h"
#include "xmalloc.h"

/* An answer {error} with the catalog code for status. */
static void
refuse(struct http_ctx *ctx, int status, const char *msg)
{
	const char *code = status == 413 ? "payload_too_large" :
	    status == 404 ? "not_found" : status == 400 ? "bad_request" :
	    "internal";

	http_send_qerr(ctx->req, qerr_new(code, "%s", msg));
}

/* The request's Content-Type without parameters, lower-cased: caller frees. */
static char *
content_type(struct http_ctx *ctx)
{
	const char *h = http_header(ctx->req, "Content-Type");
	char *t, *p;
	size_t n;

	if (h == NULL)
		return NULL;
	while (isspace((unsigned char)*h))
		h++;
	n = strcspn(h, ";");
	while (n > 0 && isspace((unsigned char)h[n - 1]))
		n--;
	if (n == 0)
		return NULL;
	t = xstrndup(h, n);
	for (p = t; *p != '\0'; p++)
		*p = (char)tolower((unsigned char)*p);
	return t;
}

/* Upstream's 400 for an empty image, before the store is asked. */
static int
empty_image(const char *type, size_t len)
{
	return len == 0 && attachments_image_type(type);
}

/* POST /session/:id/attachments?name=NAME, the raw body. */
void
route_session_attachment_put(struct http_ctx *ctx)
{
	struct iovec *iov = NULL;
	struct session *s;
	json_object *ref;
	const char *name;
	char *type, *cause = NULL;
	size_t len;
	int n, status;

	if ((s = routes_session(ctx)) == NULL)
		return;
	name = ctx->query != NULL ? http_query(ctx, "name") : NULL;
	type = content_type(ctx);
	n = http_body_iov(ctx->req, &iov, &len);
	if (name == NULL || type == NULL) {
		free(iov);
		free(type);
		refuse(ctx, 400, "request body, Content-Type, and name query "
		    "parameter are required");
		return;
	}
	if (len > ATTACHMENT_ITEM_MAX) {
		free(iov);
		free(type);
		refuse(ctx, 413, "Request body too large (max 8 MiB)");
		return;
	}
	if (empty_image(type, len)) {
		free(iov);
		free(type);
		refuse(ctx, 400, "Image attachments cannot be empty");
		return;
	}
	ref = attachments_put(channel_workspace(s->channel), s->id, name, type,
	    iov, n, len, &status, &cause);
	free(iov);
	free(type);
	if (ref == NULL)
		refuse(ctx, status, cause != NULL ? cause : "Internal error");
	else
		http_reply_json(ctx->req, 201, ref);
	free(cause);
}

/* GET /session/:id/attachments. */
void
route_session_attachments(struct http_ctx *ctx)
{
	struct session *s;
	json_object *a, *o;
	char *cause = NULL;

	if ((s = routes_session(ctx)) == NULL)
		return;
	if ((a = attachments_list(channel_workspace(s->channel), s->id,
	    &cause)) == NULL) {
		refuse(ctx, 500, cause != NULL ? cause : "Internal error");
		free(cause);
		return;
	}
	o = xjson_object_new_object();
	json_object_object_add(o, "attachments", a);
	http_reply_json(ctx->req, 200, o);
}

/* The attachment id of the path (decoded; caller frees), or NULL after 400. */
static char *
path_attachment(struct http_ctx *ctx)
{
	char *raw = xstrndup(ctx->path_tail, strcspn(ctx->path_tail, "/"));
	char *id = http_uridecode(raw);

	free(raw);
	if (id == NULL || id[0] == '\0') {
		free(id);
		refuse(ctx, 400, "`attachmentId` is required");
		return NULL;
	}
	return id;
}

/* GET /session/:id/attachments/:attachmentId: the file as it is. */
void
route_session_attachment_read(struct http_ctx *ctx)
{
	struct session *s;
	char *id;
	off_t size;
	int fd;

	if ((s = routes_session(ctx)) == NULL || (id = path_attachment(ctx)) == NULL)
		return;
	fd = attachments_open(channel_workspace(s->channel), s->id, id, &size);
	if (fd == -1) {
		refuse(ctx, errno == ENOENT ? 404 : 500, errno == ENOENT ?
		    "session attachment not found" : "Internal error");
		free(id);
		return;
	}
	http_set_header(ctx->req, "Content-Type", attachments_type(id));
	http_set_header(ctx->req, "Cache-Control", "private, max-age=300");
	http_set_header(ctx->req, "Content-Disposition", "attachment");
	http_set_header(ctx->req, "X-Content-Type-Options", "nosniff");
	free(id);
	http_reply_file(ctx->req, 200, fd, size);
}

/* DELETE /session/:id/attachments/:attachmentId: {removed}. */
void
route_session_attachment_remove(struct http_ctx *ctx)
{
	struct session *s;
	json_object *o;
	char *id;
	int rc;

	if ((s = routes_session(ctx)) == NULL || (id = path_attachment(ctx)) == NULL)
		return;
	rc = attachments_remove(channel_workspace(s->channel), s->id, id);
	free(id);
	if (rc == -1) {
		refuse(ctx, 500, "Internal error");
		return;
	}
	o = xjson_object_new_object();
	json_object_object_add(o, "removed", xjson_object_new_boolean(rc == 1));
	http_reply_json(ctx->req, 200, o);
}
