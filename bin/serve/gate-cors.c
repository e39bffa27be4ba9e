/* SPDX-License-Identifier: ISC */
/*
 * gate-cors.c: the CORS headers of a reply to a cross-origin request.  A
 * leaf: every reply writer (http.c, sse.c, metrics.c, the preflight in
 * gate.c) calls it and it calls none of them.
 */
#include "config.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "serve.h"

void
gate_cors_headers(struct evhttp_request *req)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	const char *origin = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Origin");

	if (origin == NULL)
		return;
	evhttp_add_header(out, "Access-Control-Allow-Origin", origin);
	evhttp_add_header(out, "Vary", "Origin");
	evhttp_add_header(out, "Access-Control-Allow-Headers",
	    "Authorization, Content-Type, X-Qwen-Client-Id, Last-Event-ID, X-Qwen-Event-Epoch");
	evhttp_add_header(out, "Access-Control-Allow-Methods",
	    "GET, POST, PATCH, DELETE, OPTIONS");
	evhttp_add_header(out, "Access-Control-Expose-Headers",
	    "Retry-After, X-Qwen-Event-Epoch, X-Qwen-SSE-Stream-Id");
}
