/* SPDX-License-Identifier: ISC */
/*
 * compact.h: the compact transcript the --agent-acp agent resumes from
 * (compact.c), and the copy of what it appends there into the real
 * transcript (mirror.c).
 */
#ifndef QWEN_ACP_COMPACT_H
#define QWEN_ACP_COMPACT_H

#include <stdint.h>

struct appender;
struct event_base;
struct mirror;
struct transcript;

struct compact_stats {
	uint64_t	 bytes;		/* of the compact file */
	uint64_t	 source;	/* of the real transcript, indexed */
	uint64_t	 before;	/* records kept from before the checkpoint */
	uint64_t	 after;		/* the checkpoint and the chain after it */
};

/* ---- compact.c ---- */
/* <data_dir>/agent-runtime, made 0700 and checked (ours, private); NULL + *cause. */
char	*compact_runtime_dir(const char *data_dir, char **cause);
/* Write t's compact transcript at dst (temp file, fsync, rename).  0 or -1 + *cause. */
int	 compact_write(struct transcript *t, const char *dst,
	    struct compact_stats *st, char **cause);
/* The fallback: dst becomes a hard link of real (nothing when real does
   not exist yet).  0 or -1 + *cause. */
int	 compact_link_real(const char *real, const char *dst, char **cause);

/* ---- mirror.c ---- */
/* Copy whole lines appended to path after offset from into app (borrowed,
   kept open by the caller), as they land.  NULL + *cause. */
struct mirror	*mirror_start(struct event_base *, const char *path,
		    const char *sid, struct appender *app, uint64_t from,
		    char **cause);
/* Copy what is complete now. */
void		 mirror_drain(struct mirror *);
/* Bytes copied so far. */
uint64_t	 mirror_copied(const struct mirror *);
/* Drain, stop watching, free.  NULL-safe. */
void		 mirror_stop(struct mirror *);

#endif
