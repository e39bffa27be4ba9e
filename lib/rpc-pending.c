/* SPDX-License-Identifier: ISC */
/*
 * rpc-pending.c: the table of requests awaiting an answer.
 *
 * Entries live in a pool (an array with a free list, so an entry keeps its
 * index while it lives).  An open-addressing hash (linear probing, at most
 * half full, backward-shift deletion) maps id to pool index, and a binary
 * min-heap of pool indices ordered by (deadline, id) holds the entries that
 * have a deadline; each entry knows its heap position.  So add, take and
 * cancel are O(log n), next_deadline is O(1), and expiring k entries is
 * O(k log n).
 *
 * An entry added from an expire callback is kept out of the heap until that
 * expire returns, so a callback that re-adds an already due entry cannot make
 * expire loop forever; it is expired by the next call.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc-pending.h"

#define POS_NONE	UINT32_MAX		/* no deadline */
#define POS_DEFERRED	(UINT32_MAX - 1)	/* added during expire */
#define POOL_MAX	(UINT32_MAX / 4)

struct pentry {
	int64_t		 id;		/* 0 when free */
	uint64_t	 deadline;
	void		*arg;
	uint32_t	 pos;		/* heap position, POS_NONE, POS_DEFERRED */
	uint32_t	 next_free;
};

struct hslot {
	int64_t		 id;		/* 0 when empty */
	uint32_t	 idx;
};

struct rpc_pending {
	struct pentry	*pool;
	uint32_t	 pool_size;	/* allocated */
	uint32_t	 pool_used;	/* high-water mark */
	uint32_t	 free_head;	/* POS_NONE when empty */
	struct hslot	*hash;
	size_t		 hash_size;	/* power of two */
	uint32_t	*heap;		/* pool indices; sized like pool */
	uint32_t	 heap_len;
	size_t		 count;
	int64_t		 last_id;
	int		 expiring;
	int		 deferred;
};

/* Create an empty table. */
struct rpc_pending *
rpc_pending_new(void)
{
	struct rpc_pending *t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->free_head = POS_NONE;
	t->hash_size = 16;
	if ((t->hash = calloc(t->hash_size, sizeof(*t->hash))) == NULL) {
		free(t);
		return NULL;
	}
	return t;
}

/* Free the table; the entries' pointers are the callers'. */
void
rpc_pending_free(struct rpc_pending *t)
{
	if (t == NULL)
		return;
	free(t->pool);
	free(t->hash);
	free(t->heap);
	free(t);
}

/* Home slot of id (ids are sequential, so mix them). */
static size_t
hash_home(const struct rpc_pending *t, int64_t id)
{
	uint64_t h = (uint64_t)id * UINT64_C(0x9E3779B97F4A7C15);

	return (size_t)(h >> 32) & (t->hash_size - 1);
}

/* Slot holding id, or the empty slot where it would go. */
static size_t
hash_find(const struct rpc_pending *t, int64_t id)
{
	size_t i = hash_home(t, id);

	while (t->hash[i].id != 0 && t->hash[i].id != id)
		i = (i + 1) & (t->hash_size - 1);
	return i;
}

/* Double the hash table. */
static int
hash_grow(struct rpc_pending *t)
{
	struct hslot *old = t->hash, *nh;
	size_t i, j, osize = t->hash_size;

	if ((nh = calloc(osize * 2, sizeof(*nh))) == NULL)
		return -1;
	t->hash = nh;
	t->hash_size = osize * 2;
	for (i = 0; i < osize; i++) {
		if (old[i].id == 0)
			continue;
		j = hash_find(t, old[i].id);
		t->hash[j] = old[i];
	}
	free(old);
	return 0;
}

/* Remove the id in slot i, shifting its probe chain back. */
static void
hash_remove(struct rpc_pending *t, size_t i)
{
	size_t j = i, k, mask = t->hash_size - 1;

	for (;;) {
		t->hash[i].id = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (t->hash[j].id == 0)
				return;
			k = hash_home(t, t->hash[j].id);
			/* Move j back to i unless its home lies in (i, j]. */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		t->hash[i] = t->hash[j];
		i = j;
	}
}

/* Whether entry a is due before entry b. */
static int
heap_less(const struct rpc_pending *t, uint32_t a, uint32_t b)
{
	const struct pentry *ea = &t->pool[a], *eb = &t->pool[b];

	if (ea->deadline != eb->deadline)
		return ea->deadline < eb->deadline;
	return ea->id < eb->id;
}

/* Put pool index idx at heap position pos. */
static void
heap_set(struct rpc_pending *t, uint32_t pos, uint32_t idx)
{
	t->heap[pos] = idx;
	t->pool[idx].pos = pos;
}

/* Move the entry at pos up while it is due before its parent. */
static void
heap_up(struct rpc_pending *t, uint32_t pos)
{
	uint32_t idx = t->heap[pos], parent;

	while (pos > 0) {
		parent = (pos - 1) / 2;
		if (!heap_less(t, idx, t->heap[parent]))
			break;
		heap_set(t, pos, t->heap[parent]);
		pos = parent;
	}
	heap_set(t, pos, idx);
}

/* Move the entry at pos down while a child is due before it. */
static void
heap_down(struct rpc_pending *t, uint32_t pos)
{
	uint32_t idx = t->heap[pos], child;

	for (;;) {
		child = 2 * pos + 1;
		if (child >= t->heap_len)
			break;
		if (child + 1 < t->heap_len &&
		    heap_less(t, t->heap[child + 1], t->heap[child]))
			child++;
		if (!heap_less(t, t->heap[child], idx))
			break;
		heap_set(t, pos, t->heap[child]);
		pos = child;
	}
	heap_set(t, pos, idx);
}

/* Insert pool index idx into the heap (capacity is reserved in add). */
static void
heap_push(struct rpc_pending *t, uint32_t idx)
{
	t->heap[t->heap_len] = idx;
	heap_up(t, t->heap_len++);
}

/* Remove the entry at heap position pos. */
static void
heap_remove(struct rpc_pending *t, uint32_t pos)
{
	uint32_t last = t->heap[--t->heap_len];

	t->pool[t->heap[pos]].pos = POS_NONE;
	if (pos == t->heap_len)
		return;
	heap_set(t, pos, last);
	if (pos > 0 && heap_less(t, last, t->heap[(pos - 1) / 2]))
		heap_up(t, pos);
	else
		heap_down(t, pos);
}

/* Grow the pool and the heap to hold one more entry. */
static int
pool_reserve(struct rpc_pending *t)
{
	struct pentry *np;
	uint32_t *nh, size;

	if (t->free_head != POS_NONE || t->pool_used < t->pool_size)
		return 0;
	if (t->pool_size >= POOL_MAX) {
		errno = ENOMEM;
		return -1;
	}
	size = t->pool_size ? t->pool_size * 2 : 16;
	if ((np = reallocarray(t->pool, size, sizeof(*np))) == NULL)
		return -1;
	t->pool = np;
	if ((nh = reallocarray(t->heap, size, sizeof(*nh))) == NULL)
		return -1;
	t->heap = nh;
	t->pool_size = size;
	return 0;
}

/* Add an entry and return its new id. */
int64_t
rpc_pending_add(struct rpc_pending *t, uint64_t deadline_ms, void *arg)
{
	struct pentry *e;
	uint32_t idx;
	size_t slot;

	if (t->last_id == INT64_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	if (pool_reserve(t) == -1)
		return -1;
	if ((t->count + 1) * 2 > t->hash_size && hash_grow(t) == -1)
		return -1;
	if (t->free_head != POS_NONE) {
		idx = t->free_head;
		t->free_head = t->pool[idx].next_free;
	} else
		idx = t->pool_used++;
	e = &t->pool[idx];
	e->id = ++t->last_id;
	e->deadline = deadline_ms;
	e->arg = arg;
	e->pos = POS_NONE;
	slot = hash_find(t, e->id);
	t->hash[slot].id = e->id;
	t->hash[slot].idx = idx;
	t->count++;
	if (deadline_ms != 0 && t->expiring) {
		e->pos = POS_DEFERRED;
		t->deferred = 1;
	} else if (deadline_ms != 0)
		heap_push(t, idx);
	return e->id;
}

/* Unlink the entry at pool index idx (hash slot slot) and free it. */
static void *
pending_remove(struct rpc_pending *t, size_t slot, uint32_t idx)
{
	struct pentry *e = &t->pool[idx];
	void *arg = e->arg;

	hash_remove(t, slot);
	if (e->pos < POS_DEFERRED)
		heap_remove(t, e->pos);
	e->id = 0;
	e->arg = NULL;
	e->next_free = t->free_head;
	t->free_head = idx;
	t->count--;
	return arg;
}

/* Remove the entry for id; its pointer goes to *argp. */
int
rpc_pending_take(struct rpc_pending *t, int64_t id, void **argp)
{
	size_t slot;
	void *arg;

	if (id <= 0)
		return -1;
	slot = hash_find(t, id);
	if (t->hash[slot].id == 0)
		return -1;
	arg = pending_remove(t, slot, t->hash[slot].idx);
	if (argp != NULL)
		*argp = arg;
	return 0;
}

/* Parse a positive decimal id without sign, spaces or leading zeros. */
static int64_t
id_from_string(const char *s, size_t len)
{
	int64_t v = 0;
	size_t i;

	if (len == 0 || len > 19 || s[0] == '0')
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (INT64_MAX - (s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Take by a reply's json id: an integer or a decimal string. */
int
rpc_pending_take_json(struct rpc_pending *t, json_object *id, void **argp)
{
	int64_t v;

	if (json_object_is_type(id, json_type_int))
		v = json_object_get_int64(id);	/* a uint64 above clamps */
	else if (json_object_is_type(id, json_type_string))
		v = id_from_string(json_object_get_string(id),
		    (size_t)json_object_get_string_len(id));
	else
		return -1;
	return rpc_pending_take(t, v, argp);
}

/* Whether id is pending. */
int
rpc_pending_has(const struct rpc_pending *t, int64_t id)
{
	return id > 0 && t->hash[hash_find(t, id)].id != 0;
}

/* Earliest deadline, 0 when no entry has one. */
uint64_t
rpc_pending_next_deadline(const struct rpc_pending *t)
{
	return t->heap_len > 0 ? t->pool[t->heap[0]].deadline : 0;
}

/* Put the entries added during an expire into the heap. */
static void
pending_undefer(struct rpc_pending *t)
{
	uint32_t i;

	for (i = 0; i < t->pool_used; i++)
		if (t->pool[i].id != 0 && t->pool[i].pos == POS_DEFERRED)
			heap_push(t, i);
	t->deferred = 0;
}

/* Expire every entry due at now_ms, earliest first. */
size_t
rpc_pending_expire(struct rpc_pending *t, uint64_t now_ms,
    void (*fn)(int64_t, void *, void *), void *ctx)
{
	struct pentry *e;
	size_t n = 0;
	int64_t id;
	void *arg;

	if (t->expiring)
		return 0;
	t->expiring = 1;
	while (t->heap_len > 0) {
		e = &t->pool[t->heap[0]];
		if (e->deadline > now_ms)
			break;
		id = e->id;
		arg = pending_remove(t, hash_find(t, id), t->heap[0]);
		n++;
		if (fn != NULL)
			fn(id, arg, ctx);
	}
	t->expiring = 0;
	if (t->deferred)
		pending_undefer(t);
	return n;
}

/* Remove every entry present at the call, in no particular order. */
size_t
rpc_pending_drain(struct rpc_pending *t,
    void (*fn)(int64_t, void *, void *), void *ctx)
{
	int64_t last = t->last_id, id;
	size_t n = 0;
	uint32_t i;
	void *arg;

	for (i = 0; i < t->pool_used; i++) {
		id = t->pool[i].id;
		if (id == 0 || id > last)
			continue;
		arg = pending_remove(t, hash_find(t, id), i);
		n++;
		if (fn != NULL)
			fn(id, arg, ctx);
	}
	return n;
}

/* Number of pending entries. */
size_t
rpc_pending_count(const struct rpc_pending *t)
{
	return t->count;
}
