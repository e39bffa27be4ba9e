/* SPDX-License-Identifier: ISC */
/*
 * trace.h: W3C trace context and an OTLP/JSON span recorder.
 *
 * Spans are kept in memory while open and written, when ended, as one
 * ExportTraceServiceRequest JSON object per line (the format the
 * OpenTelemetry Collector's otlpjsonfile receiver reads) with a single
 * write() on an O_APPEND descriptor, so several processes and threads can
 * share one trace file without interleaving.  Never put transcript content
 * in an attribute.
 *
 * A span belongs to one thread at a time; the span functions use no global
 * state (ids come from arc4random), so spans can be built on worker threads.
 * A sink may be shared by threads: span_end() only reads it, and
 * trace_sink_reopen() swaps the descriptor atomically (dup3), so a
 * concurrent write lands in either the old or the new file, never elsewhere.
 */
#ifndef QWEN_TRACE_H
#define QWEN_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACEPARENT_LEN 55	/* "00-" 32 "-" 16 "-" 2 */

struct trace_ctx {
	uint8_t	trace_id[16];
	uint8_t	span_id[8];
	uint8_t	flags;		/* bit 0: sampled */
};

/* Fill ids with random values (arc4random); never all-zero. */
void	trace_ctx_new_root(struct trace_ctx *);
void	trace_new_span_id(uint8_t span_id[8]);

/*
 * Strict W3C traceparent parse: version 00 exactly 55 chars; other versions
 * (not ff) at least 55 with a '-' after; lowercase hex only; all-zero trace or
 * span id rejected.  Returns 0, or -1 with *ctx untouched.
 */
int	trace_parse_traceparent(const char *s, struct trace_ctx *ctx);

/* Write "00-<trace>-<span>-<flags>" and a NUL into buf (>= 56 bytes). */
void	trace_format_traceparent(const struct trace_ctx *, char *buf, size_t size);

/* Whether ctx is non-NULL with non-zero trace and span ids. */
int	trace_ctx_valid(const struct trace_ctx *ctx);

/* Lowercase hex of n bytes into buf (>= 2n+1 bytes). */
void	trace_hex(const uint8_t *bytes, size_t n, char *buf);

/* OTLP SpanKind values (enums are written as ints in OTLP/JSON). */
enum span_kind {
	SPAN_KIND_INTERNAL = 1,
	SPAN_KIND_SERVER = 2,
	SPAN_KIND_CLIENT = 3,
	SPAN_KIND_PRODUCER = 4,
	SPAN_KIND_CONSUMER = 5,
};

enum span_status {
	SPAN_STATUS_UNSET = 0,
	SPAN_STATUS_OK = 1,
	SPAN_STATUS_ERROR = 2,
};

/*
 * Limits that keep a bad caller from blowing memory.  Attributes and events
 * beyond them are dropped and counted (droppedAttributesCount,
 * droppedEventsCount); strings (names, keys, values, status message) are cut
 * to SPAN_MAX_STR bytes on a UTF-8 boundary, and invalid UTF-8 becomes U+FFFD.
 * Setting a key that is already there replaces its value.
 */
#define SPAN_MAX_ATTRS		128	/* per span */
#define SPAN_MAX_EVENTS		128	/* per span */
#define SPAN_MAX_EVENT_ATTRS	32	/* per event */
#define SPAN_MAX_STR		4096	/* bytes per string */
#define SPAN_MAX_BYTES		(512 * 1024)	/* strings per span, in all */

struct trace_sink;
struct span;

/*
 * Open (create, append, 0600) the trace file at path; service_name goes in
 * the resource attributes.  A NULL path makes a sink without a file (for
 * an exporter only).  NULL with errno set on failure.
 */
struct trace_sink	*trace_sink_open(const char *path, const char *service_name);
/*
 * Called with each ended span's OTLP/JSON line (borrowed, ends in '\n'),
 * on the thread that ended it; it must not block.
 */
typedef void (*trace_export_fn)(void *arg, const char *line, size_t len);
void			 trace_sink_set_export(struct trace_sink *,
			    trace_export_fn fn, void *arg);
/*
 * Reopen the same path (for SIGHUP, after rotation).  0, or -1 with errno
 * set and the old fd kept.  Only open, dup3 and close: async-signal-safe.
 */
int			 trace_sink_reopen(struct trace_sink *);
void			 trace_sink_close(struct trace_sink *);	/* NULL-safe */
const char		*trace_sink_path(const struct trace_sink *);

/*
 * Start a span now.  With parent NULL the span is a new root; otherwise it
 * continues parent's trace with parent's span id as its parent.  NULL on
 * allocation failure; every span function accepts NULL and does nothing,
 * so tracing never makes a caller fail.
 */
struct span	*span_start(const char *name, enum span_kind kind,
		    const struct trace_ctx *parent);

/*
 * The span's own context (trace id, its span id), for propagation.  A NULL
 * span zeroes *out, which formats as an invalid traceparent.
 */
void	span_context(const struct span *, struct trace_ctx *out);

/* Set the end time to now unless already set; span_end() then keeps it. */
void	span_mark_end(struct span *);

void	span_set_str(struct span *, const char *key, const char *value);
void	span_set_int(struct span *, const char *key, int64_t value);
void	span_set_bool(struct span *, const char *key, int value);
void	span_set_double(struct span *, const char *key, double value);

/* Add an event at the current time; later span_event_set_* go onto it. */
void	span_add_event(struct span *, const char *name);
void	span_event_set_str(struct span *, const char *key, const char *value);
void	span_event_set_int(struct span *, const char *key, int64_t value);

void	span_set_status(struct span *, enum span_status, const char *message);

/*
 * End the span (its end time is now, unless already ended), write it to
 * sink (NULL: not written) and free it.  Returns 0, or -1 when the write
 * failed (the span is freed either way).
 */
int	span_end(struct span *, struct trace_sink *sink);

/* Free without writing.  NULL-safe. */
void	span_free(struct span *);

/*
 * Encode the span as one OTLP/JSON ExportTraceServiceRequest line ending in
 * '\n' (for tests and for sinks of other kinds); an open span is encoded
 * with "now" as its end time.  service_name NULL means "unknown_service".
 * Caller frees; NULL on allocation failure or a NULL span.
 */
char	*span_encode(const struct span *, const char *service_name, size_t *lenp);

#endif
