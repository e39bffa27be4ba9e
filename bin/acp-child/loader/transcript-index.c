/* SPDX-License-Identifier: ISC */
/*
 * transcript-index.c: uuid keys, the uuid hash, subtype interning and record access
 * for the transcript index.
 */
#include "config.h"

#include <sys/mman.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transcript-int.h"
#include "uuid.h"

static const char *const nonconv_subtypes[] = {
	"session_sources_snapshot", "managed_session_header_v1",
	"managed_session_event_v1", "managed_session_commit_v1",
	"session_artifact_event", "session_artifact_snapshot", NULL
};

/* Final mixer (splitmix64). */
static inline uint64_t
mix(uint64_t h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

/*
 * The subtype hash is seeded once per process (transcript_index_init), the
 * uuid hash once per index (t->seed, kept with it in the cache), so that
 * nobody can write a transcript whose uuids all land in one probe chain.
 */
static uint64_t hash_seed;
static pthread_once_t hash_seed_once = PTHREAD_ONCE_INIT;

static void
hash_seed_init(void)
{
	arc4random_buf(&hash_seed, sizeof hash_seed);
}

static uint64_t
hash_bytes(uint64_t seed, const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;

	while (n-- > 0)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return mix(h ^ 0x5bd1e995ULL);
}

static uint64_t
hash_bin(uint64_t seed, const uint8_t b[16])
{
	uint64_t x, y;

	memcpy(&x, b, 8);
	memcpy(&y, b + 8, 8);
	return mix(x ^ mix(y ^ seed));
}

void
transcript_key_text(const struct transcript *t, struct tx_key *k, const char *s,
    size_t n)
{
	if (uuid_parse(s, n, k->bin) == 0) {
		k->str = 0;
		k->h = hash_bin(t->seed, k->bin);
	} else {
		k->str = 1;
		k->s = s;
		k->len = n;
		k->h = hash_bytes(t->seed, s, n);
	}
}

/* The key stored in a record's id[]/par[] slot. */
void
transcript_key_stored(const struct transcript *t, const uint8_t v[16], int str,
    struct tx_key *k)
{
	uint64_t off;
	uint32_t len;

	k->str = str;
	if (!str) {
		memcpy(k->bin, v, 16);
		k->h = hash_bin(t->seed, v);
		return;
	}
	memcpy(&off, v, 8);
	memcpy(&len, v + 8, 4);
	k->s = t->pool + off;
	k->len = len;
	if (!tx_need(t, k->s, len)) {
		k->s = "";		/* damaged: the caller's answer is thrown away */
		k->len = 0;
	}
	k->h = hash_bytes(t->seed, k->s, k->len);
}

int
transcript_key_store(struct transcript *t, const struct tx_key *k, uint8_t dst[16],
    uint8_t *kflags, uint8_t strflag)
{
	uint64_t off;
	uint32_t len;
	char *np;
	size_t cap;

	if (!k->str) {
		memcpy(dst, k->bin, 16);
		return 0;
	}
	if (t->npool + k->len > t->cappool) {
		cap = t->cappool ? t->cappool : 4096;
		while (cap < t->npool + k->len)
			cap *= 2;
		if ((np = realloc(t->pool, cap)) == NULL)
			return -1;
		t->pool = np;
		t->cappool = cap;
	}
	memcpy(t->pool + t->npool, k->s, k->len);
	off = t->npool;
	len = (uint32_t)k->len;
	t->npool += k->len;
	memset(dst, 0, 16);
	memcpy(dst, &off, 8);
	memcpy(dst + 8, &len, 4);
	*kflags |= strflag;
	return 0;
}

/* Does record r carry uuid k? */
static int
rec_is(const struct transcript *t, const struct tx_rec *r, const struct tx_key *k)
{
	uint64_t off;
	uint32_t len;

	if (!k->str)
		return !(r->kflags & TXR_ID_STR) && memcmp(r->id, k->bin, 16) == 0;
	if (!(r->kflags & TXR_ID_STR))
		return 0;
	memcpy(&off, r->id, 8);
	memcpy(&len, r->id + 8, 4);
	return len == k->len && tx_need(t, t->pool + off, len) &&
	    memcmp(t->pool + off, k->s, len) == 0;
}

int64_t
transcript_ht_find(const struct transcript *t, const struct tx_key *k)
{
	size_t slot;

	return transcript_ht_probe(t, k, &slot);
}

/* Place rec in a table of mask+1 slots. */
static void
ht_place(uint32_t *ht, size_t mask, uint64_t h, uint32_t rec)
{
	size_t i = h & mask;

	while (ht[i] != 0)
		i = (i + 1) & mask;
	ht[i] = rec + 1;
}

/* Past BIG_FROM bytes, tables and buffers go on transparent huge pages:
   a fault costs microseconds in a VM, and a huge page is one fault where
   4 KiB pages are 512; every probe of the uuid hash is a random access,
   so TLB misses count too.  Smaller ones would pay for a whole page. */
#define HUGE_PAGE	(2u << 20)
#define BIG_FROM	(256u << 10)

/* bytes on huge pages (a whole number of them, aligned), or NULL. */
static void *
huge_alloc(size_t *bytes)
{
	size_t n = (*bytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
	void *p;

	if (n < *bytes || posix_memalign(&p, HUGE_PAGE, n) != 0)
		return NULL;
	(void)madvise(p, n, MADV_HUGEPAGE);
	*bytes = n;
	return p;
}

/* A zeroed slot table. */
struct tx_slot *
transcript_ht_alloc(size_t n)
{
	size_t bytes = n * sizeof(struct tx_slot), size = bytes;
	void *p;

	if (bytes < BIG_FROM)
		return calloc(n, sizeof(struct tx_slot));
	if ((p = huge_alloc(&size)) == NULL)
		return NULL;
	memset(p, 0, bytes);
	return p;
}

int
transcript_ht_reserve(struct transcript *t)
{
	struct tx_slot *nh;
	size_t i, j, n;

	if ((t->htused + 1) * 2 <= t->htmask + 1)
		return 0;
	n = (t->htmask + 1) * 2;
	if ((nh = transcript_ht_alloc(n)) == NULL)
		return -1;
	for (i = 0; i <= t->htmask; i++) {
		if (t->ht[i].rec == 0)
			continue;
		/* The tag holds the low hash bits: the home slot. */
		for (j = t->ht[i].tag & (n - 1); nh[j].rec != 0; j = (j + 1) & (n - 1))
			;
		nh[j] = t->ht[i];
	}
	free(t->ht);
	t->ht = nh;
	t->htmask = n - 1;
	return 0;
}

int64_t
transcript_ht_probe(const struct transcript *t, const struct tx_key *k, size_t *slot)
{
	size_t i = k->h & t->htmask;
	uint32_t tag = (uint32_t)k->h;
	const struct tx_slot *s;
	size_t n = 0;

	for (; (s = tx_slot(t, i))->rec != 0; i = (i + 1) & t->htmask) {
		if (s->tag == tag && rec_is(t, tx_rec(t, s->rec - 1), k))
			return s->rec - 1;
		/* No empty slot: only an index cache lying about its use has
		   that (a table we fill stays half empty); not found. */
		if (++n > t->htmask) {
			transcript_cache_full(t);
			break;
		}
	}
	*slot = i;
	return -1;
}

void
transcript_ht_set(struct transcript *t, size_t slot, uint32_t rec, const struct tx_key *k)
{
	t->ht[slot].rec = rec + 1;
	t->ht[slot].tag = (uint32_t)k->h;
	t->htused++;
}

/* realloc for the record array and the read buffer, *bytes at least:
   past BIG_FROM, a copy of the used bytes onto huge pages, *bytes then
   rounded up to what they hold. */
void *
transcript_big_realloc(void *old, size_t used, size_t *bytes)
{
	void *p;

	if (*bytes < BIG_FROM || *bytes > SIZE_MAX / 2)
		return realloc(old, *bytes);
	if ((p = huge_alloc(bytes)) == NULL)
		return NULL;
	if (used > 0)
		memcpy(p, old, used);
	free(old);
	return p;
}

struct tx_rec *
transcript_rec_new(struct transcript *t)
{
	struct tx_rec *r;
	size_t n;

	if (t->nrec == UINT32_MAX - 1)
		return NULL;
	if (t->nrec == t->caprec) {
		n = (t->caprec ? t->caprec * 2 : 1024) * sizeof *r;
		if ((r = transcript_big_realloc(t->rec, t->nrec * sizeof *r, &n)) == NULL)
			return NULL;
		t->rec = r;
		t->caprec = n / sizeof *r;
	}
	r = &t->rec[t->nrec++];
	memset(r, 0, sizeof *r);
	return r;
}

/* Grow the subtype table and its hash when full. */
static int
sub_grow(struct transcript *t)
{
	char **ns;
	uint8_t *nf;
	uint32_t *nh;
	size_t i, n = t->capsub * 2;

	if ((ns = reallocarray(t->subs, n, sizeof *ns)) == NULL)
		return -1;
	t->subs = ns;
	if ((nf = realloc(t->subflags, n)) == NULL)
		return -1;
	t->subflags = nf;
	t->capsub = n;
	if ((nh = calloc(n * 2, sizeof *nh)) == NULL)
		return -1;
	for (i = 1; i < t->nsub; i++)
		ht_place(nh, n * 2 - 1, hash_bytes(hash_seed, t->subs[i],
		    strlen(t->subs[i])),
		    (uint32_t)i);
	free(t->sht);
	t->sht = nh;
	t->shtmask = n * 2 - 1;
	return 0;
}

int
transcript_intern_sub(struct transcript *t, const char *s, size_t n, uint32_t *id)
{
	uint64_t h = hash_bytes(hash_seed, s, n);
	size_t i = h & t->shtmask;
	const char *const *p;
	uint32_t v;

	while ((v = t->sht[i]) != 0) {
		if (strncmp(t->subs[v - 1], s, n) == 0 && t->subs[v - 1][n] == '\0') {
			*id = v - 1;
			return 0;
		}
		i = (i + 1) & t->shtmask;
	}
	if (t->nsub == t->capsub && sub_grow(t) == -1)
		return -1;
	if ((t->subs[t->nsub] = strndup(s, n)) == NULL)
		return -1;
	t->subflags[t->nsub] = 0;
	for (p = nonconv_subtypes; *p != NULL; p++)
		if (strlen(*p) == n && memcmp(*p, s, n) == 0)
			t->subflags[t->nsub] = TX_SUB_NONCONV;
	ht_place(t->sht, t->shtmask, hash_bytes(hash_seed, t->subs[t->nsub],
	    strlen(t->subs[t->nsub])), (uint32_t)t->nsub);
	*id = (uint32_t)t->nsub++;
	return 0;
}

int
transcript_index_init(struct transcript *t, uint64_t size_hint)
{
	size_t slots = 1024;

	pthread_once(&hash_seed_once, hash_seed_init);
	arc4random_buf(&t->seed, sizeof t->seed);
	/* Records average a few KiB: size the uuid hash for the file. */
	while (slots < (1u << 26) && slots / 2 < size_hint / 2048)
		slots *= 2;
	t->htmask = slots - 1;
	t->capsub = 64;
	t->shtmask = 127;
	t->ht = transcript_ht_alloc(t->htmask + 1);
	t->subs = calloc(t->capsub, sizeof *t->subs);
	t->subflags = calloc(t->capsub, 1);
	t->sht = calloc(t->shtmask + 1, sizeof *t->sht);
	if (t->ht == NULL || t->subs == NULL || t->subflags == NULL ||
	    t->sht == NULL || (t->subs[0] = strdup("")) == NULL)
		return -1;
	t->nsub = 1;
	return 0;
}

void
transcript_index_free(struct transcript *t)
{
	size_t i;

	transcript_cache_unmap(t);	/* arrays in an index cache's mapping */
	for (i = 0; i < t->nsub; i++)
		free(t->subs[i]);
	free(t->subs);
	free(t->subflags);
	free(t->sht);
	free(t->ht);
	free(t->rec);
	free(t->frag);
	free(t->pool);
	free(t->rbuf);
	free(t->abuf);
}

size_t
transcript_count(const struct transcript *t)
{
	return t->nrec;
}

enum tx_type
transcript_type(const struct transcript *t, uint32_t rec)
{
	return (enum tx_type)tx_rec(t, rec)->type;
}

const char *
transcript_subtype(const struct transcript *t, uint32_t rec)
{
	return t->subs[tx_rec(t, rec)->sub];
}

unsigned
transcript_flags(const struct transcript *t, uint32_t rec)
{
	return tx_rec(t, rec)->flags;
}

const char *
transcript_uuid_ref(const struct transcript *t, uint32_t rec, char buf[37],
    size_t *len)
{
	const struct tx_rec *r = tx_rec(t, rec);
	struct tx_key k;

	if (r->kflags & TXR_ID_STR) {
		transcript_key_stored(t, r->id, 1, &k);
		*len = k.len;
		return k.s;
	}
	uuid_format(r->id, buf);
	*len = 36;
	return buf;
}

void
transcript_uuid(const struct transcript *t, uint32_t rec, char out[64])
{
	char buf[37];
	const char *s;
	size_t n;

	s = transcript_uuid_ref(t, rec, buf, &n);
	if (n > 63)
		n = 63;
	memcpy(out, s, n);
	out[n] = '\0';
}

uint64_t
transcript_raw_len(const struct transcript *t, uint32_t rec)
{
	const struct tx_rec *r = tx_rec(t, rec);
	uint64_t n = r->len;
	uint32_t f;

	for (f = r->frag; f != 0; f = tx_frag(t, f - 1)->next)
		n += tx_frag(t, f - 1)->len;
	return n;
}

int64_t
transcript_find(const struct transcript *t, const char *uuid)
{
	struct tx_key k;

	transcript_key_text(t, &k, uuid, strlen(uuid));
	return transcript_ht_find(t, &k);
}

int
transcript_parent(const struct transcript *t, uint32_t rec, uint32_t *parent)
{
	const struct tx_rec *r = tx_rec(t, rec);
	struct tx_key k;
	uint32_t i;
	int64_t p;

	if (r->kflags & TXR_PAR_NULL)
		return 0;
	/* The parent is nearly always one of the few records just before. */
	for (i = rec; i > 0 && i + 4 > rec; i--) {
		const struct tx_rec *q = tx_rec(t, i - 1);
		if ((q->flags & TX_F_CONVERSATION) &&
		    (q->kflags & TXR_ID_STR) == 0 && (r->kflags & TXR_PAR_STR) == 0 &&
		    memcmp(q->id, r->par, 16) == 0) {
			*parent = i - 1;
			return 1;
		}
	}
	transcript_key_stored(t, r->par, r->kflags & TXR_PAR_STR, &k);
	if ((p = transcript_ht_find(t, &k)) < 0)
		return -1;
	*parent = (uint32_t)p;
	return 1;
}
