/* SPDX-License-Identifier: ISC */
/*
 * summary.c: --summary, per action and per stage count and percentiles.
 *
 * Restores are streamed in; only one double per restore and stage is kept
 * (a few MiB for 100k spans), never the spans themselves.  Percentiles are
 * nearest-rank over the sorted samples.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace-dump.h"

struct series {
	char	 name[48];
	double	*v;
	size_t	 n, cap;
};

struct action_stats {
	char		 name[16];
	struct series	 total;
	struct series	*stages;
	size_t		 nstages;
};

struct summary {
	struct action_stats	*actions;
	size_t			 nactions;
	unsigned long		 restores, success, failure, timeout, unknown;
	unsigned long		 quarantined, overdue, late, no_child, no_daemon;
	unsigned long		 spans;
};

/* A new, empty summary.  Caller frees. */
struct summary *
summary_new(void)
{
	return calloc(1, sizeof(struct summary));
}

/* Free.  NULL-safe. */
void
summary_free(struct summary *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nactions; i++) {
		free(s->actions[i].total.v);
		for (size_t k = 0; k < s->actions[i].nstages; k++)
			free(s->actions[i].stages[k].v);
		free(s->actions[i].stages);
	}
	free(s->actions);
	free(s);
}

/* Append a sample (dropped silently when memory runs out). */
static void
series_add(struct series *se, double v)
{
	if (se->n == se->cap) {
		size_t ncap = se->cap == 0 ? 64 : se->cap * 2;
		double *nv = reallocarray(se->v, ncap, sizeof(*nv));

		if (nv == NULL)
			return;
		se->v = nv;
		se->cap = ncap;
	}
	se->v[se->n++] = v;
}

/* The stats of an action, created on first use; NULL without memory. */
static struct action_stats *
action_get(struct summary *s, const char *name)
{
	struct action_stats *a;

	for (size_t i = 0; i < s->nactions; i++)
		if (strcmp(s->actions[i].name, name) == 0)
			return &s->actions[i];
	a = reallocarray(s->actions, s->nactions + 1, sizeof(*a));
	if (a == NULL)
		return NULL;
	s->actions = a;
	a = &s->actions[s->nactions++];
	memset(a, 0, sizeof(*a));
	strlcpy(a->name, name, sizeof(a->name));
	strlcpy(a->total.name, "total (until result)", sizeof(a->total.name));
	return a;
}

/* The series of a stage within an action, created on first use. */
static struct series *
stage_get(struct action_stats *a, const char *name)
{
	struct series *se;

	for (size_t i = 0; i < a->nstages; i++)
		if (strcmp(a->stages[i].name, name) == 0)
			return &a->stages[i];
	se = reallocarray(a->stages, a->nstages + 1, sizeof(*se));
	if (se == NULL)
		return NULL;
	a->stages = se;
	se = &a->stages[a->nstages++];
	memset(se, 0, sizeof(*se));
	strlcpy(se->name, name, sizeof(se->name));
	return se;
}

/* Count one restore and keep its durations. */
void
summary_add(struct summary *s, const struct restore *r)
{
	struct action_stats *a;
	struct series *se;

	s->restores++;
	if (strcmp(r->result, "success") == 0)
		s->success++;
	else if (strcmp(r->result, "failure") == 0)
		s->failure++;
	else if (strcmp(r->result, "timeout") == 0)
		s->timeout++;
	else
		s->unknown++;
	s->quarantined += r->cleanup_result != NULL &&
	    strcmp(r->cleanup_result, "quarantined") == 0;
	s->overdue += r->overdue != 0;
	s->late += r->late_result != NULL;
	s->no_child += r->child == NULL;
	s->no_daemon += r->daemon == NULL;
	if ((a = action_get(s, r->action)) == NULL)
		return;
	series_add(&a->total, r->elapsed_ms);
	for (size_t i = 0; i < r->nstages; i++)
		if ((se = stage_get(a, r->stages[i].name)) != NULL)
			series_add(se, r->stages[i].ms);
}

/* Count a generic span. */
void
summary_add_span(struct summary *s, const struct tspan *sp)
{
	(void)sp;
	s->spans++;
}

/* Nearest-rank percentile of a sorted array. */
double
summary_percentile(const double *sorted, size_t n, double p)
{
	size_t rank;

	if (n == 0)
		return 0;
	rank = (size_t)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* qsort comparator for doubles. */
static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One table row. */
static void
series_print(FILE *f, struct series *se)
{
	qsort(se->v, se->n, sizeof(*se->v), cmp_double);
	fprintf(f, "  %-22s %7zu %10.1f %10.1f %10.1f %10.1f\n", se->name, se->n,
	    summary_percentile(se->v, se->n, 50), summary_percentile(se->v, se->n, 90),
	    summary_percentile(se->v, se->n, 99), summary_percentile(se->v, se->n, 100));
}

/* Print the counts and, per action, the stage table. */
void
summary_print(FILE *f, struct summary *s, unsigned long malformed,
    unsigned long evicted)
{
	fprintf(f, "restores               %lu\n", s->restores);
	fprintf(f, "  success              %lu\n", s->success);
	fprintf(f, "  failure              %lu\n", s->failure);
	fprintf(f, "  timed out            %lu\n", s->timeout);
	if (s->unknown > 0)
		fprintf(f, "  no public result     %lu\n", s->unknown);
	fprintf(f, "late results           %lu\n", s->late);
	fprintf(f, "quarantined            %lu\n", s->quarantined);
	fprintf(f, "settlement overdue     %lu\n", s->overdue);
	fprintf(f, "child span missing     %lu\n", s->no_child);
	fprintf(f, "child driven directly  %lu\n", s->no_daemon);
	fprintf(f, "other spans            %lu\n", s->spans);
	fprintf(f, "malformed lines        %lu\n", malformed);
	if (evicted > 0)
		fprintf(f, "evicted incomplete     %lu\n", evicted);
	for (size_t i = 0; i < s->nactions; i++) {
		struct action_stats *a = &s->actions[i];

		fprintf(f, "\naction %s\n  %-22s %7s %10s %10s %10s %10s\n",
		    a->name, "stage (ms)", "count", "p50", "p90", "p99", "max");
		series_print(f, &a->total);
		for (size_t k = 0; k < a->nstages; k++)
			series_print(f, &a->stages[k]);
	}
}
