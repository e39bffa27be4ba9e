/* SPDX-License-Identifier: ISC */
/*
 * since.c: the --since TIME argument, ISO 8601 or relative to now.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace-dump.h"

/* Parse "[+-]HH[:]MM" after a time into seconds east of UTC; -1 if bad. */
static int
parse_zone(const char *s, long *off)
{
	int h, m;

	if (strcmp(s, "Z") == 0 || strcmp(s, "z") == 0 || *s == '\0') {
		*off = 0;
		return 0;
	}
	if ((*s != '+' && *s != '-') ||
	    (sscanf(s + 1, "%2d:%2d", &h, &m) != 2 &&
	    sscanf(s + 1, "%2d%2d", &h, &m) != 2) || h > 23 || m > 59)
		return -1;
	*off = (h * 3600L + m * 60L) * (*s == '-' ? -1 : 1);
	return 0;
}

/* ISO 8601: YYYY-MM-DD[(T| )HH:MM[:SS[.frac]]][Z|+HH:MM]; UTC by default. */
static int
parse_iso(const char *s, uint64_t *out)
{
	struct tm tm;
	int n = 0, len = (int)strlen(s);
	double sec = 0;
	long off;
	time_t t;
	char *end;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	    &n) != 3 || n != 10)
		return -1;
	s += n;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		if (sscanf(s + 1, "%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &n) != 2 ||
		    n != 5)
			return -1;
		s += 1 + n;
		if (*s == ':') {
			sec = strtod(s + 1, &end);
			if (end == s + 1 || !isdigit((unsigned char)s[1]) || sec >= 61)
				return -1;
			s = end;
		}
	} else if (n != len && *s != 'Z' && *s != '+' && *s != '-')
		return -1;
	if (parse_zone(s, &off) == -1 || tm.tm_mon < 1 || tm.tm_mon > 12 ||
	    tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon--;
	if ((t = timegm(&tm)) == (time_t)-1 || t - off < 0)
		return -1;
	*out = (uint64_t)(t - off) * 1000000000ULL + (uint64_t)(sec * 1e9);
	return 0;
}

/* Parse ISO 8601 or a relative "10m" (before now_ns) into epoch ns. */
int
since_parse(const char *s, uint64_t now_ns, uint64_t *out)
{
	char *end;
	unsigned long long n;
	uint64_t unit;

	if (isdigit((unsigned char)s[0]) && strchr(s, '-') == NULL) {
		errno = 0;
		n = strtoull(s, &end, 10);
		if (errno != 0 || end[0] == '\0' || end[1] != '\0')
			return -1;
		switch (*end) {
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		default: return -1;
		}
		if (n > now_ns / 1000000000ULL / unit)
			return -1;
		*out = now_ns - n * unit * 1000000000ULL;
		return 0;
	}
	return parse_iso(s, out);
}
