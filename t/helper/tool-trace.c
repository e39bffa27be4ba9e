/* SPDX-License-Identifier: ISC */
/*
 * tool-trace.c: "qwen-test-tool trace": the trace context and span recorder
 * from the shell.
 *
 *   trace new                 print a fresh root traceparent
 *   trace parse TP            print "TRACE_ID SPAN_ID FLAGS" (exit 1 if bad)
 *   trace span FILE NAME [--parent TP] [--kind K] [--status S[:MSG]]
 *         [key=value ...] [--event NAME [key=value ...]] ...
 *                             append one span to FILE, print its traceparent;
 *                             values of only digits are ints, others strings;
 *                             key=value after --event goes on that event
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "trace.h"

struct name_value {
	const char	*name;
	int		 value;
};

static const struct name_value kinds[] = {
	{ "internal", SPAN_KIND_INTERNAL },
	{ "server", SPAN_KIND_SERVER },
	{ "client", SPAN_KIND_CLIENT },
};

static const struct name_value statuses[] = {
	{ "unset", SPAN_STATUS_UNSET },
	{ "ok", SPAN_STATUS_OK },
	{ "error", SPAN_STATUS_ERROR },
};

/* Look name (up to len bytes) up in a table; -1 if absent. */
#define LOOKUP(table, name, len) lookup_in((table), \
    sizeof(table) / sizeof((table)[0]), (name), (len))

static int
lookup_in(const struct name_value *t, size_t n, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(t[i].name) == len && strncmp(t[i].name, name, len) == 0)
			return t[i].value;
	return -1;
}

static int
trace_usage(void)
{
	fprintf(stderr, "usage: qwen-test-tool trace new\n"
	    "       qwen-test-tool trace parse TRACEPARENT\n"
	    "       qwen-test-tool trace span FILE NAME [--parent TP] "
	    "[--kind K] [--status S[:MSG]]\n"
	    "           [key=value ...] [--event NAME [key=value ...]] ...\n");
	return 2;
}

/* Set key=value on the span or, with on_event, on its last event. */
static int
set_kv(struct span *sp, const char *arg, int on_event)
{
	const char *eq = strchr(arg, '='), *errstr;
	char key[256];
	long long v;

	if (eq == NULL || eq == arg || (size_t)(eq - arg) >= sizeof(key))
		return -1;
	memcpy(key, arg, eq - arg);
	key[eq - arg] = '\0';
	errstr = "not only digits";
	v = 0;
	if (eq[1] != '\0' && strspn(eq + 1, "0123456789") == strlen(eq + 1))
		v = strtonum(eq + 1, 0, LLONG_MAX, &errstr);	/* else a string */
	if (errstr == NULL) {
		if (on_event)
			span_event_set_int(sp, key, v);
		else
			span_set_int(sp, key, v);
	} else if (on_event)
		span_event_set_str(sp, key, eq + 1);
	else
		span_set_str(sp, key, eq + 1);
	return 0;
}

/* Apply the options and key=value arguments; 2 on a usage error. */
static int
span_args(struct span *sp, int argc, char **argv)
{
	const char *colon;
	int i, on_event = 0, st;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--parent") == 0 ||
		    strcmp(argv[i], "--kind") == 0) {
			i++;	/* used by span_prepare */
		} else if (strcmp(argv[i], "--event") == 0 && i + 1 < argc) {
			span_add_event(sp, argv[++i]);
			on_event = 1;
		} else if (strcmp(argv[i], "--status") == 0 && i + 1 < argc) {
			i++;
			colon = strchr(argv[i], ':');
			st = LOOKUP(statuses, argv[i], colon != NULL ?
			    (size_t)(colon - argv[i]) : strlen(argv[i]));
			if (st == -1)
				return 2;
			span_set_status(sp, st, colon != NULL ? colon + 1 : NULL);
		} else if (set_kv(sp, argv[i], on_event) == -1)
			return 2;
	}
	return 0;
}

/* Find --parent and --kind before the span starts; 1 bad parent, 2 usage. */
static int
span_prepare(int argc, char **argv, struct trace_ctx *parent, int *has_parent,
    int *kind)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--parent") == 0 ||
		    strcmp(argv[i], "--kind") == 0 ||
		    strcmp(argv[i], "--event") == 0 ||
		    strcmp(argv[i], "--status") == 0) {
			if (i + 1 >= argc)
				return 2;
		} else
			continue;
		if (strcmp(argv[i], "--parent") == 0) {
			if (trace_parse_traceparent(argv[i + 1], parent) == -1) {
				fprintf(stderr, "qwen-test-tool: invalid "
				    "traceparent: %s\n", argv[i + 1]);
				return 1;
			}
			*has_parent = 1;
		} else if (strcmp(argv[i], "--kind") == 0 &&
		    (*kind = LOOKUP(kinds, argv[i + 1], strlen(argv[i + 1]))) == -1)
			return 2;
		i++;
	}
	return 0;
}

/* trace span FILE NAME [options] [key=value ...] */
static int
trace_span(int argc, char **argv)
{
	struct trace_ctx parent, own;
	struct trace_sink *sink;
	struct span *sp;
	char tp[TRACEPARENT_LEN + 1];
	int rc, has_parent = 0, kind = SPAN_KIND_INTERNAL;

	if (argc < 3)
		return trace_usage();
	if ((rc = span_prepare(argc - 3, argv + 3, &parent, &has_parent,
	    &kind)) != 0)
		return rc == 2 ? trace_usage() : rc;
	if ((sp = span_start(argv[2], kind, has_parent ? &parent : NULL)) == NULL) {
		fprintf(stderr, "qwen-test-tool: span_start: out of memory\n");
		return 1;
	}
	if (span_args(sp, argc - 3, argv + 3) != 0) {
		span_free(sp);
		return trace_usage();
	}
	if ((sink = trace_sink_open(argv[1], "qwen-test-tool")) == NULL) {
		fprintf(stderr, "qwen-test-tool: %s: %s\n", argv[1],
		    strerror(errno));
		span_free(sp);
		return 1;
	}
	span_context(sp, &own);
	rc = span_end(sp, sink);
	if (rc == -1)
		fprintf(stderr, "qwen-test-tool: write %s: %s\n", argv[1],
		    strerror(errno));
	trace_sink_close(sink);
	if (rc == -1)
		return 1;
	trace_format_traceparent(&own, tp, sizeof(tp));
	printf("%s\n", tp);
	return 0;
}

int
tool_trace(int argc, char **argv)
{
	struct trace_ctx ctx;
	char buf[TRACEPARENT_LEN + 1], tid[33], sid[17];

	if (argc == 2 && strcmp(argv[1], "new") == 0) {
		trace_ctx_new_root(&ctx);
		trace_format_traceparent(&ctx, buf, sizeof(buf));
		printf("%s\n", buf);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "parse") == 0) {
		if (trace_parse_traceparent(argv[2], &ctx) == -1) {
			fprintf(stderr, "qwen-test-tool: invalid traceparent\n");
			return 1;
		}
		trace_hex(ctx.trace_id, 16, tid);
		trace_hex(ctx.span_id, 8, sid);
		printf("%s %s %02x\n", tid, sid, ctx.flags);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "span") == 0)
		return trace_span(argc - 1, argv + 1);
	return trace_usage();
}
