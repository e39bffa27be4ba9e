/* SPDX-License-Identifier: ISC */
/*
 * txsums.h: numbers summed along a transcript's active chain (a page's
 * token counts before it), kept beside the transcript's index cache as
 * <cache>/tx-<hash>.sum so that a fresh child does not read every record
 * before a page to make them again.  The loader does not know what the
 * numbers mean: three doubles a sum, sum[k] for the chain's records
 * [0, k * every).
 */
#ifndef QWEN_ACP_TXSUMS_H
#define QWEN_ACP_TXSUMS_H

#include <stddef.h>

#include "chain.h"
#include "transcript.h"

/*
 * The sums kept in dir for chain c of t, made every `every` records: how
 * many (0: none), into *sum (caller frees).  They are used only when the
 * file is whole (its checksum), and of this transcript as t has it (the
 * index cache's check: device, inode, an indexed size not above t's, the
 * digests of the first and last bytes it was made of) and of this chain
 * (the records the sums cover are those of c, in order); a file that
 * fails a check is removed, to be made again.
 */
size_t	txsums_load(struct transcript *t, const char *dir,
	    const struct tx_chain *c, unsigned every, double (**sum)[3]);

/*
 * Keep sum[0..n) of chain c of t in dir (write, fsync, rename), made
 * every `every` records.  0, or -1 + cause (caller frees).
 */
int	txsums_save(struct transcript *t, const char *dir,
	    const struct tx_chain *c, unsigned every, const double (*sum)[3],
	    size_t n, char **cause);

#endif
