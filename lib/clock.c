/* SPDX-License-Identifier: ISC */
/* clock.c: monotonic and wall clocks in milliseconds and nanoseconds, ISO time. */
#include "config.h"

#include <stdio.h>
#include <string.h>
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

/* JavaScript's toISOString() shape for a wall-clock time in milliseconds. */
void
clock_iso_time(uint64_t wall_ms, char out[CLOCK_ISO_LEN])
{
	time_t t = (time_t)(wall_ms / 1000);
	struct tm tm;
	size_t n;

	gmtime_r(&t, &tm);
	n = strftime(out, CLOCK_ISO_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, CLOCK_ISO_LEN - n, ".%03uZ", (unsigned)(wall_ms % 1000));
}

/* The current wall-clock time as clock_iso_time writes it. */
void
clock_iso_now(char out[CLOCK_ISO_LEN])
{
	clock_iso_time(clock_wall_ms(), out);
}

int64_t
clock_iso_parse(const char *s)
{
	struct tm tm;
	const char *end;
	int64_t ms = 0, scale = 100;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || (end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return -1;
	if (*end == '.') {
		if (end[1] < '0' || end[1] > '9')
			return -1;
		for (end++; *end >= '0' && *end <= '9'; end++, scale /= 10)
			ms += (*end - '0') * scale;
	}
	if (*end == 'Z')
		end++;
	if (*end != '\0' || (t = timegm(&tm)) == (time_t)-1)
		return -1;
	return (int64_t)t * 1000 + ms;
}
