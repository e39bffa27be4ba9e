/* SPDX-License-Identifier: ISC */
/*
 * history.c: a session's history without loading it.
 *
 * transcript ID (and show ID) prints the events of GET
 * /session/:id/transcript as a conversation (render.c; --json: NDJSON),
 * oldest first, following the pages to the end (500 records a
 * page); --limit N prints one page of N; --before RECORD pages back from
 * just before that record (the pages are then printed oldest first once
 * all are in).  branch ID forks the session (POST /session/:id/branch) at
 * its newest record or --at RECORD and prints the new session's id.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "restore.h"
#include "xmalloc.h"

#define PAGE_MAX	500

/* One request with --retry; 0 (resp holds the 2xx), else the exit code. */
static int
hist_call(struct rctx *ctx, const char *method, const char *path,
    json_object *body, struct http_resp *resp)
{
	struct http_req		 req;
	enum timeout_source	 src;
	struct rerr		 e;
	int			 attempt = 0;

	http_req_init(&req, method, path, body, NULL, timeout_fetch_ms(ctx, &src));
	for (;;) {
		if (http_do(ctx, &req, resp) == 0)
			return 0;
		output_classify(resp, &e);
		if (!restore_retry_wait(ctx, &e, &attempt))
			return output_error(ctx, resp, &e);
		http_resp_clear(resp);
	}
}

/* The page's query: limit, then the anchor (cursor, or --before). */
static char *
page_path(const struct rctx *ctx, const char *cursor, int first)
{
	char	*esc = NULL, *cwd = NULL, *q = NULL, *path;
	CURL	*c = curl_easy_init();
	long	 limit = ctx->limit > 0 ? (long)ctx->limit : PAGE_MAX;
	const char *anchor = cursor != NULL ? cursor : first ? ctx->before : NULL;

	if (c != NULL && anchor != NULL)
		esc = curl_easy_escape(c, anchor, 0);
	/* --cwd picks the workspace. */
	if (c != NULL)
		cwd = curl_easy_escape(c, ctx->cwd, 0);
	if ((anchor == NULL || esc != NULL) && cwd != NULL)
		(void)asprintf(&q, "/transcript?limit=%ld&cwd=%s%s%s", limit, cwd,
		    anchor == NULL ? "" : cursor != NULL ? "&cursor=" : "&beforeRecordId=",
		    esc != NULL ? esc : "");
	curl_free(esc);
	curl_free(cwd);
	curl_easy_cleanup(c);
	if (q == NULL)
		return NULL;
	path = http_session_path(ctx->session_id, q);
	free(q);
	return path;
}

/* The page's events array (borrowed), or NULL. */
static json_object *
page_events(json_object *page)
{
	json_object	*v;

	if (json_object_object_get_ex(page, "events", &v) &&
	    json_object_is_type(v, json_type_array))
		return v;
	return NULL;
}

/* Print a page's events: one JSON line each (--json), else as text. */
static void
print_events(const struct rctx *ctx, struct render *r, json_object *events)
{
	size_t	i, n = json_object_array_length(events);

	for (i = 0; i < n; i++)
		if (ctx->json)
			puts(json_object_to_json_string_ext(
			    json_object_array_get_idx(events, i),
			    JSON_C_TO_STRING_PLAIN |
			    JSON_C_TO_STRING_NOSLASHESCAPE));
		else
			render_event(r, json_object_array_get_idx(events, i));
}

/* Fetch one page into *page (caller puts); 0 or the exit code. */
static int
get_page(struct rctx *ctx, const char *cursor, int first, json_object **page)
{
	struct http_resp	 resp;
	struct rerr		 e;
	char			*path;
	int			 rc;

	*page = NULL;
	if ((path = page_path(ctx, cursor, first)) == NULL)
		return EXIT_FAIL;
	if ((rc = hist_call(ctx, "GET", path, NULL, &resp)) == 0 &&
	    ((*page = http_resp_json(&resp)) == NULL || page_events(*page) == NULL)) {
		json_object_put(*page);
		*page = NULL;
		output_local(&e, "protocol_error", EXIT_FAIL,
		    "the answer is not a transcript page");
		rc = output_fail(ctx, &e);
	}
	http_resp_clear(&resp);
	free(path);
	return rc;
}

/* transcript ID [--limit N] [--before RECORD]. */
int
cmd_transcript(struct rctx *ctx, char **args)
{
	json_object	*page, *v, **back = NULL, **nb;
	struct render	 r;
	size_t		 nback = 0, i;
	char		*cursor = NULL;
	int		 rc, first = 1, more;

	(void)args;
	render_init(&r);
	while ((rc = get_page(ctx, cursor, first, &page)) == 0) {
		first = 0;
		if (ctx->before == NULL)
			print_events(ctx, &r, page_events(page));
		else if ((nb = reallocarray(back, nback + 1, sizeof(*back))) != NULL) {
			back = nb;
			back[nback++] = json_object_get(page);
		} else
			rc = EXIT_FAIL;
		more = json_object_object_get_ex(page, "hasMore", &v) &&
		    json_object_get_boolean(v) && ctx->limit < 0 &&
		    json_get_str(page, "nextCursor") != NULL;
		free(cursor);
		cursor = more ? strdup(json_get_str(page, "nextCursor")) : NULL;
		json_object_put(page);
		if (rc != 0 || !more || cursor == NULL)
			break;
	}
	/* Backward pages came newest first. */
	for (i = nback; i-- > 0;) {
		if (rc == 0)
			print_events(ctx, &r, page_events(back[i]));
		json_object_put(back[i]);
	}
	free(back);
	free(cursor);
	if (!ctx->json)
		render_end(&r);
	return rc;
}

/* branch ID [--at RECORD] [--name NAME]: the new session's id. */
int
cmd_branch(struct rctx *ctx, char **args)
{
	struct http_resp	 resp;
	json_object		*body = xjson_object_new_object(), *obj;
	char			*path;
	const char		*id;
	int			 rc;

	(void)args;
	json_object_object_add(body, "cwd", xjson_object_new_string(ctx->cwd));
	if (ctx->at != NULL)
		json_object_object_add(body, "atRecordId", xjson_object_new_string(ctx->at));
	if (ctx->name != NULL)
		json_object_object_add(body, "name", xjson_object_new_string(ctx->name));
	if ((path = http_session_path(ctx->session_id, "/branch")) == NULL) {
		json_object_put(body);
		return EXIT_FAIL;
	}
	if ((rc = hist_call(ctx, "POST", path, body, &resp)) == 0) {
		obj = http_resp_json(&resp);
		if (ctx->json)
			puts(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
			    JSON_C_TO_STRING_NOSLASHESCAPE));
		else if ((id = json_get_str(obj, "sessionId")) != NULL)
			puts(id);
		json_object_put(obj);
	}
	http_resp_clear(&resp);
	json_object_put(body);
	free(path);
	return rc;
}
