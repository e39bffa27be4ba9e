/* SPDX-License-Identifier: ISC */
/*
 * export.c: --format json (one object per restore per line) and --format
 * chrome (Chrome trace-event JSON for Perfetto and chrome://tracing).
 *
 * Chrome layout: process 1 is the daemon, process 2 the child, process 3
 * other spans; each restore gets its own thread id in both, so the daemon
 * span and the child span are on separate tracks and overlapping restores
 * never share one.  The child reports stage durations, not start times, so
 * stages are laid out one after another from the child span's start, in
 * execution order, as complete ("X") events nested in the child's.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "trace-dump.h"
#include "xmalloc.h"

#define PID_DAEMON	1
#define PID_CHILD	2
#define PID_OTHER	3

struct chrome {
	FILE	*f;
	int	 n;		/* events written */
	int	 tid;		/* last thread id handed out */
};

/* A fixed-decimals double (json-c prints the given text as it is). */
static json_object *
jdouble(double v, int decimals)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return xjson_object_new_double_s(v, buf);
}

/* Add key: string when s is not NULL, else null. */
static void
put_str(json_object *o, const char *key, const char *s)
{
	json_object_object_add(o, key, s != NULL ? xjson_object_new_string(s) : NULL);
}

/* Add key: number when v >= 0, else nothing. */
static void
put_num(json_object *o, const char *key, double v, int decimals)
{
	if (v >= 0)
		json_object_object_add(o, key, decimals == 0 ?
		    xjson_object_new_int64((int64_t)v) : jdouble(v, decimals));
}

/* Print obj as one plain JSON line and release it. */
static void
put_line(FILE *f, json_object *obj)
{
	fprintf(f, "%s\n", json_object_to_json_string_ext(obj,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(obj);
}

/* The span's duration in ms. */
static double
span_ms(const struct tspan *sp)
{
	return (double)(sp->end_ns - sp->start_ns) / 1e6;
}

/* The child part of a JSON restore.  Caller owns the result. */
static json_object *
json_child(const struct restore *r)
{
	json_object *c = xjson_object_new_object(), *st = xjson_object_new_object();
	json_object *lag = xjson_object_new_object();

	put_str(c, "spanId", r->child->span_id);
	json_object_object_add(c, "durationMs", jdouble(span_ms(r->child), 3));
	put_str(c, "failedStage", r->failed_stage);
	for (size_t i = 0; i < r->nstages; i++)
		json_object_object_add(st, r->stages[i].name,
		    jdouble(r->stages[i].ms, 3));
	json_object_object_add(c, "stages", st);
	put_num(c, "transcriptBytes", r->transcript_bytes, 0);
	put_num(c, "chainRecords", r->chain_records, 0);
	put_num(c, "replayRecords", r->replay_records, 0);
	put_num(c, "replayBytes", r->replay_bytes, 0);
	put_num(c, "malformedLines", r->malformed_lines, 0);
	if (r->partial_replay >= 0)
		json_object_object_add(c, "partialReplay",
		    xjson_object_new_boolean(r->partial_replay));
	put_num(lag, "meanMs", r->lag_mean, 3);
	put_num(lag, "p50Ms", r->lag_p50, 3);
	put_num(lag, "p99Ms", r->lag_p99, 3);
	put_num(lag, "maxMs", r->lag_max, 3);
	json_object_object_add(c, "loopLag", lag);
	return c;
}

/* One restore as one JSON line. */
void
export_json_restore(FILE *f, const struct restore *r)
{
	json_object *o = xjson_object_new_object(), *d = NULL;
	char when[40];

	render_time(r->start_ns, when, sizeof(when));
	put_str(o, "type", "restore");
	put_str(o, "traceId", r->trace_id);
	put_str(o, "sessionId", r->session_id);
	put_str(o, "channelId", r->channel_id);
	put_str(o, "action", r->action);
	put_str(o, "start", when);
	put_num(o, "budgetMs", r->budget_ms, 0);
	json_object_object_add(o, "elapsedMs", jdouble(r->elapsed_ms, 3));
	put_str(o, "result", r->result);
	put_str(o, "publicResult", r->public_result);
	put_str(o, "lateResult", r->late_result);
	put_str(o, "cleanupResult", r->cleanup_result);
	if (r->settled_by != NULL)
		put_str(o, "settledBy", r->settled_by);
	json_object_object_add(o, "overdue", xjson_object_new_boolean(r->overdue));
	if (r->daemon != NULL) {
		d = xjson_object_new_object();
		put_str(d, "spanId", r->daemon->span_id);
		json_object_object_add(d, "durationMs",
		    jdouble(span_ms(r->daemon), 3));
	}
	json_object_object_add(o, "daemon", d);
	json_object_object_add(o, "child", r->child != NULL ? json_child(r) : NULL);
	put_line(f, o);
}

/* The attributes of a span or event as a JSON object.  Caller owns it. */
static json_object *
json_attrs(const struct tattr *a, size_t n)
{
	json_object *o = xjson_object_new_object(), *v;

	for (size_t i = 0; i < n; i++) {
		switch (a[i].type) {
		case TATTR_STR:
			v = xjson_object_new_string(a[i].s);
			break;
		case TATTR_INT:
			v = xjson_object_new_int64(a[i].i);
			break;
		case TATTR_BOOL:
			v = xjson_object_new_boolean((int)a[i].i);
			break;
		case TATTR_DOUBLE:
			v = isfinite(a[i].d) ? xjson_object_new_double(a[i].d) :
			    xjson_object_new_string("non-finite");
			break;
		default:
			v = NULL;
		}
		json_object_object_add(o, a[i].key, v);
	}
	return o;
}

/* A generic span as one JSON line. */
void
export_json_span(FILE *f, const struct tspan *sp)
{
	json_object *o = xjson_object_new_object();
	char when[40];

	render_time(sp->start_ns, when, sizeof(when));
	put_str(o, "type", "span");
	put_str(o, "name", sp->name);
	put_str(o, "traceId", sp->trace_id);
	put_str(o, "spanId", sp->span_id);
	put_str(o, "parentSpanId", sp->parent_id[0] != '\0' ? sp->parent_id : NULL);
	put_str(o, "service", sp->service);
	put_str(o, "start", when);
	json_object_object_add(o, "durationMs", jdouble(span_ms(sp), 3));
	json_object_object_add(o, "statusCode", xjson_object_new_int(sp->status_code));
	json_object_object_add(o, "attributes", json_attrs(sp->attrs, sp->nattrs));
	put_line(f, o);
}

/* Write one trace event (takes ownership of ev). */
static void
export_chrome_put(struct chrome *c, json_object *ev)
{
	fprintf(c->f, "%s\n%s", c->n++ == 0 ? "" : ",",
	    json_object_to_json_string_ext(ev,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(ev);
}

/* A new event with the common fields; ts in microseconds. */
static json_object *
export_chrome_event(const char *ph, const char *name, int pid, int tid, uint64_t ns)
{
	json_object *ev = xjson_object_new_object();

	put_str(ev, "name", name);
	put_str(ev, "ph", ph);
	json_object_object_add(ev, "pid", xjson_object_new_int(pid));
	json_object_object_add(ev, "tid", xjson_object_new_int(tid));
	if (ns > 0) {
		char buf[40];

		/* Exact microseconds: a double cannot hold epoch ns. */
		snprintf(buf, sizeof(buf), "%llu.%03u",
		    (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
		json_object_object_add(ev, "ts",
		    xjson_object_new_double_s((double)ns / 1e3, buf));
	}
	return ev;
}

/* A metadata event naming a process or thread. */
static void
export_chrome_name(struct chrome *c, const char *what, int pid, int tid, const char *name)
{
	json_object *ev = export_chrome_event("M", what, pid, tid, 0), *args;

	args = xjson_object_new_object();
	put_str(args, "name", name);
	json_object_object_add(ev, "args", args);
	export_chrome_put(c, ev);
}

/* Start the document and name the three processes.  Caller finishes. */
struct chrome *
export_chrome_new(FILE *f)
{
	struct chrome *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->f = f;
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
	export_chrome_name(c, "process_name", PID_DAEMON, 0, "qwen-serve (daemon)");
	export_chrome_name(c, "process_name", PID_CHILD, 0, "qwen-acp-child (child)");
	export_chrome_name(c, "process_name", PID_OTHER, 0, "other spans");
	return c;
}

/* A complete event for a whole span. */
static json_object *
export_chrome_complete(const char *name, int pid, int tid, uint64_t ns, double ms)
{
	json_object *ev = export_chrome_event("X", name, pid, tid, ns);

	json_object_object_add(ev, "dur", jdouble(ms * 1e3, 3));
	return ev;
}

/* The daemon span and its events on the daemon track. */
static void
export_chrome_daemon(struct chrome *c, const struct restore *r, const char *label)
{
	const struct tspan *d = r->daemon;
	json_object *ev = export_chrome_complete(label, PID_DAEMON, c->tid, d->start_ns,
	    span_ms(d));
	json_object *args = xjson_object_new_object();

	put_str(ev, "cat", "daemon");
	put_str(args, "traceId", d->trace_id);
	put_str(args, "spanId", d->span_id);
	put_str(args, "sessionId", r->session_id);
	put_str(args, "channelId", r->channel_id);
	put_num(args, "budgetMs", r->budget_ms, 0);
	put_str(args, "publicResult", r->public_result);
	put_str(args, "lateResult", r->late_result);
	put_str(args, "cleanupResult", r->cleanup_result);
	if (r->settled_by != NULL)
		put_str(args, "settledBy", r->settled_by);
	json_object_object_add(ev, "args", args);
	export_chrome_put(c, ev);
	for (size_t i = 0; i < d->nevents; i++) {
		ev = export_chrome_event("i", d->events[i].name, PID_DAEMON, c->tid,
		    d->events[i].time_ns);
		put_str(ev, "s", "t");
		json_object_object_add(ev, "args",
		    json_attrs(d->events[i].attrs, d->events[i].nattrs));
		export_chrome_put(c, ev);
	}
	/* Only a deadline the span reached: one far beyond it stretches the view. */
	if (r->budget_ms >= 0 &&
	    d->start_ns + (uint64_t)(r->budget_ms * 1e6) <= d->end_ns) {
		ev = export_chrome_event("i", "deadline", PID_DAEMON, c->tid,
		    d->start_ns + (uint64_t)(r->budget_ms * 1e6));
		put_str(ev, "s", "t");
		export_chrome_put(c, ev);
	}
}

/* The child span and its stages on the child track. */
static void
export_chrome_child(struct chrome *c, const struct restore *r, const char *label)
{
	const struct tspan *ch = r->child;
	json_object *ev = export_chrome_complete(label, PID_CHILD, c->tid, ch->start_ns,
	    span_ms(ch));
	json_object *args = xjson_object_new_object();
	uint64_t at = ch->start_ns;

	put_str(ev, "cat", "child");
	put_str(args, "traceId", ch->trace_id);
	put_str(args, "spanId", ch->span_id);
	put_str(args, "failedStage", r->failed_stage);
	put_num(args, "transcriptBytes", r->transcript_bytes, 0);
	put_num(args, "chainRecords", r->chain_records, 0);
	put_num(args, "loopLagP99Ms", r->lag_p99, 3);
	json_object_object_add(ev, "args", args);
	export_chrome_put(c, ev);
	for (size_t i = 0; i < r->nstages; i++) {
		const struct stage *st = &r->stages[i];

		ev = export_chrome_complete(st->name, PID_CHILD, c->tid, at, st->ms);
		put_str(ev, "cat", "stage");
		if (r->failed_stage != NULL && strcmp(r->failed_stage, st->name) == 0) {
			args = xjson_object_new_object();
			json_object_object_add(args, "failed",
			    xjson_object_new_boolean(1));
			json_object_object_add(ev, "args", args);
		}
		export_chrome_put(c, ev);
		at += st->ms > 0 ? (uint64_t)(st->ms * 1e6) : 0;
	}
}

/* One restore: a thread on each track, the spans and the stages. */
void
export_chrome_restore(struct chrome *c, const struct restore *r)
{
	char label[160];

	snprintf(label, sizeof(label), "restore %s %s", r->action,
	    r->session_id != NULL ? r->session_id : "(unknown)");
	c->tid++;
	if (r->daemon != NULL) {
		export_chrome_name(c, "thread_name", PID_DAEMON, c->tid, label);
		export_chrome_daemon(c, r, label);
	}
	if (r->child != NULL) {
		export_chrome_name(c, "thread_name", PID_CHILD, c->tid, label);
		export_chrome_child(c, r, label);
	}
}

/* A generic span on the "other spans" track. */
void
export_chrome_span(struct chrome *c, const struct tspan *sp)
{
	json_object *ev;

	c->tid++;
	export_chrome_name(c, "thread_name", PID_OTHER, c->tid, sp->name);
	ev = export_chrome_complete(sp->name, PID_OTHER, c->tid, sp->start_ns, span_ms(sp));
	put_str(ev, "cat", "span");
	json_object_object_add(ev, "args", json_attrs(sp->attrs, sp->nattrs));
	export_chrome_put(c, ev);
}

/* Close the document and free.  NULL-safe. */
void
export_chrome_finish(struct chrome *c)
{
	if (c == NULL)
		return;
	fputs("\n]}\n", c->f);
	free(c);
}
