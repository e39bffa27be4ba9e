/* SPDX-License-Identifier: ISC */
/*
 * transcript-cache-load.c: opening a transcript from its index cache
 * (transcript-cache.c).
 *
 * Order of the checks, cheapest first: header layout, version and counts
 * against the index file's size, the header's checksum (it covers the
 * block sums), the transcript's device and inode, its size against the
 * indexed size, the digests of the first and last indexed bytes (8 KiB
 * read), then the blocks' checksums, and every offset and link is
 * bounds-checked before the index is used.  The first check that fails
 * names the reason and the caller indexes the whole file.  The index is
 * read into private memory (never a mapping of the file, which another
 * process could shrink under us), a run of blocks at a time as they are
 * first used, and used there until something is added to it.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachedir.h"
#include "transcript.h"
#include "transcript-int.h"

/* An index cache mapped, checked part by part before it is handed to t. */
struct tx_cache_load {
	struct tx_cache_head	 h;
	const char	*map;
	size_t		 len;
	uint64_t	 off[TX_CACHE_NSEC + 1];
	const struct tx_rec	*rec;
	const struct tx_frag	*frag;
	const struct tx_slot	*ht;
	const uint32_t		*chain;
	const char	*pool;
};

/* The header's counts agree with the layout and the index file's size. */
static int
head_ok(struct tx_cache_load *l)
{
	const struct tx_cache_head *h = &l->h;
	struct tx_cache_head want;
	uint64_t sz = l->len, len[TX_CACHE_NSEC];
	uint64_t part[] = { h->pathlen, h->sidlen, h->subbytes, h->nrec, h->nfrag,
	    h->npool, h->htslots, h->chainlen, h->nblock };
	size_t i;

	transcript_cache_layout(&want);
	if (memcmp(h->magic, want.magic, sizeof h->magic) != 0 ||
	    h->version != want.version || h->recsize != want.recsize ||
	    h->fragsize != want.fragsize || h->slotsize != want.slotsize ||
	    h->statsize != want.statsize)
		return 0;
	/* Each count alone fits the file: the sums below cannot wrap. */
	for (i = 0; i < sizeof part / sizeof part[0]; i++)
		if (part[i] > sz)
			return 0;
	transcript_cache_lens(h, len);
	if (transcript_cache_plan(h, l->off) != sz ||
	    h->nblock != (l->off[TX_CACHE_NSEC] - l->off[0] + TX_CACHE_BLOCK - 1) /
	    TX_CACHE_BLOCK)
		return 0;
	/* A power of two at most half full: every probe ends. */
	if (h->htslots < 2 || (h->htslots & (h->htslots - 1)) != 0 ||
	    h->htused > h->htslots / 2 || h->htused > h->nrec)
		return 0;
	return h->nrec < UINT32_MAX - 1 && h->nfrag < UINT32_MAX &&
	    h->nsub >= 1 && h->nsub <= h->subbytes + 1 &&
	    h->leaf >= -1 && h->leaf < (int64_t)h->nrec && h->st.bytes == h->indexed &&
	    (!h->haschain || (h->chainlen <= h->nrec &&
	    h->last_compression >= -1 && h->last_compression < (int64_t)h->chainlen &&
	    h->model_history >= 0 && h->gaps <= 1 && h->cycles <= 1 &&
	    h->turn_starts <= h->chainlen)) && (h->haschain || h->chainlen == 0);
}

/* The subtypes interned again in order: t's subtype table. */
static int
adopt_subs(struct transcript *t, const struct tx_cache_load *l)
{
	const char *p = l->map + l->off[2], *e = p + l->h.subbytes;
	const char *nul;
	uint32_t id;
	size_t n;

	for (n = 1; n < l->h.nsub; n++) {
		if (p >= e || (nul = memchr(p, '\0', (size_t)(e - p))) == NULL ||
		    transcript_intern_sub(t, p, (size_t)(nul - p), &id) == -1 ||
		    id != n)
			return -1;		/* missing or repeated */
		p = nul + 1;
	}
	return p == e ? 0 : -1;
}

/* Hand the mapping to t: its arrays point into it (transcript_cache_own
   copies them before anything is added). */
static int
adopt(struct transcript *t, struct tx_cache_load *l)
{
	const struct tx_cache_head *h = &l->h;

	if (transcript_index_init(t, 0) == -1 || adopt_subs(t, l) == -1)
		return -1;
	if (h->haschain) {
		if ((t->kc = calloc(1, sizeof *t->kc)) == NULL)
			return -1;
		t->kc->rec = l->chain;
		t->kc->len = h->chainlen;
		t->kc->last_compression = h->last_compression;
		t->kc->model_history = h->model_history;
		t->kc->gaps = h->gaps;
		t->kc->cycles = h->cycles;
		t->kc->turn_starts = h->turn_starts;
	}
	free(t->ht);
	t->map = (void *)l->map;
	t->maplen = l->len;
	l->map = NULL;
	t->ht = (struct tx_slot *)l->ht;
	t->htmask = h->htslots - 1;
	t->htused = h->htused;
	t->seed = h->seed;
	t->rec = (struct tx_rec *)l->rec;
	t->nrec = t->caprec = h->nrec;
	t->frag = (struct tx_frag *)l->frag;
	t->nfrag = t->capfrag = h->nfrag;
	t->pool = (char *)l->pool;
	t->npool = t->cappool = h->npool;
	t->st = h->st;
	t->leaf = h->leaf;
	t->indexed = t->cached = h->indexed;
	t->pending = h->pending;
	return 0;
}

/*
 * Make room for fd's index in anonymous memory, read its header and block
 * sums there and check the header: 0, or -1 (not an index of ours).  The
 * blocks are read as they are first used (transcript-cache-lazy.c), so a
 * page of a big session reads the few it needs, not the whole index.  Not
 * a mapping of the file: a file mapping dies of SIGBUS, with every
 * session of the child, when another process truncates the file under
 * it, and sees whatever is written into it in place.  Our copy cannot
 * shrink; a block the file no longer holds, or one rewritten in place,
 * fails as any damage does.
 */
static int
load_map(int fd, struct tx_cache_load *l)
{
	struct stat ist;
	uint64_t tab;
	void *p;

	if (fstat(fd, &ist) == -1 || !S_ISREG(ist.st_mode) ||
	    (uint64_t)ist.st_size < sizeof l->h || (uint64_t)ist.st_size > SIZE_MAX)
		return -1;
	l->len = (size_t)ist.st_size;
	if ((p = mmap(NULL, l->len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		return -1;
	l->map = p;
	if (transcript_cache_pread(fd, p, sizeof l->h, 0) == -1)
		return -1;
	memcpy(&l->h, l->map, sizeof l->h);
	if (!head_ok(l))
		return -1;
	tab = l->off[TX_CACHE_NSEC];
	if (transcript_cache_pread(fd, (char *)p + tab, (size_t)(l->len - tab),
	    tab) == -1)
		return -1;
	l->rec = (const struct tx_rec *)(l->map + l->off[3]);
	l->frag = (const struct tx_frag *)(l->map + l->off[4]);
	l->pool = l->map + l->off[5];
	l->ht = (const struct tx_slot *)(l->map + l->off[6]);
	l->chain = (const uint32_t *)(l->map + l->off[7]);
	return 0;
}

/* What load_index answers when no index is kept. */
static const char no_index[] = "none";

/* Check the index cache of t against its file (stat in *sb) and use it:
   NULL when in use; no_index (t untouched); else why it is not usable
   (a static word), and t may hold part of it (the caller opens the file
   again). */
static const char *
load_index(struct transcript *t, const char *dir, const struct stat *sb)
{
	struct tx_cache_load l;
	uint64_t head, tail;
	const char *why;
	int fd;

	memset(&l, 0, sizeof l);
	if ((fd = cachedir_open_index(dir, t->path)) == -1) {
		if (errno == EPERM)
			return "unsafe";	/* another user could have written it */
		return errno == ENOENT || errno == ENOTDIR ? no_index : "unreadable";
	}
	why = "format";
	if (load_map(fd, &l) == -1)
		goto out;
	why = "checksum";
	if (transcript_cache_sum(&l.h, (const uint64_t *)(l.map +
	    l.off[TX_CACHE_NSEC])) != l.h.sum)
		goto out;
	why = "replaced";
	if (l.h.dev != (uint64_t)sb->st_dev || l.h.ino != (uint64_t)sb->st_ino)
		goto out;
	why = "truncated";
	if ((uint64_t)sb->st_size < l.h.indexed)
		goto out;
	why = "digest";
	if (transcript_cache_digest(t, l.h.indexed, &head, &tail) == -1 ||
	    head != l.h.head || tail != l.h.tail)
		goto out;
	/* The mtime of an index is its last use: pruning keeps what is used. */
	(void)futimens(fd, NULL);
	/* From here on each block is read and checked as it is first used. */
	why = "unreadable";
	if (transcript_cache_lazy(t, fd, l.off[0], l.map + l.off[0],
	    (const uint64_t *)(l.map + l.off[TX_CACHE_NSEC]),
	    l.off[TX_CACHE_NSEC] - l.off[0], l.h.nblock, l.h.seed,
	    sizeof l.h + (l.len - l.off[TX_CACHE_NSEC])) == -1)
		goto out;
	fd = -1;			/* t's now */
	why = "checksum";
	if (!transcript_cache_need(t, l.map + l.off[0], l.off[3] - l.off[0]))
		goto out;		/* path, session id, subtypes */
	why = "format";
	if (l.h.pathlen != strlen(t->path) ||
	    memcmp(l.map + l.off[0], t->path, l.h.pathlen) != 0 ||
	    l.h.sidlen != t->sidlen ||
	    memcmp(l.map + l.off[1], t->sid, l.h.sidlen) != 0)
		goto out;
	if (adopt(t, &l) == -1)
		goto out;		/* t half built: the caller starts over */
	why = NULL;
out:
	if (why != NULL)
		transcript_cache_lazy_free(t);
	if (l.map != NULL)
		munmap((void *)l.map, l.len);
	if (fd != -1)
		close(fd);
	return why;
}

void
transcript_cache_unmap(struct transcript *t)
{
	transcript_cache_lazy_free(t);
	if (t->map == NULL)
		return;
	munmap(t->map, t->maplen);
	t->map = NULL;
	t->rec = NULL;
	t->frag = NULL;
	t->pool = NULL;
	t->ht = NULL;
	t->nrec = t->caprec = t->nfrag = t->capfrag = t->npool = t->cappool = 0;
	free(t->kc);
	t->kc = NULL;
}

/* A heap copy of n bytes at p (at least one byte). */
static void *
dup_bytes(const void *p, size_t n)
{
	void *q;

	if ((q = malloc(n + 1)) != NULL && n > 0)
		memcpy(q, p, n);
	return q;
}

int
transcript_cache_own(struct transcript *t, char **cause)
{
	struct tx_rec *rec;
	struct tx_frag *frag;
	struct tx_slot *ht;
	char *pool;

	if (t->map == NULL)
		return 0;
	/* Copied, an entry is no longer checked as it is used: check all now. */
	if (!transcript_cache_need_all(t)) {
		transcript_cause(cause, "index %s: kept index damaged", t->path);
		return -1;
	}
	rec = dup_bytes(t->rec, t->nrec * sizeof *rec);
	frag = dup_bytes(t->frag, t->nfrag * sizeof *frag);
	pool = dup_bytes(t->pool, t->npool);
	if ((ht = transcript_ht_alloc(t->htmask + 1)) != NULL)
		memcpy(ht, t->ht, (t->htmask + 1) * sizeof *ht);
	if (rec == NULL || frag == NULL || pool == NULL || ht == NULL) {
		free(rec);
		free(frag);
		free(pool);
		free(ht);
		transcript_cause(cause, "index %s: out of memory", t->path);
		return -1;
	}
	transcript_cache_lazy_free(t);
	munmap(t->map, t->maplen);
	t->map = NULL;
	free(t->kc);			/* what is added changes the chain */
	t->kc = NULL;
	t->rec = rec;
	t->frag = frag;
	t->pool = pool;
	t->ht = ht;
	return 0;
}

struct transcript *
transcript_open_cached(const char *path, const char *session_id,
    const char *cache_dir, char **cause)
{
	struct transcript *t;
	struct stat sb;
	const char *why;

	if (cache_dir == NULL)
		return transcript_open(path, session_id, cause);
	if ((t = transcript_file_open(path, session_id, &sb, cause)) == NULL)
		return NULL;
	if ((why = load_index(t, cache_dir, &sb)) == NULL) {
		t->istate = TX_INDEX_WARM;
		/* Appended since: index those bytes only. */
		if ((uint64_t)sb.st_size == t->indexed + t->pending ||
		    transcript_index_pass(t, cause) == 0)
			return t;
		if (!transcript_index_damaged(t))
			goto fail;
		free(*cause);
		*cause = NULL;
		why = "checksum";
	}
	if (why != no_index) {
		transcript_free(t);
		if ((t = transcript_file_open(path, session_id, &sb, cause)) == NULL)
			return NULL;
		t->istate = TX_INDEX_RESCAN;
		t->ireason = why;
	} else
		t->istate = TX_INDEX_COLD;
	if (transcript_index_full(t, (uint64_t)sb.st_size, cause) == -1)
		goto fail;
	return t;
fail:
	transcript_free(t);
	return NULL;
}

struct transcript *
transcript_open_rescan(const char *path, const char *session_id, const char *why,
    char **cause)
{
	struct transcript *t;
	struct stat sb;

	if ((t = transcript_file_open(path, session_id, &sb, cause)) == NULL)
		return NULL;
	t->istate = TX_INDEX_RESCAN;
	t->ireason = why;
	if (transcript_index_full(t, (uint64_t)sb.st_size, cause) == -1) {
		transcript_free(t);
		return NULL;
	}
	return t;
}

uint64_t
transcript_cached_size(const char *cache_dir, const char *path)
{
	struct tx_cache_head h, want;
	int fd;
	uint64_t n = 0;

	if (cache_dir == NULL || (fd = cachedir_open_index(cache_dir, path)) == -1)
		return 0;
	transcript_cache_layout(&want);
	if (transcript_cache_pread(fd, &h, sizeof h, 0) == 0 &&
	    memcmp(h.magic, want.magic, sizeof h.magic) == 0 &&
	    h.version == want.version)
		n = h.indexed;
	close(fd);
	return n;
}
