/* SPDX-License-Identifier: ISC */
/*
 * clock.h: the two clocks libqwen uses.
 *
 * Deadlines and durations use CLOCK_MONOTONIC so that a wall-clock step never
 * fires or postpones a timer; timestamps that leave the process (spans, event
 * envelopes, lease files) use the wall clock.
 */
#ifndef QWEN_CLOCK_H
#define QWEN_CLOCK_H

#include <stdint.h>

/* Monotonic time in milliseconds / nanoseconds since an arbitrary origin. */
uint64_t	clock_mono_ms(void);
uint64_t	clock_mono_ns(void);

/* Wall time since the Unix epoch in milliseconds / nanoseconds. */
uint64_t	clock_wall_ms(void);
uint64_t	clock_wall_ns(void);

/*
 * Milliseconds left until deadline_ms (a clock_mono_ms() value), 0 when it
 * has passed.
 */
uint64_t	clock_remaining_ms(uint64_t deadline_ms);

#define CLOCK_ISO_LEN	32
/* ISO 8601 UTC with milliseconds ("2026-08-01T15:01:13.619Z") into out[32]. */
void	clock_iso_time(uint64_t wall_ms, char out[CLOCK_ISO_LEN]);
void	clock_iso_now(char out[CLOCK_ISO_LEN]);
/* The epoch milliseconds of an ISO 8601 UTC time as clock_iso_time writes
   it, its fraction any length or none, its Z optional (what upstream's
   Date.parse reads from its own files); -1 for another shape. */
int64_t	clock_iso_parse(const char *);

#endif
