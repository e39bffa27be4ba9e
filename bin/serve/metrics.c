/* SPDX-License-Identifier: ISC */
/*
 * metrics.c: GET /metrics, the daemon's figures in the Prometheus text
 * exposition format (version 0.0.4).  Counters and histograms are kept
 * here as events happen; gauges are read from their owners at scrape
 * time.  Every label value comes from a fixed set (no session ids, no
 * peer input), so the number of series is bounded.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "clock.h"
#include "otlp.h"
#include "serve.h"

/* Seconds; a restore or a prompt from a few ms to many minutes. */
static const double metrics_bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600 };
#define METRICS_NBOUNDS	(sizeof(metrics_bounds) / sizeof(metrics_bounds[0]))

struct metrics_hist {
	uint64_t	 buckets[METRICS_NBOUNDS];	/* not cumulative */
	uint64_t	 count;
	double		 sum;
};

static const char *const restore_actions[] = { "spawn", "load", "resume" };
static const char *const restore_outcomes[] = { "success", "failure", "timeout" };
static const char *const prompt_results[] = { "complete", "error",
    "deadline_exceeded" };
static const char *const listeners[] = { "unix", "tcp" };
static const char *const refusal_reasons[] = { "connection_limit_exceeded",
    "payload_too_large", "unauthorized", "forbidden_host", "origin_forbidden",
    "rate_limited", "other" };
static const char *const exit_reasons[] = { "stopped", "crashed" };
static const char *const kept_events[] = { "loaded", "missing", "rejected",
    "written", "failed" };

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

static uint64_t	restores[3][3];
static struct metrics_hist restore_hist[3];
static uint64_t	prompts[NELEM(prompt_results)];
static struct metrics_hist prompt_hist;
static uint64_t	sse_dropped, sse_evicted;
static uint64_t	conns[2];
static uint64_t	conns_open[2];
static uint64_t	refusals[2][NELEM(refusal_reasons)];
static uint64_t	child_starts, child_restarts, child_exits[2];
static uint64_t	permission_requests;
static uint64_t	listing_read, listing_kept[NELEM(kept_events)];
/* The other modules' gauges, main.c's (metrics_set_gauges()). */
static const struct metrics_gauges *gauges;

void
metrics_set_gauges(const struct metrics_gauges *g)
{
	gauges = g;
}

static size_t
metrics_index(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return n - 1;
}

static void
hist_observe(struct metrics_hist *h, uint64_t ms)
{
	double s = (double)ms / 1000.0;
	size_t i;

	for (i = 0; i < METRICS_NBOUNDS && s > metrics_bounds[i]; i++)
		;
	if (i < METRICS_NBOUNDS)
		h->buckets[i]++;
	h->count++;
	h->sum += s;
}

void
metrics_restore(int action, int outcome, uint64_t ms)
{
	if (action < 0 || action > 2 || outcome < 0 || outcome > 2)
		return;
	restores[action][outcome]++;
	hist_observe(&restore_hist[action], ms);
}

void
metrics_prompt(const char *result, uint64_t ms)
{
	prompts[metrics_index(prompt_results, NELEM(prompt_results), result)]++;
	hist_observe(&prompt_hist, ms);
}

void
metrics_sse_evicted(size_t dropped)
{
	sse_evicted++;
	sse_dropped += dropped;
}

void
metrics_conn_open(int is_unix)
{
	conns[is_unix ? 0 : 1]++;
	conns_open[is_unix ? 0 : 1]++;
}

void
metrics_conn_closed(int is_unix)
{
	if (conns_open[is_unix ? 0 : 1] > 0)
		conns_open[is_unix ? 0 : 1]--;
}

void
metrics_refusal(int is_unix, const char *reason)
{
	refusals[is_unix ? 0 : 1][metrics_index(refusal_reasons,
	    NELEM(refusal_reasons), reason)]++;
}

void
metrics_child_started(int restart)
{
	child_starts++;
	child_restarts += restart != 0;
}

void
metrics_child_exited(int killed)
{
	child_exits[killed ? 0 : 1]++;
}

void
metrics_permission_asked(void)
{
	permission_requests++;
}

/* "# HELP" and "# TYPE" of one family. */
static void
family(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
sample(struct evbuffer *b, const char *name, uint64_t v)
{
	evbuffer_add_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* One histogram's series; labels: "" or 'key="value",'. */
static void
hist_write(struct evbuffer *b, const char *name, const char *labels,
    const struct metrics_hist *h)
{
	uint64_t cum = 0;

	for (size_t i = 0; i < METRICS_NBOUNDS; i++) {
		cum += h->buckets[i];
		evbuffer_add_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels,
		    metrics_bounds[i], (unsigned long long)cum);
	}
	evbuffer_add_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels,
	    (unsigned long long)h->count);
	if (labels[0] != '\0') {
		char l[64];

		/* Drop the trailing comma for the sum and count. */
		snprintf(l, sizeof(l), "%.*s", (int)strlen(labels) - 1, labels);
		evbuffer_add_printf(b, "%s_sum{%s} %.6f\n%s_count{%s} %llu\n", name, l,
		    h->sum, name, l, (unsigned long long)h->count);
	} else
		evbuffer_add_printf(b, "%s_sum %.6f\n%s_count %llu\n", name, h->sum,
		    name, (unsigned long long)h->count);
}

static void
metrics_sessions(struct evbuffer *b)
{
	size_t n = gauges->sessions(), run = gauges->prompts_running();
	size_t queued, perms;

	gauges->prompts_waiting(&queued, &perms);
	family(b, "qwen_serve_sessions", "gauge", "Live sessions by state.");
	evbuffer_add_printf(b, "qwen_serve_sessions{state=\"idle\"} %zu\n", n - run);
	evbuffer_add_printf(b, "qwen_serve_sessions{state=\"prompting\"} %zu\n", run);
	family(b, "qwen_serve_prompts_running", "gauge", "Prompts the agent is running.");
	sample(b, "qwen_serve_prompts_running", run);
	family(b, "qwen_serve_prompts_queued", "gauge", "Prompts waiting their turn.");
	sample(b, "qwen_serve_prompts_queued", queued);
	family(b, "qwen_serve_permission_requests_pending", "gauge",
	    "Permission requests of the agent awaiting a client's answer.");
	sample(b, "qwen_serve_permission_requests_pending", perms);
	family(b, "qwen_serve_permission_requests_total", "counter",
	    "Permission requests the agent made.");
	sample(b, "qwen_serve_permission_requests_total", permission_requests);
	family(b, "qwen_serve_sse_subscribers", "gauge", "Open SSE event streams.");
	sample(b, "qwen_serve_sse_subscribers", gauges->sse_subscribers());
	family(b, "qwen_serve_sse_evictions_total", "counter",
	    "SSE subscribers ended for falling behind.");
	sample(b, "qwen_serve_sse_evictions_total", sse_evicted);
	family(b, "qwen_serve_sse_dropped_events_total", "counter",
	    "Events queued for evicted SSE subscribers and never sent.");
	sample(b, "qwen_serve_sse_dropped_events_total", sse_dropped);
}

static void
metrics_restores(struct evbuffer *b)
{
	size_t st[4];
	static const char *const states[] = { "active", "unsettled", "overdue",
	    "quarantined" };
	char l[64];

	family(b, "qwen_serve_restores_total", "counter",
	    "Session spawns, loads and resumes answered, by outcome.");
	for (size_t a = 0; a < 3; a++)
		for (size_t o = 0; o < 3; o++)
			evbuffer_add_printf(b, "qwen_serve_restores_total{action=\"%s\","
			    "outcome=\"%s\"} %llu\n", restore_actions[a], restore_outcomes[o],
			    (unsigned long long)restores[a][o]);
	family(b, "qwen_serve_restore_duration_seconds", "histogram",
	    "Time from a restore's dispatch to its public answer.");
	for (size_t a = 0; a < 3; a++) {
		snprintf(l, sizeof(l), "action=\"%s\",", restore_actions[a]);
		hist_write(b, "qwen_serve_restore_duration_seconds", l, &restore_hist[a]);
	}
	gauges->restores(&st[0], &st[1], &st[2], &st[3]);
	family(b, "qwen_serve_restores_in_flight", "gauge",
	    "Restores not yet settled, by state.");
	for (size_t i = 0; i < 4; i++)
		evbuffer_add_printf(b, "qwen_serve_restores_in_flight{state=\"%s\"} %zu\n",
		    states[i], st[i]);
}

static void
metrics_prompts(struct evbuffer *b)
{
	family(b, "qwen_serve_prompts_total", "counter", "Prompts ended, by result.");
	for (size_t i = 0; i < NELEM(prompt_results); i++)
		evbuffer_add_printf(b, "qwen_serve_prompts_total{result=\"%s\"} %llu\n",
		    prompt_results[i], (unsigned long long)prompts[i]);
	family(b, "qwen_serve_prompt_duration_seconds", "histogram",
	    "Time from a prompt's dispatch to the agent to its end.");
	hist_write(b, "qwen_serve_prompt_duration_seconds", "", &prompt_hist);
}

static void
metrics_conns(struct evbuffer *b)
{
	family(b, "qwen_serve_connections", "gauge", "Open HTTP connections by listener.");
	for (size_t i = 0; i < 2; i++)
		evbuffer_add_printf(b, "qwen_serve_connections{listener=\"%s\"} %llu\n",
		    listeners[i], (unsigned long long)conns_open[i]);
	family(b, "qwen_serve_connections_total", "counter",
	    "HTTP connections accepted by listener.");
	for (size_t i = 0; i < 2; i++)
		evbuffer_add_printf(b, "qwen_serve_connections_total{listener=\"%s\"} %llu\n",
		    listeners[i], (unsigned long long)conns[i]);
	family(b, "qwen_serve_websocket_connections", "gauge", "Open WebSocket /acp connections.");
	sample(b, "qwen_serve_websocket_connections", gauges->ws_conns());
	family(b, "qwen_serve_acp_connections", "gauge", "Open ACP connections (HTTP and WebSocket).");
	sample(b, "qwen_serve_acp_connections", gauges->acp_conns());
	family(b, "qwen_serve_refusals_total", "counter",
	    "Connections and requests refused before any route, by listener and reason.");
	for (size_t i = 0; i < 2; i++)
		for (size_t r = 0; r < NELEM(refusal_reasons); r++)
			evbuffer_add_printf(b, "qwen_serve_refusals_total{listener=\"%s\","
			    "reason=\"%s\"} %llu\n", listeners[i], refusal_reasons[r],
			    (unsigned long long)refusals[i][r]);
}

static void
metrics_children(struct evbuffer *b)
{
	family(b, "qwen_serve_children_running", "gauge", "qwen-acp-child processes running.");
	sample(b, "qwen_serve_children_running", gauges->children());
	family(b, "qwen_serve_child_starts_total", "counter", "qwen-acp-child processes started.");
	sample(b, "qwen_serve_child_starts_total", child_starts);
	family(b, "qwen_serve_child_restarts_total", "counter",
	    "Starts of a workspace's child after an earlier one exited.");
	sample(b, "qwen_serve_child_restarts_total", child_restarts);
	family(b, "qwen_serve_child_exits_total", "counter",
	    "Child exits: stopped by the daemon, or crashed (exited on its own).");
	for (size_t i = 0; i < 2; i++)
		evbuffer_add_printf(b, "qwen_serve_child_exits_total{reason=\"%s\"} %llu\n",
		    exit_reasons[i], (unsigned long long)child_exits[i]);
}

/* Resident set size from /proc/self/statm; 0 when unreadable. */
static uint64_t
metrics_rss(void)
{
	unsigned long long size, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f == NULL)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &rss) != 2)
		rss = 0;
	fclose(f);
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

void
metrics_listing_read(uint64_t bytes)
{
	listing_read += bytes;
}

void
metrics_listing_kept(const char *event)
{
	listing_kept[metrics_index(kept_events, NELEM(kept_events), event)]++;
}

/* What the listing and the search read, and their kept file. */
static void
metrics_listing(struct evbuffer *b)
{
	family(b, "qwen_serve_listing_bytes_read_total", "counter",
	    "Transcript bytes read for session listings and searches.");
	sample(b, "qwen_serve_listing_bytes_read_total", listing_read);
	family(b, "qwen_serve_listing_kept_total", "counter",
	    "The listing's kept file loaded, missing, rejected, written, failed.");
	for (size_t i = 0; i < NELEM(kept_events); i++)
		evbuffer_add_printf(b, "qwen_serve_listing_kept_total{event=\"%s\"} %llu\n",
		    kept_events[i], (unsigned long long)listing_kept[i]);
}

static void
metrics_process(struct evbuffer *b)
{
	struct otlp_stats st = { 0 };

	if (serve_otlp != NULL)
		otlp_stats(serve_otlp, &st);
	family(b, "qwen_serve_otlp_spans_exported_total", "counter",
	    "Spans the OTLP collector took.");
	sample(b, "qwen_serve_otlp_spans_exported_total", st.exported);
	family(b, "qwen_serve_otlp_spans_dropped_total", "counter",
	    "Spans lost: the export queue was full or the export failed.");
	sample(b, "qwen_serve_otlp_spans_dropped_total", st.dropped + st.failed);
	family(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	sample(b, "process_resident_memory_bytes", metrics_rss());
	family(b, "process_start_time_seconds", "gauge",
	    "Start time of the process since the Unix epoch in seconds.");
	evbuffer_add_printf(b, "process_start_time_seconds %.3f\n",
	    (double)conf.started_wall_ms / 1000.0);
}

void
route_metrics(struct http_ctx *ctx)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL) {
		http_error(ctx->req, "internal", NULL);
		return;
	}
	metrics_sessions(b);
	metrics_restores(b);
	metrics_prompts(b);
	metrics_conns(b);
	metrics_children(b);
	metrics_listing(b);
	metrics_process(b);
	gate_cors_headers(ctx->req);
	http_set_header(ctx->req, "Content-Type",
	    "text/plain; version=0.0.4; charset=utf-8");
	http_reply_raw(ctx->req, 200, b);
	evbuffer_free(b);
}
