/* SPDX-License-Identifier: ISC */
/*
 * test-trace-dump.c: qwen-trace-dump's reader, join, restore model,
 * percentiles and --since parsing, on their own.
 */
#include "config.h"	/* _GNU_SOURCE, for asprintf */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "../../bin/trace-dump/trace-dump.h"
#include "tap.h"

#define TID	"0123456789abcdef0123456789abcdef"
#define DSID	"d000000000000001"
#define CSID	"c000000000000001"
#define P	"qwen-code.daemon.session_restore."

static struct tspan *got[8];
static size_t ngot;

/* Reader callback: keep the spans. */
static void
keep(struct tspan *sp, void *arg)
{
	(void)arg;
	if (ngot < 8)
		got[ngot++] = sp;
	else
		tspan_free(sp);
}

/* Free the kept spans. */
static void
drop(void)
{
	for (size_t i = 0; i < ngot; i++)
		tspan_free(got[i]);
	ngot = 0;
}

/* A request line around one or more span objects. */
static char *
req(const char *spans)
{
	char *s;

	if (asprintf(&s, "{\"resourceSpans\":[{\"resource\":{\"attributes\":"
	    "[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"svc\"}}]},"
	    "\"scopeSpans\":[{\"spans\":[%s]}]}]}", spans) == -1)
		abort();
	return s;
}

/* Parse a line into got[]; the return of reader_parse_line. */
static int
parse(json_tokener *tok, const char *spans, char *why, size_t whysize)
{
	char *line = req(spans);
	int rc;

	rc = reader_parse_line(tok, line, strlen(line), "t", 7, keep, NULL,
	    why, whysize);
	free(line);
	return rc;
}

/* OTLP/JSON lines into spans; malformed lines with reasons. */
static void
test_reader(json_tokener *tok)
{
	char why[160];
	const char *bad = "not json";

	ok(parse(tok, "{\"traceId\":\"" "0123456789ABCDEF0123456789ABCDEF\","
	    "\"spanId\":\"" DSID "\",\"parentSpanId\":\"\",\"name\":\"n\","
	    "\"startTimeUnixNano\":\"1000\",\"endTimeUnixNano\":2500,"
	    "\"attributes\":[{\"key\":\"i\",\"value\":{\"intValue\":42}},"
	    "{\"key\":\"s\",\"value\":{\"intValue\":\"-7\"}},"
	    "{\"key\":\"d\",\"value\":{\"doubleValue\":3}},"
	    "{\"key\":\"b\",\"value\":{\"boolValue\":true}},"
	    "{\"value\":{\"stringValue\":\"no key\"}}],"
	    "\"events\":[{\"name\":\"e\",\"timeUnixNano\":\"2000\","
	    "\"attributes\":[{\"key\":\"result\",\"value\":{\"stringValue\":"
	    "\"timeout\"}}]}],\"status\":{\"code\":\"STATUS_CODE_ERROR\","
	    "\"message\":\"m\"}}", why, sizeof(why)) == 0, "valid span parses");
	ok(ngot == 1, "one span delivered");
	if (ngot == 1) {
		struct tspan *sp = got[0];
		double v;

		is_str(sp->trace_id, TID, "trace id lowercased");
		is_str(sp->parent_id, "", "empty parentSpanId is a root");
		ok(sp->start_ns == 1000 && sp->end_ns == 2500, "times");
		ok(tspan_num(sp, "i", &v) == 0 && v == 42, "intValue as number");
		ok(tspan_num(sp, "s", &v) == 0 && v == -7, "intValue as string");
		ok(tspan_num(sp, "d", &v) == 0 && v == 3, "doubleValue integral");
		ok(tspan_attr(sp, "b")->type == TATTR_BOOL, "boolValue");
		ok(sp->nattrs == 4, "attribute without key skipped");
		is_str(tevent_str(tspan_event(sp, "e"), "result"), "timeout",
		    "event attribute");
		ok(sp->status_code == 2, "status code enum name");
		is_str(sp->service, "svc", "service.name");
		ok(sp->line == 7, "line number kept");
	}
	drop();
	ok(parse(tok, "{\"traceId\":\"" TID "\",\"spanId\":\"" DSID "\","
	    "\"name\":\"n\",\"startTimeUnixNano\":\"5\",\"endTimeUnixNano\":\"4\"}",
	    why, sizeof(why)) == -1 && strstr(why, "endTimeUnixNano") != NULL,
	    "end before start rejected: %s", why);
	ok(parse(tok, "{\"traceId\":\"" TID "\",\"spanId\":\"" DSID "\","
	    "\"name\":\"good\",\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":"
	    "\"2\"},{\"traceId\":\"abc\"}", why, sizeof(why)) == -1 &&
	    ngot == 1 && strstr(why, "traceId") != NULL,
	    "a bad span makes the line malformed, the good one still passes");
	drop();
	ok(reader_parse_line(tok, bad, strlen(bad), "t", 1, keep, NULL, why,
	    sizeof(why)) == -1 && strncmp(why, "invalid JSON", 12) == 0,
	    "not JSON: %s", why);
	ok(reader_parse_line(tok, "{}", 2, "t", 1, keep, NULL, why,
	    sizeof(why)) == -1 && strstr(why, "resourceSpans") != NULL,
	    "no resourceSpans: %s", why);
	ok(reader_parse_line(tok, "{\"resourceSpans\":[]}  x", 23, "t", 1, keep,
	    NULL, why, sizeof(why)) == -1, "trailing data rejected");
	ok(reader_parse_line(tok, "{\"resourceSpans\":[]}\r", 21, "t", 1, keep,
	    NULL, why, sizeof(why)) == 0, "trailing CR accepted");
}

/* One span object as JSON text. */
static char *
span_json(const char *name, const char *sid, const char *parent,
    const char *attrs)
{
	char *s;

	if (asprintf(&s, "{\"traceId\":\"" TID "\",\"spanId\":\"%s\","
	    "\"parentSpanId\":\"%s\",\"name\":\"%s\",\"startTimeUnixNano\":"
	    "\"1000000000\",\"endTimeUnixNano\":\"3000000000\","
	    "\"attributes\":[%s]}", sid, parent, name, attrs) == -1)
		abort();
	return s;
}

#define SATTR(k, v) "{\"key\":\"" k "\",\"value\":{\"stringValue\":\"" v "\"}}"
#define IATTR(k, v) "{\"key\":\"" k "\",\"value\":{\"intValue\":\"" v "\"}}"
#define DATTR(k, v) "{\"key\":\"" k "\",\"value\":{\"doubleValue\":" v "}}"

/* Parse one span from JSON text (ownership to the caller). */
static struct tspan *
one(json_tokener *tok, char *json)
{
	char why[160];
	struct tspan *sp;

	parse(tok, json, why, sizeof(why));
	free(json);
	sp = ngot == 1 ? got[0] : NULL;
	ngot = 0;
	return sp;
}

static struct restore *restores[8];
static size_t nrestores, nspans;

/* Join callback: keep the restores. */
static void
on_restore(struct restore *r, void *arg)
{
	(void)arg;
	if (nrestores < 8)
		restores[nrestores++] = r;
	else
		record_free(r);
}

/* Join callback: count generic spans. */
static void
on_generic(struct tspan *sp, void *arg)
{
	(void)arg;
	nspans++;
	tspan_free(sp);
}

/* A daemon restore span with span id sid. */
static struct tspan *
daemon_span(json_tokener *tok, const char *sid)
{
	return one(tok, span_json(TD_DAEMON_SPAN, sid, "",
	    SATTR("qwen-code.daemon.operation", "session.restore") ","
	    SATTR("qwen-code.daemon.bridge.operation", "session.resume") ","
	    IATTR(P "timeout_ms", "1500") "," SATTR("session.id", "S") ","
	    IATTR("qwen-code.daemon.channel.id", "7")));
}

/* Grouping, the cap, and the restore model. */
static void
test_join(json_tokener *tok)
{
	struct join_out out = { on_restore, on_generic, NULL };
	struct join *j = join_new(2, &out);
	char sids[3][17] = { "d000000000000001", "d000000000000002",
		"d000000000000003" };
	struct restore *r;

	for (int i = 0; i < 3; i++)
		join_add(j, daemon_span(tok, sids[i]));
	ok(nrestores == 1 && join_evicted(j) == 1 && join_pending(j) == 2,
	    "beyond the cap the oldest incomplete restore is emitted");
	ok(nrestores == 1 && restores[0]->child == NULL &&
	    strcmp(restores[0]->daemon->span_id, sids[0]) == 0,
	    "the evicted one is the oldest, daemon side alone");
	join_add(j, one(tok, span_json(TD_CHILD_SPAN, CSID, sids[2],
	    IATTR(P "auth_ms", "5") "," IATTR(P "custom_thing_ms", "9") ","
	    IATTR(P "settings_load_ms", "2") ","
	    DATTR(P "loop_lag.p99_ms", "7.5") ","
	    SATTR(P "failed_stage", "auth"))));
	ok(nrestores == 2 && join_pending(j) == 1,
	    "a child span completes its group at once");
	r = nrestores == 2 ? restores[1] : NULL;
	ok(r != NULL && r->daemon != NULL && r->child != NULL,
	    "joined by trace id and parent span id");
	if (r != NULL) {
		is_str(r->action, "resume", "action from the bridge operation");
		is_str(r->channel_id, "7", "an integer channel id (qwen-serve's)");
		ok(r->budget_ms == 1500, "budget");
		ok(r->nstages == 3 && strcmp(r->stages[0].name, "settings_load") == 0 &&
		    strcmp(r->stages[1].name, "auth") == 0 &&
		    strcmp(r->stages[2].name, "custom_thing") == 0,
		    "known stages in execution order, unknown ones after");
		ok(r->lag_p99 == 7.5 && r->lag_mean < 0, "loop lag alias name");
		is_str(r->result, "failure", "no public result: the failed stage decides");
		is_str(r->failed_stage, "auth", "failed stage");
	}
	join_add(j, one(tok, span_json("http.request", "e000000000000001", "", "")));
	ok(nspans == 1, "an unknown span passes through as generic");
	join_add(j, one(tok, span_json(TD_DAEMON_SPAN, "e000000000000002", "",
	    SATTR("qwen-code.daemon.operation", "session.new"))));
	ok(nspans == 2, "a bridge span of another operation is generic");
	/* As qwen-acp-child writes it: action restore, the lag snapshot. */
	join_add(j, one(tok, span_json(TD_CHILD_SPAN, "c000000000000009", "",
	    SATTR("qwen-code.daemon.operation", "acp_session_load") ","
	    SATTR(P "action", "restore") ","
	    DATTR("qwen-code.daemon.event_loop_lag.mean_ms", "0.25") ","
	    DATTR("qwen-code.daemon.event_loop_lag.p50_ms", "0.125") ","
	    DATTR("qwen-code.daemon.event_loop_lag.p99_ms", "2.5") ","
	    DATTR("qwen-code.daemon.event_loop_lag.max_ms", "3.5") ","
	    IATTR("qwen-code.daemon.event_loop_lag.samples", "4"))));
	ok(nrestores == 3 && restores[2]->daemon == NULL &&
	    strcmp(restores[2]->action, "load") == 0 &&
	    strcmp(restores[2]->result, "success") == 0,
	    "a child span without parent is a restore on its own");
	ok(nrestores == 3 && restores[2]->lag_mean == 0.25 &&
	    restores[2]->lag_p50 == 0.125 && restores[2]->lag_p99 == 2.5 &&
	    restores[2]->lag_max == 3.5, "the child's event_loop_lag snapshot");
	ok(nrestores == 3 && restores[2]->channel_id == NULL, "no channel id");
	join_flush(j, 0);
	ok(nrestores == 4 && join_pending(j) == 0, "flush emits the rest");
	ok(nrestores == 4 && restores[3]->channel_id != NULL &&
	    strcmp(restores[3]->channel_id, "7") == 0,
	    "a flushed daemon span keeps its channel id");
	for (size_t i = 0; i < nrestores; i++)
		record_free(restores[i]);
	join_free(j);
}

/* A cleanup event with its result, as OTLP JSON text. */
#define CLEANUP(t, v) "{\"timeUnixNano\":\"" t "\",\"name\":" \
	"\"session.restore.cleanup\",\"attributes\":[" \
	SATTR("cleanup_result", v) "]}"

/* A quarantined restore settled by its channel's end, as qwen-serve writes it. */
static void
test_settled(json_tokener *tok)
{
	char *js;
	struct tspan *sp;
	struct restore *r;

	if (asprintf(&js, "{\"traceId\":\"" TID "\",\"spanId\":\"" DSID "\","
	    "\"name\":\"" TD_DAEMON_SPAN "\",\"startTimeUnixNano\":\"1000000000\","
	    "\"endTimeUnixNano\":\"3000000000\",\"attributes\":["
	    SATTR("qwen-code.daemon.operation", "session.restore") "],"
	    "\"events\":[" CLEANUP("2000000000", "quarantined") ","
	    CLEANUP("2500000000", "transport_closed") "]}") == -1)
		abort();
	sp = one(tok, js);
	r = sp != NULL ? record_build(sp, NULL) : NULL;
	ok(r != NULL && r->cleanup_result != NULL && r->settled_by != NULL &&
	    strcmp(r->cleanup_result, "quarantined") == 0 &&
	    strcmp(r->settled_by, "transport_closed") == 0,
	    "quarantined, then settled by transport_closed");
	record_free(r);
	if (asprintf(&js, "{\"traceId\":\"" TID "\",\"spanId\":\"" DSID "\","
	    "\"name\":\"" TD_DAEMON_SPAN "\",\"startTimeUnixNano\":\"1000000000\","
	    "\"endTimeUnixNano\":\"3000000000\",\"attributes\":[],"
	    "\"events\":[" CLEANUP("2000000000", "closed") "]}") == -1)
		abort();
	sp = one(tok, js);
	r = sp != NULL ? record_build(sp, NULL) : NULL;
	ok(r != NULL && r->settled_by == NULL, "one cleanup: no separate settlement");
	record_free(r);
}

/* Nearest-rank percentiles. */
static void
test_percentile(void)
{
	double v[100];

	for (int i = 0; i < 100; i++)
		v[i] = i + 1;
	ok(summary_percentile(v, 100, 50) == 50 && summary_percentile(v, 100, 90) == 90 &&
	    summary_percentile(v, 100, 99) == 99 && summary_percentile(v, 100, 100) == 100,
	    "nearest rank over 1..100");
	ok(summary_percentile(v, 1, 50) == 1 && summary_percentile(v, 1, 99) == 1, "one sample");
	ok(summary_percentile(v, 0, 50) == 0, "no samples");
	ok(summary_percentile(v, 10, 90) == 9 && summary_percentile(v, 10, 99) == 10,
	    "p90 of 10 is the 9th, p99 the 10th");
}

/* --since: ISO 8601 forms and relative times. */
static void
test_since(void)
{
	uint64_t now = 1780000000ULL * 1000000000ULL, t = 0;

	ok(since_parse("2026-05-28T20:26:40Z", now, &t) == 0 && t == now, "Z");
	ok(since_parse("2026-05-28T22:26:40+02:00", now, &t) == 0 && t == now,
	    "offset");
	ok(since_parse("2026-05-28T15:26:40-0500", now, &t) == 0 && t == now,
	    "offset without colon");
	ok(since_parse("2026-05-28 20:26:40.5", now, &t) == 0 &&
	    t == now + 500000000ULL, "space and fraction, UTC");
	ok(since_parse("2026-05-28T20:26Z", now, &t) == 0 && t == now - 40000000000ULL,
	    "no seconds");
	ok(since_parse("2026-05-28", now, &t) == 0 &&
	    t == now - (20 * 3600 + 26 * 60 + 40) * 1000000000ULL, "date only");
	ok(since_parse("10m", now, &t) == 0 && t == now - 600000000000ULL, "10m");
	ok(since_parse("2h", now, &t) == 0 && t == now - 7200000000000ULL, "2h");
	ok(since_parse("1d", now, &t) == 0, "1d");
	ok(since_parse("30s", now, &t) == 0 && t == now - 30000000000ULL, "30s");
	ok(since_parse("yesterday", now, &t) == -1, "word rejected");
	ok(since_parse("10x", now, &t) == -1, "unknown unit rejected");
	ok(since_parse("10", now, &t) == -1, "no unit rejected");
	ok(since_parse("2026-13-01", now, &t) == -1, "month 13 rejected");
	ok(since_parse("2026-05-28T25:00Z", now, &t) == -1, "hour 25 rejected");
	ok(since_parse("2026-05-28T20:26:40Q", now, &t) == -1, "bad zone rejected");
	ok(since_parse("99999999999d", now, &t) == -1, "before the epoch rejected");
}

/* Run every group of checks. */
int
main(void)
{
	json_tokener *tok = json_tokener_new_ex(64);

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	test_reader(tok);
	test_join(tok);
	test_settled(tok);
	test_percentile();
	test_since();
	json_tokener_free(tok);
	return done_testing();
}
