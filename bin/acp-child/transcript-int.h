/*
 * transcript-int.h: internals of the transcript index (transcript.c,
 * transcript-index.c, transcript-record.c, transcript-split.c), also read
 * by the loader's walkers (chain.c, replay.c, project*.c); the rest of the
 * child uses transcript.h.
 */
#ifndef QWEN_ACP_TRANSCRIPT_INT_H
#define QWEN_ACP_TRANSCRIPT_INT_H

#include <sys/types.h>

#include <stdint.h>

#include <json-c/json.h>

#include "transcript.h"

#define TX_JSON_DEPTH	1024
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
	struct tx_key pf_key;		/* uuid hashed early by the scanner hook */
	const char *pf_p;
	char *rbuf;			/* record read buffer, kept up to TX_RBUF_KEEP */
	size_t rcap;
	const uint32_t *ahead;		/* records to be read next (transcript_read_ahead) */
	size_t nahead, ahead_at;
	char *abuf;			/* the bytes of a run of them: [aoff, aoff+alen) */
	uint64_t aoff;
	size_t alen, acap;

	uint64_t bytes_read;		/* transcript bytes read so far (tests, spans) */
	enum tx_index_state istate;	/* where the index came from (transcript-cache.c) */
	const char *ireason;		/* why a kept index was not used (static) */
	uint64_t cached;		/* indexed as loaded from or saved to the cache */
};

struct stat;
/* The file open and stat'ed (*sb), no index yet (transcript.c). */
struct transcript *transcript_file_open(const char *path, const char *sid, struct stat *sb,
    char **cause);
/* Index the whole file (t fresh from transcript_file_open). */
int transcript_index_full(struct transcript *, uint64_t size, char **cause);
int transcript_index_init(struct transcript *, uint64_t size_hint);
struct tx_slot *transcript_ht_alloc(size_t n);
void transcript_index_free(struct transcript *);
void transcript_key_text(struct tx_key *, const char *, size_t);
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
int transcript_add_fragment(struct transcript *, uint32_t rec, uint64_t off, uint32_t len);
void transcript_key_stored(const struct transcript *, const uint8_t v[16], int str, struct tx_key *);
/* The first pass of a big file: two threads, one per half, then a merge (transcript-split.c). */
int transcript_index_split(struct transcript *, uint64_t size, char **cause);
void transcript_cause(char **cause, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* transcript-cache.c: the persistent index (transcript-cache-load.c reads it). */
#define TX_CACHE_MAGIC	"qwtxidx\n"
#define TX_CACHE_VERSION	2u
#define TX_CACHE_DIGEST	4096u		/* bytes digested at each end */
#define TX_CACHE_NSEC	6		/* sections after the header */

struct tx_cache_head {
	char		magic[8];
	uint32_t	version;
	uint16_t	recsize, fragsize, slotsize, statsize;
	uint16_t	pad[3];
	uint64_t	sum;		/* of everything after this field */
	uint64_t	dev, ino, indexed, pending;
	int64_t		leaf;
	struct tx_stats	st;
	uint64_t	nrec, nfrag, npool, nsub, subbytes;
	uint64_t	pathlen, sidlen;
	uint64_t	head, tail;	/* digests of the first and last indexed bytes */
};

/* The sections after the header, in file order. */
struct tx_cache_sec {
	void		*p;
	uint64_t	 len;
};

/* A 64-bit checksum of [p, p+n) chained from h. */
uint64_t transcript_cache_sum64(uint64_t h, const void *p, size_t n);
/* Read exactly n bytes at off of fd: 0 or -1. */
int transcript_cache_pread(int fd, void *buf, size_t n, uint64_t off);
/* Digests of the first and last of the indexed bytes of t's file. */
int transcript_cache_digest(struct transcript *, uint64_t indexed, uint64_t *head,
    uint64_t *tail);
/* Whether dir is ours alone (owned by us, no group or other write): 1
   (or missing), 0 not, -1 on error. */
int transcript_cache_dir_private(const char *dir);
/* The index file of transcript path in dir (caller frees), or NULL. */
char *transcript_cache_file(const char *dir, const char *path);
/* The checksum of the header (after its sum) and the sections. */
uint64_t transcript_cache_sum(const struct tx_cache_head *,
    const struct tx_cache_sec *);
/* A header with only the layout fields set. */
void transcript_cache_layout(struct tx_cache_head *);

#endif
