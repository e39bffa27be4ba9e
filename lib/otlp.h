/* SPDX-License-Identifier: ISC */
/*
 * otlp.h: OpenTelemetry export of the toolkit's spans over OTLP/HTTP JSON.
 *
 * The span writer (trace.h) hands each ended span's line to otlp_enqueue(),
 * which only queues it (bounded; a full queue drops and counts).  A worker
 * thread batches the queue into one ExportTraceServiceRequest and POSTs it
 * with libcurl to the traces endpoint, so a slow or dead collector never
 * blocks the caller's event loop; it costs dropped spans, counted.
 *
 * Configuration, the OpenTelemetry way: the --otlp-endpoint flag, else
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is), else
 * OTEL_EXPORTER_OTLP_ENDPOINT (+ "/v1/traces"); headers from
 * OTEL_EXPORTER_OTLP_TRACES_HEADERS or OTEL_EXPORTER_OTLP_HEADERS
 * ("k=v,k2=v2", values percent-decoded); OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES rewrite the resource of every span; the batch
 * span processor's OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE
 * (at most OTLP_BATCH_MAX), OTEL_BSP_SCHEDULE_DELAY and
 * OTEL_EXPORTER_OTLP_TIMEOUT (ms) override the defaults below.
 */
#ifndef QWEN_OTLP_H
#define QWEN_OTLP_H

#include <stddef.h>
#include <stdint.h>

#define OTLP_QUEUE_MAX		2048	/* spans waiting; more are dropped */
#define OTLP_BATCH_MAX		256	/* spans per request */
#define OTLP_BATCH_DELAY_MS	500	/* wait this long to fill a batch */
#define OTLP_TIMEOUT_MS		10000	/* one request */

struct otlp;

struct otlp_stats {
	uint64_t	exported;	/* spans the collector took (2xx) */
	uint64_t	dropped;	/* spans lost: queue full */
	uint64_t	failed;		/* spans lost: the export failed */
	uint64_t	queued;		/* waiting now */
};

/*
 * The traces URL from flag (NULL: none) and the environment into *url
 * (caller frees; NULL when no export is configured).  0, or -1 with a
 * message in *cause (caller frees) for a URL that is not http(s).
 */
int	otlp_endpoint(const char *flag, char **url, char **cause);

/*
 * Start exporting to url (borrowed) on a worker thread; service is the
 * default service.name.  NULL with a message in *cause (caller frees) on
 * failure (a bad header or attribute list, no thread).  Caller frees the
 * exporter with otlp_stop().
 */
struct otlp *otlp_start(const char *url, const char *service, char **cause);

/* Queue one OTLP/JSON line (trace_export_fn): never blocks on the network. */
void	otlp_enqueue(void *otlp, const char *line, size_t len);

void	otlp_stats(struct otlp *, struct otlp_stats *);
const char *otlp_url(const struct otlp *);

/*
 * Send what is queued (one last request, at most about a second), stop
 * the worker and free.  NULL-safe.
 */
void	otlp_stop(struct otlp *);

#endif
