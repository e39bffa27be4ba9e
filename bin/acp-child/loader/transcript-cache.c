/* SPDX-License-Identifier: ISC */
/*
 * transcript-cache.c: the persistent transcript index.
 *
 * One file per transcript, <cache>/tx-<hash of its path>.idx: a header,
 * then the path, session id, subtypes, records, fragments, uuid pool, uuid
 * hash and active chain exactly as they sit in memory, each section
 * aligned, so that a restore maps the file and uses it in place: nothing
 * is parsed, copied or hashed again.  The uuid hash's seed is the index's
 * own (random when its first pass began, kept in the header), so nobody
 * can craft uuids that collide in it.  The chain, its last checkpoint and
 * the model-history count are what a restore of the unchanged file
 * derives: kept, a resume walks nothing.  The layout is native: the
 * header carries the format version and the struct sizes, and any
 * difference is a miss.  Every 16 KiB block has its checksum in a table
 * at the end (the header's checksum covers the table), and the bounds are
 * checked anyway, so a damaged file means a full pass, never a crash or a
 * wrong answer.  The transcript stays the truth: its device, inode, size
 * and digests of its first and last indexed bytes must match what the
 * index was built from.  qwen-code appending to the file is the normal
 * case: the bytes after the indexed part are indexed on top (of a copy).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachedir.h"
#include "chain.h"
#include "sum64.h"
#include "transcript.h"
#include "transcript-int.h"

/* xxh64's third prime: spreads a block's position over its seed. */
#define BLOCK_MIX	0x165667b19e3779f9ULL

/* pread(2) until n bytes are in. */
int
transcript_cache_pread(int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t r;
	size_t got = 0;

	while (got < n) {
		r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* Digests of the first and last indexed bytes of the transcript. */
int
transcript_cache_digest(struct transcript *t, uint64_t indexed, uint64_t *head,
    uint64_t *tail)
{
	char buf[TX_CACHE_DIGEST];
	size_t n = indexed < TX_CACHE_DIGEST ? (size_t)indexed : TX_CACHE_DIGEST;

	if (transcript_cache_pread(t->fd, buf, n, 0) == -1)
		return -1;
	*head = sum64(indexed, buf, n);
	if (transcript_cache_pread(t->fd, buf, n, indexed - n) == -1)
		return -1;
	*tail = sum64(indexed, buf, n);
	t->bytes_read += 2 * n;
	return 0;
}

/* The checksum of the header (after its sum) and the block sums. */
uint64_t
transcript_cache_sum(const struct tx_cache_head *h, const uint64_t *bsum)
{
	size_t skip = offsetof(struct tx_cache_head, sum) + sizeof h->sum;
	uint64_t s;

	s = sum64(TX_CACHE_VERSION, (const char *)h + skip,
	    sizeof *h - skip);
	return sum64(s, bsum, (size_t)h->nblock * sizeof *bsum);
}

/* Block i's checksum: the seed and the position are in it, so a block
   copied from elsewhere does not pass. */
uint64_t
transcript_cache_block_sum(uint64_t seed, uint64_t i, const void *p, size_t n)
{
	return sum64(seed ^ (i * BLOCK_MIX), p, n);
}

void
transcript_cache_lens(const struct tx_cache_head *h, uint64_t len[TX_CACHE_NSEC])
{
	len[0] = h->pathlen;
	len[1] = h->sidlen;
	len[2] = h->subbytes;
	len[3] = h->nrec * sizeof(struct tx_rec);
	len[4] = h->nfrag * sizeof(struct tx_frag);
	len[5] = h->npool;
	len[6] = h->htslots * sizeof(struct tx_slot);
	len[7] = h->chainlen * sizeof(uint32_t);
}

#define ALIGNED(x)	(((x) + TX_CACHE_ALIGN - 1) / TX_CACHE_ALIGN * TX_CACHE_ALIGN)

uint64_t
transcript_cache_plan(const struct tx_cache_head *h, uint64_t off[TX_CACHE_NSEC + 1])
{
	uint64_t len[TX_CACHE_NSEC], at = ALIGNED(sizeof *h);
	int i;

	transcript_cache_lens(h, len);
	for (i = 0; i < TX_CACHE_NSEC; i++) {
		off[i] = at;
		at = ALIGNED(at + len[i]);
	}
	off[TX_CACHE_NSEC] = at;
	return at + h->nblock * sizeof(uint64_t);
}

/* The layout fields of a header. */
void
transcript_cache_layout(struct tx_cache_head *h)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, TX_CACHE_MAGIC, sizeof h->magic);
	h->version = TX_CACHE_VERSION;
	h->recsize = sizeof(struct tx_rec);
	h->fragsize = sizeof(struct tx_frag);
	h->slotsize = sizeof(struct tx_slot);
	h->statsize = sizeof(struct tx_stats);
}

/* The subtypes after "" as NUL-terminated strings (caller frees). */
static char *
transcript_cache_subs(const struct transcript *t, uint64_t *len)
{
	size_t i, n = 0, k;
	char *b;

	for (i = 1; i < t->nsub; i++)
		n += strlen(t->subs[i]) + 1;
	if ((b = malloc(n + 1)) == NULL)
		return NULL;
	for (i = 1, n = 0; i < t->nsub; i++) {
		k = strlen(t->subs[i]) + 1;
		memcpy(b + n, t->subs[i], k);
		n += k;
	}
	*len = n;
	return b;
}

/* write(2) all of [p, p+n). */
static int
write_all(int fd, const void *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
	return 0;
}

/* The body of an index as it is written: block sums as the blocks fill. */
struct tx_cache_out {
	int		 fd;
	uint64_t	 seed;
	char		*buf;		/* TX_CACHE_BLOCK */
	size_t		 fill;
	uint64_t	*bsum, nblock;
};

static int
out_flush(struct tx_cache_out *o)
{
	if (o->fill == 0)
		return 0;
	o->bsum[o->nblock] = transcript_cache_block_sum(o->seed, o->nblock, o->buf,
	    o->fill);
	o->nblock++;
	if (write_all(o->fd, o->buf, o->fill) == -1)
		return -1;
	o->fill = 0;
	return 0;
}

/* Append n bytes of p (zeros when p is NULL). */
static int
out_put(struct tx_cache_out *o, const void *p, uint64_t n)
{
	size_t k;

	while (n > 0) {
		k = TX_CACHE_BLOCK - o->fill;
		if (k > n)
			k = (size_t)n;
		if (p != NULL) {
			memcpy(o->buf + o->fill, p, k);
			p = (const char *)p + k;
		} else
			memset(o->buf + o->fill, 0, k);
		o->fill += k;
		n -= k;
		if (o->fill == TX_CACHE_BLOCK && out_flush(o) == -1)
			return -1;
	}
	return 0;
}

/* Header, sections at their planned offsets, block sums; h->nblock and
   h->sum are filled in here. */
static int
transcript_cache_body(int fd, struct tx_cache_head *h,
    const struct tx_cache_sec *sec)
{
	struct tx_cache_out o = { fd, h->seed, NULL, 0, NULL, 0 };
	uint64_t off[TX_CACHE_NSEC + 1], at;
	char head[ALIGNED(sizeof *h)];
	int i, rc = -1;

	h->nblock = 0;
	transcript_cache_plan(h, off);
	h->nblock = (off[TX_CACHE_NSEC] - sizeof head + TX_CACHE_BLOCK - 1) /
	    TX_CACHE_BLOCK;
	o.buf = malloc(TX_CACHE_BLOCK);
	o.bsum = calloc(h->nblock + 1, sizeof *o.bsum);
	memset(head, 0, sizeof head);
	if (o.buf == NULL || o.bsum == NULL || write_all(fd, head, sizeof head) == -1)
		goto out;
	for (i = 0, at = sizeof head; i < TX_CACHE_NSEC; i++) {
		if (out_put(&o, NULL, off[i] - at) == -1 ||
		    out_put(&o, sec[i].p, sec[i].len) == -1)
			goto out;
		at = off[i] + sec[i].len;
	}
	if (out_put(&o, NULL, off[TX_CACHE_NSEC] - at) == -1 || out_flush(&o) == -1 ||
	    o.nblock != h->nblock ||
	    write_all(fd, o.bsum, h->nblock * sizeof *o.bsum) == -1)
		goto out;
	h->sum = transcript_cache_sum(h, o.bsum);
	memcpy(head, h, sizeof *h);
	rc = pwrite(fd, head, sizeof head, 0) == (ssize_t)sizeof head ? 0 : -1;
out:
	free(o.buf);
	free(o.bsum);
	return rc;
}

/* Write the index to a staging file, rename onto name (not synced:
   cachedir_commit()). */
static int
transcript_cache_write(int dfd, const char *name, struct tx_cache_head *h,
    const struct tx_cache_sec *sec)
{
	char tmp[CACHEDIR_NAME_MAX];
	int fd;

	if ((fd = cachedir_stage(dfd, tmp, sizeof(tmp))) == -1)
		return -1;
	if (transcript_cache_body(fd, h, sec) == -1) {
		close(fd);
		cachedir_discard(dfd, tmp);
		return -1;
	}
	if (close(fd) == -1) {
		cachedir_discard(dfd, tmp);
		return -1;
	}
	return cachedir_commit(dfd, tmp, name);
}

/* Fill the section table from the transcript (subs is the subtype block,
   c the active chain or NULL). */
static void
transcript_cache_sections(struct transcript *t, char *subs, uint64_t sublen,
    const struct tx_chain *c, struct tx_cache_sec *sec)
{
	sec[0] = (struct tx_cache_sec){ t->path, strlen(t->path) };
	sec[1] = (struct tx_cache_sec){ t->sid, t->sidlen };
	sec[2] = (struct tx_cache_sec){ subs, sublen };
	sec[3] = (struct tx_cache_sec){ t->rec, t->nrec * sizeof *t->rec };
	sec[4] = (struct tx_cache_sec){ t->frag, t->nfrag * sizeof *t->frag };
	sec[5] = (struct tx_cache_sec){ t->pool, t->npool };
	sec[6] = (struct tx_cache_sec){ t->ht, (t->htmask + 1) * sizeof *t->ht };
	sec[7] = (struct tx_cache_sec){ c != NULL ? c->rec : NULL,
	    c != NULL ? c->len * sizeof *c->rec : 0 };
}

/* The uuid hash at half full at most (a pass sizes it for the file, so
   it is often larger): NULL when t's own is small enough. */
static struct tx_slot *
compact_ht(const struct transcript *t, uint64_t *slots)
{
	struct tx_slot *nh;
	size_t i, j, n = 1024;

	while (n < 2 * (t->htused + 1))
		n *= 2;
	*slots = t->htmask + 1;
	if (n >= *slots || (nh = calloc(n, sizeof *nh)) == NULL)
		return NULL;
	/* The tag holds the low hash bits: the home slot. */
	for (i = 0; i <= t->htmask; i++) {
		if (t->ht[i].rec == 0)
			continue;
		for (j = t->ht[i].tag & (n - 1); nh[j].rec != 0; j = (j + 1) & (n - 1))
			;
		nh[j] = t->ht[i];
	}
	*slots = n;
	return nh;
}

/* The active chain and what a resume derives from it, so that a restore
   of the unchanged file walks nothing.  Without it (a failed walk) the
   loader walks as without a cache. */
static void
keep_chain(struct transcript *t, struct tx_cache_head *h, struct tx_chain *c)
{
	char *cause = NULL;
	int64_t n;

	h->haschain = 0;
	if (chain_build(t, c, &cause) == -1 ||
	    (n = chain_model_history(t, c, &cause)) < 0) {
		free(cause);
		chain_clear(c);
		return;
	}
	h->haschain = 1;
	h->chainlen = c->len;
	h->last_compression = c->last_compression;
	h->model_history = n;
	h->gaps = c->gaps;
	h->cycles = c->cycles;
	h->turn_starts = c->turn_starts;
}

int
transcript_save(struct transcript *t, const char *dir, uint64_t max_bytes,
    size_t max_files, char **cause)
{
	struct tx_cache_sec sec[TX_CACHE_NSEC];
	struct tx_cache_head h;
	struct tx_chain c;
	struct tx_slot *ht = NULL;
	char name[CACHEDIR_NAME_MAX], *subs = NULL;
	uint64_t sublen = 0;
	int rc = -1, dfd = -1;

	memset(&c, 0, sizeof c);
	transcript_cache_layout(&h);
	h.dev = (uint64_t)t->dev;
	h.ino = (uint64_t)t->ino;
	h.indexed = t->indexed;
	h.pending = t->pending;
	h.leaf = t->leaf;
	h.st = t->st;
	h.nrec = t->nrec;
	h.nfrag = t->nfrag;
	h.npool = t->npool;
	h.nsub = t->nsub;
	h.pathlen = strlen(t->path);
	h.sidlen = t->sidlen;
	h.seed = t->seed;
	h.htused = t->htused;
	/* Others must not plant or read indexes: ours alone, or not used. */
	if ((dfd = cachedir_open(dir, 1, cause)) == -1)
		goto out;
	if ((subs = transcript_cache_subs(t, &sublen)) == NULL) {
		transcript_cause(cause, "index cache %s: %s", dir, strerror(errno));
		goto out;
	}
	cachedir_index_name(t->path, name, sizeof(name));
	h.subbytes = sublen;
	if (!transcript_cache_need_all(t)) {
		transcript_cause(cause, "index cache %s: kept index damaged", dir);
		goto out;
	}
	/* After the check: a mapped table's slots are then known to hold
	   htused entries, so placing them again ends. */
	ht = compact_ht(t, &h.htslots);
	if (transcript_cache_digest(t, t->indexed, &h.head, &h.tail) == -1) {
		transcript_cause(cause, "read %s: %s", t->path, strerror(errno));
		goto out;
	}
	keep_chain(t, &h, &c);
	transcript_cache_sections(t, subs, sublen, h.haschain ? &c : NULL, sec);
	if (ht != NULL)
		sec[6] = (struct tx_cache_sec){ ht, h.htslots * sizeof *ht };
	if (transcript_cache_write(dfd, name, &h, sec) == -1) {
		transcript_cause(cause, "index cache %s: %s", dir, strerror(errno));
		goto out;
	}
	t->cached = t->indexed;
	cachedir_prune(dfd, name, max_bytes, max_files);
	rc = 0;
out:
	chain_clear(&c);
	free(ht);
	if (dfd != -1)
		close(dfd);
	free(subs);
	return rc;
}

int
transcript_index_dirty(const struct transcript *t)
{
	return t->cached != t->indexed;
}

enum tx_index_state
transcript_index_state(const struct transcript *t)
{
	return t->istate;
}

const char *
transcript_index_state_name(enum tx_index_state s)
{
	static const char *const names[] = { "none", "cold", "warm", "rescan" };

	return (unsigned)s < 4 ? names[s] : "none";
}

const char *
transcript_index_reason(const struct transcript *t)
{
	return t->ireason;
}
