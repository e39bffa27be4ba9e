/* SPDX-License-Identifier: ISC */
/*
 * listing.c: GET /workspace/sessions, the persisted sessions of the
 * workspace, without ever blocking the event loop.
 *
 * A listing is a small job run a slice per loop turn: first the directory
 * is read and every name fstatat()ed (no open: a FIFO or a symlink is
 * skipped unseen), then listing-page.c sorts the entries newest first, cuts
 * them to ?limit, and opens only the kept ones (O_NOFOLLOW | O_NONBLOCK,
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
 * the cursor counts the matches.  A catalog member (listing_member(),
 * POST /sessions/catalog) is the same paged job whose page goes back to
 * routes-catalog.c instead of a client.
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
#define LIST_MAX_RUNNING	4	/* jobs at once; later ones wait their turn */
#define LIST_KEEP_POLL_US	2000	/* while the kept file loads */

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
	if (l->done != NULL)
		l->done(l->done_arg, NULL);
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

/* One slice of the directory; 1 when it is all read. */
static int
scan_slice(struct listing *l)
{
	struct dirent *de;
	int i;

	for (i = 0; i < LIST_SCAN_SLICE; i++) {
		if ((de = readdir(l->dir)) == NULL) {
			listing_page_cut(l);
			return 1;
		}
		scan_one(l, de->d_name);
	}
	return 0;
}

/* A member's page (its sessions and cursor) handed to its catalog. */
static void
listing_hand(struct listing *l)
{
	struct evbuffer *buf = evbuffer_new();
	listing_member_fn done = l->done;

	if (buf == NULL)
		fatalx("out of memory (evbuffer)");
	evbuffer_add_printf(buf, "\"sessions\":[");
	evbuffer_add_buffer(buf, l->out);
	evbuffer_add(buf, "]", 1);
	if (l->more)
		evbuffer_add_printf(buf, ",\"nextCursor\":\"%zu\"", l->cursor);
	l->done = NULL;
	done(l->done_arg, buf);
	listing_free(l);
	listing_next();
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
	} else if (!l->scanning && listing_page_read(l)) {
		if (l->done != NULL)
			listing_hand(l);
		else
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
	    (l->ev = evtimer_new(serve_base, listing_step, l)) == NULL)
		fatalx("out of memory (listing)");
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

	l = listing_new(req, workspace, skip, max);
	l->paged = paged;
	l->archived = archived;
	l->group = group != NULL ? xstrdup(group) : NULL;
	listing_filter_set(l, filter);
	listing_go(l);
}

void
listing_member(const char *workspace, size_t skip, size_t max, int archived,
    const char *group, const struct listing_filter *filter,
    listing_member_fn done, void *arg)
{
	struct listing *l;

	l = listing_new(NULL, workspace, skip, max);
	l->done = done;
	l->done_arg = arg;
	l->paged = 1;
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

	l = listing_new(req, workspace, 0, max);
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
