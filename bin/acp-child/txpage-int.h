/* SPDX-License-Identifier: ISC */
/*
 * txpage-int.h: the transcript index caches shared by transcript pages
 * (txpage.c) and branching (txbranch.c).  Loop thread only, except that
 * a job owns its entry's index while the entry is busy.
 */
#ifndef QWEN_ACP_TXPAGE_INT_H
#define QWEN_ACP_TXPAGE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <json-c/json.h>

#include "chain.h"
#include "project.h"
#include "rpc-frame.h"

struct child;
struct transcript;

struct txpage_wait {
	TAILQ_ENTRY(txpage_wait)	 entry;
	struct rpc_msg		 msg;
};

struct txpage_entry {
	TAILQ_ENTRY(txpage_entry)	 entry;
	char			*path;
	char			 sid[37];
	struct transcript	*tx;
	struct tx_chain		 chain;
	uint64_t		 chained;	/* transcript size the chain is of */
	struct project_usage	 usage;		/* token sums along the chain */
	size_t			 sums_kept;	/* of them, kept */
	int			 sums_looked;	/* kept ones read */
	uint64_t		 kept_at;	/* transcript size last kept, or 0 */
	const char		*cache_dir;	/* the index caches (--cache-dir), or NULL */
	int			 rescan;	/* the index cache was damaged: a full pass */
	int			 busy;
	TAILQ_HEAD(, txpage_wait)	 waits;
};

/* On a worker: bring e's index and chain up to date with the file.  0, or
   -1 with *code (JSON-RPC), *kind and msg set. */
int	txpage_entry_index(struct txpage_entry *, int *code, const char **kind,
	    char *msg, size_t msgsize);
/* On a worker: e's index cache was found damaged in a part in use: drop
   it (and what was derived from it); the next txpage_entry_index indexes the
   whole file. */
void	txpage_entry_reset(struct txpage_entry *);
/* Where record rec is on e's chain: its position + 1, or 0 when it is
   not on it (rec -1: none).  A scan from the newest end: one lookup a
   request, cheaper than a map of every record the first page would
   build. */
size_t	txpage_entry_pos(const struct txpage_entry *, int64_t rec);
/* Set a job's error (*code, *kind, msg); returns -1. */
int	txpage_error(int *code, const char **kind, char *msg, size_t msgsize,
	    int c, const char *k, const char *m);
/* On the loop: e is free again; start the next request waiting for it. */
void	txpage_entry_release(struct child *, struct txpage_entry *);

/* txbranch.c: qwen/control/session/branch on an idle entry. */
void	txbranch_start(struct child *, struct txpage_entry *, struct rpc_msg *);
/* txturns.c: qwen/status/session/turn_index on an idle entry. */
int	txturns_is_method(const char *);
void	txturns_start(struct child *, struct txpage_entry *, struct rpc_msg *);

#endif
