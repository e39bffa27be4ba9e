/* SPDX-License-Identifier: ISC */
/*
 * listing-page.c: a listing's page once its directory is read: the
 * entries sorted newest first (view=organized: pinned first, kept by
 * ?group), the page cut by cursor and size before any transcript is
 * opened, and the kept entries read and encoded a slice at a time as
 * upstream's session summaries (a search keeps the matches, upstream's
 * parent and source filters count them for the cursor).
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/stat.h>

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "clock.h"
#include "json.h"
#include "serve.h"
#include "listing-int.h"
#include "xmalloc.h"

#define LIST_READ_SLICE		16	/* transcripts read per loop turn */

static int
by_mtime_desc(const void *a, const void *b)
{
	const struct list_ent *x = a, *y = b;

	return x->mtime_ns < y->mtime_ns ? 1 : x->mtime_ns > y->mtime_ns ? -1 :
	    strcmp(x->id, y->id);
}

/* id's organization record in the listing's document, or NULL. */
static json_object *
entry_org_of(const struct listing *l, const char *id)
{
	return json_get(json_get_obj(l->org, "sessions"), id, json_type_object);
}

/* Whether id is pinned (upstream's isPinned === true). */
static int
entry_pinned(const struct listing *l, const char *id)
{
	json_object *v = json_get(entry_org_of(l, id), "isPinned",
	    json_type_boolean);

	return v != NULL && json_object_get_boolean(v);
}

/* Whether id passes the organized view's group filter, as upstream's. */
static int
entry_in_group(const struct listing *l, const char *id)
{
	json_object *org = entry_org_of(l, id);
	const char *gid = json_get_str(org, "groupId");
	int colored = json_get_str(org, "color") != NULL;

	if (strcmp(l->group, "all") == 0)
		return 1;
	if (strcmp(l->group, "pinned") == 0)
		return entry_pinned(l, id);
	if (strcmp(l->group, "ungrouped") == 0)
		return gid == NULL && !colored;
	return !colored && gid != NULL && strcmp(gid, l->group) == 0;
}

/* The organized order: pinned first, then newest first, then by id. */
static const struct listing *sort_listing;

static int
by_organized(const void *a, const void *b)
{
	const struct list_ent *x = a, *y = b;
	int px = entry_pinned(sort_listing, x->id), py = entry_pinned(sort_listing, y->id);

	return px != py ? py - px : by_mtime_desc(a, b);
}

/* view=organized: keep the group's entries, in the organized order. */
static void
organize(struct listing *l)
{
	size_t i, k = 0;

	for (i = 0; i < l->n; i++)
		if (entry_in_group(l, l->e[i].id))
			l->e[k++] = l->e[i];
	l->n = k;
	sort_listing = l;
	qsort(l->e, l->n, sizeof *l->e, by_organized);
	sort_listing = NULL;
}


/* e's organization (pinned, group, color), when it has one, into o. */
static void
entry_org(struct listing *l, const struct list_ent *e, json_object *o)
{
	json_object *org = entry_org_of(l, e->id);
	static const char *const keys[] = { "isPinned", "pinnedAt", "groupId",
	    "color", NULL };
	json_object *v;

	if (org == NULL)
		return;
	for (size_t i = 0; keys[i] != NULL; i++)
		if (json_object_object_get_ex(org, keys[i], &v))
			json_object_object_add(o, keys[i], json_object_get(v));
}

/* e's sourceType, sourceId and parentSessionId, when it has them, into o. */
static void
entry_source(struct listing *l, const struct list_ent *e, json_object *o)
{
	const struct list_source *src = listing_cache_source(dirfd(l->dir), e);

	if (src->type != NULL)
		json_object_object_add(o, "sourceType", xjson_object_new_string(src->type));
	if (src->id != NULL)
		json_object_object_add(o, "sourceId", xjson_object_new_string(src->id));
	if (src->parent != NULL)
		json_object_object_add(o, "parentSessionId",
		    xjson_object_new_string(src->parent));
}

/*
 * Whether e passes upstream's filters: its parent exactly, its source
 * type (default: none or qwen-live, as upstream's) and its source id.
 */
static int
entry_matches(struct listing *l, const struct list_ent *e)
{
	const struct list_source *src = listing_cache_source(dirfd(l->dir), e);
	const char *t = src->type;

	if (l->parent != NULL && (src->parent == NULL ||
	    strcmp(src->parent, l->parent) != 0))
		return 0;
	if (l->stype != NULL && !(t != NULL && strcmp(t, l->stype) == 0) &&
	    !(strcmp(l->stype, "default") == 0 && (t == NULL ||
	    strcmp(t, "qwen-live") == 0)))
		return 0;
	return l->sid == NULL || (src->id != NULL && strcmp(src->id, l->sid) == 0);
}

/* Entry e as upstream's session summary (and our own fields). */
static json_object *
entry_json(struct listing *l, const struct list_ent *e)
{
	json_object *o = xjson_object_new_object();
	const char *text = listing_cache_prompt(dirfd(l->dir), e);
	const char *title = listing_cache_title(dirfd(l->dir), e);
	char iso[CLOCK_ISO_LEN];

	json_object_object_add(o, "sessionId", xjson_object_new_string(e->id));
	json_object_object_add(o, "size", xjson_object_new_int64(e->size));
	json_object_object_add(o, "mtime", xjson_object_new_int64(e->mtime_ms));
	json_object_object_add(o, "firstPrompt",
	    text != NULL ? xjson_object_new_string(text) : NULL);
	json_object_object_add(o, "live",
	    xjson_object_new_boolean(sessions_find(e->id) != NULL));
	/* The fields of upstream's session summary. */
	clock_iso_time((uint64_t)e->mtime_ms, iso);
	json_object_object_add(o, "workspaceCwd", xjson_object_new_string(l->workspace));
	json_object_object_add(o, "updatedAt", xjson_object_new_string(iso));
	/* A custom title (PATCH .../metadata) wins over the first prompt. */
	if (title != NULL || text != NULL)
		json_object_object_add(o, "displayName",
		    xjson_object_new_string(title != NULL ? title : text));
	if (title != NULL)
		json_object_object_add(o, "titleSource", xjson_object_new_string("manual"));
	entry_org(l, e, o);
	entry_source(l, e, o);
	json_object_object_add(o, "isArchived", xjson_object_new_boolean(l->archived));
	return o;
}

/* Append o (taken) to the encoded array (a 10000-entry tree encoded at the
   end would hold the loop for a while). */
static void
encode_json(struct listing *l, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, LIST_JSON_FLAGS);

	if (evbuffer_get_length(l->out) > 0)
		evbuffer_add(l->out, ",", 1);
	evbuffer_add(l->out, s, strlen(s));
	json_object_put(o);
}

/* A search: e encoded as {session, snippet} when it matches. */
static void
search_entry(struct listing *l, const struct list_ent *e)
{
	int dfd = dirfd(l->dir);
	json_object *o;
	char *snip;

	if (!search_match(listing_cache_search(dfd, e), l->query, &snip))
		return;
	o = xjson_object_new_object();
	json_object_object_add(o, "session", entry_json(l, e));
	json_object_object_add(o, "snippet", xjson_object_new_string(snip));
	free(snip);
	encode_json(l, o);
	if (++l->found == l->max)
		l->next = l->n;		/* enough: the rest is older */
}

/* A filtered page: e counted, skipped or encoded when it matches. */
static void
filter_entry(struct listing *l, const struct list_ent *e)
{
	if (!entry_matches(l, e))
		return;
	if (l->skipped < l->skip) {
		l->skipped++;
		return;
	}
	if (l->found == l->max) {
		l->more = 1;		/* one more than the page: a next one */
		l->cursor = l->skip + l->max;
		l->next = l->n;
		return;
	}
	l->found++;
	encode_json(l, entry_json(l, e));
}

/* One slice of the kept entries; 1 when the list is complete. */
int
listing_page_read(struct listing *l)
{
	const struct list_ent *e;
	int i;

	for (i = 0; i < LIST_READ_SLICE && l->next < l->n; i++) {
		e = &l->e[l->next++];
		if (l->query != NULL)
			search_entry(l, e);
		else if (l->filtered)
			filter_entry(l, e);
		else
			encode_json(l, entry_json(l, e));
	}
	return l->next == l->n;
}

/* The directory is read: sort, and cut the page before any read. */
void
listing_page_cut(struct listing *l)
{
	if (l->group != NULL)
		organize(l);
	else
		qsort(l->e, l->n, sizeof *l->e, by_mtime_desc);
	if (l->query != NULL || l->filtered)
		return;		/* every entry is looked at */
	/* The page (?limit, or cursor and size) before any read. */
	l->next = l->skip < l->n ? l->skip : l->n;
	l->more = l->n - l->next > l->max;
	if (l->more)
		l->n = l->next + l->max;
	l->cursor = l->n;
}
