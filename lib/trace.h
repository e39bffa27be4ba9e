/*
 * trace.h: W3C trace context and an OTLP/JSON span recorder.
 *
 * Spans are kept in memory while open and written, when ended, as one
 * ExportTraceServiceRequest JSON object per line (the format the
 * OpenTelemetry Collector's otlpjsonfile receiver reads) with a single
 * write() on an O_APPEND descriptor, so several processes and threads can
 * share one trace file without interleaving.  Never put transcript content
 * in an attribute.
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

/* Lowercase hex of n bytes into buf (>= 2n+1 bytes). */
void	trace_hex(const uint8_t *bytes, size_t n, char *buf);

enum span_kind {
	SPAN_KIND_INTERNAL = 1,
	SPAN_KIND_SERVER = 2,
	SPAN_KIND_CLIENT = 3,
};

enum span_status {
	SPAN_STATUS_UNSET = 0,
	SPAN_STATUS_OK = 1,
	SPAN_STATUS_ERROR = 2,
};

struct trace_sink;
struct span;

/*
 * Open (create, append, 0600) the trace file at path; service_name goes in
 * the resource attributes.  NULL with errno set on failure.
 */
struct trace_sink	*trace_sink_open(const char *path, const char *service_name);
/* Reopen the same path (for SIGHUP).  0 or -1 with the old fd kept. */
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

/* The span's own context (trace id, its span id), for propagation. */
void	span_context(const struct span *, struct trace_ctx *out);

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
 * '\n' (for tests and for sinks of other kinds).  Caller frees; NULL on
 * allocation failure.
 */
char	*span_encode(const struct span *, const char *service_name, size_t *lenp);

#endif
