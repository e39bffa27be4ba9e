/* SPDX-License-Identifier: ISC */
/*
 * transcript-int.h: internals of the transcript index (transcript.c,
 * transcript-index.c, transcript-record.c, transcript-split.c), also read
 * by the rest of the loader room (chain.c, cachedir.c, the index cache) and
 * by white-box tests; the projection and the program use transcript.h
 * (scripts/check-headers checks it).
 */
#ifndef QWEN_ACP_TRANSCRIPT_INT_H
#define QWEN_ACP_TRANSCRIPT_INT_H

#include <sys/types.h>

#include <stdint.h>

#include <json-c/json.h>

#include "transcript.h"

#define TX_RBUF_KEEP	(4u << 20)

#define TX_SUB_NONCONV	0x01		/* subtype of a non-conversation record */

#define TXR_ID_STR	0x01		/* id[] holds {u64 pool offset, u32 length} */
#define TXR_PAR_STR	0x02		/* par[] likewise */
#define TXR_PAR_NULL	0x04		/* no parent (null, absent or "") */

/* One logical record: 56 bytes. */
struct tx_rec {
	uint8_t id[16];
	uint8_t par[16];
	uint64_t off;			/* first fragment */
	uint32_t len;
	uint32_t frag;			/* 1-based index of the next fragment, 0 none */
	uint32_t sub;			/* interned subtype, 0 none */
	uint8_t type;
	uint8_t flags;			/* TX_F_* */
	uint8_t kflags;			/* TXR_* */
	uint8_t pad;
};

/* A uuid hash slot: record + 1 (0 empty) and the low 32 hash bits, so probes
   rarely touch the record array and rehashing never does. */
struct tx_slot {
	uint32_t rec;
	uint32_t tag;
};

struct tx_frag {
	uint64_t off;
	uint32_t len;
	uint32_t next;
	uint32_t last;			/* a record's first fragment: its last one */
};

/* A uuid being looked up: binary or text. */
struct tx_key {
	int str;
	uint8_t bin[16];
	const char *s;
	size_t len;
	uint64_t h;
};

/* The active chain as the index cache has it (transcript-cache.c): valid
   for the bytes it was built from, i.e. while nothing was appended. */
struct tx_kept_chain {
	const uint32_t *rec;		/* in the mapping */
	uint64_t len;
	int64_t last_compression, model_history;
	uint64_t gaps, cycles, turn_starts;
};

/* A mapped index cache's blocks, checked as they are first used
   (transcript-cache-lazy.c). */
struct tx_lazy {
	const char *base;		/* block 0: the first section */
	const uint64_t *bsum;		/* their sums */
	uint64_t end;			/* bytes in blocks */
	uint64_t seed;
	uint8_t *ok;			/* a bit a block read, checked */
	int fd;				/* the index file (runs read) */
	uint64_t foff;			/* the file offset of base */
	uint64_t nread;			/* index file bytes read */
	uint64_t checked;		/* bytes checked */
	const char *damaged;		/* why an entry in use failed, or NULL */
};

struct transcript {
	char *path;
	char *sid;
	size_t sidlen;
	int fd;
	dev_t dev;
	ino_t ino;
	struct tx_stats st;
	uint64_t indexed;		/* offset of the first unindexed byte */
	uint64_t pending;		/* bytes after it (torn tail) at the last pass */
	uint64_t limit;			/* a pass stops here (0: end of file) */
	int64_t leaf;

	struct tx_rec *rec;
	size_t nrec, caprec;
	struct tx_frag *frag;
	size_t nfrag, capfrag;
	struct tx_slot *ht;		/* uuid -> record (conversation records) */
	size_t htmask, htused;
	char *pool;			/* non-canonical uuid strings */
	size_t npool, cappool;

	char **subs;			/* interned subtypes; subs[0] = "" */
	uint8_t *subflags;
	size_t nsub, capsub;
	uint32_t *sht;			/* subtype string -> id + 1 */
	size_t shtmask;

	json_tokener *tok;
	struct tx_key project_fast_key;		/* uuid hashed early by the scanner hook */
	const char *project_fast_p;
	char *rbuf;			/* record read buffer, kept up to TX_RBUF_KEEP */
	size_t rcap;
	const uint32_t *ahead;		/* records to be read next (transcript_read_ahead) */
	size_t nahead, ahead_at;
	char *abuf;			/* the bytes of a run of them: [aoff, aoff+alen) */
	uint64_t aoff;
	size_t alen, acap;

	uint64_t bytes_read;		/* transcript bytes read so far (tests, spans) */
	enum tx_index_state istate;	/* where the index came from (transcript-cache.c) */
	const char *ireason;		/* why an index cache was not used (static) */
	uint64_t cached;		/* indexed as loaded from or saved to the cache */
	uint64_t seed;			/* of the uuid hash: per index, kept with it */
	void *map;			/* an index cache mapped read-only: rec, frag, pool
					   and ht point into it until transcript_cache_own */
	size_t maplen;
	struct tx_kept_chain *kc;	/* the kept chain, or NULL */
	struct tx_lazy *lazy;		/* while mapped: what is checked */
	uint64_t ichecked;		/* index cache bytes checked before own */
	uint64_t iread;			/* index bytes read before own */
};

struct stat;
/* The file open and stat'ed (*sb), no index yet (transcript.c). */
struct transcript *transcript_file_open(const char *path, const char *sid, struct stat *sb,
    char **cause);
/* Index the whole file (t fresh from transcript_file_open). */
int transcript_index_full(struct transcript *, uint64_t size, char **cause);
int transcript_index_init(struct transcript *, uint64_t size_hint);
struct tx_slot *transcript_ht_alloc(size_t n);
void *transcript_big_realloc(void *old, size_t used, size_t *bytes);
void transcript_index_free(struct transcript *);
void transcript_key_text(const struct transcript *, struct tx_key *, const char *, size_t);
int transcript_key_store(struct transcript *, const struct tx_key *, uint8_t dst[16], uint8_t *kflags, uint8_t strflag);
int64_t transcript_ht_find(const struct transcript *, const struct tx_key *);
/* Insertion: reserve room for one more, probe (-1 + the free slot), then set. */
int transcript_ht_reserve(struct transcript *);
int64_t transcript_ht_probe(const struct transcript *, const struct tx_key *, size_t *slot);
void transcript_ht_set(struct transcript *, size_t slot, uint32_t rec, const struct tx_key *);
struct tx_rec *transcript_rec_new(struct transcript *);
int transcript_intern_sub(struct transcript *, const char *, size_t, uint32_t *id);
json_object *transcript_json_parse(struct transcript *, const char *, size_t, int *valid);
int transcript_index_pass(struct transcript *, char **cause);
/* A pass's read buffer, kept by the caller across passes. */
struct tx_rbuf {
	char	*p;
	size_t	 cap;
};
int transcript_index_pass_buf(struct transcript *, struct tx_rbuf *, char **cause);
int transcript_add_fragment(struct transcript *, uint32_t rec, uint64_t off, uint32_t len);
void transcript_key_stored(const struct transcript *, const uint8_t v[16], int str, struct tx_key *);
/* The first pass of a big file: chunks on all cores, then a merge (transcript-split.c). */
int transcript_index_split(struct transcript *, uint64_t size, char **cause);

/* transcript-cache.c: the persistent index (transcript-cache-load.c reads it). */
#define TX_CACHE_MAGIC	"qwtxidx\n"
#define TX_CACHE_VERSION	3u
#define TX_CACHE_DIGEST	4096u		/* bytes digested at each end */
#define TX_CACHE_NSEC	8		/* sections after the header */
#define TX_CACHE_ALIGN	64u		/* each section starts at a multiple */
#define TX_CACHE_BLOCK	16384u		/* bytes per block checksum */

struct tx_cache_head {
	char		magic[8];
	uint32_t	version;
	uint16_t	recsize, fragsize, slotsize, statsize;
	uint16_t	pad[3];
	uint64_t	sum;		/* of the rest of the header and the block sums */
	uint64_t	dev, ino, indexed, pending;
	int64_t		leaf;
	struct tx_stats	st;
	uint64_t	nrec, nfrag, npool, nsub, subbytes;
	uint64_t	pathlen, sidlen;
	uint64_t	head, tail;	/* digests of the first and last indexed bytes */
	uint64_t	seed;		/* of the uuid hash */
	uint64_t	htslots, htused;
	uint64_t	haschain, chainlen;
	int64_t		last_compression, model_history;
	uint64_t	gaps, cycles, turn_starts;
	uint64_t	nblock;		/* block sums at the end of the file */
};

/* The sections after the header, in file order: path, session id,
   subtypes, records, fragments, uuid pool, uuid hash, chain. */
struct tx_cache_sec {
	void		*p;
	uint64_t	 len;
};

/* Offsets of the sections and (off[TX_CACHE_NSEC]) of the block sums;
   the file's size.  The counts must have been checked against it. */
uint64_t transcript_cache_plan(const struct tx_cache_head *, uint64_t off[TX_CACHE_NSEC + 1]);
/* Byte lengths of the sections of a header. */
void transcript_cache_lens(const struct tx_cache_head *, uint64_t len[TX_CACHE_NSEC]);
/* The checksum of block i of an index with this seed. */
uint64_t transcript_cache_block_sum(uint64_t seed, uint64_t i, const void *, size_t);
/* Read exactly n bytes at off of fd: 0 or -1. */
int transcript_cache_pread(int fd, void *buf, size_t n, uint64_t off);
/* Digests of the first and last of the indexed bytes of t's file. */
int transcript_cache_digest(struct transcript *, uint64_t indexed, uint64_t *head,
    uint64_t *tail);
/* The checksum of the header (after its sum) and the block sums. */
uint64_t transcript_cache_sum(const struct tx_cache_head *, const uint64_t *bsum);
/* A header with only the layout fields set. */
void transcript_cache_layout(struct tx_cache_head *);

/* transcript-cache-load.c: an index cache mapped in place. */
/* Unmap an index cache's arrays (NULL-safe); own copies them first. */
void transcript_cache_unmap(struct transcript *);
int transcript_cache_own(struct transcript *, char **cause);

/* transcript-cache-lazy.c: entries of a mapped index, checked on first use;
   a damaged one reads as an inert value and marks the index damaged. */
int transcript_cache_need(const struct transcript *, const void *, size_t);
int transcript_cache_need_all(const struct transcript *);
const struct tx_rec *transcript_cache_rec(const struct transcript *, uint32_t);
const struct tx_frag *transcript_cache_frag(const struct transcript *, uint32_t);
const struct tx_slot *transcript_cache_slot(const struct transcript *, size_t);
/* A probe found no empty slot: a mapped index is damaged. */
void transcript_cache_full(const struct transcript *);
/* The kept chain's entries once checked, or NULL (damaged). */
const uint32_t *transcript_cache_chain(const struct transcript *);
/* Check t's index as it is used, reading its blocks (base, file offset
   foff: mapped writable, anonymous) from fd as they are first used
   (nread bytes of it read so far); t takes fd unless it fails. */
int transcript_cache_lazy(struct transcript *, int fd, uint64_t foff,
    const char *base, const uint64_t *bsum, uint64_t end, uint64_t nblock,
    uint64_t seed, uint64_t nread);
void transcript_cache_lazy_free(struct transcript *);

/* Whether [p, p+n) of a mapped index is sound (always, when not mapped). */
static inline int
tx_need(const struct transcript *t, const void *p, size_t n)
{
	return t->lazy == NULL || transcript_cache_need(t, p, n);
}

static inline const struct tx_rec *
tx_rec(const struct transcript *t, uint32_t i)
{
	return t->lazy == NULL ? &t->rec[i] : transcript_cache_rec(t, i);
}

/* Fragment i (0-based). */
static inline const struct tx_frag *
tx_frag(const struct transcript *t, uint32_t i)
{
	return t->lazy == NULL ? &t->frag[i] : transcript_cache_frag(t, i);
}

static inline const struct tx_slot *
tx_slot(const struct transcript *t, size_t i)
{
	return t->lazy == NULL ? &t->ht[i] : transcript_cache_slot(t, i);
}


#endif
