/* SPDX-License-Identifier: ISC */
/*
 * make-spans: write synthetic restore span pairs with libqwen's real trace
 * writer (lib/trace.h), for the qwen-trace-dump tests.
 *
 * usage: make-spans FILE [-n COUNT] [-s fast|timeout|quarantined|killed|
 *        direct|mix] [-b BUDGET_MS] [-S SESSION_PREFIX]
 *
 * Each restore is a daemon span `qwen-code.daemon.bridge` (service
 * qwen-serve) and, unless the child was killed, a child span
 * `qwen-code.daemon.session_restore` (service qwen-acp-child) continuing its
 * context, ended first as the real child would.  Stage durations are
 * attributes and deterministic (a function of the restore's index); span
 * times are real.  "mix" cycles: 7 fast, 1 timeout, 1 quarantined, 1 killed.
 */
#include "config.h"

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#define P "qwen-code.daemon.session_restore."

static const char *const stages[] = {
	"settings_load", "existence_check", "transcript_read",
	"chain_reconstruct", "config_setup", "auth", "file_system_setup",
	"session_register", "history_replay", "response_build",
};

enum scenario { FAST, TIMEOUT, QUARANTINED, KILLED, DIRECT, MIX };

/* The child's span: stages, sizes, loop lag; ended and written at once. */
static void
child_span(struct trace_sink *sink, const struct trace_ctx *parent,
    const char *sid, const char *action, long i, enum scenario sc)
{
	struct span *c = span_start("qwen-code.daemon.session_restore",
	    SPAN_KIND_SERVER, parent);
	char key[96];

	span_set_str(c, "qwen-code.daemon.operation",
	    strcmp(action, "load") == 0 ? "acp_session_load" : "acp_session_resume");
	span_set_str(c, P "action", action);
	span_set_str(c, "session.id", sid);
	for (size_t k = 0; k < sizeof(stages) / sizeof(stages[0]); k++) {
		int64_t ms = (int64_t)(k + 1) + (i * 7 + (long)k) % 20;

		if (k == 2)
			ms = 10 + (i * 13) % 100;	/* transcript_read */
		snprintf(key, sizeof(key), P "%s_ms", stages[k]);
		span_set_int(c, key, ms);
		if (sc == DIRECT && k == 5)
			break;
	}
	if (sc == QUARANTINED || sc == DIRECT) {
		span_set_str(c, P "failed_stage", "auth");
		span_set_status(c, SPAN_STATUS_ERROR, "stage auth failed");
	}
	span_set_int(c, P "transcript_bytes", 1048576 + i);
	span_set_int(c, P "chain_records", 100 + i % 1000);
	span_set_int(c, P "replay_records", 50);
	span_set_int(c, P "replay_bytes", 4096);
	span_set_int(c, P "malformed_lines", 0);
	span_set_double(c, "qwen-code.daemon.event_loop_lag.mean_ms", 0.5);
	span_set_double(c, "qwen-code.daemon.event_loop_lag.p50_ms", 0.25);
	span_set_double(c, "qwen-code.daemon.event_loop_lag.p99_ms", 3.5);
	span_set_double(c, "qwen-code.daemon.event_loop_lag.max_ms", 9.0);
	if (span_end(c, sink) == -1)
		err(1, "span_end");
}

/* An event with one string attribute on the daemon span. */
static void
event(struct span *d, const char *name, const char *key, const char *value)
{
	span_add_event(d, name);
	if (key != NULL)
		span_event_set_str(d, key, value);
}

/* One restore: daemon span, child span (unless killed), events. */
static void
restore(struct trace_sink *ds, struct trace_sink *cs, long i, enum scenario sc,
    int64_t budget, const char *prefix)
{
	const char *action = i % 3 == 2 ? "resume" : "load";
	struct trace_ctx ctx;
	struct span *d;
	char sid[80], chan[32];

	snprintf(sid, sizeof(sid), "%s%012ld", prefix, i);
	snprintf(chan, sizeof(chan), "ch-%ld", i % 4);
	if (sc == DIRECT) {
		child_span(cs, NULL, sid, action, i, sc);
		return;
	}
	d = span_start("qwen-code.daemon.bridge", SPAN_KIND_INTERNAL, NULL);
	span_set_str(d, "qwen-code.daemon.operation", "session.restore");
	span_set_str(d, "qwen-code.daemon.bridge.operation",
	    strcmp(action, "load") == 0 ? "session.load" : "session.resume");
	span_set_int(d, P "timeout_ms", budget);
	span_set_str(d, "session.id", sid);
	span_set_str(d, "qwen-code.daemon.channel.id", chan);
	span_context(d, &ctx);
	if (sc == FAST) {
		child_span(cs, &ctx, sid, action, i, sc);
		event(d, "session.restore.public_result", "result", "success");
	} else {
		event(d, "session.restore.public_result", "result", "timeout");
		if (sc == QUARANTINED)
			event(d, "session.restore.settlement_overdue", NULL, NULL);
		if (sc != KILLED)
			child_span(cs, &ctx, sid, action, i, sc);
		if (sc == TIMEOUT)
			event(d, "session.restore.late_result", "result", "success");
		else if (sc == QUARANTINED)
			event(d, "session.restore.late_result", "result", "failure");
		event(d, "session.restore.cleanup", "cleanup_result",
		    sc == TIMEOUT ? "closed" : sc == QUARANTINED ? "quarantined" :
		    "transport_closed");
	}
	if (span_end(d, ds) == -1)
		err(1, "span_end");
}

/* Parse the options and write COUNT restores to FILE. */
int
main(int argc, char **argv)
{
	static const char *const names[] = { "fast", "timeout", "quarantined",
		"killed", "direct", "mix" };
	static const enum scenario cycle[] = { FAST, FAST, FAST, TIMEOUT, FAST,
		FAST, QUARANTINED, FAST, FAST, KILLED };
	struct trace_sink *ds, *cs;
	const char *errstr, *prefix = "5e7d0f2a-9000-4000-8000-";
	long count = 1;
	int64_t budget = 60000;
	enum scenario sc = FAST;
	int ch;

	while ((ch = getopt(argc, argv, "b:n:s:S:")) != -1) {
		switch (ch) {
		case 'b':
			budget = strtonum(optarg, 1, 2147483647, &errstr);
			if (errstr != NULL)
				errx(2, "-b: %s", errstr);
			break;
		case 'n':
			count = (long)strtonum(optarg, 1, 100000000, &errstr);
			if (errstr != NULL)
				errx(2, "-n: %s", errstr);
			break;
		case 's':
			for (sc = FAST; sc <= MIX; sc++)
				if (strcmp(optarg, names[sc]) == 0)
					break;
			if (sc > MIX)
				errx(2, "-s: unknown scenario %s", optarg);
			break;
		case 'S':
			prefix = optarg;
			break;
		default:
			errx(2, "usage: make-spans FILE [-n N] [-s SCENARIO] "
			    "[-b MS] [-S PREFIX]");
		}
	}
	if (optind + 1 != argc)
		errx(2, "usage: make-spans FILE [-n N] [-s SCENARIO] [-b MS]");
	if ((ds = trace_sink_open(argv[optind], "qwen-serve")) == NULL ||
	    (cs = trace_sink_open(argv[optind], "qwen-acp-child")) == NULL)
		err(1, "%s", argv[optind]);
	for (long i = 0; i < count; i++)
		restore(ds, cs, i, sc == MIX ? cycle[i % 10] : sc, budget, prefix);
	trace_sink_close(ds);
	trace_sink_close(cs);
	return 0;
}
