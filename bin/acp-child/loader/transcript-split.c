/* SPDX-License-Identifier: ISC */
/*
 * transcript-split.c: the first index pass of a big transcript on all cores.
 *
 * The file is cut into chunks, each ending at a newline: an eighth of the
 * file each, so that a core slowed down (a virtual CPU the host runs
 * something else on) takes fewer of them instead of making the other wait
 * for a fixed half.  The calling thread indexes the first chunk into the
 * index itself, then every thread takes the next chunk left into a scratch
 * index of its own.  The scratch indexes are merged in file order:
 * subtypes re-interned, string uuids moved into this pool, a uuid already
 * seen in an earlier chunk becomes a fragment of that record, the leaf
 * comes from the last chunk with conversation records.  The result is the
 * same index as one sequential pass.
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

/* A chunk is an eighth of the file and at least half the threshold: more
   chunks balance better but cost more (each is merged: its records probe
   the whole file's uuid table again, and a scratch index holds its own
   huge pages).  CHUNKS_MAX bounds them (the last chunk takes the rest);
   the pass uses up to THREADS_MAX cores. */
#define CHUNK_PARTS	8
#define CHUNKS_MAX	16
#define THREADS_MAX	4

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

/* One chunk [start, end) of the pass (end 0: to the end of the file);
   t is the caller's index for the first chunk, a scratch one for others. */
struct chunk {
	struct transcript *t;
	uint64_t start, end;
	char *cause;
	int rc;
};

struct pass {
	struct transcript *t;
	uint64_t size;
	struct chunk c[CHUNKS_MAX];
	unsigned n;
	unsigned next;			/* the next chunk to take (atomic) */
};

/* Index chunk c >= 1 into a scratch index of its own.  Its uuid hash is
   dropped at once: the merge probes the caller's table only. */
static void
chunk_run(struct pass *p, struct chunk *c, struct tx_rbuf *rb)
{
	struct transcript *b;

	c->rc = -1;
	if ((b = calloc(1, sizeof *b)) == NULL)
		return;
	c->t = b;
	if (transcript_index_init(b, (c->end ? c->end : p->size) - c->start) == -1)
		return;
	b->path = p->t->path;
	b->sid = p->t->sid;
	b->sidlen = p->t->sidlen;
	b->fd = p->t->fd;
	b->leaf = -1;
	b->indexed = c->start;
	b->limit = c->end;
	c->rc = transcript_index_pass_buf(b, rb, &c->cause);
	free(b->ht);
	b->ht = NULL;
}

/* Take chunks until none is left, all read through one buffer (a fresh
   one is a fresh huge page a chunk: its first touch is dear). */
static void
chunks_take(struct pass *p, struct tx_rbuf *rb)
{
	unsigned k;

	while ((k = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->n)
		chunk_run(p, &p->c[k], rb);
}

static void *
chunk_worker(void *arg)
{
	struct tx_rbuf rb = { NULL, 0 };

	chunks_take(arg, &rb);
	free(rb.p);
	return NULL;
}

static void
chunk_free(struct chunk *c)
{
	struct transcript *b = c->t;

	free(c->cause);
	if (b == NULL)
		return;
	if (b->tok != NULL)
		json_tokener_free(b->tok);
	b->path = b->sid = NULL;	/* the caller's */
	transcript_index_free(b);
	free(b);
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

/* Cut [t->indexed, size) into chunks at newlines; the number of chunks. */
static unsigned
chunk_plan(struct pass *p, uint64_t size)
{
	uint64_t chunk = size / CHUNK_PARTS, at, nl;
	unsigned n = 0;

	if (chunk < split_min() / 2)
		chunk = split_min() / 2;
	if (chunk == 0)
		chunk = 1;
	p->c[0].start = p->t->indexed;
	for (at = p->t->indexed; n + 1 < CHUNKS_MAX; at = nl) {
		if (size - at <= chunk ||
		    (nl = split_point(p->t->fd, at + chunk, size)) == 0 || nl >= size)
			break;
		p->c[n++].end = nl;
		p->c[n].start = nl;
	}
	p->c[n++].end = 0;
	return n;
}

/* How many threads the pass runs on. */
static unsigned
pass_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > THREADS_MAX ? THREADS_MAX : (unsigned)n;
}

int
transcript_index_split(struct transcript *t, uint64_t size, char **cause)
{
	struct tx_rbuf rb = { NULL, 0 };
	struct pass *p;
	pthread_t tid[THREADS_MAX];
	unsigned k, nt = 0, threads = pass_threads();
	int rc;

	if (size < split_min() || threads < 2 || (p = calloc(1, sizeof *p)) == NULL)
		return transcript_index_pass(t, cause);
	p->t = t;
	p->size = size;
	if ((p->n = chunk_plan(p, size)) < 2) {
		free(p);
		return transcript_index_pass(t, cause);
	}
	p->next = 1;
	while (nt + 1 < threads && nt + 1 < p->n &&
	    pthread_create(&tid[nt], NULL, chunk_worker, p) == 0)
		nt++;
	t->limit = p->c[0].end;
	rc = transcript_index_pass_buf(t, &rb, cause);
	t->limit = 0;
	chunks_take(p, &rb);		/* with no helper, this thread does all */
	free(rb.p);
	for (k = 0; k < nt; k++)
		pthread_join(tid[k], NULL);
	for (k = 1; k < p->n; k++) {
		if (rc == 0 && p->c[k].rc == -1) {
			transcript_cause(cause, "%s", p->c[k].cause ? p->c[k].cause :
			    "index: out of memory");
			rc = -1;
		}
		if (rc == 0 && merge(t, p->c[k].t) == -1) {
			transcript_cause(cause, "index %s: out of memory", t->path);
			rc = -1;
		}
		chunk_free(&p->c[k]);
	}
	free(p);
	return rc;
}
