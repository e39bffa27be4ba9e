/*
 * transcript-cache.c: the persistent transcript index.
 *
 * One file per transcript, <cache>/tx-<hash of its path>.idx: a header,
 * then the path, session id, subtypes, records, fragments and uuid pool
 * exactly as they sit in memory, so loading is a few read()s and no
 * parsing.  The uuid hash is not kept: its seed is per process, so the
 * loader inserts the records again.  The layout is native: the header carries the
 * format version and the struct sizes, and any difference is a miss.  The
 * checksum covers everything after it and the bounds are checked anyway,
 * so a damaged file means a full pass, never a crash or a wrong answer.
 * The transcript stays the truth: its device, inode, size and digests of
 * its first and last indexed bytes must match what the index was built
 * from.  qwen-code appending to the file is the normal case: the bytes
 * after the indexed part are indexed on top.
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
#include "transcript.h"
#include "transcript-int.h"

static inline uint64_t
rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

#define P1	0x9e3779b185ebca87ULL
#define P2	0xc2b2ae3d27d4eb4fULL
#define P3	0x165667b19e3779f9ULL
#define P4	0x85ebca77c2b2ae63ULL
#define P5	0x27d4eb2f165667c5ULL

/* A 64-bit checksum of [p, p+n) chained from h (xxh64's rounds: a few GB/s,
   so a 40 MiB index costs milliseconds). */
uint64_t
transcript_cache_sum64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t v[4] = { h + P1 + P2, h + P2, h, h - P1 }, w;
	int i;

	for (; n >= 32; n -= 32, s += 32)
		for (i = 0; i < 4; i++) {
			memcpy(&w, s + 8 * i, 8);
			v[i] = rotl(v[i] + w * P2, 31) * P1;
		}
	h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18) + n;
	for (; n >= 8; n -= 8, s += 8) {
		memcpy(&w, s, 8);
		h = rotl(h ^ (rotl(w * P2, 31) * P1), 27) * P1 + P4;
	}
	for (; n > 0; n--, s++)
		h = rotl(h ^ (*s * P5), 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	return h ^ (h >> 32);
}

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
	*head = transcript_cache_sum64(indexed, buf, n);
	if (transcript_cache_pread(t->fd, buf, n, indexed - n) == -1)
		return -1;
	*tail = transcript_cache_sum64(indexed, buf, n);
	t->bytes_read += 2 * n;
	return 0;
}

/* The checksum of the header (after its sum) and the sections. */
uint64_t
transcript_cache_sum(const struct tx_cache_head *h,
    const struct tx_cache_sec *sec)
{
	size_t skip = offsetof(struct tx_cache_head, sum) + sizeof h->sum;
	uint64_t s;
	int i;

	s = transcript_cache_sum64(TX_CACHE_VERSION, (const char *)h + skip,
	    sizeof *h - skip);
	for (i = 0; i < TX_CACHE_NSEC; i++)
		s = transcript_cache_sum64(s, sec[i].p, (size_t)sec[i].len);
	return s;
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

/* Write header and sections to a staging file, fsync, rename onto name. */
static int
transcript_cache_write(int dfd, const char *name,
    const struct tx_cache_head *h, const struct tx_cache_sec *sec)
{
	char tmp[CACHEDIR_NAME_MAX];
	int fd, i;

	if ((fd = cachedir_stage(dfd, tmp, sizeof(tmp))) == -1)
		return -1;
	if (write_all(fd, h, sizeof *h) == -1)
		goto fail;
	for (i = 0; i < TX_CACHE_NSEC; i++)
		if (write_all(fd, sec[i].p, (size_t)sec[i].len) == -1)
			goto fail;
	if (fsync(fd) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	return cachedir_commit(dfd, tmp, name);
fail:
	if (fd != -1)
		close(fd);
	cachedir_discard(dfd, tmp);
	return -1;
}

/* Fill the section table from the transcript (subs is the subtype block). */
static void
transcript_cache_sections(struct transcript *t, char *subs, uint64_t sublen,
    struct tx_cache_sec *sec)
{
	sec[0] = (struct tx_cache_sec){ t->path, strlen(t->path) };
	sec[1] = (struct tx_cache_sec){ t->sid, t->sidlen };
	sec[2] = (struct tx_cache_sec){ subs, sublen };
	sec[3] = (struct tx_cache_sec){ t->rec, t->nrec * sizeof *t->rec };
	sec[4] = (struct tx_cache_sec){ t->frag, t->nfrag * sizeof *t->frag };
	sec[5] = (struct tx_cache_sec){ t->pool, t->npool };
}

int
transcript_save(struct transcript *t, const char *dir, uint64_t max_bytes,
    size_t max_files, char **cause)
{
	struct tx_cache_sec sec[TX_CACHE_NSEC];
	struct tx_cache_head h;
	char name[CACHEDIR_NAME_MAX], *subs = NULL;
	uint64_t sublen = 0;
	int rc = -1, dfd;

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
	/* Others must not plant or read indexes: ours alone, or not used. */
	if ((dfd = cachedir_open(dir, 1, cause)) == -1)
		return -1;
	if ((subs = transcript_cache_subs(t, &sublen)) == NULL) {
		transcript_cause(cause, "index cache %s: %s", dir, strerror(errno));
		goto out;
	}
	cachedir_index_name(t->path, name, sizeof(name));
	h.subbytes = sublen;
	if (transcript_cache_digest(t, t->indexed, &h.head, &h.tail) == -1) {
		transcript_cause(cause, "read %s: %s", t->path, strerror(errno));
		goto out;
	}
	transcript_cache_sections(t, subs, sublen, sec);
	h.sum = transcript_cache_sum(&h, sec);
	if (transcript_cache_write(dfd, name, &h, sec) == -1) {
		transcript_cause(cause, "index cache %s: %s", dir, strerror(errno));
		goto out;
	}
	t->cached = t->indexed;
	cachedir_prune(dfd, name, max_bytes, max_files);
	rc = 0;
out:
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
