/*
 * indexkeep.h: keeping a session's transcript index in the cache after a
 * restore answered, on a worker, so the answer never waits for the write.
 */
#ifndef ACP_INDEXKEEP_H
#define ACP_INDEXKEEP_H

struct child;
struct session;

/* When s's index changed since it was last kept, write it to the cache
   directory on a worker: s is busy (its requests wait) until that is done. */
void	indexkeep_start(struct child *, struct session *);

#endif
