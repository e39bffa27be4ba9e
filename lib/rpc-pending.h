/* SPDX-License-Identifier: ISC */
/*
 * rpc-pending.h: the table of requests this side sent and awaits answers to.
 *
 * Ids are allocated here (positive integers, never reused within a table).
 * Each entry carries an opaque pointer and an optional deadline on the
 * monotonic millisecond clock; the table never calls back on its own, the
 * owner asks it for the next deadline and expires entries from its loop.
 * Cancelling a request is rpc_pending_take.  Add, take and has are O(1)
 * expected plus O(log n) for an entry with a deadline (a hash of ids and a
 * min-heap of deadlines); next_deadline is O(1); expire is O(k log n) for k
 * expired entries.  Not thread-safe.
 */
#ifndef QWEN_RPC_PENDING_H
#define QWEN_RPC_PENDING_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

struct rpc_pending;

struct rpc_pending	*rpc_pending_new(void);
/* Frees the table; the callers' pointers are not touched.  NULL-safe. */
void			 rpc_pending_free(struct rpc_pending *);

/*
 * Add an entry.  deadline_ms is a clock_mono_ms() value, 0 for none.
 * Returns the new id (> 0), or -1 on allocation failure.
 */
int64_t	 rpc_pending_add(struct rpc_pending *, uint64_t deadline_ms, void *arg);

/*
 * Remove the entry for id and return its pointer through *argp.  Returns 0,
 * or -1 when no such entry exists (already answered, cancelled or expired).
 */
int	 rpc_pending_take(struct rpc_pending *, int64_t id, void **argp);

/* Same as take, for a reply's json id (an integer or a decimal string). */
int	 rpc_pending_take_json(struct rpc_pending *, json_object *id, void **argp);

/* Whether id is pending. */
int	 rpc_pending_has(const struct rpc_pending *, int64_t id);

/* Earliest deadline among entries, 0 when none has one. */
uint64_t rpc_pending_next_deadline(const struct rpc_pending *);

/*
 * Remove every entry whose deadline is <= now_ms, calling fn(id, arg, ctx)
 * for each, earliest deadline first (ties by id), each entry removed before
 * its call.  fn may add or take other entries; an entry added from fn is not
 * expired by this call even when already due.  Returns the number expired.
 */
size_t	 rpc_pending_expire(struct rpc_pending *, uint64_t now_ms,
	    void (*fn)(int64_t id, void *arg, void *ctx), void *ctx);

/*
 * Remove every entry, calling fn for each (for a transport that closed),
 * in no particular order; fn may be NULL.  Entries added from fn stay.
 * Returns the number removed.
 */
size_t	 rpc_pending_drain(struct rpc_pending *,
	    void (*fn)(int64_t id, void *arg, void *ctx), void *ctx);

size_t	 rpc_pending_count(const struct rpc_pending *);

#endif
