/* SPDX-License-Identifier: ISC */
/*
 * transcript-cache-lazy.c: an index cache checked as it is used.
 *
 * A restore of a big transcript touches a few records, the chain and a
 * few hash slots, so reading and checking all of an index at open would
 * cost more than the restore (its size grows with the file).  Instead each
 * 16 KiB block is read from the index file (a run of them with one pread)
 * and checked against its sum the first time a record,
 * fragment, pool string, hash slot or chain entry in it is read, and each
 * record or fragment is bounds-checked as it is handed out.  A block or
 * entry that fails marks the index damaged and the accessor hands out an
 * inert value (a record that is no conversation, an empty slot), so the
 * walk in progress ends without a crash; the loader sees the mark
 * (transcript_index_damaged), throws that answer away and indexes the
 * whole file again.  A damaged block that is never used costs nothing
 * and changes no answer.
 */
#include "config.h"

#include <sys/mman.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transcript.h"
#include "transcript-int.h"

/* What a damaged entry reads as: a system record with no parent and no
   flags (no walker follows or sends it), a fragment of no bytes, an empty
   slot (a probe ends there). */
static const struct tx_rec damaged_rec = { .type = TX_SYSTEM,
    .kflags = TXR_PAR_NULL };
static const struct tx_frag damaged_frag = { .last = 1 };
static const struct tx_slot damaged_slot = { 0, 0 };

/* Mark the index damaged; 0 for the caller. */
static int
damaged(const struct transcript *t)
{
	if (t->lazy->damaged == NULL)
		t->lazy->damaged = "checksum";
	return 0;
}

#define BLOCK_DONE(z, i)	((z)->ok[(i) / 8] & (1u << ((i) % 8)))

/* Fault in the pages of a long run at once, not one fault per 4 KiB as
   the read fills them (a chain of a big session is a megabyte).
   Advisory, errors ignored. */
static void
populate(const char *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t e = ((uintptr_t)p + n) & ~(uintptr_t)4095;

	if (n > 65536 && e > a)
		(void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
	(void)p;
	(void)n;
#endif
}

/*
 * Read blocks [i, j) from the index file into their place: 0, or -1
 * when the file no longer holds them (it shrank since it was opened).
 * The memory is ours (anonymous): a file that changes under us can only
 * fail the checksums, never fault.
 */
static int
blocks_read(struct tx_lazy *z, uint64_t i, uint64_t j)
{
	uint64_t at = i * TX_CACHE_BLOCK, n = j * TX_CACHE_BLOCK;

	if (n > z->end)
		n = z->end;
	z->nread += n - at;
	populate(z->base + at, (size_t)(n - at));
	return transcript_cache_pread(z->fd, (char *)z->base + at,
	    (size_t)(n - at), z->foff + at);
}

/* Check block i (once): 1 when it matches its sum. */
static int
block_ok(const struct transcript *t, uint64_t i)
{
	struct tx_lazy *z = t->lazy;
	uint64_t at = i * TX_CACHE_BLOCK, n = z->end - at;

	if (BLOCK_DONE(z, i))
		return 1;
	if (n > TX_CACHE_BLOCK)
		n = TX_CACHE_BLOCK;
	if (transcript_cache_block_sum(z->seed, i, z->base + at, (size_t)n) !=
	    z->bsum[i])
		return damaged(t);
	z->ok[i / 8] |= (uint8_t)(1u << (i % 8));
	z->checked += n;
	return 1;
}

int
transcript_cache_need(const struct transcript *t, const void *p, size_t n)
{
	struct tx_lazy *z = t->lazy;
	uint64_t at, i, j, last;

	if (z == NULL)
		return 1;
	if (z->damaged != NULL)
		return 0;
	at = (uint64_t)((const char *)p - z->base);
	if (at > z->end || n > z->end - at)
		return damaged(t);
	if (n == 0)
		return 1;
	last = (at + n - 1) / TX_CACHE_BLOCK;
	for (i = at / TX_CACHE_BLOCK; i <= last; i++) {
		if (BLOCK_DONE(z, i))
			continue;
		/* The run of blocks not read yet: one pread. */
		for (j = i + 1; j <= last && !BLOCK_DONE(z, j); j++)
			;
		if (blocks_read(z, i, j) == -1)
			return damaged(t);
		for (; i < j; i++)
			if (!block_ok(t, i))
				return 0;
		i--;
	}
	return 1;
}

/* A stored key slot points inside the pool. */
static int
key_ok(const struct transcript *t, const uint8_t v[16], int str)
{
	uint64_t off;
	uint32_t len;

	if (!str)
		return 1;
	memcpy(&off, v, 8);
	memcpy(&len, v + 8, 4);
	return off <= t->npool && len <= t->npool - off;
}

const struct tx_rec *
transcript_cache_rec(const struct transcript *t, uint32_t i)
{
	const struct tx_rec *r = &t->rec[i];
	uint64_t end = t->indexed;

	if (i >= t->nrec || !transcript_cache_need(t, r, sizeof *r) ||
	    r->frag > t->nfrag || r->sub >= t->nsub || r->type < TX_USER ||
	    r->type > TX_SYSTEM || r->off > end || r->len > end - r->off ||
	    !key_ok(t, r->id, r->kflags & TXR_ID_STR) ||
	    !key_ok(t, r->par, r->kflags & TXR_PAR_STR)) {
		damaged(t);
		return &damaged_rec;
	}
	return r;
}

const struct tx_frag *
transcript_cache_frag(const struct transcript *t, uint32_t i)
{
	const struct tx_frag *f = &t->frag[i];
	uint64_t end = t->indexed;

	/* Links only go forward: no walk can loop. */
	if (i >= t->nfrag || !transcript_cache_need(t, f, sizeof *f) ||
	    (f->next != 0 && (f->next <= i + 1 || f->next > t->nfrag)) ||
	    f->last <= i || f->last > t->nfrag || f->off > end ||
	    f->len > end - f->off) {
		damaged(t);
		return &damaged_frag;
	}
	return f;
}

const struct tx_slot *
transcript_cache_slot(const struct transcript *t, size_t i)
{
	const struct tx_slot *s = &t->ht[i];

	if (!transcript_cache_need(t, s, sizeof *s) || s->rec > t->nrec) {
		damaged(t);
		return &damaged_slot;
	}
	return s;
}

int
transcript_index_damaged(const struct transcript *t)
{
	return t->lazy != NULL && t->lazy->damaged != NULL;
}

uint64_t
transcript_index_checked(const struct transcript *t)
{
	return t->ichecked + (t->lazy != NULL ? t->lazy->checked : 0);
}

int
transcript_index_check_all(const struct transcript *t)
{
	return transcript_cache_need_all(t) ? 0 : -1;
}

uint64_t
transcript_index_read(const struct transcript *t)
{
	return t->iread + (t->lazy != NULL ? t->lazy->nread : 0);
}

/* Check what is not checked yet (before the index is copied or written). */
int
transcript_cache_need_all(const struct transcript *t)
{
	struct tx_lazy *z = t->lazy;
	uint64_t i, used;
	uint32_t r;

	if (z == NULL)
		return 1;
	if (!transcript_cache_need(t, z->base, (size_t)z->end))
		return 0;
	for (r = 0; r < t->nrec; r++)
		if (transcript_cache_rec(t, r) == &damaged_rec)
			return 0;
	for (r = 0; r < t->nfrag; r++)
		if (transcript_cache_frag(t, r) == &damaged_frag)
			return 0;
	/* Insertion trusts htused to keep an empty slot: count them. */
	for (i = 0, used = 0; i <= t->htmask; i++) {
		if (t->ht[i].rec > t->nrec)
			return damaged(t);
		used += t->ht[i].rec != 0;
	}
	return used == t->htused ? 1 : damaged(t);
}

void
transcript_cache_full(const struct transcript *t)
{
	if (t->lazy != NULL)
		damaged(t);
}

const uint32_t *
transcript_cache_chain(const struct transcript *t)
{
	const struct tx_kept_chain *k = t->kc;
	uint64_t i;

	if (!transcript_cache_need(t, k->rec, (size_t)k->len * sizeof *k->rec))
		return NULL;
	for (i = 0; i < k->len; i++)
		if (k->rec[i] >= t->nrec) {
			damaged(t);
			return NULL;
		}
	return k->rec;
}

int
transcript_cache_lazy(struct transcript *t, int fd, uint64_t foff,
    const char *base, const uint64_t *bsum, uint64_t end, uint64_t nblock,
    uint64_t seed, uint64_t nread)
{
	struct tx_lazy *z;

	if ((z = calloc(1, sizeof *z)) == NULL ||
	    (z->ok = calloc(nblock / 8 + 1, 1)) == NULL) {
		free(z);
		return -1;
	}
	z->fd = fd;
	z->foff = foff;
	z->nread = nread;
	z->base = base;
	z->bsum = bsum;
	z->end = end;
	z->seed = seed;
	t->lazy = z;
	return 0;
}

void
transcript_cache_lazy_free(struct transcript *t)
{
	if (t->lazy == NULL)
		return;
	t->ichecked += t->lazy->checked;
	t->iread += t->lazy->nread;
	close(t->lazy->fd);
	free(t->lazy->ok);
	free(t->lazy);
	t->lazy = NULL;
}
