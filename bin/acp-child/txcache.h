/*
 * txcache.h: internals of the persistent transcript index (txcache.c
 * writes and prunes, txcache-load.c reads and checks).
 */
#ifndef QWEN_ACP_TXCACHE_H
#define QWEN_ACP_TXCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "transcript.h"

#define TXC_MAGIC	"qwtxidx\n"
#define TXC_VERSION	1u
#define TXC_DIGEST	4096u		/* bytes digested at each end */
#define TXC_NSEC	7		/* sections after the header */

struct txc_head {
	char		magic[8];
	uint32_t	version;
	uint16_t	recsize, fragsize, slotsize, statsize;
	uint16_t	pad[3];
	uint64_t	sum;		/* of everything after this field */
	uint64_t	dev, ino, indexed, pending;
	int64_t		leaf;
	struct tx_stats	st;
	uint64_t	nrec, nfrag, npool, nsub, subbytes, nslot, htused;
	uint64_t	pathlen, sidlen;
	uint64_t	head, tail;	/* digests of the first and last indexed bytes */
};

/* The sections after the header, in file order. */
struct txc_sec {
	void		*p;
	uint64_t	 len;
};

struct transcript;

/* A 64-bit checksum of [p, p+n) chained from h. */
uint64_t txc_sum64(uint64_t h, const void *p, size_t n);
/* Read exactly n bytes at off of fd: 0 or -1. */
int txc_pread(int fd, void *buf, size_t n, uint64_t off);
/* Digests of the first and last of the indexed bytes of t's file. */
int txc_digest(struct transcript *, uint64_t indexed, uint64_t *head, uint64_t *tail);
/* Whether dir is ours alone (owned by us, no group or other write): 1
   (or missing), 0 not, -1 on error. */
int txc_dir_private(const char *dir);
/* The index file of transcript path in dir (caller frees), or NULL. */
char *txc_file(const char *dir, const char *path);
/* The checksum of the header (after its sum) and the sections. */
uint64_t txc_sum(const struct txc_head *, const struct txc_sec *);
/* A header with only the layout fields set. */
void txc_layout(struct txc_head *);

#endif /* QWEN_ACP_TXCACHE_H */
