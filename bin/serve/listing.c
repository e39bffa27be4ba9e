/* SPDX-License-Identifier: ISC */
/*
 * listing.c: GET /workspace/sessions, the persisted sessions of the
 * workspace, without ever blocking the event loop.
 *
 * A listing is a small job run a slice per loop turn: first the directory
 * is read and every name fstatat()ed (no open: a FIFO or a symlink is
 * skipped unseen), then the entries are sorted newest first and cut to
 * ?limit, and only the kept ones are opened (O_NOFOLLOW | O_NONBLOCK,
 * regular by fstat of the descriptor) for their first prompt and title
 * (listing-cache.c keeps them by the file's identity, size and mtime,
 * and listing-keep.c on disk, read before the first job).
 * A search is the same job over every entry, keeping those whose
 * searchable text holds the query; ?archiveState=archived lists
 * chats/archive/; organized sessions carry routes-groups.c's fields, and
 * upstream's view=organized puts the pinned ones first and filters by
 * ?group (all, pinned, ungrouped or a group's id) before the page is cut.
 * upstream's ?parentSessionId, ?sourceType and ?sourceId keep the sessions
 * whose transcript names that parent or source (its parent_session and
 * session_source records): like a search, every entry is looked at, and
 * the cursor counts the matches.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "clock.h"
#include "errors.h"
#include "json.h"
#include "log.h"
#include "serve.h"
#include "listing-int.h"
#include "xmalloc.h"

#define LIST_SCAN_SLICE		256	/* directory entries per loop turn */
#define LIST_READ_SLICE		16	/* transcripts read per loop turn */
#define LIST_MAX_RUNNING	4	/* jobs at once; later ones wait their turn */
#define LIST_KEEP_POLL_US	2000	/* while the kept file loads */
#define LIST_JSON_FLAGS		(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

struct listing {
	TAILQ_ENTRY(listing)	 entry;
	struct evhttp_request	*req;
	struct event		*ev;
	DIR			*dir;
	struct list_ent		*e;
	size_t			 n, cap, max, next, skip;
	int			 running, scanning;
	int			 paged;		/* GET /workspace/:ws/sessions */
	int			 more;		/* entries past the page */
	int			 archived;	/* chats/archive/ */
	char			*group;		/* view=organized: its group filter */
	char			*query;		/* a search: matches only */
	char			*parent, *stype, *sid;	/* upstream's filters */
	int			 filtered;	/* any of them */
	size_t			 skipped;	/* matches before the page */
	size_t			 cursor;	/* the next page's, when more */
	json_object		*org;		/* routes-groups.c's document */
	size_t			 found;
	struct evbuffer		*out;		/* the sessions array, encoded */
	const char		*workspace;	/* whose sessions (conf's) */
};

static TAILQ_HEAD(, listing) listings = TAILQ_HEAD_INITIALIZER(listings);
static int nrunning;

static void	listing_run(struct listing *);

/* Start the oldest waiting job, if there is one. */
static void
listing_next(void)
{
	struct listing *l;

	TAILQ_FOREACH(l, &listings, entry)
		if (!l->running) {
			listing_run(l);
			return;
		}
}

static void
listing_free(struct listing *l)
{
	TAILQ_REMOVE(&listings, l, entry);
	if (l->running)
		nrunning--;
	if (l->ev != NULL)
		event_free(l->ev);
	if (l->dir != NULL)
		closedir(l->dir);
	if (l->out != NULL)
		evbuffer_free(l->out);
	free(l->query);
	free(l->parent);
	free(l->stype);
	free(l->sid);
	free(l->group);
	json_object_put(l->org);
	free(l->e);
	free(l);
}

/* Note one directory entry when it names a regular transcript. */
static void
scan_one(struct listing *l, const char *name)
{
	size_t nlen = strlen(name);
	struct list_ent *e;
	struct stat st;

	if (name[0] == '.' || nlen <= 6 || nlen - 6 > SERVE_SESSION_ID_MAX ||
	    strcmp(name + nlen - 6, ".jsonl") != 0 ||
	    (nlen > 13 && strcmp(name + nlen - 13, ".ledger.jsonl") == 0))
		return;
	if (fstatat(dirfd(l->dir), name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISREG(st.st_mode))
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->e = xreallocarray(l->e, l->cap, sizeof *l->e);
	}
	e = &l->e[l->n++];
	memcpy(e->id, name, nlen - 6);
	e->id[nlen - 6] = '\0';
	e->size = (int64_t)st.st_size;
	e->mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	e->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
}

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

/* One slice of the directory; 1 when it is all read. */
static int
scan_slice(struct listing *l)
{
	struct dirent *de;
	int i;

	for (i = 0; i < LIST_SCAN_SLICE; i++) {
		if ((de = readdir(l->dir)) == NULL) {
			if (l->group != NULL)
				organize(l);
			else
				qsort(l->e, l->n, sizeof *l->e, by_mtime_desc);
			if (l->query != NULL || l->filtered)
				return 1;	/* every entry is looked at */
			/* The page (?limit, or cursor and size) before any read. */
			l->next = l->skip < l->n ? l->skip : l->n;
			l->more = l->n - l->next > l->max;
			if (l->more)
				l->n = l->next + l->max;
			l->cursor = l->n;
			return 1;
		}
		scan_one(l, de->d_name);
	}
	return 0;
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
static int
read_slice(struct listing *l)
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

/* Reply with what is listed and end the job. */
static void
listing_reply(struct listing *l)
{
	struct evbuffer *buf = evbuffer_new();
	json_object *ws = xjson_object_new_string(l->workspace);
	const char *s = json_object_to_json_string_ext(ws, LIST_JSON_FLAGS);

	if (buf == NULL)
		fatalx("out of memory (evbuffer)");
	if (l->query != NULL)
		evbuffer_add_printf(buf, "{\"workspaceCwd\":%s,\"results\":[", s);
	else
		evbuffer_add_printf(buf, "{\"workspaceCwd\":%s,\"sessions\":[", s);
	json_object_put(ws);
	evbuffer_add_buffer(buf, l->out);
	evbuffer_add(buf, "]", 1);
	/* The cursor is the offset of the next page in the newest-first order. */
	if (l->paged && l->more)
		evbuffer_add_printf(buf, ",\"nextCursor\":\"%zu\"", l->cursor);
	evbuffer_add(buf, "}", 1);
	gate_cors_headers(l->req);
	http_set_header(l->req, "Content-Type", "application/json");
	http_write_size(l->req, 1024 * 1024);
	http_reply_raw(l->req, 200, buf);
	evbuffer_free(buf);
	listing_free(l);
	listing_next();
}

/* A loop turn of the job: one slice, then let the loop run. */
static void
listing_step(evutil_socket_t fd, short what, void *arg)
{
	struct listing *l = arg;
	struct timeval zero = { 0, 0 };

	(void)fd;
	(void)what;
	if (l->scanning && scan_slice(l))
		l->scanning = 0;
	else if (!l->scanning && !listing_keep_ready()) {
		/* What a restart kept is on its way: nothing read before it. */
		struct timeval wait = { 0, LIST_KEEP_POLL_US };

		event_add(l->ev, &wait);
		return;
	} else if (!l->scanning && read_slice(l)) {
		listing_reply(l);
		return;
	}
	event_add(l->ev, &zero);
}

/* Open the directory and take the job's first slice on the next turn. */
static void
listing_run(struct listing *l)
{
	struct timeval zero = { 0, 0 };
	char *dir = names_transcript_dir_ws(l->workspace), *sub;

	if (dir != NULL && l->archived) {
		xasprintf(&sub, "%s/archive", dir);
		free(dir);
		dir = sub;
	}
	l->running = 1;
	nrunning++;
	listing_keep_load();	/* the first time: what a restart kept */
	l->org = routes_org_load(l->workspace);
	if (dir == NULL || (l->dir = opendir(dir)) == NULL)
		l->scanning = 0;	/* no chats directory yet: no sessions */
	free(dir);
	event_add(l->ev, &zero);
}

/*
 * A listing holds a directory and up to 10000 entries: a few run at once,
 * the others wait (a little memory each) rather than all growing together.
 */
static struct listing *
listing_new(struct evhttp_request *req, const char *workspace, size_t skip,
    size_t max)
{
	struct listing *l;

	l = xcalloc(1, sizeof *l);
	TAILQ_INSERT_TAIL(&listings, l, entry);
	if ((l->out = evbuffer_new()) == NULL ||
	    (l->ev = evtimer_new(serve_base, listing_step, l)) == NULL) {
		listing_free(l);
		http_send_qerr(req, qerr_new("internal", NULL));
		return NULL;
	}
	l->req = req;
	l->workspace = workspace;
	l->max = max;
	l->skip = skip;
	l->scanning = 1;
	return l;
}

/* Run l now, or once a running job ends. */
static void
listing_go(struct listing *l)
{
	if (nrunning < LIST_MAX_RUNNING)
		listing_run(l);
}

/* Copy upstream's filters (any may be NULL) into l. */
static void
listing_filter_set(struct listing *l, const struct listing_filter *f)
{
	if (f == NULL)
		return;
	l->parent = f->parent != NULL ? xstrdup(f->parent) : NULL;
	l->stype = f->source_type != NULL ? xstrdup(f->source_type) : NULL;
	l->sid = f->source_id != NULL ? xstrdup(f->source_id) : NULL;
	l->filtered = l->parent != NULL || l->stype != NULL || l->sid != NULL;
}

void
listing_start(struct evhttp_request *req, const char *workspace, size_t skip,
    size_t max, int paged, int archived, const char *group,
    const struct listing_filter *filter)
{
	struct listing *l;

	if ((l = listing_new(req, workspace, skip, max)) == NULL)
		return;
	l->paged = paged;
	l->archived = archived;
	l->group = group != NULL ? xstrdup(group) : NULL;
	listing_filter_set(l, filter);
	listing_go(l);
}

/*
 * A search is a listing that looks at every entry, newest first, and
 * keeps the first max that match q.
 */
void
listing_search(struct evhttp_request *req, const char *workspace,
    const char *q, size_t max)
{
	struct listing *l;

	if ((l = listing_new(req, workspace, 0, max)) == NULL)
		return;
	l->query = xstrdup(q);
	listing_go(l);
}

/* At exit, after the HTTP server is gone: jobs, the kept file's last
   write, and the cache. */
void
listing_free_all(void)
{
	while (!TAILQ_EMPTY(&listings))
		listing_free(TAILQ_FIRST(&listings));
	listing_keep_free();
	listing_cache_clear();
}
