/* clock.c: monotonic and wall clocks in milliseconds and nanoseconds. */
#include <time.h>

#include "clock.h"

static uint64_t
clock_read_ns(clockid_t id)
{
	struct timespec ts;

	/* clock_gettime cannot fail for these ids on Linux. */
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t
clock_mono_ns(void)
{
	return clock_read_ns(CLOCK_MONOTONIC);
}

uint64_t
clock_mono_ms(void)
{
	return clock_mono_ns() / 1000000ULL;
}

uint64_t
clock_wall_ns(void)
{
	return clock_read_ns(CLOCK_REALTIME);
}

uint64_t
clock_wall_ms(void)
{
	return clock_wall_ns() / 1000000ULL;
}

uint64_t
clock_remaining_ms(uint64_t deadline_ms)
{
	uint64_t now = clock_mono_ms();

	return deadline_ms > now ? deadline_ms - now : 0;
}
