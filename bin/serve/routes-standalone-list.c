/* SPDX-License-Identifier: ISC */
/*
 * routes-standalone-list.c: GET /standalone/sessions (a page of them,
 * newest first) and GET /standalone/sessions/:id, each summary the
 * workspace listing's entry for the session's own directory.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <json-c/json.h>

#include "clock.h"
#include "errors.h"
#include "json.h"
#include "serve.h"
#include "xmalloc.h"


/* A listing of some standalone sessions, one directory at a time. */
struct sa_list {
	struct evhttp_request	*req;
	char			**ids;
	size_t			 n, next;
	int			 archived;	/* the state listed */
	int			 one;		/* GET :id */
	size_t			 skip, size;
	json_object		*got;		/* summaries so far */
};

static void	sa_next(struct sa_list *);

static void
sa_free(struct sa_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->ids[i]);
	free(l->ids);
	json_object_put(l->got);
	free(l);
}

/* A live session not yet written: its summary from the session itself. */
static json_object *
sa_live_summary(const char *id, const char *dir)
{
	struct session *s = sessions_find(id);
	json_object *o;
	char iso[CLOCK_ISO_LEN];

	if (s == NULL)
		return NULL;
	o = xjson_object_new_object();
	clock_iso_time(s->created_wall_ms, iso);
	json_object_object_add(o, "sessionId", xjson_object_new_string(id));
	json_object_object_add(o, "size", xjson_object_new_int64(0));
	json_object_object_add(o, "mtime", xjson_object_new_int64(s->created_wall_ms));
	json_object_object_add(o, "live", xjson_object_new_boolean(1));
	json_object_object_add(o, "workspaceCwd", xjson_object_new_string(dir));
	json_object_object_add(o, "updatedAt", xjson_object_new_string(iso));
	json_object_object_add(o, "isArchived", xjson_object_new_boolean(0));
	return o;
}

/* The listing's page for one directory: its entry, kind members added. */
static void
sa_got(void *arg, struct evbuffer *page)
{
	struct sa_list *l = arg;
	const char *id = l->ids[l->next], *dir = standalone_dir(id, 1);
	json_object *doc = NULL, *arr, *o = NULL;
	char *text;

	if (page == NULL) {	/* freed at exit */
		sa_free(l);
		return;
	}
	evbuffer_add(page, "}", 1);
	evbuffer_prepend(page, "{", 1);
	text = xstrndup((const char *)evbuffer_pullup(page, -1),
	    evbuffer_get_length(page));
	evbuffer_free(page);	/* ours, as a catalog's member page is */
	doc = json_tokener_parse(text);
	free(text);
	if ((arr = json_get(doc, "sessions", json_type_array)) != NULL &&
	    json_object_array_length(arr) > 0)
		o = json_object_get(json_object_array_get_idx(arr, 0));
	json_object_put(doc);
	if (o == NULL && !l->archived && dir != NULL)
		o = sa_live_summary(id, dir);
	if (o != NULL) {
		standalone_kind_add(o);
		json_object_array_add(l->got, o);
	}
	l->next++;
	sa_next(l);
}

static int64_t
sa_mtime(json_object *o)
{
	return json_object_get_int64(json_get(o, "mtime", json_type_int));
}

static int
sa_cmp(const void *a, const void *b)
{
	int64_t x = sa_mtime(*(json_object *const *)a);
	int64_t y = sa_mtime(*(json_object *const *)b);

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The answer: one summary (404 when none), or the sorted page. */
static void
sa_reply(struct sa_list *l)
{
	json_object *o, *page;
	size_t n = json_object_array_length(l->got), i;
	char cur[32];

	if (l->one) {
		if (n == 0)
			http_error(l->req, "standalone_session_not_found", NULL);
		else
			http_reply_json(l->req, 200, json_object_get(
			    json_object_array_get_idx(l->got, 0)));
		return;
	}
	json_object_array_sort(l->got, sa_cmp);
	o = xjson_object_new_object();
	page = xjson_object_new_array();
	for (i = l->skip; i < n && i < l->skip + l->size; i++)
		json_object_array_add(page,
		    json_object_get(json_object_array_get_idx(l->got, i)));
	json_object_object_add(o, "sessions", page);
	if (i < n) {
		snprintf(cur, sizeof(cur), "%zu", i);
		json_object_object_add(o, "nextCursor", xjson_object_new_string(cur));
	}
	http_reply_json(l->req, 200, o);
}

/* The next directory of the listed state, or the answer. */
static void
sa_next(struct sa_list *l)
{
	const char *dir;
	int where;

	for (; l->next < l->n; l->next++) {
		if ((dir = standalone_dir(l->ids[l->next], 1)) == NULL)
			continue;
		where = catalog_where(dir, l->ids[l->next]);
		if (l->archived ? (where & CATALOG_ARCHIVED) != 0 :
		    (where & CATALOG_ACTIVE) != 0 || where == 0) {
			listing_member(dir, 0, 1, l->archived, NULL, NULL,
			    sa_got, l);
			return;
		}
	}
	sa_reply(l);
	sa_free(l);
}

static struct sa_list *
sa_new(struct http_ctx *ctx)
{
	struct sa_list *l = xcalloc(1, sizeof(*l));

	l->req = ctx->req;
	l->got = xjson_object_new_array();
	l->size = STANDALONE_PAGE_MAX;
	return l;
}

/* GET /standalone/sessions/:id: its summary, or 404. */
void
route_standalone_get(struct http_ctx *ctx)
{
	struct sa_list *l;
	const char *dir;

	if (!standalone_known(ctx->path_id) ||
	    (dir = standalone_dir(ctx->path_id, 1)) == NULL) {
		http_error(ctx->req, "standalone_session_not_found", ctx->path_id);
		return;
	}
	l = sa_new(ctx);
	l->one = 1;
	l->ids = xcalloc(1, sizeof(*l->ids));
	l->ids[0] = xstrdup(ctx->path_id);
	l->n = 1;
	l->archived = catalog_where(dir, ctx->path_id) == CATALOG_ARCHIVED;
	sa_next(l);
}

/* A decimal in [lo, hi], or -1. */
static long long
sa_number(const char *s, long long lo, long long hi)
{
	const char *errstr;
	long long n;

	for (const char *c = s; *c != '\0'; c++)
		if (*c < '0' || *c > '9')
			return -1;
	n = strtonum(s, lo, hi, &errstr);
	return errstr != NULL ? -1 : n;
}

/* GET /standalone/sessions?size=&cursor=&archiveState=active|archived. */
void
route_standalone_list(struct http_ctx *ctx)
{
	const char *size = http_query(ctx, "size"), *cur = http_query(ctx, "cursor");
	const char *st = http_query(ctx, "archiveState");
	struct sa_list *l;
	long long n = STANDALONE_PAGE_MAX, skip = 0;

	static const char *const keys[] = { "cursor", "size", "archiveState",
	    NULL };

	if (route_standalone_query_only(ctx, keys) == -1)
		return;
	if (size != NULL && (n = sa_number(size, 1, STANDALONE_PAGE_MAX)) == -1) {
		route_standalone_bad(ctx, "`size` must be an integer between 1 and 100.");
		return;
	}
	if (st != NULL && strcmp(st, "active") != 0 && strcmp(st, "archived") != 0) {
		route_standalone_bad(ctx, "`archiveState` must be `active` or `archived`.");
		return;
	}
	if (cur != NULL && (skip = sa_number(cur, 0, STANDALONE_MAX)) == -1) {
		http_error(ctx->req, "invalid_cursor", NULL);
		return;
	}
	l = sa_new(ctx);
	l->size = (size_t)n;
	l->skip = (size_t)skip;
	l->archived = st != NULL && strcmp(st, "archived") == 0;
	l->n = standalone_scan(&l->ids, STANDALONE_MAX);
	sa_next(l);
}
