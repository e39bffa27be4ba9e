/* SPDX-License-Identifier: ISC */
/* test-trace.c: W3C trace context and the OTLP/JSON span recorder. */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "tap.h"
#include "trace.h"

static char tmpdir[] = "/tmp/test-trace.XXXXXX";

/* Parse one line strictly (valid UTF-8, one object, then '\n' only). */
static json_object *
parse_line(const char *s, size_t len)
{
	json_tokener *tok = json_tokener_new_ex(64);
	json_object *o;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, s, (int)len);
	if (o != NULL && (json_tokener_get_parse_end(tok) != len ||
	    s[len - 1] != '\n' || memchr(s, '\n', len - 1) != NULL)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* Follow a dotted path of keys and array indexes ("a.0.b"). */
static json_object *
jpath(json_object *o, const char *path)
{
	char buf[256], *p, *tok;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf; o != NULL && (tok = strsep(&p, ".")) != NULL;) {
		if (*tok >= '0' && *tok <= '9')
			o = json_object_is_type(o, json_type_array) ?
			    json_object_array_get_idx(o, atoi(tok)) : NULL;
		else if (!json_object_object_get_ex(o, tok, &o))
			o = NULL;
	}
	return o;
}

/* Length of the array at path, -1 if there is none. */
static int
jlen(json_object *o, const char *path)
{
	o = jpath(o, path);
	return json_object_is_type(o, json_type_array) ?
	    (int)json_object_array_length(o) : -1;
}

/* The string at path, or NULL. */
static const char *
jstr(json_object *o, const char *path)
{
	o = jpath(o, path);
	return json_object_is_type(o, json_type_string) ?
	    json_object_get_string(o) : NULL;
}

/* The value object of attribute key in the array at path. */
static json_object *
jattr(json_object *o, const char *path, const char *key)
{
	json_object *arr = jpath(o, path), *kv, *v;
	size_t i;

	for (i = 0; json_object_is_type(arr, json_type_array) &&
	    i < json_object_array_length(arr); i++) {
		kv = json_object_array_get_idx(arr, i);
		if (strcmp(jstr(kv, "key") ? jstr(kv, "key") : "", key) == 0 &&
		    json_object_object_get_ex(kv, "value", &v))
			return v;
	}
	return NULL;
}

/* Encode sp and parse it back; the span object is at "S" (see SPAN). */
static json_object *
encode_parse(const struct span *sp)
{
	json_object *o;
	size_t len = 0;
	char *line = span_encode(sp, "test-svc", &len);

	if (line == NULL)
		return NULL;
	o = parse_line(line, len);
	if (strlen(line) != len)
		o = NULL;
	free(line);
	return o;
}

#define SPAN "resourceSpans.0.scopeSpans.0.spans.0"

/* Decimal string to uint64 (0 for anything else). */
static uint64_t
dec(const char *s)
{
	return s != NULL && *s >= '0' && *s <= '9' ? strtoull(s, NULL, 10) : 0;
}

/* Count the lines of path that are valid requests; -1 if one is not. */
static int
count_valid_lines(const char *path)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int count = 0;
	json_object *o;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return -1;
	while ((n = getline(&line, &cap, f)) > 0) {
		if ((o = parse_line(line, (size_t)n)) == NULL ||
		    jstr(o, SPAN ".spanId") == NULL) {
			count = -1;
			json_object_put(o);
			break;
		}
		json_object_put(o);
		count++;
	}
	free(line);
	fclose(f);
	return count;
}

static void
test_ids(void)
{
	static struct trace_ctx c[500];
	uint8_t or = 0, and = 0xff, sid[8], zero[16] = { 0 };
	int i, j, zeros = 0, dups = 0;

	for (i = 0; i < 500; i++) {
		trace_ctx_new_root(&c[i]);
		zeros += memcmp(c[i].trace_id, zero, 16) == 0;
		zeros += memcmp(c[i].span_id, zero, 8) == 0;
		for (j = 0; j < 16; j++) {
			or |= c[i].trace_id[j];
			and &= c[i].trace_id[j];
		}
		for (j = 0; j < i; j++)
			dups += memcmp(c[i].trace_id, c[j].trace_id, 16) == 0 ||
			    memcmp(c[i].span_id, c[j].span_id, 8) == 0;
	}
	is_int(zeros, 0, "no all-zero ids in 500 roots");
	is_int(dups, 0, "500 roots have distinct trace and span ids");
	ok(or == 0xff && and == 0, "every trace id bit varies");
	is_int(c[0].flags, 1, "a new root is sampled");
	ok(trace_ctx_valid(&c[0]), "a new root is a valid context");
	memset(c[1].span_id, 0, 8);
	ok(!trace_ctx_valid(&c[1]), "a zero span id is not valid");
	memset(c[2].trace_id, 0, 16);
	ok(!trace_ctx_valid(&c[2]), "a zero trace id is not valid");
	ok(!trace_ctx_valid(NULL), "NULL is not valid");
	trace_new_span_id(sid);
	ok(memcmp(sid, zero, 8) != 0 && memcmp(sid, c[0].span_id, 8) != 0,
	    "trace_new_span_id gives a fresh non-zero id");
}

static void
test_traceparent_roundtrip(void)
{
	const char *w3c =
	    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
	struct trace_ctx c, d;
	char buf[64], hex[33];

	trace_ctx_new_root(&c);
	trace_format_traceparent(&c, buf, sizeof(buf));
	is_int(strlen(buf), TRACEPARENT_LEN, "formatted traceparent is 55 chars");
	ok(trace_parse_traceparent(buf, &d) == 0, "own traceparent parses");
	ok(memcmp(&c.trace_id, &d.trace_id, 16) == 0 &&
	    memcmp(c.span_id, d.span_id, 8) == 0 && c.flags == d.flags,
	    "round trip keeps ids and flags");

	ok(trace_parse_traceparent(w3c, &d) == 0, "W3C example parses");
	trace_hex(d.trace_id, 16, hex);
	is_str(hex, "4bf92f3577b34da6a3ce929d0e0e4736", "W3C trace id");
	trace_hex(d.span_id, 8, hex);
	is_str(hex, "00f067aa0ba902b7", "W3C span id");
	is_int(d.flags, 1, "W3C flags");
	trace_format_traceparent(&d, buf, sizeof(buf));
	is_str(buf, w3c, "W3C example formats back identically");
	trace_format_traceparent(&d, buf, 10);
	is_str(buf, "00-4bf92f", "a small buffer is truncated and terminated");

	ok(trace_parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-"
	    "00f067aa0ba902b7-09-extra-fields", &d) == 0 && d.flags == 9,
	    "version 01 with extra fields is accepted");
	ok(trace_parse_traceparent("fe-4bf92f3577b34da6a3ce929d0e0e4736-"
	    "00f067aa0ba902b7-00", &d) == 0 && d.flags == 0,
	    "version fe of exactly 55 chars is accepted");
	ok(trace_parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-"
	    "00f067aa0ba902b7-ff", &d) == 0 && d.flags == 0xff,
	    "unknown flag bits are kept");
}

static void
test_traceparent_reject(void)
{
	static const struct {
		const char *tp, *why;
	} bad[] = {
		{ "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		    "uppercase trace id" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067aa0ba902b7-01",
		    "uppercase span id" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
		    "uppercase flags" },
		{ "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		    "uppercase version" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
		    "version 00 longer than 55" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
		    "one flag digit" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
		    "31-digit trace id" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
		    "15-digit span id" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e47366-00f067aa0ba902b7-01",
		    "33-digit trace id" },
		{ "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		    "version ff" },
		{ "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		    "all-zero trace id" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		    "all-zero span id" },
		{ "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		    "bad first separator" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
		    "bad second separator" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
		    "bad third separator" },
		{ "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
		    "future version without '-' after 55 chars" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
		    "non-hex in trace id" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba9 2b7-01",
		    "space in span id" },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
		    "non-hex flags" },
		{ "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		    "non-hex version" },
		{ " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		    "leading space" },
		{ "", "empty string" },
		{ "00", "version only" },
	};
	struct trace_ctx c, before;
	size_t i;

	memset(&before, 0xa5, sizeof(before));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = before;
		ok(trace_parse_traceparent(bad[i].tp, &c) == -1 &&
		    memcmp(&c, &before, sizeof(c)) == 0,
		    "rejects %s, ctx untouched", bad[i].why);
	}
	ok(trace_parse_traceparent(NULL, &c) == -1, "rejects NULL");
}

/* A span with every kind of field, encoded and checked field by field. */
static void
test_span_fields(void)
{
	struct trace_ctx parent, own, got;
	struct span *sp;
	json_object *o, *v;
	char hex[33];
	uint64_t start, end, evt;

	trace_ctx_new_root(&parent);
	parent.flags = 0;
	sp = span_start("qwen-code.daemon.bridge", SPAN_KIND_CLIENT, &parent);
	ok(sp != NULL, "span_start");
	span_context(sp, &own);
	ok(memcmp(own.trace_id, parent.trace_id, 16) == 0,
	    "child continues the parent's trace");
	ok(memcmp(own.span_id, parent.span_id, 8) != 0, "child has its own span id");
	is_int(own.flags, 0, "child keeps the parent's flags");
	span_set_str(sp, "session.id", "s-1");
	span_set_str(sp, "note", "line1\nline2 \"q\" /x");
	span_set_int(sp, "qwen-code.daemon.session_restore.timeout_ms", -42);
	span_set_int(sp, "big", INT64_MAX);
	span_set_bool(sp, "flag", 1);
	span_set_double(sp, "ratio", 1.5);
	span_set_double(sp, "third", 0.1);
	span_set_double(sp, "nan", NAN);
	span_add_event(sp, "session.restore.public_result");
	span_event_set_str(sp, "result", "timeout");
	span_event_set_int(sp, "count", 3);
	span_add_event(sp, "session.restore.cleanup");
	span_set_status(sp, SPAN_STATUS_ERROR, "restore timed out");
	span_mark_end(sp);

	o = encode_parse(sp);
	ok(o != NULL, "encoded span is one strict JSON line");
	trace_hex(own.trace_id, 16, hex);
	is_str(jstr(o, SPAN ".traceId"), hex, "traceId is the context's");
	trace_hex(own.span_id, 8, hex);
	is_str(jstr(o, SPAN ".spanId"), hex, "spanId is the context's");
	trace_hex(parent.span_id, 8, hex);
	is_str(jstr(o, SPAN ".parentSpanId"), hex, "parentSpanId is the parent's");
	is_str(jstr(o, SPAN ".name"), "qwen-code.daemon.bridge", "name");
	is_int(json_object_get_int(jpath(o, SPAN ".kind")), 3, "kind is an int");
	start = dec(jstr(o, SPAN ".startTimeUnixNano"));
	end = dec(jstr(o, SPAN ".endTimeUnixNano"));
	ok(start > 1600000000ULL * 1000000000ULL, "start is unix nanos, as a string");
	ok(end >= start, "end >= start");
	is_str(jstr(jattr(o, SPAN ".attributes", "session.id"), "stringValue"),
	    "s-1", "string attribute");
	is_str(jstr(jattr(o, SPAN ".attributes", "note"), "stringValue"),
	    "line1\nline2 \"q\" /x", "newline and quotes survive escaping");
	is_str(jstr(jattr(o, SPAN ".attributes",
	    "qwen-code.daemon.session_restore.timeout_ms"), "intValue"), "-42",
	    "int attribute is a decimal string");
	is_str(jstr(jattr(o, SPAN ".attributes", "big"), "intValue"),
	    "9223372036854775807", "INT64_MAX is exact");
	v = jpath(jattr(o, SPAN ".attributes", "flag"), "boolValue");
	ok(json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v),
	    "bool attribute");
	v = jpath(jattr(o, SPAN ".attributes", "ratio"), "doubleValue");
	ok(json_object_is_type(v, json_type_double) &&
	    json_object_get_double(v) == 1.5, "double attribute");
	v = jpath(jattr(o, SPAN ".attributes", "third"), "doubleValue");
	is_str(json_object_to_json_string(v), "0.1", "double in shortest form");
	is_str(jstr(jattr(o, SPAN ".attributes", "nan"), "doubleValue"), "NaN",
	    "NaN double is the string \"NaN\"");
	is_int(jlen(o, SPAN ".events"), 2, "two events");
	is_str(jstr(o, SPAN ".events.0.name"), "session.restore.public_result",
	    "event name");
	evt = dec(jstr(o, SPAN ".events.0.timeUnixNano"));
	ok(evt >= start && evt <= end, "event time within the span");
	is_str(jstr(jattr(o, SPAN ".events.0.attributes", "result"),
	    "stringValue"), "timeout", "event string attribute");
	is_str(jstr(jattr(o, SPAN ".events.0.attributes", "count"), "intValue"),
	    "3", "event int attribute");
	is_int(jlen(o, SPAN ".events.1.attributes"), 0,
	    "later event has its own (empty) attributes");
	is_int(json_object_get_int(jpath(o, SPAN ".status.code")), 2,
	    "status code");
	is_str(jstr(o, SPAN ".status.message"), "restore timed out",
	    "status message");
	is_str(jstr(jattr(o, "resourceSpans.0.resource.attributes",
	    "service.name"), "stringValue"), "test-svc", "resource service.name");
	snprintf(hex, sizeof(hex), "%ld", (long)getpid());
	is_str(jstr(jattr(o, "resourceSpans.0.resource.attributes",
	    "process.pid"), "intValue"), hex, "resource process.pid");
	is_str(jstr(o, "resourceSpans.0.scopeSpans.0.scope.name"), "qwen-serve",
	    "scope name");
	json_object_put(o);

	o = encode_parse(sp);
	is_int(dec(jstr(o, SPAN ".endTimeUnixNano")), end,
	    "span_mark_end fixes the end time");
	json_object_put(o);
	span_free(sp);

	sp = span_start(NULL, 99, NULL);
	span_context(sp, &got);
	o = encode_parse(sp);
	ok(jpath(o, SPAN ".parentSpanId") == NULL, "a root has no parentSpanId");
	is_str(jstr(o, SPAN ".name"), "unnamed", "a NULL name becomes \"unnamed\"");
	is_int(json_object_get_int(jpath(o, SPAN ".kind")), 1,
	    "a bad kind becomes INTERNAL");
	is_int(json_object_get_int(jpath(o, SPAN ".status.code")), 0,
	    "status unset by default");
	ok(jpath(o, SPAN ".status.message") == NULL, "no message by default");
	trace_hex(got.trace_id, 16, hex);
	is_str(jstr(o, SPAN ".traceId"), hex, "root traceId is its context's");
	json_object_put(o);
	span_free(sp);
}

/* Replacement, caps, truncation and UTF-8 cleaning. */
static void
test_span_limits(void)
{
	struct span *sp = span_start("limits", SPAN_KIND_INTERNAL, NULL);
	json_object *o;
	char key[32], *big;
	const char *s;
	size_t len = 0;
	int i;

	span_set_str(sp, "k", "first");
	span_set_int(sp, "k", 7);
	span_set_str(sp, NULL, "x");
	span_set_str(sp, "nullvalue", NULL);
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "a%d", i);
		span_set_int(sp, key, i);
	}
	big = malloc(20000);
	memset(big, 'x', 19999);
	big[19999] = '\0';
	span_set_str(sp, "k", big);
	for (i = 0; i < 10000; i += 2)
		memcpy(big + i, "\xc3\xa9", 2);	/* é */
	big[9999] = '\0';
	span_set_str(sp, "a1", big);
	span_set_str(sp, "a2", "ok\xff\xc3(");
	span_event_set_str(sp, "orphan", "no event yet");
	for (i = 0; i < SPAN_MAX_EVENTS + 2; i++)
		span_add_event(sp, "e");
	span_event_set_str(sp, "lost", "after a dropped event");
	o = encode_parse(sp);
	ok(o != NULL, "a span at its limits still encodes to valid UTF-8 JSON");
	is_int(jlen(o, SPAN ".attributes"),
	    SPAN_MAX_ATTRS, "attributes capped at SPAN_MAX_ATTRS");
	is_int(json_object_get_int(jpath(o, SPAN ".droppedAttributesCount")),
	    200 + 1 - SPAN_MAX_ATTRS, "dropped attributes counted");
	ok(jattr(o, SPAN ".attributes", "nullvalue") == NULL, "NULL value ignored");
	s = jstr(jattr(o, SPAN ".attributes", "k"), "stringValue");
	is_int(s ? strlen(s) : 0, SPAN_MAX_STR, "a replaced key holds the "
	    "new value, truncated to SPAN_MAX_STR");
	s = jstr(jattr(o, SPAN ".attributes", "a1"), "stringValue");
	is_int(s ? strlen(s) : 0, SPAN_MAX_STR, "UTF-8 cut on a boundary");
	is_str(jstr(jattr(o, SPAN ".attributes", "a2"), "stringValue"),
	    "ok\xef\xbf\xbd\xef\xbf\xbd(", "invalid UTF-8 becomes U+FFFD");
	is_int(jlen(o, SPAN ".events"),
	    SPAN_MAX_EVENTS, "events capped at SPAN_MAX_EVENTS");
	is_int(json_object_get_int(jpath(o, SPAN ".droppedEventsCount")), 2,
	    "dropped events counted");
	is_int(jlen(o, SPAN ".events.127.attributes"),
	    0, "attributes of a dropped event do not land on the last one");
	json_object_put(o);
	span_free(sp);

	/* Every event full of 4 KiB strings: the byte budget holds. */
	memset(big, 'y', 19999);
	sp = span_start("budget", SPAN_KIND_INTERNAL, NULL);
	for (i = 0; i < SPAN_MAX_EVENTS * SPAN_MAX_EVENT_ATTRS; i++) {
		if (i % SPAN_MAX_EVENT_ATTRS == 0)
			span_add_event(sp, "e");
		snprintf(key, sizeof(key), "k%d", i % 40);
		span_event_set_str(sp, key, big);
	}
	free(span_encode(sp, NULL, &len));
	ok(len > SPAN_MAX_STR && len < SPAN_MAX_BYTES + 256 * 1024,
	    "a flood of big event attributes stays under the byte budget (%zu)",
	    len);
	o = encode_parse(sp);
	is_int(jlen(o, SPAN ".events.0.attributes"),
	    SPAN_MAX_EVENT_ATTRS, "event attributes capped at SPAN_MAX_EVENT_ATTRS");
	ok(json_object_get_int(jpath(o, SPAN ".events.0.droppedAttributesCount"))
	    == 0, "no drops in the first event");
	ok(json_object_get_int(jpath(o, SPAN ".events.127.droppedAttributesCount"))
	    > 0, "the last event counts what the budget dropped");
	json_object_put(o);
	span_free(sp);
	free(big);
}

static int exported_n, exported_svc;

/* An exporter that counts lines and checks they carry the service name. */
static void
count_export(void *arg, const char *line, size_t len)
{
	(void)arg;
	exported_n++;
	exported_svc = len > 0 && line[len - 1] == '\n' &&
	    strstr(line, "\"svc-x\"") != NULL;
}

static void
test_null_safety(void)
{
	struct trace_ctx c;
	struct trace_sink *sink;
	char path[64];

	memset(&c, 0xa5, sizeof(c));
	span_context(NULL, &c);
	ok(c.trace_id[0] == 0 && c.span_id[7] == 0 && c.flags == 0,
	    "span_context(NULL) zeroes the context");
	span_set_str(NULL, "k", "v");
	span_set_int(NULL, "k", 1);
	span_set_bool(NULL, "k", 1);
	span_set_double(NULL, "k", 1.0);
	span_add_event(NULL, "e");
	span_event_set_str(NULL, "k", "v");
	span_event_set_int(NULL, "k", 1);
	span_set_status(NULL, SPAN_STATUS_OK, "m");
	span_mark_end(NULL);
	span_free(NULL);
	trace_sink_close(NULL);
	trace_ctx_new_root(NULL);
	trace_new_span_id(NULL);
	trace_format_traceparent(NULL, NULL, 0);
	ok(span_encode(NULL, "s", NULL) == NULL, "span_encode(NULL) is NULL");
	ok(trace_sink_path(NULL) == NULL, "trace_sink_path(NULL) is NULL");
	ok(trace_sink_reopen(NULL) == -1, "trace_sink_reopen(NULL) fails");
	snprintf(path, sizeof(path), "%s/null.jsonl", tmpdir);
	sink = trace_sink_open(path, "svc");
	is_int(span_end(NULL, sink), 0, "span_end(NULL, sink) is a no-op");
	is_int(span_end(span_start("x", SPAN_KIND_SERVER, NULL), NULL), 0,
	    "span_end(span, NULL) frees without writing");
	trace_sink_close(sink);
	is_int(count_valid_lines(path), 0, "nothing was written");
	errno = 0;
	ok(trace_sink_open("/nonexistent/dir/t.jsonl", "s") == NULL &&
	    errno == ENOENT, "open of a bad path fails with ENOENT");
	sink = trace_sink_open(NULL, "svc-x");
	ok(sink != NULL && trace_sink_path(sink) == NULL,
	    "a NULL path: a sink without a file (for an exporter)");
	exported_n = 0;
	trace_sink_set_export(sink, count_export, NULL);
	ok(span_end(span_start("x", SPAN_KIND_INTERNAL, NULL), sink) == 0 &&
	    exported_n == 1 && exported_svc, "the exporter gets each ended span's line");
	ok(trace_sink_reopen(sink) == 0, "reopen of a sink without a file is a no-op");
	trace_sink_set_export(sink, NULL, NULL);
	ok(span_end(span_start("y", SPAN_KIND_INTERNAL, NULL), sink) == 0 &&
	    exported_n == 1, "no exporter after it was unset");
	trace_sink_close(sink);
}

/* 1 if the descriptor open on path is FD_CLOEXEC, 0 if not, -1 if none. */
static int
fd_cloexec(const char *path)
{
	char link[64], target[256];
	ssize_t n;
	int fd;

	for (fd = 3; fd < 256; fd++) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		if ((n = readlink(link, target, sizeof(target) - 1)) <= 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, path) == 0)
			return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
	}
	return -1;
}

static void
test_sink_basic(void)
{
	struct trace_sink *sink;
	struct stat st;
	char path[64];
	int rc;

	snprintf(path, sizeof(path), "%s/basic.jsonl", tmpdir);
	sink = trace_sink_open(path, "svc");
	ok(sink != NULL, "trace_sink_open");
	is_str(trace_sink_path(sink), path, "trace_sink_path");
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "file is 0600");
	ok(fd_cloexec(path) == 1, "the sink's descriptor is close-on-exec");
	is_int(span_end(span_start("a", SPAN_KIND_SERVER, NULL), sink), 0,
	    "span_end writes");
	is_int(span_end(span_start("b", SPAN_KIND_SERVER, NULL), sink), 0,
	    "span_end writes again");
	is_int(count_valid_lines(path), 2, "two valid lines appended");
	trace_sink_close(sink);

	sink = trace_sink_open("/dev/full", "svc");
	errno = 0;
	rc = span_end(span_start("c", SPAN_KIND_SERVER, NULL), sink);
	ok(rc == -1 && errno == ENOSPC, "a failed write is reported (ENOSPC)");
	trace_sink_close(sink);
}

struct writer {
	struct trace_sink	*sink;
	int			 n;
	int			 failed;
	char			 pad[3000];
};

/* Write w->n spans with a few kilobytes of attributes each. */
static void *
writer_run(void *arg)
{
	struct writer *w = arg;
	struct span *sp;
	int i;

	for (i = 0; i < w->n; i++) {
		sp = span_start("worker", SPAN_KIND_INTERNAL, NULL);
		span_set_int(sp, "i", i);
		span_set_str(sp, "pad", w->pad + sizeof(w->pad) - 1 -
		    (size_t)(i * 97) % 1500);
		span_add_event(sp, "tick");
		span_event_set_str(sp, "pad", w->pad + sizeof(w->pad) - 1 -
		    (size_t)(i * 31) % 100);
		if (span_end(sp, w->sink) != 0)
			w->failed++;
	}
	return NULL;
}

/* 4 threads and another process append 500 spans to one file. */
static void
test_sink_concurrent(void)
{
	struct writer w[4];
	pthread_t th[4];
	struct trace_sink *sink;
	char path[64];
	pid_t pid;
	int i, status, failed = 0;

	snprintf(path, sizeof(path), "%s/concurrent.jsonl", tmpdir);
	sink = trace_sink_open(path, "svc");
	for (i = 0; i < 4; i++) {
		w[i].sink = sink;
		w[i].n = 100;
		w[i].failed = 0;
		memset(w[i].pad, 'a' + i, sizeof(w[i].pad) - 1);
		w[i].pad[sizeof(w[i].pad) - 1] = '\0';
	}
	fflush(stdout);
	if ((pid = fork()) == 0) {
		writer_run(&w[0]);
		_exit(w[0].failed ? 1 : 0);
	}
	for (i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, writer_run, &w[i]);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].failed;
	}
	ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0, "the other process wrote its spans");
	is_int(failed, 0, "no span_end failed");
	is_int(count_valid_lines(path), 500,
	    "500 spans from 4 threads and 2 processes: 500 whole lines");
	trace_sink_close(sink);
}

/* Count lines of every file in tmpdir whose name starts with prefix. */
static int
count_rotated(const char *prefix, int upto)
{
	char path[96];
	int i, n, total = 0;

	for (i = 0; i <= upto; i++) {
		if (i == 0)
			snprintf(path, sizeof(path), "%s/%s", tmpdir, prefix);
		else
			snprintf(path, sizeof(path), "%s/%s.%d", tmpdir, prefix, i);
		if ((n = count_valid_lines(path)) < 0)
			return -1;
		total += n;
	}
	return total;
}

static void
test_sink_reopen(void)
{
	struct trace_sink *sink;
	struct writer w[2];
	pthread_t th[2];
	char path[96], old[128];
	int i, rc = 0;

	snprintf(path, sizeof(path), "%s/rot.jsonl", tmpdir);
	snprintf(old, sizeof(old), "%s/rot.jsonl.1", tmpdir);
	sink = trace_sink_open(path, "svc");
	span_end(span_start("before", SPAN_KIND_INTERNAL, NULL), sink);
	rename(path, old);
	span_end(span_start("renamed", SPAN_KIND_INTERNAL, NULL), sink);
	is_int(trace_sink_reopen(sink), 0, "trace_sink_reopen");
	span_end(span_start("after", SPAN_KIND_INTERNAL, NULL), sink);
	is_int(count_valid_lines(old), 2, "spans before reopen went to the "
	    "renamed file");
	is_int(count_valid_lines(path), 1, "spans after reopen go to the new file");
	ok(fd_cloexec(path) == 1, "the reopened descriptor is close-on-exec");
	trace_sink_close(sink);

	/* Rotate while two threads write: every span lands in some file. */
	snprintf(path, sizeof(path), "%s/live.jsonl", tmpdir);
	sink = trace_sink_open(path, "svc");
	for (i = 0; i < 2; i++) {
		w[i].sink = sink;
		w[i].n = 150;
		w[i].failed = 0;
		memset(w[i].pad, 'p', sizeof(w[i].pad) - 1);
		w[i].pad[sizeof(w[i].pad) - 1] = '\0';
		pthread_create(&th[i], NULL, writer_run, &w[i]);
	}
	for (i = 1; i <= 5; i++) {
		snprintf(old, sizeof(old), "%s.%d", path, i);
		rename(path, old);
		rc |= trace_sink_reopen(sink);
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	is_int(rc, 0, "five reopens under load succeed");
	is_int(w[0].failed + w[1].failed, 0, "no write failed during rotation");
	is_int(count_rotated("live.jsonl", 5), 300,
	    "all 300 spans are whole lines in the rotated files");
	trace_sink_close(sink);
}

int
main(void)
{
	char cmd[64];

	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_ids();
	test_traceparent_roundtrip();
	test_traceparent_reject();
	test_span_fields();
	test_span_limits();
	test_null_safety();
	test_sink_basic();
	test_sink_concurrent();
	test_sink_reopen();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		diag("could not remove %s", tmpdir);
	return done_testing();
}
