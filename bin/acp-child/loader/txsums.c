/* SPDX-License-Identifier: ISC */
/*
 * txsums.c: sums along a transcript's active chain, kept beside its index
 * cache (txsums.h).
 *
 * <cache>/tx-<hash>.sum: a header, then n sums of three doubles.  The
 * header says what the sums are of, with the index cache's own check of
 * the transcript (device, inode, the indexed size, digests of its first
 * and last indexed bytes: a file appended to since still passes), the
 * count of merged fragments (a record of the chain that got a fragment
 * since may count differently), and a checksum of the chain's records the
 * sums cover (another chain, after a branch, is not this one); a checksum
 * covers the header and the sums.  A file that is damaged or of another
 * transcript is removed; the caller makes the sums again and keeps them.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachedir.h"
#include "chain.h"
#include "sum64.h"
#include "transcript.h"
#include "transcript-int.h"
#include "txsums.h"

#define TXSUMS_MAGIC	"qwtxsum\n"
#define TXSUMS_VERSION	1u
#define TXSUMS_MAX	(1u << 24)	/* sums a file holds at most */

struct txsums_head {
	char		magic[8];
	uint32_t	version;
	uint32_t	every;
	uint64_t	dev, ino;
	uint64_t	indexed;	/* transcript bytes the sums are of */
	uint64_t	head, tail;	/* their digests (the index's) */
	uint64_t	duplicates;	/* fragments merged then */
	uint64_t	covered;	/* chain records the sums cover */
	uint64_t	chainsum;	/* checksum of those record numbers */
	uint64_t	n;		/* sums */
	uint64_t	sum;		/* of the above and the sums */
};

/* The checksum of a header (before its sum) and its sums. */
static uint64_t
txsums_checksum(const struct txsums_head *h, const double (*sum)[3])
{
	uint64_t s;

	s = sum64(TXSUMS_VERSION, h,
	    offsetof(struct txsums_head, sum));
	return sum64(s, sum, (size_t)h->n * sizeof *sum);
}

/* The header that sums of c (n of them, every `every`) of t have now;
   -1 when t's file cannot be read. */
static int
txsums_describe(struct transcript *t, const struct tx_chain *c,
    unsigned every, size_t n, uint64_t indexed, struct txsums_head *h)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, TXSUMS_MAGIC, sizeof h->magic);
	h->version = TXSUMS_VERSION;
	h->every = every;
	h->dev = (uint64_t)t->dev;
	h->ino = (uint64_t)t->ino;
	h->indexed = indexed;
	h->duplicates = t->st.duplicates;
	h->n = n;
	h->covered = n > 0 ? (uint64_t)(n - 1) * every : 0;
	if (h->covered > c->len)
		return -1;
	h->chainsum = sum64(every, c->rec,
	    (size_t)h->covered * sizeof *c->rec);
	if (indexed == 0)
		return 0;
	return transcript_cache_digest(t, indexed, &h->head, &h->tail);
}

/* The file's name in dir: the index's, .sum for .idx. */
static void
txsums_name(const char *path, char *name, size_t size)
{
	size_t n;

	cachedir_index_name(path, name, size);
	if ((n = strlen(name)) > 4)
		memcpy(name + n - 4, ".sum", 4);
}

/* Read fd's sums when its header says they are of c of t: n, or 0. */
static size_t
txsums_read(int fd, struct transcript *t, const struct tx_chain *c,
    unsigned every, double (**sum)[3])
{
	struct txsums_head h, want;
	struct stat sb;
	double (*s)[3];

	if (fstat(fd, &sb) == -1 ||
	    transcript_cache_pread(fd, &h, sizeof h, 0) == -1 ||
	    memcmp(h.magic, TXSUMS_MAGIC, sizeof h.magic) != 0 ||
	    h.version != TXSUMS_VERSION || h.every != every ||
	    h.n == 0 || h.n > TXSUMS_MAX ||
	    (uint64_t)sb.st_size != sizeof h + h.n * sizeof *s)
		return 0;
	/* Cheap checks first: the digests read the transcript. */
	if (h.dev != (uint64_t)t->dev || h.ino != (uint64_t)t->ino ||
	    h.indexed > t->indexed || h.duplicates != t->st.duplicates ||
	    h.covered > c->len)
		return 0;
	if ((s = calloc(h.n, sizeof *s)) == NULL)
		return 0;
	if (transcript_cache_pread(fd, s, h.n * sizeof *s, sizeof h) == -1 ||
	    txsums_checksum(&h, s) != h.sum ||
	    txsums_describe(t, c, every, h.n, h.indexed, &want) == -1 ||
	    want.head != h.head || want.tail != h.tail ||
	    want.covered != h.covered || want.chainsum != h.chainsum) {
		free(s);
		return 0;
	}
	*sum = s;
	return h.n;
}

size_t
txsums_load(struct transcript *t, const char *dir, const struct tx_chain *c,
    unsigned every, double (**sum)[3])
{
	char name[CACHEDIR_NAME_MAX], *cause = NULL;
	size_t n = 0;
	int dfd, fd;

	*sum = NULL;
	if (dir == NULL || (dfd = cachedir_open(dir, 0, &cause)) == -1) {
		free(cause);
		return 0;
	}
	txsums_name(t->path, name, sizeof name);
	if ((fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) != -1) {
		/* Not these sums: gone, so nobody reads them again. */
		if ((n = txsums_read(fd, t, c, every, sum)) == 0)
			(void)unlinkat(dfd, name, 0);
		close(fd);
	}
	close(dfd);
	return n;
}

/* Write the header and the sums to fd. */
static int
txsums_write(int fd, const struct txsums_head *h, const double (*sum)[3])
{
	size_t len = (size_t)h->n * sizeof *sum;

	if (write(fd, h, sizeof *h) != (ssize_t)sizeof *h ||
	    write(fd, sum, len) != (ssize_t)len)
		return -1;
	return 0;		/* not synced: see cachedir_commit() */
}

int
txsums_save(struct transcript *t, const char *dir, const struct tx_chain *c,
    unsigned every, const double (*sum)[3], size_t n, char **cause)
{
	struct txsums_head h;
	char name[CACHEDIR_NAME_MAX], tmp[CACHEDIR_NAME_MAX];
	int dfd, fd, rc = -1;

	if (n == 0 || n > TXSUMS_MAX ||
	    txsums_describe(t, c, every, n, t->indexed, &h) == -1) {
		transcript_cause(cause, "sums of %s: %s", t->path,
		    n == 0 || n > TXSUMS_MAX ? "none to keep" :
		    strerror(errno));
		return -1;
	}
	h.sum = txsums_checksum(&h, sum);
	if ((dfd = cachedir_open(dir, 1, cause)) == -1)
		return -1;
	txsums_name(t->path, name, sizeof name);
	if ((fd = cachedir_stage(dfd, tmp, sizeof tmp)) == -1)
		goto out;
	if (txsums_write(fd, &h, sum) == -1) {
		close(fd);
		cachedir_discard(dfd, tmp);
		goto out;
	}
	if (close(fd) == -1)
		cachedir_discard(dfd, tmp);
	else
		rc = cachedir_commit(dfd, tmp, name);
out:
	if (rc == -1)
		transcript_cause(cause, "index cache %s: %s", dir,
		    strerror(errno));
	close(dfd);
	return rc;
}
