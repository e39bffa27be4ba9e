/* SPDX-License-Identifier: ISC */
/*
 * lagmon.h: event-loop lag monitor.
 *
 * A timer asks to fire every interval and records how late it actually
 * fired; a ring of the most recent samples gives mean, p50, p99 and max.
 * A busy loop (a callback that blocks) shows up as lag.
 */
#ifndef QWEN_ACP_LAGMON_H
#define QWEN_ACP_LAGMON_H

#include <stddef.h>

struct event_base;
struct lagmon;

struct lag_snapshot {
	double	 mean_ms;
	double	 p50_ms;
	double	 p99_ms;
	double	 max_ms;
	size_t	 samples;	/* in the window */
	unsigned interval_ms;
	size_t	 window;	/* ring capacity */
};

/* Start sampling on base.  NULL on allocation failure. */
struct lagmon	*lagmon_new(struct event_base *, unsigned interval_ms, size_t window);
void		 lagmon_free(struct lagmon *);	/* NULL-safe */

/* Statistics over the samples now in the window (zeros when none). */
void	lagmon_snapshot(const struct lagmon *, struct lag_snapshot *);

/* Record one sample by hand (for tests and for the timer). */
void	lagmon_record(struct lagmon *, double lag_ms);

#endif
