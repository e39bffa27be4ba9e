/* SPDX-License-Identifier: ISC */
/*
 * output.c: what qwen-restore tells its caller when something fails.
 *
 * Failures are classified with libqwen's error catalog (qerr_classify_http)
 * and reported as one line on stderr:
 *   qwen-restore: load 3f2a9c1d…: restore timed out after 60000 ms (retry in 60 s)
 * or, with --json, as the daemon's body on stdout (a synthesised
 * {error, code, retryable} for client-side failures).  The exit code is the
 * catalog's class: 0 ok, 1 failure, 2 usage, 3 not found, 69 unreachable,
 * 75 retryable.  The restore progress line goes to stderr only when stderr
 * is a terminal.
 */
#include "config.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "restore.h"
#include "xmalloc.h"

/* Fill e from a catalog entry for a client-side code. */
static void
local_from_def(struct rerr *e, const char *code)
{
	const struct qerr_def	*def = qerr_lookup(code);

	strlcpy(e->code, code, sizeof(e->code));
	e->exit_code = def != NULL ? def->exit_class : EXIT_FAIL;
	e->retryable = def != NULL ? def->retryable : 0;
	e->retry_after = -1;
	e->status = 0;
	e->timeout_ms = 0;
}

/* A client-side failure with its own message. */
void
output_local(struct rerr *e, const char *code, int exit_code,
    const char *fmt, ...)
{
	va_list	ap;

	local_from_def(e, code);
	if (exit_code >= 0)
		e->exit_code = exit_code;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

/* Classify a transport failure (no HTTP answer). */
static void
classify_transport(const struct http_resp *r, struct rerr *e)
{
	if (r->timed_out) {
		output_local(e, "client_timeout", -1, "timed out after %lld ms",
		    (long long)r->timeout_ms);
		e->timeout_ms = r->timeout_ms;
		return;
	}
	switch (r->cerr) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_UNSUPPORTED_PROTOCOL:
		output_local(e, "daemon_unreachable", -1, "%s", "");
		if (r->socket_path != NULL)
			address_explain(r->socket_path, r->socket_tried,
			    e->message, sizeof(e->message));
		else
			address_explain_url(r->url != NULL ? r->url : "?",
			    r->os_errno, r->errbuf, e->message,
			    sizeof(e->message));
		return;
	default:
		output_local(e, "protocol_error", -1,
		    "no answer from the daemon: %s", r->errbuf[0] ?
		    r->errbuf : curl_easy_strerror((CURLcode)r->cerr));
	}
}

/* Classify a failed answer. */
void
output_classify(const struct http_resp *r, struct rerr *e)
{
	struct qerr_class	 c;
	json_object		*body, *v;

	memset(e, 0, sizeof(*e));
	if (r->status == 0) {
		classify_transport(r, e);
		return;
	}
	if (qerr_classify_http(&c, (int)r->status, r->body, r->len,
	    r->retry_after) == -1) {
		output_local(e, "internal", EXIT_FAIL, "out of memory");
		return;
	}
	strlcpy(e->code, c.raw_code != NULL ? c.raw_code : c.code,
	    sizeof(e->code));
	strlcpy(e->message, c.message != NULL ? c.message : "error",
	    sizeof(e->message));
	e->exit_code = c.exit_class;
	e->retryable = c.retryable;
	e->retry_after = c.retry_after;
	e->status = (int)r->status;
	qerr_class_clear(&c);
	/* The restore timeout reads better with its budget. */
	if (strcmp(e->code, "session_restore_timeout") == 0 &&
	    (body = http_resp_json(r)) != NULL) {
		if (json_object_object_get_ex(body, "timeoutMs", &v) &&
		    json_object_is_type(v, json_type_int)) {
			e->timeout_ms = json_object_get_int64(v);
			snprintf(e->message, sizeof(e->message),
			    "restore timed out after %lld ms",
			    (long long)e->timeout_ms);
		}
		json_object_put(body);
	}
}

/* Abbreviate a long id for messages. */
const char *
output_short_id(const char *id, char *buf, size_t len)
{
	if (strlen(id) <= 12)
		strlcpy(buf, id, len);
	else
		snprintf(buf, len, "%.8s\xe2\x80\xa6", id);
	return buf;
}

/* "qwen-restore: load 3f2a9c1d…: " */
static void
print_prefix(const struct rctx *ctx)
{
	char	sid[32];

	fprintf(stderr, "%s: %s", getprogname(), ctx->command);
	if (ctx->session_id != NULL)
		fprintf(stderr, " %s", output_short_id(ctx->session_id, sid,
		    sizeof(sid)));
	fputs(": ", stderr);
}

/* The one error line. */
static void
print_line(const struct rctx *ctx, const struct rerr *e)
{
	flockfile(stderr);
	print_prefix(ctx);
	fputs(e->message, stderr);
	if (e->retryable && e->retry_after >= 0)
		fprintf(stderr, " (retry in %d s)", e->retry_after);
	if (strcmp(e->code, "unauthorized") == 0)
		fprintf(stderr, " (the daemon wants its token: --token-file FILE, "
		    "or QWEN_SERVER_TOKEN)");
	fputc('\n', stderr);
	funlockfile(stderr);
}

/* A synthesised JSON body for a failure without a daemon body. */
static void
print_json_local(const struct rerr *e)
{
	json_object	*o = xjson_object_new_object();

	json_object_object_add(o, "error", xjson_object_new_string(e->message));
	json_object_object_add(o, "code", xjson_object_new_string(e->code));
	json_object_object_add(o, "retryable",
	    xjson_object_new_boolean(e->retryable));
	if (e->retry_after >= 0)
		json_object_object_add(o, "retryAfterSeconds",
		    xjson_object_new_int(e->retry_after));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* Report a failed request; returns the exit code. */
int
output_error(const struct rctx *ctx, const struct http_resp *r,
    const struct rerr *e)
{
	json_object	*body;

	if (ctx->json) {
		if (r != NULL && (body = http_resp_json(r)) != NULL) {
			puts(json_object_to_json_string_ext(body,
			    JSON_C_TO_STRING_PLAIN |
			    JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(body);
		} else
			print_json_local(e);
		fflush(stdout);
		return e->exit_code;
	}
	print_line(ctx, e);
	return e->exit_code;
}

/* Report a local failure (usage, state); returns its exit code. */
int
output_fail(const struct rctx *ctx, const struct rerr *e)
{
	return output_error(ctx, NULL, e);
}

/* A -v line. */
void
output_verbose(const struct rctx *ctx, const char *fmt, ...)
{
	va_list	ap;

	if (!ctx->verbose)
		return;
	flockfile(stderr);	/* one whole line even from several threads */
	print_prefix(ctx);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

/* The progress line only on a terminal, and never with -q. */
int
output_progress_enabled(const struct rctx *ctx)
{
	return !ctx->quiet && isatty(STDERR_FILENO);
}

/* "\rqwen-restore: load 3f2a…: 12.3 s of 70.0 s" */
void
output_progress(const struct rctx *ctx, double elapsed_s, int64_t deadline_ms)
{
	fputc('\r', stderr);
	print_prefix(ctx);
	if (deadline_ms > 0)
		fprintf(stderr, "restoring, %.1f s of %.1f s\033[K", elapsed_s,
		    (double)deadline_ms / 1000.0);
	else
		fprintf(stderr, "restoring, %.1f s (no deadline)\033[K",
		    elapsed_s);
	fflush(stderr);
}

/* Erase the progress line. */
void
output_progress_end(const struct rctx *ctx)
{
	(void)ctx;
	fputs("\r\033[K", stderr);
	fflush(stderr);
}
