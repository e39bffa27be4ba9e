/* SPDX-License-Identifier: ISC */
/*
 * chain.h: the active chain of a transcript (leaf -> root through
 * parentUuid, gap and cycle aware, reversed to oldest first), its last
 * chat_compression checkpoint, turn starts and the model-history count.
 */
#ifndef QWEN_ACP_CHAIN_H
#define QWEN_ACP_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "transcript.h"

struct tx_chain {
	uint32_t *rec;          /* logical record indices, oldest first (malloc'd) */
	size_t len;
	int64_t leaf;           /* leaf record (last conversation record in file order), -1 if none */
	int64_t last_compression;   /* index INTO rec[] of the last chat_compression checkpoint
	                               (truthy compressedHistory) on the chain, -1 if none */
	size_t gaps;            /* 0 or 1: the walk stopped at a missing parent */
	size_t cycles;          /* 0 or 1: the walk stopped at a revisited uuid */
	size_t turn_starts;
	int64_t model_history;  /* as the index cache has it, -1: count it */
};

/* Build the active chain into *out (caller clears with chain_clear). -1 + cause (caller frees). */
int chain_build(struct transcript *, struct tx_chain *out, char **cause);
void chain_clear(struct tx_chain *);                        /* frees rec[], zeroes; NULL-safe */
/* Count of model-history entries per upstream rules (checkpoint + later non-system messages,
   mid-turn merge); parses only the checkpoint onward. -1 + cause on failure. */
int64_t chain_model_history(struct transcript *, const struct tx_chain *, char **cause);
/* Is rec a turn-start user record (type user, subtype not goal_runtime, notification,
   cron, mid_turn_user_message or realtime_message)? */
int chain_is_turn_start(const struct transcript *, uint32_t rec);
/* Is rec a chat_compression checkpoint (truthy systemPayload.compressedHistory)?
   Parses rec only when it is a chat_compression record. 1, 0, or -1 + cause. */
int chain_is_checkpoint(struct transcript *, uint32_t rec, char **cause);

#endif
