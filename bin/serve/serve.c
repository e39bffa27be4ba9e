/* SPDX-License-Identifier: ISC */
/*
 * serve.c: what the whole daemon shares: its settings, its event loop, its
 * trace sink and OTLP exporter.  main.c sets them; every module reads them.
 * They live in a file of their own, which references nothing, so that a
 * module that reads a setting does not link against main.c (and, through
 * it, every other module).
 */
#include "config.h"

#include "serve.h"

struct serve_conf conf;
struct event_base *serve_base;
struct trace_sink *serve_trace;
struct otlp *serve_otlp;
static int shutting_down;

int
serve_shutting_down(void)
{
	return shutting_down;
}

/* From serve_request_shutdown(): the daemon is stopping, once. */
void
serve_shutdown_begin(void)
{
	shutting_down = 1;
}
