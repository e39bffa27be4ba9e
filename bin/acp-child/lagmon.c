/* SPDX-License-Identifier: ISC */
/* lagmon.c: how late a periodic timer fires, over a ring of samples. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "lagmon.h"

struct lagmon {
	struct event	*ev;
	unsigned	 interval_ms;
	uint64_t	 due_ns;	/* when the armed timer should fire */
	double		*ring;
	size_t		 cap;
	size_t		 len;
	size_t		 next;
};

static void	lagmon_arm(struct lagmon *);

/* The timer fired: the lag is how far past its due time we are. */
static void
lagmon_fire(evutil_socket_t fd, short what, void *arg)
{
	struct lagmon *lm = arg;
	uint64_t now = clock_mono_ns();

	(void)fd;
	(void)what;
	lagmon_record(lm, now > lm->due_ns ? (now - lm->due_ns) / 1e6 : 0.0);
	lagmon_arm(lm);
}

/* One-shot re-arm, so a late firing never shifts the schedule silently. */
static void
lagmon_arm(struct lagmon *lm)
{
	struct timeval tv;

	tv.tv_sec = lm->interval_ms / 1000;
	tv.tv_usec = (lm->interval_ms % 1000) * 1000;
	lm->due_ns = clock_mono_ns() + (uint64_t)lm->interval_ms * 1000000ULL;
	evtimer_add(lm->ev, &tv);
}

struct lagmon *
lagmon_new(struct event_base *base, unsigned interval_ms, size_t window)
{
	struct lagmon *lm;

	if ((lm = calloc(1, sizeof(*lm))) == NULL)
		return NULL;
	lm->interval_ms = interval_ms > 0 ? interval_ms : 50;
	lm->cap = window > 0 ? window : 1024;
	if ((lm->ring = calloc(lm->cap, sizeof(*lm->ring))) == NULL) {
		free(lm);
		return NULL;
	}
	if (base != NULL) {
		if ((lm->ev = evtimer_new(base, lagmon_fire, lm)) == NULL) {
			lagmon_free(lm);
			return NULL;
		}
		lagmon_arm(lm);
	}
	return lm;
}

void
lagmon_free(struct lagmon *lm)
{
	if (lm == NULL)
		return;
	if (lm->ev != NULL)
		event_free(lm->ev);
	free(lm->ring);
	free(lm);
}

void
lagmon_record(struct lagmon *lm, double lag_ms)
{
	lm->ring[lm->next] = lag_ms;
	lm->next = (lm->next + 1) % lm->cap;
	if (lm->len < lm->cap)
		lm->len++;
}

static int
lagmon_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static double
lagmon_rank(const double *v, size_t n, double pct)
{
	size_t k = (size_t)((pct / 100.0) * (double)n + 0.999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

void
lagmon_snapshot(const struct lagmon *lm, struct lag_snapshot *out)
{
	double *v, sum = 0;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->interval_ms = lm->interval_ms;
	out->window = lm->cap;
	if (lm->len == 0 || (v = malloc(lm->len * sizeof(*v))) == NULL)
		return;
	memcpy(v, lm->ring, lm->len * sizeof(*v));
	qsort(v, lm->len, sizeof(*v), lagmon_cmp);
	for (i = 0; i < lm->len; i++)
		sum += v[i];
	out->samples = lm->len;
	out->mean_ms = sum / (double)lm->len;
	out->p50_ms = lagmon_rank(v, lm->len, 50);
	out->p99_ms = lagmon_rank(v, lm->len, 99);
	out->max_ms = v[lm->len - 1];
	free(v);
}
