/* SPDX-License-Identifier: ISC */
/*
 * routes-catalog.c: POST /sessions/catalog, upstream's session catalog
 * batch: a page of each of up to 20 workspaces ("all", or each named by
 * its id or cwd, with its own cursor) in one answer.  The body is checked
 * as strictly as upstream's schema (unknown keys refused); each member is
 * a listing.c job whose page comes back here; a member that cannot be
 * read (no such workspace, a bad cursor, an unknown group, a page over
 * 512 KiB) carries its own {code, message, status} and the batch is
 * still 200.  Nothing is written: a read has no half state.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "errors.h"
#include "json.h"
#include "serve.h"
#include "xmalloc.h"

#define CATALOG_WS_MAX		20		/* members in one request */
#define CATALOG_MEMBER_MAX	(512 * 1024)	/* bytes of one member */
#define CATALOG_SEL_MAX		4096		/* a workspace selector */
#define CATALOG_CURSOR_MAX	16384
#define CATALOG_SIZE_DEFAULT	20		/* upstream's page size */
#define CATALOG_SIZE_MAX	100
#define CATALOG_NAME_MAX	256		/* a group or parent id */
#define CATALOG_SOURCE_ID_MAX	256
#define CATALOG_JSON_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

struct catalog;

/* One member: its selector, its workspace once resolved, its answer. */
struct catalog_slot {
	struct catalog	*c;
	char		*sel;
	const char	*ws;		/* conf's, NULL when unresolved */
	size_t		 wsi;
	struct evbuffer	*out;
};

struct catalog {
	struct evhttp_request	*req;
	struct catalog_slot	*slot;
	size_t			 n, pending;
	int			 groups;	/* includeGroups */
	int			 gone;		/* a job freed unfinished */
};

/* The catalog's options, read from the body (borrowed strings). */
struct catalog_opts {
	size_t			 size;
	int			 archived, organized;
	const char		*group;
	struct listing_filter	 f;
};

/* Whether o is an object whose keys are all in keys (upstream's strict). */
static int
keys_only(json_object *o, const char *const *keys)
{
	size_t i;

	if (!json_object_is_type(o, json_type_object))
		return 0;
	json_object_object_foreach(o, k, v) {
		(void)v;
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], k) == 0)
				break;
		if (keys[i] == NULL)
			return 0;
	}
	return 1;
}

/* o's member key as a string of min..max bytes; absent is 1, bad is 0. */
static int
opt_str(json_object *o, const char *key, size_t min, size_t max,
    const char **out)
{
	json_object *v;
	size_t n;

	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v))
		return 1;
	if (!json_object_is_type(v, json_type_string))
		return 0;
	n = (size_t)json_object_get_string_len(v);
	if (n < min || n > max)
		return 0;
	*out = json_object_get_string(v);
	return 1;
}

/* The workspaces member: "all", or 1..20 {workspace, cursor?} objects. */
static int
check_workspaces(json_object *w)
{
	static const char *const keys[] = { "workspace", "cursor", NULL };
	const char *s;
	size_t i, n;

	if (json_object_is_type(w, json_type_string))
		return strcmp(json_object_get_string(w), "all") == 0;
	if (!json_object_is_type(w, json_type_array) ||
	    (n = json_object_array_length(w)) < 1 || n > CATALOG_WS_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(w, i);

		if (!keys_only(e, keys) ||
		    !opt_str(e, "workspace", 1, CATALOG_SEL_MAX, &s) || s == NULL ||
		    !opt_str(e, "cursor", 0, CATALOG_CURSOR_MAX, &s))
			return 0;
	}
	return 1;
}

/* options.size: an integer from 1 to 100 (upstream's number().int()). */
static int
check_size(json_object *o, size_t *size)
{
	json_object *v;
	double d;

	*size = CATALOG_SIZE_DEFAULT;
	if (!json_object_object_get_ex(o, "size", &v))
		return 1;
	if (!json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_double))
		return 0;
	d = json_object_get_double(v);
	if (d != (double)(long long)d || d < 1 || d > CATALOG_SIZE_MAX)
		return 0;
	*size = (size_t)d;
	return 1;
}

/* The options member, as upstream's schema types it, into *op. */
static int
check_options(json_object *o, struct catalog_opts *op)
{
	static const char *const keys[] = { "size", "archiveState", "view",
	    "group", "parentSessionId", "sourceType", "sourceId", NULL };
	const char *arch, *view;

	memset(op, 0, sizeof *op);
	op->size = CATALOG_SIZE_DEFAULT;
	if (o == NULL)
		return 1;
	if (!keys_only(o, keys) || !check_size(o, &op->size) ||
	    !opt_str(o, "archiveState", 0, SIZE_MAX, &arch) ||
	    !opt_str(o, "view", 0, SIZE_MAX, &view) ||
	    !opt_str(o, "group", 1, CATALOG_NAME_MAX, &op->group) ||
	    !opt_str(o, "parentSessionId", 1, CATALOG_NAME_MAX, &op->f.parent) ||
	    !opt_str(o, "sourceType", 0, SIZE_MAX, &op->f.source_type) ||
	    !opt_str(o, "sourceId", 0, SIZE_MAX, &op->f.source_id))
		return 0;
	if (arch != NULL && strcmp(arch, "active") != 0 &&
	    strcmp(arch, "archived") != 0)
		return 0;
	if (view != NULL && strcmp(view, "organized") != 0)
		return 0;
	op->archived = arch != NULL && strcmp(arch, "archived") == 0;
	op->organized = view != NULL;
	return 1;
}

/* upstream's parseSessionSource: NULL, or why the source is refused. */
static const char *
source_error(const struct listing_filter *f)
{
	const char *t = f->source_type, *id = f->source_id;
	size_t n;

	if (t == NULL && id == NULL)
		return NULL;
	if (t == NULL || t[0] < 'a' || t[0] > 'z' || (n = strlen(t)) > 64 ||
	    strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n)
		return "`sourceType` must match [a-z][a-z0-9_-]{0,63} when provided";
	if (id == NULL)
		return NULL;
	n = strlen(id);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)id[i] <= 31 || id[i] == 127)
			n = 0;
	if (n == 0 || n > CATALOG_SOURCE_ID_MAX)
		return "`sourceId` must be a non-empty string of at most 256 "
		    "characters without control characters";
	return NULL;
}

/* 400 invalid_session_catalog_request (with msg, or the default). */
static int
bad_request(struct http_ctx *ctx, const char *msg)
{
	http_send_qerr(ctx->req, msg != NULL ? qerr_new(
	    "invalid_session_catalog_request", "%s", msg) :
	    qerr_new("invalid_session_catalog_request", NULL));
	return -1;
}

/* The whole body checked as upstream's route checks it; -1 after a 400. */
static int
check_body(struct http_ctx *ctx, struct catalog_opts *op)
{
	static const char *const keys[] = { "workspaces", "options",
	    "includeGroups", NULL };
	json_object *b = ctx->body, *w, *o = NULL, *g;
	const char *why;

	if (!keys_only(b, keys) || !json_object_object_get_ex(b, "workspaces", &w) ||
	    !check_workspaces(w) ||
	    (json_object_object_get_ex(b, "options", &o) &&
	    !json_object_is_type(o, json_type_object)) ||
	    !check_options(o, op) ||
	    (json_object_object_get_ex(b, "includeGroups", &g) &&
	    !json_object_is_type(g, json_type_boolean)))
		return bad_request(ctx, NULL);
	if ((why = source_error(&op->f)) != NULL)
		return bad_request(ctx, why);
	if ((op->group != NULL && !op->organized) ||
	    (op->f.parent != NULL && op->organized))
		return bad_request(ctx, "Group filters require organized view; "
		    "parent filters cannot use it.");
	return 0;
}

/* The workspace whose id or cwd sel is (upstream's selector), or NULL. */
static const char *
catalog_resolve(const char *sel, size_t *wsi)
{
	char id[32], *real = NULL;
	size_t i;

	for (i = 0; i < conf.n_workspaces; i++) {
		names_workspace_id(i, id, sizeof(id));
		if (strcmp(sel, id) == 0 || strcmp(sel, conf.workspaces[i]) == 0)
			break;
	}
	if (i == conf.n_workspaces && sel[0] == '/' &&
	    (real = realpath(sel, NULL)) != NULL)
		for (i = 0; i < conf.n_workspaces; i++)
			if (strcmp(real, conf.workspaces[i]) == 0)
				break;
	free(real);
	if (i == conf.n_workspaces)
		return NULL;
	*wsi = i;
	return conf.workspaces[i];
}

/* Add s to b as a JSON string. */
static void
put_str(struct evbuffer *b, const char *s)
{
	json_object *o = xjson_object_new_string(s);
	const char *t = json_object_to_json_string_ext(o, CATALOG_JSON_FLAGS);

	evbuffer_add(b, t, strlen(t));
	json_object_put(o);
}

/* A new member buffer opened with its selector (and its workspace). */
static struct evbuffer *
member_open(const struct catalog_slot *s)
{
	struct evbuffer *b = evbuffer_new();
	char id[32];

	if (b == NULL)
		fatalx("out of memory (evbuffer)");
	evbuffer_add_printf(b, "{\"workspace\":");
	put_str(b, s->sel);
	if (s->ws != NULL) {
		names_workspace_id(s->wsi, id, sizeof(id));
		evbuffer_add_printf(b, ",\"workspaceId\":\"%s\",\"cwd\":", id);
		put_str(b, s->ws);
	}
	return b;
}

/* s's member as upstream's failedMember: {..., error: {code, message,
   status}}. */
static void
member_fail(struct catalog_slot *s, int status, const char *code,
    const char *msg)
{
	if (s->out != NULL)
		evbuffer_free(s->out);
	s->out = member_open(s);
	evbuffer_add_printf(s->out, ",\"error\":{\"code\":\"%s\",\"message\":",
	    code);
	put_str(s->out, msg);
	evbuffer_add_printf(s->out, ",\"status\":%d}}", status);
}

/* Answer {workspaces: [...]} and free the catalog. */
static void
catalog_end(struct catalog *c)
{
	struct evbuffer *buf = evbuffer_new();
	size_t i;

	if (buf == NULL)
		fatalx("out of memory (evbuffer)");
	evbuffer_add_printf(buf, "{\"workspaces\":[");
	for (i = 0; i < c->n; i++) {
		if (i > 0)
			evbuffer_add(buf, ",", 1);
		if (c->slot[i].out != NULL)
			evbuffer_add_buffer(buf, c->slot[i].out);
	}
	evbuffer_add(buf, "]}", 2);
	if (!c->gone) {
		gate_cors_headers(c->req);
		http_set_header(c->req, "Content-Type", "application/json");
		http_write_size(c->req, evbuffer_get_length(buf));
		http_reply_raw(c->req, 200, buf);
	}
	evbuffer_free(buf);
	for (i = 0; i < c->n; i++) {
		free(c->slot[i].sel);
		if (c->slot[i].out != NULL)
			evbuffer_free(c->slot[i].out);
	}
	free(c->slot);
	free(c);
}

/* The workspace's {groups, colorOptions} appended to member b. */
static int
member_groups(struct evbuffer *b, const char *ws)
{
	json_object *doc = routes_org_load(ws), *g;
	const char *s;

	if (doc == NULL)
		return -1;
	g = routes_org_groups(doc);
	s = json_object_to_json_string_ext(g, CATALOG_JSON_FLAGS);
	evbuffer_add_printf(b, ",\"groups\":");
	evbuffer_add(b, s, strlen(s));
	json_object_put(g);
	json_object_put(doc);
	return 0;
}

/* A member's page from its listing job (NULL: freed at exit). */
static void
catalog_done(void *arg, struct evbuffer *page)
{
	struct catalog_slot *s = arg;
	struct catalog *c = s->c;

	if (page == NULL)
		c->gone = 1;
	else {
		s->out = member_open(s);
		evbuffer_add(s->out, ",", 1);
		evbuffer_add_buffer(s->out, page);
		evbuffer_free(page);
		if (c->groups && member_groups(s->out, s->ws) == -1)
			member_fail(s, 500, "session_organization_store_unreadable",
			    "The session organization document cannot be read");
		else {
			evbuffer_add(s->out, "}", 1);
			if (evbuffer_get_length(s->out) > CATALOG_MEMBER_MAX)
				member_fail(s, 413, "catalog_response_too_large",
				    "Catalog page exceeds 512 KiB; reduce size "
				    "or omit groups.");
		}
	}
	if (--c->pending == 0)
		catalog_end(c);
}

/* Member s's cursor: "" or absent is the first page; -1 when bad. */
static int
slot_cursor(const char *cur, size_t *skip)
{
	const char *errstr = NULL;

	*skip = 0;
	if (cur == NULL || cur[0] == '\0')
		return 0;
	*skip = (size_t)strtonum(cur, 0, INT_MAX, &errstr);
	return errstr == NULL ? 0 : -1;
}

/* Whether ws knows group (the special ones always); -1: unreadable. */
static int
slot_group_known(const char *ws, const char *group)
{
	json_object *doc;
	int known;

	if (strcmp(group, "all") == 0 || strcmp(group, "pinned") == 0 ||
	    strcmp(group, "ungrouped") == 0)
		return 1;
	if ((doc = routes_org_load(ws)) == NULL)
		return -1;
	known = routes_org_has_group(doc, group);
	json_object_put(doc);
	return known;
}

/* Start member s (cursor cur), or settle it as failed. */
static void
slot_start(struct catalog_slot *s, const char *cur,
    const struct catalog_opts *op)
{
	const char *group = op->organized ? (op->group != NULL ? op->group :
	    "all") : NULL;
	size_t skip;
	int known = 1;

	if ((s->ws = catalog_resolve(s->sel, &s->wsi)) == NULL)
		member_fail(s, 404, "workspace_not_found",
		    "Workspace is not registered with this daemon.");
	else if (slot_cursor(cur, &skip) == -1)
		member_fail(s, 400, "invalid_cursor", "Invalid cursor");
	else if (group != NULL && (known = slot_group_known(s->ws, group)) != 1)
		member_fail(s, known == 0 ? 404 : 500, known == 0 ?
		    "group_not_found" : "session_organization_store_unreadable",
		    known == 0 ? "Session group not found" :
		    "The session organization document cannot be read");
	else {
		s->c->pending++;
		listing_member(s->ws, skip, op->size, op->archived, group,
		    &op->f, catalog_done, s);
	}
}

/* POST /sessions/catalog: every member's page, one answer. */
void
route_sessions_catalog(struct http_ctx *ctx)
{
	struct catalog_opts op;
	struct catalog *c;
	json_object *w, *e, *g;
	size_t i;
	int all;

	if (check_body(ctx, &op) == -1)
		return;
	json_object_object_get_ex(ctx->body, "workspaces", &w);
	all = json_object_is_type(w, json_type_string);
	if (all && conf.n_workspaces > CATALOG_WS_MAX) {
		http_error(ctx->req, "too_many_workspaces", NULL);
		return;
	}
	c = xcalloc(1, sizeof *c);
	c->req = ctx->req;
	c->n = all ? conf.n_workspaces : json_object_array_length(w);
	c->slot = xcalloc(c->n > 0 ? c->n : 1, sizeof *c->slot);
	c->groups = json_object_object_get_ex(ctx->body, "includeGroups", &g) &&
	    json_object_get_boolean(g);
	c->pending = 1;		/* held until every member is started */
	for (i = 0; i < c->n; i++) {
		c->slot[i].c = c;
		e = all ? NULL : json_object_array_get_idx(w, i);
		c->slot[i].sel = xstrdup(all ? conf.workspaces[i] :
		    json_get_str(e, "workspace"));
		slot_start(&c->slot[i], all ? NULL : json_get_str(e, "cursor"), &op);
	}
	if (--c->pending == 0)
		catalog_end(c);
}
