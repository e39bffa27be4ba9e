/* SPDX-License-Identifier: ISC */
/*
 * lease.h: the session writer lease.
 *
 * <data-dir>/tmp/session-writer-locks/<id>.lock is created exclusively (a
 * temp file hard-linked into place; EEXIST means someone holds it)
 * and holds JSON {schema_version, state, session_id, owner_id, pid,
 * process_start_identity, hostname, process_kind, acquired_at,
 * qwen_version}.  A lock whose owner is provably dead on this host (no such
 * pid, or the pid now belongs to a process that started later) is
 * reclaimed under an flock(2) on a side file, so two reclaimers cannot both
 * win.  Release removes the lock only while it is still ours.
 */
#ifndef QWEN_ACP_LEASE_H
#define QWEN_ACP_LEASE_H

struct lease;

enum lease_result {
	LEASE_OK,
	LEASE_CONFLICT,		/* a live owner holds it: -32020 */
	LEASE_ERROR,		/* I/O failure */
};

/*
 * Acquire the lease on session_id (a valid id) for owner_id.  On
 * LEASE_OK *out is the new lease (lease_release() frees it); otherwise
 * *cause is a message naming the holder or the failure (caller frees).
 * Reentrant; safe on a worker thread.
 */
enum lease_result lease_acquire(const char *data_dir, const char *session_id,
	    const char *owner_id, struct lease **out, char **cause);

/* Remove the lock file if it is still ours, and free.  NULL-safe. */
void	lease_release(struct lease *);

/*
 * lease_acquire on a thread of its own, so that a restore takes the lease
 * while it reads the transcript (the lock's file system round trips cost
 * as much as a warm restore's reading).  NULL when no thread could start:
 * the caller acquires itself.  lease_acquire_finish() waits for the result
 * (lease_acquire's) and frees the pending acquire.
 */
struct lease_pending;
struct lease_pending *lease_acquire_start(const char *data_dir,
	    const char *session_id, const char *owner_id);
enum lease_result lease_acquire_finish(struct lease_pending *, struct lease **out,
	    char **cause);


#endif
