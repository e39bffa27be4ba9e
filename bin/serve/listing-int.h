/* SPDX-License-Identifier: ISC */
/* listing-int.h: the listing's entries and its per-file cache. */
#ifndef QWEN_SERVE_LISTING_INT_H
#define QWEN_SERVE_LISTING_INT_H

#include <sys/types.h>

#include <stdint.h>

/* One transcript of a directory, as the scan saw it. */
struct list_ent {
	char		 id[SERVE_SESSION_ID_MAX + 1];
	int64_t		 size, mtime_ms, mtime_ns;
	dev_t		 dev;
	ino_t		 ino;
};

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
