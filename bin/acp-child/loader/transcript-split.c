/* SPDX-License-Identifier: ISC */
/*
 * transcript-split.c: the first index pass of a big transcript on two threads.
 *
 * The file is cut at the first newline after its middle; this thread
 * indexes the first half while a second one indexes the rest into a
 * scratch index, which is then merged in file order: subtypes re-interned,
 * string uuids moved into this pool, a uuid already seen in the first half
 * becomes a fragment of that record, the leaf comes from the second half
 * when it has conversation records.  The result is the same index as one
 * sequential pass.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transcript-int.h"

/* Smaller files: one thread.  Above a few MiB the second core halves the
   pass for the cost of a thread (tens of microseconds) and the merge. */
#define SPLIT_MIN	(4u << 20)

/* The split threshold; QWEN_TX_SPLIT_MIN (bytes) overrides it for tests. */
static uint64_t
split_min(void)
{
	const char *s = getenv("QWEN_TX_SPLIT_MIN"), *e;
	long long v;

	if (s == NULL)
		return SPLIT_MIN;
	v = strtonum(s, 1, INT64_MAX, &e);
	return e == NULL ? (uint64_t)v : SPLIT_MIN;
}

struct half {
	struct transcript *t;
	char *cause;
	int rc;
};

static void *
half_main(void *arg)
{
	struct half *h = arg;

	h->rc = transcript_index_pass(h->t, &h->cause);
	return NULL;
}

/* Offset just after the first '\n' at or after from; 0 when none. */
static uint64_t
split_point(int fd, uint64_t from, uint64_t size)
{
	char buf[65536], *nl;
	ssize_t n;

	while (from < size) {
		n = pread(fd, buf, sizeof buf, (off_t)from);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		if ((nl = memchr(buf, '\n', (size_t)n)) != NULL)
			return from + (uint64_t)(nl - buf) + 1;
		from += (uint64_t)n;
	}
	return 0;
}

/* Move a string key of b's record slot v into a's pool. */
static int
move_key(struct transcript *a, const struct transcript *b, uint8_t v[16],
    uint8_t *kflags, uint8_t strflag)
{
	struct tx_key k;

	transcript_key_stored(b, v, 1, &k);
	*kflags &= (uint8_t)~strflag;
	return transcript_key_store(a, &k, v, kflags, strflag);
}

/* How many records ahead the merge starts its hash probe. */
#define MERGE_AHEAD	8

/* b's subtypes as a's ids, interned on first use. */
struct submap {
	uint32_t	*id;		/* b's id -> a's id + 1, 0 not yet */
};

/* a's id of b's subtype sub; -1 on ENOMEM. */
static int
merge_sub(struct transcript *a, const struct transcript *b, struct submap *m,
    uint32_t sub, uint32_t *to)
{
	if (sub == 0) {
		*to = 0;
		return 0;
	}
	if (m->id[sub] == 0) {
		if (transcript_intern_sub(a, b->subs[sub], strlen(b->subs[sub]),
		    to) == -1)
			return -1;
		m->id[sub] = *to + 1;
	}
	*to = m->id[sub] - 1;
	return 0;
}

/* Add b's record i (and its fragments) to a; *to is its index in a. */
static int
merge_record(struct transcript *a, const struct transcript *b, struct submap *m,
    uint32_t i, uint32_t *to)
{
	struct tx_rec r = b->rec[i], *nr;
	struct tx_key k;
	uint32_t f;
	size_t slot = 0;
	int64_t dup = -1;

	if (merge_sub(a, b, m, r.sub, &r.sub) == -1)
		return -1;
	r.frag = 0;
	if ((r.kflags & TXR_ID_STR) && move_key(a, b, r.id, &r.kflags, TXR_ID_STR) == -1)
		return -1;
	if ((r.kflags & TXR_PAR_STR) &&
	    move_key(a, b, r.par, &r.kflags, TXR_PAR_STR) == -1)
		return -1;
	if (r.flags & TX_F_CONVERSATION) {
		transcript_key_stored(a, r.id, r.kflags & TXR_ID_STR, &k);
		if (transcript_ht_reserve(a) == -1)
			return -1;
		dup = transcript_ht_probe(a, &k, &slot);
	}
	if (dup >= 0) {
		a->st.duplicates++;
		*to = (uint32_t)dup;
		if (transcript_add_fragment(a, *to, r.off, r.len) == -1)
			return -1;
	} else {
		if ((nr = transcript_rec_new(a)) == NULL)
			return -1;
		*nr = r;
		*to = (uint32_t)(a->nrec - 1);
		if (r.flags & TX_F_CONVERSATION)
			transcript_ht_set(a, slot, *to, &k);
	}
	for (f = b->rec[i].frag; f != 0; f = b->frag[f - 1].next)
		if (transcript_add_fragment(a, *to, b->frag[f - 1].off, b->frag[f - 1].len) == -1)
			return -1;
	return 0;
}

/* Start loading the slot a's probe for b's record i will look at first:
   the probes land anywhere in a table larger than the cache.  The key is
   hashed with a's seed (each index has its own); a binary key needs no
   pool. */
static void
merge_prefetch(const struct transcript *a, const struct transcript *b, uint32_t i)
{
	const struct tx_rec *r = &b->rec[i];
	struct tx_key k;

	if (!(r->flags & TX_F_CONVERSATION) || (r->kflags & TXR_ID_STR))
		return;
	transcript_key_stored(a, r->id, 0, &k);
	__builtin_prefetch(&a->ht[k.h & a->htmask]);
}

/* Append b's index to a's. */
static int
merge(struct transcript *a, const struct transcript *b)
{
	struct submap m;
	uint32_t i, to, leaf = 0;

	if ((m.id = calloc(b->nsub, sizeof *m.id)) == NULL)
		return -1;
	for (i = 0; i < b->nrec; i++) {
		if (i + MERGE_AHEAD < b->nrec)
			merge_prefetch(a, b, i + MERGE_AHEAD);
		if (merge_record(a, b, &m, i, &to) == -1) {
			free(m.id);
			return -1;
		}
		if ((int64_t)i == b->leaf)
			leaf = to;
	}
	free(m.id);
	if (b->leaf >= 0)
		a->leaf = leaf;
	a->st.records += b->st.records;
	a->st.malformed_lines += b->st.malformed_lines;
	a->st.recovered_records += b->st.recovered_records;
	a->st.duplicates += b->st.duplicates;
	a->bytes_read += b->bytes_read;
	a->indexed = b->indexed;
	a->pending = b->pending;
	a->st.bytes = b->st.bytes;
	return 0;
}

int
transcript_index_split(struct transcript *t, uint64_t size, char **cause)
{
	struct transcript *b;
	struct half h;
	pthread_t tid;
	uint64_t mid;
	int rc;

	if (size < split_min() || sysconf(_SC_NPROCESSORS_ONLN) < 2 ||
	    (mid = split_point(t->fd, size / 2, size)) == 0 || mid >= size)
		return transcript_index_pass(t, cause);
	if ((b = calloc(1, sizeof *b)) == NULL || transcript_index_init(b, size - mid) == -1) {
		if (b != NULL)
			transcript_index_free(b);
		free(b);
		return transcript_index_pass(t, cause);
	}
	b->path = t->path;
	b->sid = t->sid;
	b->sidlen = t->sidlen;
	b->fd = t->fd;
	b->leaf = -1;
	b->indexed = mid;
	h.t = b;
	h.cause = NULL;
	h.rc = -1;
	if (pthread_create(&tid, NULL, half_main, &h) != 0) {
		transcript_index_free(b);
		free(b);
		return transcript_index_pass(t, cause);
	}
	t->limit = mid;
	rc = transcript_index_pass(t, cause);
	t->limit = 0;
	pthread_join(tid, NULL);
	free(b->ht);			/* the merge probes t's table only */
	b->ht = NULL;
	if (rc == 0 && h.rc == -1) {
		transcript_cause(cause, "%s", h.cause ? h.cause : "index: second half failed");
		rc = -1;
	}
	if (rc == 0 && merge(t, b) == -1) {
		transcript_cause(cause, "index %s: out of memory", t->path);
		rc = -1;
	}
	free(h.cause);
	if (b->tok != NULL)
		json_tokener_free(b->tok);
	transcript_index_free(b);
	free(b);
	return rc;
}
