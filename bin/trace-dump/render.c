/* SPDX-License-Identifier: ISC */
/*
 * render.c: the text view, one block per restore.
 *
 * Durations measured from span times are printed with three decimals,
 * durations the child reported as attributes with one, so a golden test
 * can normalise the first kind (which vary run to run) and keep the second.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "trace-dump.h"

#define C_RED	"\033[31m"
#define C_GREEN	"\033[32m"
#define C_YELL	"\033[33m"
#define C_BOLD	"\033[1m"
#define C_OFF	"\033[0m"

/* Format an epoch-ns time as ISO 8601 UTC with microseconds. */
void
render_time(uint64_t ns, char *buf, size_t size)
{
	time_t secs = (time_t)(ns / 1000000000ULL);
	struct tm tm;
	char day[32];

	gmtime_r(&secs, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%06uZ", day,
	    (unsigned)(ns % 1000000000ULL / 1000));
}

/* Colour for a result word. */
static const char *
result_color(const char *result)
{
	if (result == NULL)
		return C_YELL;
	if (strcmp(result, "success") == 0 || strcmp(result, "closed") == 0 ||
	    strcmp(result, "not_found") == 0)
		return C_GREEN;
	if (strcmp(result, "timeout") == 0 || strcmp(result, "failure") == 0 ||
	    strcmp(result, "quarantined") == 0)
		return C_RED;
	return C_YELL;
}

/* Print s, coloured when asked. */
static void
put_color(FILE *f, const struct render_opts *o, const char *color, const char *s)
{
	if (o->color)
		fprintf(f, "%s%s%s", color, s, C_OFF);
	else
		fputs(s, f);
}

/* The results line: public result, late result, cleanup, overdue. */
static void
render_results(FILE *f, const struct restore *r, const struct render_opts *o)
{
	if (r->daemon == NULL)
		return;
	fprintf(f, "  result     ");
	put_color(f, o, result_color(r->public_result),
	    r->public_result != NULL ? r->public_result : "none");
	if (r->public_result != NULL)
		fprintf(f, " after %.3f ms", r->elapsed_ms);
	if (r->late_result != NULL) {
		fprintf(f, ", late ");
		put_color(f, o, result_color(r->late_result), r->late_result);
	}
	if (r->cleanup_result != NULL) {
		fprintf(f, ", cleanup ");
		put_color(f, o, result_color(r->cleanup_result), r->cleanup_result);
	}
	if (r->settled_by != NULL) {
		fprintf(f, ", settled by ");
		put_color(f, o, result_color(r->settled_by), r->settled_by);
	}
	if (r->overdue) {
		fprintf(f, ", ");
		put_color(f, o, C_RED, "settlement overdue");
	}
	fputc('\n', f);
}

/* One span line ("daemon" or "child") with its status. */
static void
render_one(FILE *f, const char *label, const struct tspan *sp)
{
	fprintf(f, "  %-10s %.3f ms  span %s%s\n", label,
	    (double)(sp->end_ns - sp->start_ns) / 1e6, sp->span_id,
	    sp->status_code == 2 ? "  status error" : "");
	if (sp->status_code == 2 && sp->status_msg != NULL)
		fprintf(f, "  error      %s\n", sp->status_msg);
}

/* The daemon and child span lines. */
static void
render_spans(FILE *f, const struct restore *r)
{
	if (r->daemon != NULL)
		render_one(f, "daemon", r->daemon);
	else
		fprintf(f, "  daemon     none (child driven directly)\n");
	if (r->child != NULL)
		render_one(f, "child", r->child);
	else
		fprintf(f, "  child      missing (no span: the child did not "
		    "finish the restore)\n");
}

/* One stage line with its bar, scaled so that width columns = scale ms. */
static void
render_stage(FILE *f, const struct stage *st, double scale, int failed,
    const struct render_opts *o)
{
	int n = scale > 0 ? (int)lround(st->ms / scale * o->width) : 0;
	int over = n > o->width;

	if (n > o->width)
		n = o->width;
	/* A stage printed as 0.0 ms draws nothing; any longer one a mark. */
	if (n == 0 && st->ms >= 0.05)
		n = 1;
	fprintf(f, "    %-22s %10.1f ms  |", st->name, st->ms);
	if (o->color && failed)
		fputs(C_RED, f);
	for (int i = 0; i < o->width; i++)
		fputc(i < n ? '#' : ' ', f);
	if (o->color && failed)
		fputs(C_OFF, f);
	fputc(over ? '>' : '|', f);
	if (failed) {
		fputs("  ", f);
		put_color(f, o, C_RED, "FAILED");
	}
	fputc('\n', f);
}

/*
 * The stage table.  Bars are scaled to the budget when the stages took a
 * real share of it (a tenth or more: a near timeout shows as such), else
 * to the slowest stage, so that against a 60 s budget a 20 ms stage and
 * a 0 ms one still differ; without a budget, to the child's span.
 */
static void
render_stages(FILE *f, const struct restore *r, const struct render_opts *o)
{
	double scale = r->budget_ms, sum = 0, slowest = 0;
	int marked = 0;

	if (r->child == NULL)
		return;
	for (size_t i = 0; i < r->nstages; i++) {
		sum += r->stages[i].ms;
		if (r->stages[i].ms > slowest)
			slowest = r->stages[i].ms;
	}
	if (scale > 0 && sum >= scale / 10)
		fprintf(f, "  stages     bar: %d columns = budget %.0f ms\n",
		    o->width, scale);
	else if (scale > 0 && slowest > 0) {
		scale = slowest;
		fprintf(f, "  stages     bar: %d columns = slowest stage %.1f ms\n",
		    o->width, scale);
	} else {
		scale = (double)(r->child->end_ns - r->child->start_ns) / 1e6;
		fprintf(f, "  stages     bar: %d columns = child span\n", o->width);
	}
	for (size_t i = 0; i < r->nstages; i++) {
		int failed = r->failed_stage != NULL &&
		    strcmp(r->failed_stage, r->stages[i].name) == 0;

		marked |= failed;
		render_stage(f, &r->stages[i], scale, failed, o);
	}
	if (r->failed_stage != NULL && !marked) {
		fprintf(f, "    %-22s %13s  ", r->failed_stage, "(no duration)");
		put_color(f, o, C_RED, "FAILED");
		fputc('\n', f);
	}
}

/* Loop lag, transcript and replay figures. */
static void
render_figures(FILE *f, const struct restore *r)
{
	if (r->lag_mean >= 0 || r->lag_p50 >= 0 || r->lag_p99 >= 0 ||
	    r->lag_max >= 0)
		fprintf(f, "  loop lag   mean %.1f ms, p50 %.1f ms, p99 %.1f ms, "
		    "max %.1f ms\n", r->lag_mean, r->lag_p50, r->lag_p99,
		    r->lag_max);
	if (r->transcript_bytes >= 0 || r->chain_records >= 0) {
		fprintf(f, "  transcript %.0f bytes, %.0f chain records",
		    r->transcript_bytes, r->chain_records);
		if (r->malformed_lines >= 0)
			fprintf(f, ", %.0f malformed lines", r->malformed_lines);
		fputc('\n', f);
	}
	if (r->replay_records >= 0 || r->replay_bytes >= 0)
		fprintf(f, "  replay     %.0f records, %.0f bytes%s\n",
		    r->replay_records, r->replay_bytes,
		    r->partial_replay == 1 ? ", partial" : "");
}

/* One block for a restore. */
void
render_restore(FILE *f, const struct restore *r, const struct render_opts *o)
{
	char when[40];

	render_time(r->start_ns, when, sizeof(when));
	if (o->color)
		fputs(C_BOLD, f);
	fprintf(f, "restore %s session %s", r->action,
	    r->session_id != NULL ? r->session_id : "(unknown)");
	if (o->color)
		fputs(C_OFF, f);
	fputs("  ", f);
	put_color(f, o, result_color(r->result), r->result);
	fprintf(f, "\n  trace      %s\n  start      %s\n", r->trace_id, when);
	if (r->channel_id != NULL)
		fprintf(f, "  channel    %s\n", r->channel_id);
	if (r->budget_ms >= 0)
		fprintf(f, "  budget     %.0f ms\n", r->budget_ms);
	render_results(f, r, o);
	render_spans(f, r);
	render_stages(f, r, o);
	render_figures(f, r);
	fputc('\n', f);
}

/* One attribute as "key = value". */
static void
render_attr(FILE *f, const char *indent, const struct tattr *a)
{
	fprintf(f, "%s%s = ", indent, a->key);
	switch (a->type) {
	case TATTR_STR:
		fprintf(f, "\"%s\"\n", a->s);
		break;
	case TATTR_INT:
		fprintf(f, "%" PRId64 "\n", a->i);
		break;
	case TATTR_BOOL:
		fprintf(f, "%s\n", a->i ? "true" : "false");
		break;
	case TATTR_DOUBLE:
		fprintf(f, "%g\n", a->d);
		break;
	default:
		fprintf(f, "(unsupported value)\n");
	}
}

/* A span of a shape this tool does not know: shown as it is. */
void
render_span(FILE *f, const struct tspan *sp, const struct render_opts *o)
{
	char when[40];

	render_time(sp->start_ns, when, sizeof(when));
	if (o->color)
		fputs(C_BOLD, f);
	fprintf(f, "span %s", sp->name);
	if (o->color)
		fputs(C_OFF, f);
	fprintf(f, "  %.3f ms\n  trace      %s\n  span       %s\n",
	    (double)(sp->end_ns - sp->start_ns) / 1e6, sp->trace_id, sp->span_id);
	if (sp->parent_id[0] != '\0')
		fprintf(f, "  parent     %s\n", sp->parent_id);
	fprintf(f, "  start      %s\n", when);
	if (sp->service != NULL)
		fprintf(f, "  service    %s\n", sp->service);
	if (sp->status_code == 2)
		fprintf(f, "  status     error%s%s\n", sp->status_msg ? ": " : "",
		    sp->status_msg ? sp->status_msg : "");
	for (size_t i = 0; i < sp->nattrs; i++)
		render_attr(f, "  attribute  ", &sp->attrs[i]);
	for (size_t i = 0; i < sp->nevents; i++) {
		const struct tevent *ev = &sp->events[i];

		fprintf(f, "  event      %s at +%.3f ms\n", ev->name,
		    ev->time_ns >= sp->start_ns ?
		    (double)(ev->time_ns - sp->start_ns) / 1e6 : 0.0);
		for (size_t k = 0; k < ev->nattrs; k++)
			render_attr(f, "    ", &ev->attrs[k]);
	}
	fputc('\n', f);
}
