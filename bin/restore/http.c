/* SPDX-License-Identifier: ISC */
/*
 * http.c: libcurl requests for qwen-restore.
 *
 * Every request goes over the daemon's Unix socket (CURLOPT_UNIX_SOCKET_PATH
 * with the URL http://localhost/...) or to --url.  JSON bodies, the headers
 * Authorization, X-Qwen-Client-Id and Last-Event-ID, and one per-request
 * timer that covers headers and body (0: none).  A stream keeps the timer
 * for the phase until its headers only.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "clock.h"
#include "restore.h"

#define HTTP_BODY_MAX	(64u * 1024 * 1024)	/* a non-stream answer */

/* The transfer state one request shares with the callbacks. */
struct xfer {
	const struct rctx		*ctx;
	const struct http_req		*req;
	const struct http_stream_cb	*cb;
	struct http_resp		*resp;
	CURL				*curl;
	uint64_t			 start_ms;
	int				 headers_done;
	int				 streaming;	/* 2xx event stream */
	int				 stopped;	/* cb asked to stop */
	int				 too_big;
	int				 progress_shown;
	uint64_t			 progress_ms;	/* last drawn */
};

/* Initialise libcurl once, before any thread starts. */
int
http_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

/* Undo http_global_init() after the last request. */
void
http_global_cleanup(void)
{
	curl_global_cleanup();
}

/* Free the strings of resp and zero it. */
void
http_resp_clear(struct http_resp *resp)
{
	if (resp == NULL)
		return;
	free(resp->body);
	free(resp->retry_after);
	free(resp->content_type);
	memset(resp, 0, sizeof(*resp));
}

/* Whether the answer is a 2xx. */
int
http_ok(const struct http_resp *resp)
{
	return resp->status >= 200 && resp->status < 300;
}

/* "/session/<escaped id><suffix>"; caller frees; NULL on ENOMEM. */
char *
http_session_path(const char *id, const char *suffix)
{
	char	*esc, *path;

	esc = curl_easy_escape(NULL, id, 0);
	if (esc == NULL)
		return NULL;
	if (asprintf(&path, "/session/%s%s", esc, suffix) == -1)
		path = NULL;
	curl_free(esc);
	return path;
}

/* The body as a JSON object, or NULL; caller puts. */
json_object *
http_resp_json(const struct http_resp *resp)
{
	json_tokener	*tok;
	json_object	*obj;

	if (resp->body == NULL || resp->len == 0)
		return NULL;
	tok = json_tokener_new_ex(64);
	if (tok == NULL)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, resp->body, (int)resp->len);
	if (obj != NULL && (json_tokener_get_parse_end(tok) != resp->len ||
	    !json_object_is_type(obj, json_type_object))) {
		json_object_put(obj);
		obj = NULL;
	}
	json_tokener_free(tok);
	return obj;
}

/* Append to the collected body, bounded by HTTP_BODY_MAX. */
static int
xfer_collect(struct xfer *x, const char *buf, size_t len)
{
	struct http_resp	*r = x->resp;
	char			*nb;

	if (r->len + len > HTTP_BODY_MAX) {
		x->too_big = 1;
		return -1;
	}
	nb = realloc(r->body, r->len + len + 1);
	if (nb == NULL)
		return -1;
	memcpy(nb + r->len, buf, len);
	r->body = nb;
	r->len += len;
	r->body[r->len] = '\0';
	return 0;
}

/* CURLOPT_WRITEFUNCTION: stream or collect. */
static size_t
xfer_write(char *buf, size_t size, size_t n, void *arg)
{
	struct xfer	*x = arg;
	size_t		 len = size * n;

	if (x->streaming) {
		if (x->cb->on_data(x->cb->arg, buf, len) == -1) {
			x->stopped = 1;
			return 0;
		}
		return len;
	}
	return xfer_collect(x, buf, len) == 0 ? len : 0;
}

/* Copy a header value (trimmed) into *dst. */
static void
header_value(char **dst, const char *v, size_t len)
{
	while (len > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)v[len - 1]))
		len--;
	free(*dst);
	*dst = strndup(v, len);
}

/* Whether the header line starts with name followed by ':'. */
static int
header_is(const char *line, size_t len, const char *name)
{
	size_t	nlen = strlen(name);

	return len > nlen && line[nlen] == ':' &&
	    strncasecmp(line, name, nlen) == 0;
}

/* CURLOPT_HEADERFUNCTION: Retry-After, Content-Type, end of headers. */
static size_t
xfer_header(char *buf, size_t size, size_t n, void *arg)
{
	struct xfer	*x = arg;
	size_t		 len = size * n;
	long		 status = 0;

	if (header_is(buf, len, "Retry-After"))
		header_value(&x->resp->retry_after, buf + 12, len - 12);
	else if (header_is(buf, len, "Content-Type"))
		header_value(&x->resp->content_type, buf + 13, len - 13);
	else if (len <= 2 && (buf[0] == '\r' || buf[0] == '\n')) {
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status < 200)	/* 1xx: more headers follow */
			return len;
		x->resp->status = status;
		x->headers_done = 1;
		if (x->cb != NULL && status < 300 &&
		    x->resp->content_type != NULL &&
		    strstr(x->resp->content_type, "text/event-stream") != NULL) {
			x->streaming = 1;
			if (x->cb->on_open != NULL)
				x->cb->on_open(x->cb->arg);
		}
	}
	return len;
}

/* CURLOPT_XFERINFOFUNCTION: our deadline, stream stops, the progress line. */
static int
xfer_info(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	struct xfer	*x = arg;
	uint64_t	 elapsed = clock_mono_ms() - x->start_ms;
	int64_t		 limit = x->req->timeout_ms;

	(void)dt; (void)dn; (void)ut; (void)un;
	if (x->cb != NULL && x->cb->should_stop != NULL &&
	    x->cb->should_stop(x->cb->arg)) {
		x->stopped = 1;
		return 1;
	}
	/* A stream's timer bounds the phase until its headers only. */
	if (limit > 0 && !(x->cb != NULL && x->headers_done) &&
	    elapsed >= (uint64_t)limit) {
		x->resp->timed_out = 1;
		return 1;
	}
	if (x->req->progress && output_progress_enabled(x->ctx) &&
	    (!x->progress_shown || elapsed - x->progress_ms >= 100)) {
		x->progress_ms = elapsed;
		output_progress(x->ctx, (double)elapsed / 1000.0, limit);
		x->progress_shown = 1;
	}
	return 0;
}

/* The header list of req; caller frees with curl_slist_free_all. */
static struct curl_slist *
xfer_headers(const struct rctx *ctx, const struct http_req *req, int stream)
{
	struct curl_slist	*h = NULL, *n;
	char			 line[512];

	/* Never send "Expect: 100-continue"; it only adds a round trip. */
	h = curl_slist_append(h, "Expect:");
	if (req->body != NULL && h != NULL)
		h = curl_slist_append(h, "Content-Type: application/json");
	if (stream && h != NULL)
		h = curl_slist_append(h, "Accept: text/event-stream");
	if (ctx->token != NULL && ctx->token[0] != '\0' && h != NULL) {
		char	*auth;

		if (asprintf(&auth, "Authorization: Bearer %s", ctx->token) == -1)
			goto fail;
		n = curl_slist_append(h, auth);
		free(auth);
		h = n;
	}
	if (req->client_id != NULL && req->client_id[0] != '\0' && h != NULL) {
		snprintf(line, sizeof(line), "X-Qwen-Client-Id: %s",
		    req->client_id);
		h = curl_slist_append(h, line);
	}
	if (req->last_event_id >= 0 && h != NULL) {
		snprintf(line, sizeof(line), "Last-Event-ID: %lld",
		    (long long)req->last_event_id);
		h = curl_slist_append(h, line);
	}
	return h;
fail:
	curl_slist_free_all(h);
	return NULL;
}

/* Set the options of one transfer. */
static int
xfer_setup(struct xfer *x, struct curl_slist *hdrs, char **url,
    char **payload)
{
	const struct rctx	*ctx = x->ctx;
	const struct http_req	*req = x->req;
	CURL			*c = x->curl;

	if (asprintf(url, "%s%s", ctx->base_url, req->path) == -1)
		return -1;
	curl_easy_setopt(c, CURLOPT_URL, *url);
	if (ctx->socket_path != NULL)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, ctx->socket_path);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
	if (req->body != NULL) {
		*payload = strdup(json_object_to_json_string_ext(req->body,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		if (*payload == NULL)
			return -1;
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, *payload);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(*payload));
	} else if (strcmp(req->method, "GET") != 0 &&
	    strcmp(req->method, "DELETE") != 0) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, xfer_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, xfer_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, xfer_info);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, x->resp->errbuf);
	/* Our own deadline in xfer_info, plus libcurl's as a backstop. */
	if (req->timeout_ms > 0 && x->cb == NULL)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms);
	return 0;
}

/*
 * Run a stream through a multi handle, waking every 100 ms so that a stop
 * request (should_stop) ends it promptly even when the daemon is quiet.
 */
static CURLcode
xfer_perform_stream(struct xfer *x)
{
	CURLM		*m;
	CURLMsg		*msg;
	CURLcode	 rc = CURLE_OK;
	int		 running = 1, left;

	if ((m = curl_multi_init()) == NULL)
		return CURLE_OUT_OF_MEMORY;
	if (curl_multi_add_handle(m, x->curl) != CURLM_OK) {
		curl_multi_cleanup(m);
		return CURLE_OUT_OF_MEMORY;
	}
	while (running) {
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			rc = CURLE_RECV_ERROR;
			break;
		}
		if (!running)
			break;
		if (xfer_info(x, 0, 0, 0, 0) != 0) {
			rc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		if (curl_multi_poll(m, NULL, 0, 100, NULL) != CURLM_OK) {
			rc = CURLE_RECV_ERROR;
			break;
		}
	}
	while ((msg = curl_multi_info_read(m, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE)
			rc = msg->data.result;
	curl_multi_remove_handle(m, x->curl);
	curl_multi_cleanup(m);
	return rc;
}

/* Run one transfer (stream when cb != NULL). */
static int
xfer_run(const struct rctx *ctx, const struct http_req *req,
    const struct http_stream_cb *cb, struct http_resp *resp)
{
	struct xfer		 x;
	struct curl_slist	*hdrs;
	char			*url = NULL, *payload = NULL;
	CURLcode		 rc;
	int			 ret = -1;

	memset(resp, 0, sizeof(*resp));
	memset(&x, 0, sizeof(x));
	x.ctx = ctx;
	x.req = req;
	x.cb = cb;
	x.resp = resp;
	resp->timeout_ms = req->timeout_ms;
	resp->socket_path = ctx->socket_path;
	resp->socket_tried = ctx->socket_tried;
	resp->url = ctx->base_url;
	if ((x.curl = curl_easy_init()) == NULL)
		return -1;
	if ((hdrs = xfer_headers(ctx, req, cb != NULL)) == NULL)
		goto out;
	if (xfer_setup(&x, hdrs, &url, &payload) == -1)
		goto out;
	x.start_ms = clock_mono_ms();
	rc = cb != NULL ? xfer_perform_stream(&x) : curl_easy_perform(x.curl);
	if (x.progress_shown)
		output_progress_end(ctx);
	if (rc == CURLE_OPERATION_TIMEDOUT)
		resp->timed_out = 1;
	if (x.streaming) {
		/* Opened: however it ended, the caller saw the events. */
		if (rc != CURLE_OK && !x.stopped)
			resp->cerr = rc;
		ret = 0;
		goto out;
	}
	if (rc != CURLE_OK) {
		long	os_errno = 0;

		resp->cerr = rc;
		if (curl_easy_getinfo(x.curl, CURLINFO_OS_ERRNO, &os_errno) ==
		    CURLE_OK)
			resp->os_errno = (int)os_errno;
		if (x.too_big)
			snprintf(resp->errbuf, sizeof(resp->errbuf),
			    "answer larger than %u bytes", HTTP_BODY_MAX);
		else if (resp->errbuf[0] == '\0')
			strlcpy(resp->errbuf, curl_easy_strerror(rc),
			    sizeof(resp->errbuf));
		/* A cut or late answer is no answer. */
		resp->status = 0;
		goto out;
	}
	ret = cb == NULL && http_ok(resp) ? 0 : -1;
out:
	curl_slist_free_all(hdrs);
	free(url);
	free(payload);
	curl_easy_cleanup(x.curl);
	return ret;
}

void
http_req_init(struct http_req *req, const char *method, const char *path,
    json_object *body, const char *client_id, int64_t timeout_ms)
{
	memset(req, 0, sizeof(*req));
	req->method = method;
	req->path = path;
	req->body = body;
	req->client_id = client_id;
	req->last_event_id = -1;
	req->timeout_ms = timeout_ms;
}

/* A plain request: 0 on a 2xx answer, -1 otherwise. */
int
http_do(const struct rctx *ctx, const struct http_req *req,
    struct http_resp *resp)
{
	return xfer_run(ctx, req, NULL, resp);
}

/* A stream: 0 when it was opened, -1 when not. */
int
http_stream(const struct rctx *ctx, const struct http_req *req,
    const struct http_stream_cb *cb, struct http_resp *resp)
{
	return xfer_run(ctx, req, cb, resp);
}
