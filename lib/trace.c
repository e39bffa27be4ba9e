/* SPDX-License-Identifier: ISC */
/*
 * trace.c: W3C trace context, the OTLP/JSON encoding of a span and the
 * append-only trace file it is written to.  Spans are built in trace-span.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "appendfile.h"
#include "trace-int.h"

struct trace_sink {
	int		 fd;		/* -1: no file */
	char		*path;		/* NULL: no file */
	char		*service;
	trace_export_fn	 export_fn;	/* each ended span also goes here */
	void		*export_arg;
};

#define TRACE_SCOPE		"qwen-serve"
#define TRACE_NO_SERVICE	"unknown_service"

/* Whether all n bytes are zero (an invalid W3C id). */
static int
bytes_zero(const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

/* Random bytes that are not all zero. */
static void
random_nonzero(uint8_t *b, size_t n)
{
	do
		arc4random_buf(b, n);
	while (bytes_zero(b, n));
}

/* A fresh sampled root context. */
void
trace_ctx_new_root(struct trace_ctx *ctx)
{
	if (ctx == NULL)
		return;
	random_nonzero(ctx->trace_id, sizeof(ctx->trace_id));
	random_nonzero(ctx->span_id, sizeof(ctx->span_id));
	ctx->flags = 0x01;
}

/* A fresh non-zero span id. */
void
trace_new_span_id(uint8_t span_id[8])
{
	if (span_id != NULL)
		random_nonzero(span_id, 8);
}

/* Whether both ids are set (W3C forbids all-zero ids). */
int
trace_ctx_valid(const struct trace_ctx *ctx)
{
	return ctx != NULL && !bytes_zero(ctx->trace_id, sizeof(ctx->trace_id)) &&
	    !bytes_zero(ctx->span_id, sizeof(ctx->span_id));
}

/* Lowercase hex, as W3C and OTLP/JSON want ids. */
void
trace_hex(const uint8_t *bytes, size_t n, char *buf)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		buf[2 * i] = digits[bytes[i] >> 4];
		buf[2 * i + 1] = digits[bytes[i] & 0x0f];
	}
	buf[2 * n] = '\0';
}

/* Value of one lowercase hex digit, -1 for anything else. */
static int
hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decode 2n lowercase hex digits into n bytes. */
static int
hex_decode(const char *s, uint8_t *out, size_t n)
{
	size_t i;
	int hi, lo;

	for (i = 0; i < n; i++) {
		if ((hi = hex_nibble(s[2 * i])) == -1 ||
		    (lo = hex_nibble(s[2 * i + 1])) == -1)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* Strict W3C traceparent parse; *ctx is only written on success. */
int
trace_parse_traceparent(const char *s, struct trace_ctx *ctx)
{
	struct trace_ctx c;
	uint8_t version;
	size_t len;

	if (s == NULL || ctx == NULL)
		return -1;
	len = strnlen(s, TRACEPARENT_LEN + 1);
	if (len < TRACEPARENT_LEN)
		return -1;
	if (hex_decode(s, &version, 1) == -1 || version == 0xff)
		return -1;
	/* Version 00 is exactly 55; later ones may append "-more". */
	if (version == 0 && len != TRACEPARENT_LEN)
		return -1;
	if (len > TRACEPARENT_LEN && s[TRACEPARENT_LEN] != '-')
		return -1;
	if (s[2] != '-' || s[35] != '-' || s[52] != '-')
		return -1;
	if (hex_decode(s + 3, c.trace_id, sizeof(c.trace_id)) == -1 ||
	    hex_decode(s + 36, c.span_id, sizeof(c.span_id)) == -1 ||
	    hex_decode(s + 53, &c.flags, 1) == -1)
		return -1;
	if (bytes_zero(c.trace_id, sizeof(c.trace_id)) ||
	    bytes_zero(c.span_id, sizeof(c.span_id)))
		return -1;
	*ctx = c;
	return 0;
}

/* Version-00 traceparent of ctx, truncated to size like snprintf. */
void
trace_format_traceparent(const struct trace_ctx *ctx, char *buf, size_t size)
{
	char tid[33], sid[17], flags[3];

	if (buf == NULL || size == 0)
		return;
	if (ctx == NULL) {
		buf[0] = '\0';
		return;
	}
	trace_hex(ctx->trace_id, sizeof(ctx->trace_id), tid);
	trace_hex(ctx->span_id, sizeof(ctx->span_id), sid);
	trace_hex(&ctx->flags, 1, flags);
	snprintf(buf, size, "00-%s-%s-%s", tid, sid, flags);
}

/*
 * JSON building that remembers a failed allocation, so that encoding checks
 * once at the end instead of after every json-c call.
 */
struct enc {
	int	failed;
};

/* Add val (ownership taken) to obj under key. */
static void
enc_add(struct enc *e, json_object *obj, const char *key, json_object *val)
{
	if (obj == NULL || val == NULL ||
	    json_object_object_add(obj, key, val) != 0) {
		json_object_put(val);
		e->failed = 1;
	}
}

/* Append val (ownership taken) to the array arr. */
static void
enc_push(struct enc *e, json_object *arr, json_object *val)
{
	if (arr == NULL || val == NULL ||
	    json_object_array_add(arr, val) != 0) {
		json_object_put(val);
		e->failed = 1;
	}
}

/* A JSON string holding a decimal uint64 (OTLP/JSON's int64 form). */
static json_object *
enc_u64(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return json_object_new_string(buf);
}

/* A double in its shortest round-trip form; NaN and infinities as strings. */
static json_object *
enc_double(double d)
{
	char buf[40];
	int prec;

	if (isnan(d))
		return json_object_new_string("NaN");
	if (isinf(d))
		return json_object_new_string(d > 0 ? "Infinity" : "-Infinity");
	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	snprintf(buf, sizeof(buf), "%.*g", prec, d);
	return json_object_new_double_s(d, buf);
}

/* {"key":K,"value":{TYPE:V}} for one attribute. */
static json_object *
enc_attr(struct enc *e, const struct span_attr *a)
{
	json_object *kv = json_object_new_object(), *v = json_object_new_object();
	char buf[24];

	switch (a->type) {
	case ATTR_STR:
		enc_add(e, v, "stringValue", json_object_new_string(a->v.s));
		break;
	case ATTR_INT:
		snprintf(buf, sizeof(buf), "%" PRId64, a->v.i);
		enc_add(e, v, "intValue", json_object_new_string(buf));
		break;
	case ATTR_BOOL:
		enc_add(e, v, "boolValue", json_object_new_boolean(a->v.b));
		break;
	case ATTR_DOUBLE:
		enc_add(e, v, "doubleValue", enc_double(a->v.d));
		break;
	}
	enc_add(e, kv, "key", json_object_new_string(a->key));
	enc_add(e, kv, "value", v);
	return kv;
}

/* Add "attributes" (and a non-zero "droppedAttributesCount") to obj. */
static void
enc_attrs(struct enc *e, json_object *obj, const struct attr_list *l)
{
	json_object *arr = json_object_new_array();
	size_t i;

	for (i = 0; i < l->n; i++)
		enc_push(e, arr, enc_attr(e, &l->v[i]));
	enc_add(e, obj, "attributes", arr);
	if (l->dropped > 0)
		enc_add(e, obj, "droppedAttributesCount",
		    json_object_new_int64(l->dropped));
}

/* {"key":K,"value":{"stringValue":V}}. */
static json_object *
enc_str_attr(struct enc *e, const char *key, const char *value)
{
	struct span_attr a = { .key = (char *)key, .type = ATTR_STR,
	    .v.s = (char *)value };

	return enc_attr(e, &a);
}

/* The events array of sp. */
static json_object *
enc_events(struct enc *e, const struct span *sp)
{
	json_object *arr = json_object_new_array(), *ev;
	size_t i;

	for (i = 0; i < sp->nevents; i++) {
		ev = json_object_new_object();
		enc_add(e, ev, "timeUnixNano", enc_u64(sp->events[i].time_ns));
		enc_add(e, ev, "name", json_object_new_string(sp->events[i].name));
		enc_attrs(e, ev, &sp->events[i].attrs);
		enc_push(e, arr, ev);
	}
	return arr;
}

/* The OTLP Span object for sp. */
static json_object *
enc_span(struct enc *e, const struct span *sp)
{
	json_object *o = json_object_new_object(), *st;
	char hex[33];

	trace_hex(sp->ctx.trace_id, 16, hex);
	enc_add(e, o, "traceId", json_object_new_string(hex));
	trace_hex(sp->ctx.span_id, 8, hex);
	enc_add(e, o, "spanId", json_object_new_string(hex));
	if (sp->has_parent) {
		trace_hex(sp->parent_id, 8, hex);
		enc_add(e, o, "parentSpanId", json_object_new_string(hex));
	}
	enc_add(e, o, "name", json_object_new_string(sp->name));
	enc_add(e, o, "kind", json_object_new_int(sp->kind));
	enc_add(e, o, "startTimeUnixNano", enc_u64(sp->start_ns));
	enc_add(e, o, "endTimeUnixNano",
	    enc_u64(sp->end_ns != 0 ? sp->end_ns : span_now_ns(sp)));
	enc_attrs(e, o, &sp->attrs);
	enc_add(e, o, "events", enc_events(e, sp));
	if (sp->dropped_events > 0)
		enc_add(e, o, "droppedEventsCount",
		    json_object_new_int64(sp->dropped_events));
	st = json_object_new_object();
	enc_add(e, st, "code", json_object_new_int(sp->status));
	if (sp->status_msg != NULL)
		enc_add(e, st, "message", json_object_new_string(sp->status_msg));
	enc_add(e, o, "status", st);
	return o;
}

/* The ExportTraceServiceRequest object holding sp alone. */
static json_object *
enc_request(struct enc *e, const struct span *sp, const char *service)
{
	json_object *req, *rs, *res, *rattrs, *ss, *scope, *spans, *arr;
	rattrs = json_object_new_array();
	enc_push(e, rattrs, enc_str_attr(e, "service.name", service));
	enc_push(e, rattrs, enc_attr(e, &(struct span_attr){
	    .key = (char *)"process.pid", .type = ATTR_INT,
	    .v.i = (int64_t)getpid() }));
	res = json_object_new_object();
	enc_add(e, res, "attributes", rattrs);
	scope = json_object_new_object();
	enc_add(e, scope, "name", json_object_new_string(TRACE_SCOPE));
	spans = json_object_new_array();
	enc_push(e, spans, enc_span(e, sp));
	ss = json_object_new_object();
	enc_add(e, ss, "scope", scope);
	enc_add(e, ss, "spans", spans);
	arr = json_object_new_array();
	enc_push(e, arr, ss);
	rs = json_object_new_object();
	enc_add(e, rs, "resource", res);
	enc_add(e, rs, "scopeSpans", arr);
	arr = json_object_new_array();
	enc_push(e, arr, rs);
	req = json_object_new_object();
	enc_add(e, req, "resourceSpans", arr);
	return req;
}

/* One ExportTraceServiceRequest line for sp; caller frees. */
char *
span_encode(const struct span *sp, const char *service_name, size_t *lenp)
{
	struct enc e = { 0 };
	json_object *req;
	const char *s;
	char *line = NULL;
	size_t len;

	if (sp == NULL)
		return NULL;
	req = enc_request(&e, sp, service_name != NULL ? service_name :
	    TRACE_NO_SERVICE);
	if (!e.failed && (s = json_object_to_json_string_length(req,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
	    &len)) != NULL && (line = malloc(len + 2)) != NULL) {
		memcpy(line, s, len);
		line[len] = '\n';
		line[len + 1] = '\0';
		if (lenp != NULL)
			*lenp = len + 1;
	}
	json_object_put(req);
	if (line == NULL)
		errno = ENOMEM;
	return line;
}

/* Write the whole line with one write(); a short write is an error. */
static int
sink_write(struct trace_sink *sink, const char *line, size_t len)
{
	ssize_t n;

	do
		n = write(sink->fd, line, len);
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	if ((size_t)n != len) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/* End sp, write it with one write() when there is a sink, free it. */
int
span_end(struct span *sp, struct trace_sink *sink)
{
	char *line;
	size_t len;
	int rc = 0, saved;

	if (sp == NULL)
		return 0;
	span_mark_end(sp);
	if (sink != NULL) {
		if ((line = span_encode(sp, sink->service, &len)) == NULL)
			rc = -1;
		else {
			if (sink->export_fn != NULL)
				sink->export_fn(sink->export_arg, line, len);
			rc = sink->fd == -1 ? 0 : sink_write(sink, line, len);
			saved = errno;
			free(line);
			errno = saved;
		}
	}
	saved = errno;
	span_free(sp);
	errno = saved;
	return rc;
}

/* Open the append-only trace file; caller closes. */
struct trace_sink *
trace_sink_open(const char *path, const char *service_name)
{
	struct trace_sink *sink;
	int saved;

	if ((sink = calloc(1, sizeof(*sink))) == NULL)
		return NULL;
	sink->fd = -1;
	if ((path != NULL && (sink->path = strdup(path)) == NULL) ||
	    (sink->service = strdup(service_name != NULL ? service_name :
	    TRACE_NO_SERVICE)) == NULL ||
	    (path != NULL && (sink->fd = appendfile_open(path)) == -1)) {
		saved = errno;
		trace_sink_close(sink);
		errno = saved;
		return NULL;
	}
	return sink;
}

/* Reopen the path after rotation (SIGHUP); async-signal-safe. */
int
trace_sink_reopen(struct trace_sink *sink)
{
	if (sink == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (sink->path == NULL)
		return 0;	/* no file to reopen */
	return appendfile_reopen(sink->fd, sink->path);
}

/* Close and free the sink.  NULL-safe. */
void
trace_sink_close(struct trace_sink *sink)
{
	if (sink == NULL)
		return;
	if (sink->fd != -1)
		close(sink->fd);
	free(sink->path);
	free(sink->service);
	free(sink);
}

/* Hand every ended span's line to fn as well (an exporter). */
void
trace_sink_set_export(struct trace_sink *sink, trace_export_fn fn, void *arg)
{
	sink->export_fn = fn;
	sink->export_arg = arg;
}

/* The path given to trace_sink_open (borrowed). */
const char *
trace_sink_path(const struct trace_sink *sink)
{
	return sink != NULL ? sink->path : NULL;
}
