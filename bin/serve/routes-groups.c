/* SPDX-License-Identifier: ISC */
/*
 * routes-groups.c: session groups and a session's organization (pinned,
 * group, color), upstream's routes: GET/POST /workspace/:ws/session-groups,
 * PATCH/DELETE /workspace/:ws/session-groups/:groupId (also under
 * /workspaces/), PATCH /session/:id/organization.
 *
 * They live in one small document per workspace, chats/.qwen-serve-
 * organization.json {v:1, groups:[...], sessions:{id: {...}}}, read at each
 * request and replaced whole (temp file, fsync, rename), so a kill leaves
 * the old document or the new one.  A document that does not parse is
 * never overwritten: the routes answer 500 until it is repaired.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/http.h>

#include "clock.h"
#include "errors.h"
#include "json.h"
#include "paths.h"
#include "serve.h"
#include "uuid.h"
#include "xmalloc.h"

#define ORG_FILE	".qwen-serve-organization.json"
#define ORG_FILE_MAX	(4 * 1024 * 1024)
#define ORG_GROUPS_MAX	100
#define ORG_NAME_MAX	64
#define ORG_SESSIONS_MAX 100000

static const char *const colors[] = { "red", "orange", "yellow", "green",
    "blue", "purple", NULL };

/* The document's path for workspace (caller frees), or NULL. */
static char *
org_path(const char *ws)
{
	char *dir = names_transcript_dir_ws(ws), *p;

	if (dir == NULL)
		return NULL;
	xasprintf(&p, "%s/%s", dir, ORG_FILE);
	free(dir);
	return p;
}

/* A fresh, empty document. */
static json_object *
org_empty(void)
{
	json_object *o = xjson_object_new_object();

	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(o, "groups", xjson_object_new_array());
	json_object_object_add(o, "sessions", xjson_object_new_object());
	return o;
}

/*
 * Workspace ws's document (caller puts): empty when there is none yet,
 * NULL when it is unreadable or damaged (then nothing may replace it).
 */
json_object *
routes_org_load(const char *ws)
{
	char *path = org_path(ws), *buf;
	json_object *o = NULL;
	struct stat st;
	ssize_t n;
	int fd;

	if (path == NULL)
		return NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	free(path);
	if (fd == -1)
		return errno == ENOENT ? org_empty() : NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < ORG_FILE_MAX) {
		buf = xmalloc((size_t)st.st_size + 1);
		if ((n = pread(fd, buf, (size_t)st.st_size, 0)) == st.st_size) {
			buf[n] = '\0';
			o = json_tokener_parse(buf);
		}
		free(buf);
	}
	close(fd);
	if (o != NULL && (json_get(o, "groups", json_type_array) == NULL ||
	    json_get(o, "sessions", json_type_object) == NULL)) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

/* Replace ws's document with doc: temp file, fsync, rename.  0 or -1. */
static int
org_save(const char *ws, json_object *doc)
{
	char *dir = names_transcript_dir_ws(ws), *tmp, *path;
	const char *s = json_object_to_json_string_ext(doc,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(s);
	int fd, rc = -1;

	if (dir == NULL || paths_mkdir_p(dir, 0700) == -1) {
		free(dir);
		return -1;
	}
	xasprintf(&tmp, "%s/.org.%08x.tmp", dir, arc4random());
	xasprintf(&path, "%s/%s", dir, ORG_FILE);
	free(dir);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) != -1) {
		if (write(fd, s, len) == (ssize_t)len && fsync(fd) == 0 &&
		    rename(tmp, path) == 0)
			rc = 0;
		close(fd);
		if (rc == -1)
			unlink(tmp);
	}
	free(tmp);
	free(path);
	return rc;
}

/* A preset color or #RRGGBB. */
static int
color_ok(const char *c, int presets_only)
{
	for (size_t i = 0; colors[i] != NULL; i++)
		if (strcmp(c, colors[i]) == 0)
			return 1;
	if (presets_only || strlen(c) != 7 || c[0] != '#')
		return 0;
	for (size_t i = 1; i < 7; i++)
		if (!isxdigit((unsigned char)c[i]))
			return 0;
	return 1;
}

/* The group named id in doc, or NULL (borrowed); *idx its place. */
static json_object *
group_find(json_object *doc, const char *id, size_t *idx)
{
	json_object *groups = json_get(doc, "groups", json_type_array), *g;
	const char *gid;

	for (size_t i = 0; i < json_object_array_length(groups); i++) {
		g = json_object_array_get_idx(groups, i);
		if ((gid = json_get_str(g, "id")) != NULL && strcmp(gid, id) == 0) {
			if (idx != NULL)
				*idx = i;
			return g;
		}
	}
	return NULL;
}

/* Whether doc (borrowed; NULL-safe) has a group named id. */
int
routes_org_has_group(json_object *doc, const char *id)
{
	return doc != NULL && group_find(doc, id, NULL) != NULL;
}

/* ws's document for a route, or NULL after answering 500. */
static json_object *
org_open(struct http_ctx *ctx)
{
	json_object *doc;

	if (routes_check_cwd(ctx) == -1)
		return NULL;
	if ((doc = routes_org_load(ctx->workspace)) == NULL)
		http_send_qerr(ctx->req, qerr_new("internal",
		    "The session organization document cannot be read"));
	return doc;
}

/* Save doc and answer status with body (both taken). */
static void
org_commit(struct http_ctx *ctx, const char *ws, json_object *doc, int status,
    json_object *body)
{
	if (org_save(ws, doc) == -1) {
		json_object_put(body);
		http_send_qerr(ctx->req, qerr_new("internal",
		    "The session organization document cannot be written"));
	} else
		http_reply_json(ctx->req, status, body);
	json_object_put(doc);
}

/* doc's {groups, colorOptions}, upstream's listGroups() (caller frees). */
json_object *
routes_org_groups(json_object *doc)
{
	json_object *o = xjson_object_new_object(), *c;

	json_object_object_add(o, "groups",
	    json_object_get(json_get(doc, "groups", json_type_array)));
	c = xjson_object_new_array();
	for (size_t i = 0; colors[i] != NULL; i++)
		json_object_array_add(c, xjson_object_new_string(colors[i]));
	json_object_object_add(o, "colorOptions", c);
	return o;
}

/* GET .../session-groups: {groups, colorOptions}. */
void
route_session_groups(struct http_ctx *ctx)
{
	json_object *doc, *o;

	if ((doc = org_open(ctx)) == NULL)
		return;
	o = routes_org_groups(doc);
	json_object_put(doc);
	http_reply_json(ctx->req, 200, o);
}

/* name and color of a group body (required when create), else 400. */
static int
group_fields(struct http_ctx *ctx, int create, const char **name,
    const char **color)
{
	*name = json_get_str(ctx->body, "name");
	*color = json_get_str(ctx->body, "color");
	if ((create && (*name == NULL || *color == NULL)) ||
	    (*name != NULL && ((*name)[0] == '\0' || strlen(*name) > ORG_NAME_MAX)) ||
	    (*color != NULL && !color_ok(*color, 0))) {
		http_send_qerr(ctx->req, qerr_new("bad_request", "A group needs a "
		    "name of 1 to %d bytes and a preset or #RRGGBB color",
		    ORG_NAME_MAX));
		return -1;
	}
	return 0;
}

/* POST .../session-groups {name, color}: 201 {group}. */
void
route_session_group_create(struct http_ctx *ctx)
{
	json_object *doc, *groups, *g, *o;
	char id[UUID_LEN + 1], now[CLOCK_ISO_LEN];
	const char *name, *color;

	if (group_fields(ctx, 1, &name, &color) == -1 || (doc = org_open(ctx)) == NULL)
		return;
	groups = json_get(doc, "groups", json_type_array);
	if (json_object_array_length(groups) >= ORG_GROUPS_MAX) {
		json_object_put(doc);
		http_send_qerr(ctx->req, qerr_new("bad_request",
		    "At most %d session groups", ORG_GROUPS_MAX));
		return;
	}
	uuid_new(id);
	clock_iso_now(now);
	g = xjson_object_new_object();
	json_object_object_add(g, "id", xjson_object_new_string(id));
	json_object_object_add(g, "name", xjson_object_new_string(name));
	json_object_object_add(g, "color", xjson_object_new_string(color));
	json_object_object_add(g, "order",
	    xjson_object_new_int64((int64_t)json_object_array_length(groups)));
	json_object_object_add(g, "createdAt", xjson_object_new_string(now));
	json_object_object_add(g, "updatedAt", xjson_object_new_string(now));
	json_object_array_add(groups, g);
	o = xjson_object_new_object();
	json_object_object_add(o, "group", json_object_get(g));
	org_commit(ctx, ctx->workspace, doc, 201, o);
}

/* The :groupId tail, or NULL after answering 404 group_not_found. */
static json_object *
group_of_path(struct http_ctx *ctx, json_object *doc, size_t *idx)
{
	json_object *g = NULL;
	char *id = http_uridecode(ctx->path_tail != NULL ? ctx->path_tail : "");

	if (id != NULL)
		g = group_find(doc, id, idx);
	free(id);
	if (g == NULL) {
		json_object_put(doc);
		http_send_qerr(ctx->req, qerr_new("group_not_found", NULL));
	}
	return g;
}

/* PATCH .../session-groups/:groupId {name?, color?, order?}: {group}. */
void
route_session_group_update(struct http_ctx *ctx)
{
	json_object *doc, *g, *o, *v;
	const char *name, *color;
	char now[CLOCK_ISO_LEN];

	if (group_fields(ctx, 0, &name, &color) == -1)
		return;
	if ((v = json_get(ctx->body, "order", json_type_int)) == NULL &&
	    json_object_object_get_ex(ctx->body, "order", NULL)) {
		http_send_qerr(ctx->req, qerr_new("bad_request", "order must be an integer"));
		return;
	}
	if ((doc = org_open(ctx)) == NULL || (g = group_of_path(ctx, doc, NULL)) == NULL)
		return;
	if (name != NULL)
		json_object_object_add(g, "name", xjson_object_new_string(name));
	if (color != NULL)
		json_object_object_add(g, "color", xjson_object_new_string(color));
	if (v != NULL)
		json_object_object_add(g, "order",
		    xjson_object_new_int64(json_object_get_int64(v)));
	clock_iso_now(now);
	json_object_object_add(g, "updatedAt", xjson_object_new_string(now));
	o = xjson_object_new_object();
	json_object_object_add(o, "group", json_object_get(g));
	org_commit(ctx, ctx->workspace, doc, 200, o);
}

/* DELETE .../session-groups/:groupId: {deleted: true}; its sessions ungrouped. */
void
route_session_group_delete(struct http_ctx *ctx)
{
	json_object *doc, *o, *gv;
	const char *gid;
	size_t idx;

	if ((doc = org_open(ctx)) == NULL || group_of_path(ctx, doc, &idx) == NULL)
		return;
	gid = json_get_str(json_object_array_get_idx(json_get(doc, "groups",
	    json_type_array), idx), "id");
	json_object_object_foreach(json_get(doc, "sessions", json_type_object), k, v) {
		(void)k;
		if ((gv = json_get(v, "groupId", json_type_string)) != NULL &&
		    strcmp(json_object_get_string(gv), gid) == 0)
			json_object_object_add(v, "groupId", NULL);
	}
	json_object_array_del_idx(json_get(doc, "groups", json_type_array), idx, 1);
	o = xjson_object_new_object();
	json_object_object_add(o, "deleted", xjson_object_new_boolean(1));
	org_commit(ctx, ctx->workspace, doc, 200, o);
}

/* Check an organization body against doc; -1 after answering 400/404. */
static int
org_fields(struct http_ctx *ctx, json_object *doc)
{
	json_object *v;
	const char *why = NULL;

	if (json_object_object_get_ex(ctx->body, "isPinned", &v) &&
	    !json_object_is_type(v, json_type_boolean))
		why = "isPinned must be a boolean";
	if (json_object_object_get_ex(ctx->body, "color", &v) && v != NULL &&
	    (!json_object_is_type(v, json_type_string) ||
	    !color_ok(json_object_get_string(v), 1)))
		why = "color must be a preset color or null";
	if (json_object_object_get_ex(ctx->body, "groupId", &v) && v != NULL &&
	    !json_object_is_type(v, json_type_string))
		why = "groupId must be a string or null";
	if (why != NULL) {
		http_send_qerr(ctx->req, qerr_new("invalid_session_organization",
		    "%s", why));
		return -1;
	}
	if (v != NULL && json_object_is_type(v, json_type_string) &&
	    group_find(doc, json_object_get_string(v), NULL) == NULL) {
		http_send_qerr(ctx->req, qerr_new("group_not_found", NULL));
		return -1;
	}
	return 0;
}

/* A new entry past ORG_SESSIONS_MAX is refused: -1 after answering. */
static int
org_full(struct http_ctx *ctx, json_object *doc)
{
	json_object *sessions = json_get(doc, "sessions", json_type_object);

	if (json_object_object_length(sessions) < ORG_SESSIONS_MAX ||
	    json_get(sessions, ctx->path_id, json_type_object) != NULL)
		return 0;
	http_send_qerr(ctx->req, qerr_new("bad_request",
	    "At most %d organized sessions", ORG_SESSIONS_MAX));
	return -1;
}

/* The session's organization entry in doc (made when absent; borrowed). */
static json_object *
org_entry(json_object *doc, const char *id)
{
	json_object *sessions = json_get(doc, "sessions", json_type_object), *e;

	if ((e = json_get(sessions, id, json_type_object)) == NULL) {
		e = xjson_object_new_object();
		json_object_object_add(e, "groupId", NULL);
		json_object_object_add(e, "isPinned", xjson_object_new_boolean(0));
		json_object_object_add(sessions, id, e);
	}
	return e;
}

/* PATCH /session/:id/organization {isPinned?, groupId?, color?}. */
void
route_session_organization(struct http_ctx *ctx)
{
	const char *ws = catalog_workspace_of(ctx->path_id);
	json_object *doc, *e, *v, *o;
	char now[CLOCK_ISO_LEN];

	if (ws == NULL) {
		http_error(ctx->req, "session_not_found", ctx->path_id);
		return;
	}
	if ((doc = routes_org_load(ws)) == NULL) {
		http_send_qerr(ctx->req, qerr_new("internal",
		    "The session organization document cannot be read"));
		return;
	}
	if (org_fields(ctx, doc) == -1 || org_full(ctx, doc) == -1) {
		json_object_put(doc);
		return;
	}
	e = org_entry(doc, ctx->path_id);
	clock_iso_now(now);
	if (json_object_object_get_ex(ctx->body, "isPinned", &v)) {
		json_object_object_add(e, "isPinned", json_object_get(v));
		if (json_object_get_boolean(v))
			json_object_object_add(e, "pinnedAt", xjson_object_new_string(now));
		else
			json_object_object_del(e, "pinnedAt");
	}
	if (json_object_object_get_ex(ctx->body, "groupId", &v))
		json_object_object_add(e, "groupId", json_object_get(v));
	if (json_object_object_get_ex(ctx->body, "color", &v))
		json_object_object_add(e, "color", json_object_get(v));
	json_object_object_add(e, "updatedAt", xjson_object_new_string(now));
	o = NULL;
	if (json_object_deep_copy(e, &o, NULL) == -1 || o == NULL)
		fatalx("out of memory (json)");
	json_object_object_add(o, "sessionId", xjson_object_new_string(ctx->path_id));
	org_commit(ctx, ws, doc, 200, o);
}
