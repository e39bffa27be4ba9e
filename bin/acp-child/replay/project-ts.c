/* SPDX-License-Identifier: ISC */
/*
 * project-ts.c: record timestamps for the replay's _meta.timestamp: the
 * common exact shape is read directly, anything else through sscanf and
 * timegm, with the same results.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "project-int.h"

/* Days from 1970-01-01 to y-m-01 (proleptic Gregorian). */
static int64_t
days_from_civil(int64_t y, int m)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* n digits at s as a number, -1 unless all are digits. */
static int
num_at(const char *s, int n)
{
	int v = 0;

	while (n-- > 0) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s++ - '0');
	}
	return v;
}

/* The common exact shape "YYYY-MM-DDTHH:MM:SS[.mmm]Z" without sscanf and
   timegm (the same value timegm gives); -2 when s has another shape. */
static int64_t
fast_ts(const char *s)
{
	int y, mo, d, h, mi, sec, ms = 0;
	size_t n = strlen(s);
	int64_t t;

	if ((n != 20 && n != 24) || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
	    s[13] != ':' || s[16] != ':' || s[n - 1] != 'Z' ||
	    (n == 24 && (s[19] != '.' || (ms = num_at(s + 20, 3)) < 0)) ||
	    (y = num_at(s, 4)) < 0 || (mo = num_at(s + 5, 2)) < 0 ||
	    (d = num_at(s + 8, 2)) < 0 || (h = num_at(s + 11, 2)) < 0 ||
	    (mi = num_at(s + 14, 2)) < 0 || (sec = num_at(s + 17, 2)) < 0)
		return -2;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return -1;
	t = (days_from_civil(y, mo) + d - 1) * 86400 + h * 3600 + mi * 60 + sec;
	return t == -1 ? -1 : t * 1000 + ms;	/* timegm's -1 is its error */
}

int64_t
project_parse_ts(const char *s)
{
	int64_t fast;

	int y, mo, d, h, mi, sec, ms = 0, n = 0;
	struct tm tm;
	time_t tt;

	if (s != NULL && (fast = fast_ts(s)) != -2)
		return fast;
	if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h,
	    &mi, &sec, &n) != 6 || n != 19)
		return -1;
	s += n;
	if (*s == '.') {
		if (sscanf(s + 1, "%3d%n", &ms, &n) != 1 || n != 3)
			return -1;
		s += 4;
	}
	if (strcmp(s, "Z") != 0 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 60)
		return -1;
	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((tt = timegm(&tm)) == (time_t)-1)
		return -1;
	return (int64_t)tt * 1000 + ms;
}
