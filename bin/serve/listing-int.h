/* SPDX-License-Identifier: ISC */
/* listing-int.h: the listing job, its entries, its per-file cache and its
   kept copy. */
#ifndef QWEN_SERVE_LISTING_INT_H
#define QWEN_SERVE_LISTING_INT_H

#include <sys/queue.h>
#include <sys/types.h>
#include <sys/tree.h>

#include <dirent.h>
#include <stdint.h>

#define LIST_JSON_FLAGS		(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define LIST_CACHE_MAX		65536	/* cached files */
#define LIST_PROMPT_BYTES	200	/* a first prompt's, at most */
#define LIST_TEXT_MAX		4096	/* a kept title or source string, at most */

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

/* A transcript's last session_source (sourceType, sourceId) and
   parent_session (parentSessionId) records: each NULL when it has none. */
struct list_source {
	char		*type, *id, *parent;
};

/*
 * What the listing knows of one file, by (dev, inode): valid while the
 * file keeps its size and mtime, and extended from done when it only grew
 * (its first and last digested bytes before done unchanged).
 */
struct prompt_cache {
	RB_ENTRY(prompt_cache)	 entry;
	dev_t			 dev;
	ino_t			 ino;
	int64_t			 size, mtime_ns;
	int64_t			 done;		/* whole lines read: [0, done) */
	uint64_t		 head, tail;	/* digests of [0, done) */
	char			*text;		/* first prompt, NULL: none */
	char			*search;	/* searchable text (search.c) */
	int			 search_full;	/* it takes no more */
	char			*title;		/* last custom title, or NULL */
	struct list_source	 src;		/* source and parent */
	char			*block;		/* loaded: its strings, in one */
	int			 seen;		/* looked at since the last keep */
	unsigned		 unseen;	/* keeps it was not looked at */
};

/* ---- listing-cache.c --------------------------------------------------- */
/* e's first prompt, last custom title (may be NULL) and searchable text,
   from the cache or the file in dfd (borrowed until the next call). */
const char	*listing_cache_prompt(int dfd, const struct list_ent *e);
const char	*listing_cache_title(int dfd, const struct list_ent *e);
const char	*listing_cache_search(int dfd, const struct list_ent *e);
/* e's source and parent session (borrowed). */
const struct list_source *listing_cache_source(int dfd, const struct list_ent *e);
/* Forget every cached file (when the cache is full, and at exit). */
void		 listing_cache_clear(void);
/* The cached files, in (dev, inode) order (borrowed). */
struct prompt_cache *listing_cache_first(void);
struct prompt_cache *listing_cache_next(struct prompt_cache *);
/* Add p, read back from the kept file (takes ownership): 0, or -1 when
   the cache is full or holds the file already (p is freed). */
int		 listing_cache_insert(struct prompt_cache *p);
/* p and what it holds, freed (NULL-safe). */
void		 listing_cache_entry_free(struct prompt_cache *p);
/* The digests of fd's [0, done): its first and last 4 KiB (bytes read
   are counted).  0, or -1 when they cannot be read. */
int		 listing_cache_digest(int fd, int64_t done, uint64_t *head,
		    uint64_t *tail);

/* ---- listing-keep.c ---------------------------------------------------- */
/* The kept file: its name, in a directory of its own under the cache's. */
#define KEEP_DIR	"listing"
#define KEEP_NAME	"sessions.kept"
#define KEEP_STAGE	".kept-"
#define KEEP_MAGIC	"QWLSTKP1"
#define KEEP_ENDIAN	0x01020304u
#define KEEP_VERSION	2u
#define KEEP_MAX_BYTES	(256u * 1024 * 1024)	/* the whole file */
#define KEEP_NSTR	6
#define KEEP_NONE	UINT32_MAX	/* a NULL string */
#define KEEP_HAS_SEARCH_FULL	0x1

/* The file's header; the body is count records, each with its strings. */
struct keep_head {
	char		 magic[8];
	uint32_t	 endian, version;
	uint64_t	 count, body_len, body_sum, head_sum;
};

struct keep_rec {
	uint64_t	 dev, ino;
	int64_t		 size, mtime_ns, done;
	uint64_t	 head, tail;
	uint32_t	 flags, unseen;
	uint32_t	 len[KEEP_NSTR];
};

/* The bound of each string of a record (text, search, title, source
   type, source id, parent). */
#define KEEP_STR_MAX	{ LIST_PROMPT_BYTES, SEARCH_TEXT_MAX - 1, LIST_TEXT_MAX, \
	LIST_TEXT_MAX, LIST_TEXT_MAX, LIST_TEXT_MAX }
/* The kept file read, once, at the first listing, on a thread of its
   own; ready: 1 once its entries are in the cache (a listing reads
   nothing before), else 0; load_wait: at exit, the thread waited for. */
void		 listing_keep_load(void);
int		 listing_keep_ready(void);
void		 listing_keep_load_wait(void);
/* The kept file's directory (made with create), opened once and kept:
   its descriptor, or -1 and *cause (caller frees). */
int		 listing_keep_dir(int create, char **cause);
void		 listing_keep_dir_close(void);

/* ---- listing-keep-write.c ---------------------------------------------- */
/* Something in the cache changed: a write of the kept file, debounced. */
void		 listing_keep_changed(void);
/* At exit: the last write waited for, a pending one made now. */
void		 listing_keep_free(void);

#endif
