/* SPDX-License-Identifier: ISC */
/*
 * http.c: the evhttp server, JSON bodies with limits, replies and error
 * bodies.  It calls no route and no caller: main.c hands it the request
 * callback (http_set_routes()) and the in-process callers' reply captures
 * (http_capture_add()).
 */
#include "config.h"

#include <sys/uio.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "errors.h"
#include "json.h"
#include "json-limit.h"
#include "log.h"
#include "paths.h"
#include "rpc-frame.h"
#include "serve.h"
#include "acp.h"
#include "ws.h"
#include "xmalloc.h"

/* The request callback main.c sets (routes_request()). */
static void	(*request_fn)(struct evhttp_request *);

/* The in-process callers' captures, asked in the order added. */
#define HTTP_CAPTURES	4
static http_capture_fn	captures[HTTP_CAPTURES];
static size_t		n_captures;

void
http_set_routes(void (*fn)(struct evhttp_request *))
{
	request_fn = fn;
}

void
http_capture_add(http_capture_fn fn)
{
	if (n_captures == HTTP_CAPTURES)
		fatalx("http_capture_add: too many captures");
	captures[n_captures++] = fn;
}

/* Whether an in-process caller took the reply (then it is not sent). */
int
http_captured(struct evhttp_request *req, int status, json_object *body,
    struct qerr *e)
{
	for (size_t i = 0; i < n_captures; i++)
		if (captures[i](req, status, body, e))
			return 1;
	return 0;
}

/* ---- replies ------------------------------------------------------------ */

void
http_reply_json(struct evhttp_request *req, int status, json_object *body)
{
	struct evbuffer *buf;
	const char *s;

	if (http_captured(req, status, body, NULL)) {
		json_object_put(body);
		return;
	}
	buf = evbuffer_new();
	gate_cors_headers(req);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	    "application/json");
	if (body != NULL) {
		s = json_object_to_json_string_ext(body,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		evbuffer_add(buf, s, strlen(s));
		json_object_put(body);
	}
	/* A restore answer can be megabytes: write it in big pieces. */
	if (evbuffer_get_length(buf) > 65536 && evhttp_request_get_connection(req) != NULL)
		bufferevent_set_max_single_write(evhttp_connection_get_bufferevent(
		    evhttp_request_get_connection(req)), 1024 * 1024);
	evhttp_send_reply(req, status, NULL, buf);
	evbuffer_free(buf);
}

void
http_reply_empty(struct evhttp_request *req, int status)
{
	if (http_captured(req, status, NULL, NULL))
		return;
	gate_cors_headers(req);
	evhttp_send_reply(req, status, NULL, NULL);
}

/* A query parameter of the request, or NULL (borrowed from the request). */
const char *
http_query(const struct http_ctx *ctx, const char *name)
{
	return evhttp_find_header(ctx->query, name);
}

/* A request header, or NULL (borrowed from the request). */
const char *
http_header(struct evhttp_request *req, const char *name)
{
	return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

/* The request's path (borrowed), or NULL. */
const char *
http_path(struct evhttp_request *req)
{
	return evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
}

/* The request's method. */
enum evhttp_cmd_type
http_method(struct evhttp_request *req)
{
	return evhttp_request_get_command(req);
}

/* A %-encoded path segment decoded (caller frees), or NULL. */
char *
http_uridecode(const char *s)
{
	return evhttp_uridecode(s, 0, NULL);
}

/* Let a big reply go out in writes of up to bytes each. */
void
http_write_size(struct evhttp_request *req, size_t bytes)
{
	struct evhttp_connection *evcon;

	if ((evcon = evhttp_request_get_connection(req)) != NULL)
		bufferevent_set_max_single_write(
		    evhttp_connection_get_bufferevent(evcon), bytes);
}

/* Add a header to the reply. */
void
http_set_header(struct evhttp_request *req, const char *name,
    const char *value)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), name, value);
}

/*
 * Send a reply whose body is buf (drained), as it is: its headers are the
 * caller's (no CORS headers, no capture by an in-process caller).
 */
void
http_reply_raw(struct evhttp_request *req, int status, struct evbuffer *buf)
{
	evhttp_send_reply(req, status, NULL, buf);
}

/*
 * The request's raw body as iovecs into the input buffer, valid until the
 * request ends (*iov, caller frees; its bytes in *len): their count.  The
 * body is not copied.
 */
int
http_body_iov(struct evhttp_request *req, struct iovec **iov, size_t *len)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct evbuffer_iovec *v;
	int n;

	*iov = NULL;
	if ((*len = evbuffer_get_length(in)) == 0)
		return 0;
	/* A length given: the extents needed for all of it. */
	n = evbuffer_peek(in, (ev_ssize_t)*len, NULL, NULL, 0);
	v = xreallocarray(NULL, (size_t)n, sizeof(*v));
	n = evbuffer_peek(in, (ev_ssize_t)*len, NULL, v, n);
	*iov = xreallocarray(NULL, (size_t)n, sizeof(**iov));
	for (int i = 0; i < n; i++) {
		(*iov)[i].iov_base = v[i].iov_base;
		(*iov)[i].iov_len = v[i].iov_len;
	}
	free(v);
	return n;
}

/*
 * Reply status with size bytes of the file fd (taken: closed when sent),
 * sent from the file as the connection drains, never read whole.
 */
void
http_reply_file(struct evhttp_request *req, int status, int fd, off_t size)
{
	struct evbuffer *buf;

	if ((buf = evbuffer_new()) == NULL || (size > 0 &&
	    evbuffer_add_file(buf, fd, 0, size) == -1)) {
		if (buf == NULL)
			close(fd);
		evbuffer_free(buf);
		http_error(req, "internal", NULL);
		return;
	}
	if (size == 0)
		close(fd);
	evhttp_send_reply(req, status, NULL, buf);
	evbuffer_free(buf);
}

/* Start a reply whose body follows in chunks (its headers the caller's). */
void
http_stream_start(struct evhttp_request *req, int status)
{
	evhttp_send_reply_start(req, status, NULL);
}

/* One chunk of a started reply (buf drained). */
void
http_stream_chunk(struct evhttp_request *req, struct evbuffer *buf)
{
	evhttp_send_reply_chunk(req, buf);
}

/* The end of a started reply (also when its client is gone). */
void
http_stream_end(struct evhttp_request *req)
{
	evhttp_send_reply_end(req);
}

/*
 * Bytes of a started reply still waiting for its client, or -1 when the
 * client is gone (the request is then the caller's to end).
 */
ssize_t
http_stream_backlog(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);

	if (evcon == NULL)
		return -1;
	return (ssize_t)evbuffer_get_length(bufferevent_get_output(
	    evhttp_connection_get_bufferevent(evcon)));
}

void
http_set_retry_after(struct evhttp_request *req, int seconds)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", seconds);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", v);
}

void
http_send_qerr(struct evhttp_request *req, struct qerr *e)
{
	json_object *body;
	int ra;

	if (http_captured(req, e != NULL ? qerr_status(e) : 500, NULL, e)) {
		qerr_free(e);
		return;
	}
	if (e == NULL || (body = qerr_rest_body(e)) == NULL) {
		qerr_free(e);
		evhttp_send_error(req, 500, NULL);
		return;
	}
	if ((ra = qerr_retry_after(e)) >= 0)
		http_set_retry_after(req, ra);
	http_reply_json(req, qerr_status(e), body);
	qerr_free(e);
}

void
http_error(struct evhttp_request *req, const char *code, const char *session_id)
{
	struct qerr *e = qerr_new(code, NULL);

	if (e != NULL && session_id != NULL)
		qerr_set_str(e, "sessionId", session_id);
	http_send_qerr(req, e);
}

/* A child's capacity refusal names its limit and scope (the template's). */
static void
rpc_limit_params(struct qerr *e, json_object *rpc_error)
{
	json_object *data = json_get_obj(rpc_error, "data"), *v;
	const char *scope = json_get_str(data, "scope");

	if ((v = json_get(data, "limit", json_type_int)) != NULL)
		qerr_set_int(e, "limit", json_object_get_int64(v));
	if (scope != NULL)
		qerr_set_str(e, "scope", scope);
}

/*
 * A JSON-RPC error from the child: a catalogued code (by data.code,
 * errorKind or JSON-RPC code) keeps its REST shape; anything else is a 500
 * copying the JSON-RPC code and data.
 */
void
http_error_rpc(struct evhttp_request *req, json_object *rpc_error,
    const char *session_id)
{
	struct qerr_class c;
	json_object *body, *v;
	struct qerr *e;

	if (qerr_classify_rpc(&c, rpc_error) == -1) {
		http_error(req, "internal", NULL);
		return;
	}
	if (c.def != NULL && c.def->status != 0 && strcmp(c.def->code, "internal") != 0) {
		e = qerr_new(c.def->code, NULL);
		if (e != NULL && session_id != NULL)
			qerr_set_str(e, "sessionId", session_id);
		if (e != NULL && c.reason != NULL)
			qerr_set_reason(e, c.reason);
		if (e != NULL)
			rpc_limit_params(e, rpc_error);
		qerr_class_clear(&c);
		http_send_qerr(req, e);
		return;
	}
	body = xjson_object_new_object();
	json_object_object_add(body, "error", xjson_object_new_string(
	    c.message != NULL ? c.message : "Internal error"));
	if (json_object_object_get_ex(rpc_error, "code", &v))
		json_object_object_add(body, "code", json_object_get(v));
	if (json_object_object_get_ex(rpc_error, "data", &v))
		json_object_object_add(body, "data", json_object_get(v));
	qerr_class_clear(&c);
	http_reply_json(req, 500, body);
}

/* ---- requests ----------------------------------------------------------- */

/*
 * json-c's STRICT mode still takes 'single quoted' strings, NaN and
 * Infinity: outside strings only the literals true, false and null (and
 * exponents after a digit) may use letters, and no quote but '"'.
 */
static int
json_text_strict(const char *p, size_t len)
{
	int in_str = 0;

	for (size_t i = 0; i < len; i++) {
		char c = p[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"')
			in_str = 1;
		else if (c == '\'')
			return 0;
		else if (isalpha((unsigned char)c)) {
			size_t j = i;

			if ((c == 'e' || c == 'E') && i > 0 && isdigit((unsigned char)p[i - 1]))
				continue;
			while (j < len && isalpha((unsigned char)p[j]))
				j++;
			if (!((j - i == 4 && (memcmp(p + i, "true", 4) == 0 ||
			    memcmp(p + i, "null", 4) == 0)) ||
			    (j - i == 5 && memcmp(p + i, "false", 5) == 0)))
				return 0;
			i = j - 1;
		}
	}
	return 1;
}

/*
 * Parse the body as a JSON object; non-objects count as {}.  -1:
 * malformed, -2: over the value budget (json-limit.h), refused unparsed.
 */
int
http_body_parse(struct evhttp_request *req, json_object **out)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in), end;
	const char *p;
	json_tokener *tok;
	json_object *o;

	*out = NULL;
	if (len == 0) {
		*out = xjson_object_new_object();
		return 0;
	}
	if ((p = (const char *)evbuffer_pullup(in, -1)) == NULL)
		return -1;
	if (!json_limit_ok(p, len, JSON_LIMIT_VALUES, JSON_LIMIT_DEPTH))
		return -2;
	if (!json_text_strict(p, len) ||
	    (tok = json_tokener_new_ex(RPC_MAX_DEPTH)) == NULL)
		return -1;
	json_tokener_set_flags(tok,
	    JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, p, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (o == NULL && json_tokener_get_error(tok) == json_tokener_continue)
		o = json_tokener_parse_ex(tok, "", 1);
	json_tokener_free(tok);
	while (o != NULL && end < len && isspace((unsigned char)p[end]))
		end++;
	if (o == NULL || end < len) {
		json_object_put(o);
		return -1;
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = xjson_object_new_object();
	}
	*out = o;
	return 0;
}


/* The one request callback: the routes' (conn.c counted it). */
static void
on_request(struct evhttp_request *req, void *arg)
{
	(void)arg;
	request_fn(req);
}

struct evhttp *
http_new(struct event_base *base)
{
	struct evhttp *http;

	if ((http = evhttp_new(base)) == NULL)
		return NULL;
	evhttp_set_max_headers_size(http, SERVE_MAX_HEADERS);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
	    EVHTTP_REQ_POST | EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH |
	    EVHTTP_REQ_OPTIONS);
	evhttp_set_timeout(http, 120);
	evhttp_set_default_content_type(http, "application/json");
	evhttp_set_gencb(http, on_request, NULL);
	return http;
}

void
http_free(struct evhttp *http)
{
	if (http != NULL)
		evhttp_free(http);
}
