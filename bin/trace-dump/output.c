/* SPDX-License-Identifier: ISC */
/*
 * output.c: filters, --slowest, and where the output goes.
 *
 * Restores are filtered and written as they complete (text, json, chrome)
 * or counted (--summary); --slowest keeps only the N slowest in a min-heap.
 * On a terminal the output goes through $PAGER, started with libpipeline
 * as man-db does (LESS=FRX unless set, so short output does not wait and
 * colours pass through); colours only on a terminal and never with
 * NO_COLOR.
 */
#include "config.h"

#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <pipeline.h>

#include "outflush.h"
#include "trace-dump.h"

struct output {
	struct td_opts		 opts;
	FILE			*f;
	int			 lazy_pager;	/* start it with the first output */
	pipeline		*pager;
	size_t			 shown;		/* restores and spans written */
	struct render_opts	 ro;
	struct summary		*summary;
	struct chrome		*chrome;
	struct svg		*svg;
	struct restore		**heap;		/* --slowest: min-heap by elapsed */
	size_t			 nheap;
	size_t			 restores;	/* restores written */
	/* The text view's other spans, shown after the restores. */
	FILE			*later;
	char			*later_buf;
	size_t			 later_len, nlater;
};

/* Start $PAGER (default less) with our output as its input; NULL if none. */
static FILE *
pager_start(struct output *o)
{
	const char *pager = getenv("PAGER");
	pipecmd *cmd;

	if (pager == NULL)
		pager = "less";
	if (*pager == '\0' || strcmp(pager, "cat") == 0)
		return NULL;
	cmd = pipecmd_new_argstr(pager);
	if (getenv("LESS") == NULL)
		pipecmd_setenv(cmd, "LESS", "FRX");
	if (getenv("LV") == NULL)
		pipecmd_setenv(cmd, "LV", "-c");
	o->pager = pipeline_new_commands(cmd, (void *)NULL);
	pipeline_want_in(o->pager, -1);
	pipeline_start(o->pager);
	return pipeline_get_infile(o->pager);
}

/*
 * Before the first byte of output: start the pager (on a terminal) and
 * the chrome export.  An empty result, or an input that failed to open,
 * thus never clears the screen for a pager with nothing in it.
 */
static void
out_begin(struct output *o)
{
	FILE	*pf;

	if (o->lazy_pager) {
		o->lazy_pager = 0;
		if ((pf = pager_start(o)) != NULL)
			o->f = pf;
	}
	if (o->summary == NULL && o->opts.format == FORMAT_CHROME &&
	    o->chrome == NULL)
		o->chrome = export_chrome_new(o->f);
	if (o->summary == NULL && o->opts.format == FORMAT_SVG &&
	    o->svg == NULL && (o->svg = svg_new(o->f)) == NULL)
		err(1, "svg");
}

/* Start the output on stdout, through $PAGER when on a terminal. */
struct output *
output_new(const struct td_opts *opts)
{
	struct output *o;
	const char *nc = getenv("NO_COLOR");
	int tty = isatty(STDOUT_FILENO);

	if ((o = calloc(1, sizeof(*o))) == NULL)
		return NULL;
	o->opts = *opts;
	o->ro.width = 40;
	o->ro.color = tty && (nc == NULL || *nc == '\0') &&
	    opts->format == FORMAT_TEXT;
	o->f = stdout;
	signal(SIGPIPE, SIG_IGN);
	o->lazy_pager = tty && opts->pager && !opts->follow;
	if (opts->summary && (o->summary = summary_new()) == NULL) {
		free(o);
		return NULL;
	}
	if (opts->slowest > 0 &&
	    (o->heap = calloc(opts->slowest, sizeof(*o->heap))) == NULL) {
		summary_free(o->summary);
		free(o);
		return NULL;
	}
	return o;
}

/* Has the reader of our output gone? */
int
output_closed(const struct output *o)
{
	return ferror(o->f);
}

/* Flush (--follow writes each restore as it completes). */
void
output_flush(struct output *o)
{
	fflush(o->f);
}

/* Does the restore pass the filters? */
static int
restore_selected(const struct output *o, const struct restore *r)
{
	const struct td_opts *op = &o->opts;

	if (op->session != NULL &&
	    (r->session_id == NULL || strcmp(op->session, r->session_id) != 0))
		return 0;
	if (op->trace != NULL && strncasecmp(op->trace, r->trace_id,
	    strlen(op->trace)) != 0)
		return 0;
	if (op->since_ns > 0 && r->start_ns < op->since_ns)
		return 0;
	return op->result == NULL || strcmp(op->result, r->result) == 0;
}

/* Write one restore in the chosen form. */
static void
emit_restore(struct output *o, const struct restore *r)
{
	o->shown++;
	o->restores++;
	out_begin(o);
	if (o->summary != NULL)
		summary_add(o->summary, r);
	else if (o->opts.format == FORMAT_JSON)
		export_json_restore(o->f, r);
	else if (o->opts.format == FORMAT_CHROME)
		export_chrome_restore(o->chrome, r);
	else if (o->opts.format == FORMAT_SVG)
		svg_restore(o->svg, r);
	else
		render_restore(o->f, r, &o->ro);
}

/* Swap two heap slots. */
static void
heap_swap(struct output *o, size_t a, size_t b)
{
	struct restore *t = o->heap[a];

	o->heap[a] = o->heap[b];
	o->heap[b] = t;
}

/* Restore the min-heap property downwards from slot i. */
static void
heap_down(struct output *o, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < o->nheap && o->heap[l]->elapsed_ms < o->heap[m]->elapsed_ms)
			m = l;
		if (l + 1 < o->nheap &&
		    o->heap[l + 1]->elapsed_ms < o->heap[m]->elapsed_ms)
			m = l + 1;
		if (m == i)
			return;
		heap_swap(o, i, m);
		i = m;
	}
}

/* Keep r if it is among the N slowest so far (takes ownership). */
static void
heap_offer(struct output *o, struct restore *r)
{
	size_t i;

	if (o->nheap == o->opts.slowest) {
		if (r->elapsed_ms <= o->heap[0]->elapsed_ms) {
			record_free(r);
			return;
		}
		record_free(o->heap[0]);
		o->heap[0] = r;
		heap_down(o, 0);
		return;
	}
	o->heap[i = o->nheap++] = r;
	while (i > 0 && o->heap[(i - 1) / 2]->elapsed_ms > o->heap[i]->elapsed_ms) {
		heap_swap(o, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

/* Sink a restore (takes ownership). */
void
output_restore(struct restore *r, void *arg)
{
	struct output *o = arg;

	if (!restore_selected(o, r)) {
		record_free(r);
		return;
	}
	if (o->heap != NULL) {
		heap_offer(o, r);
		return;
	}
	emit_restore(o, r);
	record_free(r);
	if (o->opts.follow)
		fflush(o->f);
}

/*
 * The text view holds the other spans (prompts, session starts) for after
 * the restores, which a busy daemon's prompt spans would otherwise bury.
 */
static int
spans_later(struct output *o)
{
	if (o->later == NULL &&
	    (o->later = open_memstream(&o->later_buf, &o->later_len)) == NULL)
		return 0;
	return 1;
}

/* The held spans under their heading, after the restores. */
static void
spans_flush_later(struct output *o)
{
	if (o->later == NULL)
		return;
	fclose(o->later);
	o->later = NULL;
	if (o->nlater > 0) {
		out_begin(o);
		fprintf(o->f, "%zu other span%s (after the restores):\n\n",
		    o->nlater, o->nlater == 1 ? "" : "s");
		fwrite(o->later_buf, 1, o->later_len, o->f);
	}
	free(o->later_buf);
	o->later_buf = NULL;
}

/* The filters given, as the words of "no restores match ...". */
static void
filters_text(const struct td_opts *op, char *buf, size_t len)
{
	buf[0] = '\0';
	if (op->session != NULL)
		snprintf(buf + strlen(buf), len - strlen(buf), " --session %s",
		    op->session);
	if (op->trace != NULL)
		snprintf(buf + strlen(buf), len - strlen(buf), " --trace %s",
		    op->trace);
	if (op->since_ns > 0)
		snprintf(buf + strlen(buf), len - strlen(buf), " --since");
	if (op->result != NULL)
		snprintf(buf + strlen(buf), len - strlen(buf), " --result %s",
		    op->result);
}

/* Sink a generic span (takes ownership); hidden by restore-only filters. */
void
output_span(struct tspan *sp, void *arg)
{
	struct output *o = arg;
	const struct td_opts *op = &o->opts;

	if (op->session != NULL || op->result != NULL || op->slowest > 0 ||
	    (op->trace != NULL &&
	    strncasecmp(op->trace, sp->trace_id, strlen(op->trace)) != 0) ||
	    (op->since_ns > 0 && sp->start_ns < op->since_ns)) {
		tspan_free(sp);
		return;
	}
	o->shown++;
	out_begin(o);
	if (o->summary != NULL)
		summary_add_span(o->summary, sp);
	else if (op->format == FORMAT_JSON)
		export_json_span(o->f, sp);
	else if (op->format == FORMAT_CHROME)
		export_chrome_span(o->chrome, sp);
	else if (op->format == FORMAT_SVG)
		;	/* the picture is of restores */
	else if (!op->follow && spans_later(o)) {
		render_span(o->later, sp, &o->ro);
		o->nlater++;
	} else
		render_span(o->f, sp, &o->ro);
	tspan_free(sp);
	if (op->follow)
		fflush(o->f);
}

/* qsort: slowest first. */
static int
cmp_slowest(const void *a, const void *b)
{
	double x = (*(struct restore *const *)a)->elapsed_ms;
	double y = (*(struct restore *const *)b)->elapsed_ms;

	return (x < y) - (x > y);
}

/*
 * Flush what was written: a write error (ENOSPC, EIO) is reported and is
 * 1, a reader (or pager) that left is quiet.
 */
static int
finish_stream(struct output *o)
{
	if (outflush(o->f) == 0)
		return 0;
	warn("write error");
	return 1;
}

/* Emit what is held, wait for the pager, free; 0 or 1 (reported). */
int
output_finish(struct output *o, unsigned long malformed, unsigned long evicted)
{
	char filters[512];
	int status = 0;

	if (o->heap != NULL) {
		qsort(o->heap, o->nheap, sizeof(*o->heap), cmp_slowest);
		for (size_t i = 0; i < o->nheap; i++) {
			emit_restore(o, o->heap[i]);
			record_free(o->heap[i]);
		}
		free(o->heap);
	}
	filters_text(&o->opts, filters, sizeof(filters));
	if (o->restores == 0 && filters[0] != '\0') {
		/* Asked for something that is not there: say so, exit 3. */
		warnx("no restores match%s", filters);
		status = TD_EXIT_NOMATCH;
	} else if (o->restores == 0 && o->summary == NULL)
		warnx("no restores found");
	if (o->shown > 0 || o->summary != NULL ||
	    o->opts.format != FORMAT_TEXT)
		out_begin(o);	/* a summary, or an empty export's frame */
	spans_flush_later(o);
	if (o->summary != NULL)
		summary_print(o->f, o->summary, malformed, evicted);
	summary_free(o->summary);
	export_chrome_finish(o->chrome);
	svg_finish(o->svg);
	if (finish_stream(o) != 0)
		status = 1;
	if (o->pager != NULL) {
		int ps = pipeline_wait(o->pager);

		pipeline_free(o->pager);
		if (ps != 0 && status != 1) {
			warnx("the pager failed");
			status = 1;
		}
	}
	free(o);
	return status;
}
