/*
 * transcript-cache-load.c: opening a transcript from its kept index
 * (transcript-cache.c).
 *
 * Order of the checks, cheapest first: header layout and version, the
 * file's device and inode, its size against the indexed size, the digests
 * of the first and last indexed bytes (8 KiB read), then the sections are
 * read straight into the index arrays while the checksum runs over them,
 * and every offset and link is bounds-checked before the index is used.
 * The first check that fails names the reason and the caller indexes the
 * whole file.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachedir.h"
#include "transcript.h"
#include "transcript-int.h"

/* What a kept index holds, before it is handed to the transcript. */
struct tx_cache_load {
	struct tx_cache_head	 h;
	char		*path, *sid, *subs;
	struct tx_rec	*rec;
	struct tx_frag	*frag;
	char		*pool;
};

static void
load_clear(struct tx_cache_load *l)
{
	free(l->path);
	free(l->sid);
	free(l->subs);
	free(l->rec);
	free(l->frag);
	free(l->pool);
	memset(l, 0, sizeof *l);
}

/* The header's counts agree with the layout and the index file's size. */
static int
head_ok(const struct tx_cache_head *h, uint64_t fsize)
{
	struct tx_cache_head want;
	uint64_t sz = fsize, total = sizeof *h;
	uint64_t part[TX_CACHE_NSEC] = { h->pathlen, h->sidlen, h->subbytes,
	    h->nrec, h->nfrag, h->npool };
	uint64_t unit[TX_CACHE_NSEC] = { 1, 1, 1, sizeof(struct tx_rec),
	    sizeof(struct tx_frag), 1 };
	int i;

	transcript_cache_layout(&want);
	if (memcmp(h->magic, want.magic, sizeof h->magic) != 0 ||
	    h->version != want.version || h->recsize != want.recsize ||
	    h->fragsize != want.fragsize || h->slotsize != want.slotsize ||
	    h->statsize != want.statsize)
		return 0;
	for (i = 0; i < TX_CACHE_NSEC; i++) {
		if (part[i] > sz / unit[i])
			return 0;
		total += part[i] * unit[i];
		if (total > sz)
			return 0;
	}
	return total == fsize &&
	    h->nrec < UINT32_MAX - 1 && h->nfrag < UINT32_MAX &&
	    h->nsub >= 1 && h->nsub <= h->subbytes + 1 &&
	    h->leaf >= -1 && h->leaf < (int64_t)h->nrec && h->st.bytes == h->indexed;
}

/* Read the sections at the header's sizes; the checksum must match. */
static int
load_sections(int fd, struct tx_cache_load *l)
{
	const struct tx_cache_head *h = &l->h;
	struct tx_cache_sec sec[TX_CACHE_NSEC];
	uint64_t off = sizeof *h;
	int i;

	l->path = malloc(h->pathlen + 1);
	l->sid = malloc(h->sidlen + 1);
	l->subs = malloc(h->subbytes + 1);
	l->rec = malloc(h->nrec * sizeof *l->rec + 1);
	l->frag = malloc(h->nfrag * sizeof *l->frag + 1);
	l->pool = malloc(h->npool + 1);
	if (l->path == NULL || l->sid == NULL || l->subs == NULL || l->rec == NULL ||
	    l->frag == NULL || l->pool == NULL)
		return -1;
	sec[0] = (struct tx_cache_sec){ l->path, h->pathlen };
	sec[1] = (struct tx_cache_sec){ l->sid, h->sidlen };
	sec[2] = (struct tx_cache_sec){ l->subs, h->subbytes };
	sec[3] = (struct tx_cache_sec){ l->rec, h->nrec * sizeof *l->rec };
	sec[4] = (struct tx_cache_sec){ l->frag, h->nfrag * sizeof *l->frag };
	sec[5] = (struct tx_cache_sec){ l->pool, h->npool };
	for (i = 0; i < TX_CACHE_NSEC; i++) {
		if (transcript_cache_pread(fd, sec[i].p, (size_t)sec[i].len, off) == -1)
			return -1;
		off += sec[i].len;
	}
	l->path[h->pathlen] = '\0';
	l->sid[h->sidlen] = '\0';
	l->subs[h->subbytes] = '\0';
	return transcript_cache_sum(h, sec) == h->sum ? 0 : -1;
}

/* A stored key slot points inside the pool. */
static int
key_ok(const struct tx_cache_load *l, const uint8_t v[16], int str)
{
	uint64_t off;
	uint32_t len;

	if (!str)
		return 1;
	memcpy(&off, v, 8);
	memcpy(&len, v + 8, 4);
	return off <= l->h.npool && len <= l->h.npool - off;
}

/* Every record, fragment and slot link stays inside the index and every
   byte range inside the indexed part of the file. */
static int
bounds_ok(const struct tx_cache_load *l)
{
	const struct tx_cache_head *h = &l->h;
	const struct tx_rec *r;
	const struct tx_frag *f;
	uint64_t i;

	for (i = 0; i < h->nrec; i++) {
		r = &l->rec[i];
		if (r->frag > h->nfrag || r->sub >= h->nsub || r->type < TX_USER ||
		    r->type > TX_SYSTEM || r->off > h->indexed ||
		    r->len > h->indexed - r->off ||
		    !key_ok(l, r->id, r->kflags & TXR_ID_STR) ||
		    !key_ok(l, r->par, r->kflags & TXR_PAR_STR))
			return 0;
	}
	for (i = 0; i < h->nfrag; i++) {
		f = &l->frag[i];
		/* Links only go forward: no walk can loop. */
		if ((f->next != 0 && (f->next <= i + 1 || f->next > h->nfrag)) ||
		    f->last <= i || f->last > h->nfrag ||
		    f->off > h->indexed || f->len > h->indexed - f->off)
			return 0;
	}
	return 1;
}

/* The uuid hash again (its seed is this process's): every conversation
   record, each uuid once.  -1 on a repeat or no memory. */
static int
rehash(struct transcript *t)
{
	struct tx_key k;
	size_t slot = 0;
	uint32_t i;

	for (i = 0; i < t->nrec; i++) {
		if (!(t->rec[i].flags & TX_F_CONVERSATION))
			continue;
		transcript_key_stored(t, t->rec[i].id, t->rec[i].kflags & TXR_ID_STR, &k);
		if (transcript_ht_reserve(t) == -1 ||
		    transcript_ht_probe(t, &k, &slot) >= 0)
			return -1;
		transcript_ht_set(t, slot, i, &k);
	}
	return 0;
}

/* Hand the loaded arrays to t; the subtypes are interned again in order. */
static int
adopt(struct transcript *t, struct tx_cache_load *l)
{
	const struct tx_cache_head *h = &l->h;
	const char *p = l->subs, *e = l->subs + h->subbytes;
	uint32_t id;
	size_t n;

	if (transcript_index_init(t, h->indexed) == -1)
		return -1;
	for (n = 1; n < h->nsub; n++) {
		if (p >= e || transcript_intern_sub(t, p, strlen(p), &id) == -1 ||
		    id != n)
			return -1;		/* missing or repeated */
		p += strlen(p) + 1;
	}
	if (p != e)
		return -1;
	t->rec = l->rec;
	t->nrec = t->caprec = h->nrec;
	t->frag = l->frag;
	t->nfrag = t->capfrag = h->nfrag;
	t->pool = l->pool;
	t->npool = t->cappool = h->npool;
	l->rec = NULL;
	l->frag = NULL;
	l->pool = NULL;
	t->st = h->st;
	t->leaf = h->leaf;
	t->indexed = t->cached = h->indexed;
	t->pending = h->pending;
	return rehash(t);
}

/* What load_index answers when no index is kept. */
static const char no_index[] = "none";

/* Check the kept index of t against its file (stat in *sb) and use it:
   NULL when in use; no_index (t untouched); else why it is not usable
   (a static word), and t may hold part of it (the caller opens the file
   again). */
static const char *
load_index(struct transcript *t, const char *dir, const struct stat *sb)
{
	struct tx_cache_load l;
	struct stat ist;
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
	if (fstat(fd, &ist) == -1 || !S_ISREG(ist.st_mode) ||
	    transcript_cache_pread(fd, &l.h, sizeof l.h, 0) == -1 ||
	    !head_ok(&l.h, (uint64_t)ist.st_size))
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
	why = "checksum";
	if (load_sections(fd, &l) == -1)
		goto out;
	why = "format";
	if (strcmp(l.path, t->path) != 0 || strcmp(l.sid, t->sid) != 0 ||
	    !bounds_ok(&l))
		goto out;
	if (adopt(t, &l) == -1)
		goto out;		/* t half built: the caller starts over */
	/* The mtime of an index is its last use: pruning keeps what is used. */
	(void)futimens(fd, NULL);
	why = NULL;
out:
	load_clear(&l);
	close(fd);
	return why;
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
		if ((uint64_t)sb.st_size != t->indexed + t->pending &&
		    transcript_index_pass(t, cause) == -1)
			goto fail;
		return t;
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
