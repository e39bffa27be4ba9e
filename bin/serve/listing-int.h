/* SPDX-License-Identifier: ISC */
/* listing-int.h: the listing job, its entries and its per-file cache. */
#ifndef QWEN_SERVE_LISTING_INT_H
#define QWEN_SERVE_LISTING_INT_H

#include <sys/queue.h>
#include <sys/types.h>

#include <dirent.h>
#include <stdint.h>

#define LIST_JSON_FLAGS		(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* One transcript of a directory, as the scan saw it. */
struct list_ent {
	char		 id[SERVE_SESSION_ID_MAX + 1];
	int64_t		 size, mtime_ms, mtime_ns;
	dev_t		 dev;
	ino_t		 ino;
};

/* A listing job (listing.c runs it, listing-page.c makes its page). */
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
	listing_member_fn	 done;		/* a catalog member's: no reply */
	void			*done_arg;
};

/* ---- listing-page.c ---------------------------------------------------- */
/* The directory is read: sort l's entries and cut its page. */
void		 listing_page_cut(struct listing *l);
/* Read and encode a slice of the kept entries; 1 when all are. */
int		 listing_page_read(struct listing *l);

/* ---- listing-cache.c --------------------------------------------------- */
/* e's first prompt, last custom title (may be NULL) and searchable text,
   from the cache or the file in dfd (borrowed until the next call). */
const char	*listing_cache_prompt(int dfd, const struct list_ent *e);
const char	*listing_cache_title(int dfd, const struct list_ent *e);
const char	*listing_cache_search(int dfd, const struct list_ent *e);
/* e's last session_source (sourceType, sourceId) and parent_session
   (parentSessionId) records: each NULL when it has none (borrowed). */
struct list_source {
	char		*type, *id, *parent;
};
const struct list_source *listing_cache_source(int dfd, const struct list_ent *e);
/* Forget every cached file (when the cache is full, and at exit). */
void		 listing_cache_clear(void);

#endif
