/* SPDX-License-Identifier: ISC */
/*
 * commands.c: the request/answer commands of qwen-restore.
 *
 * Each runs one request (with --retry), prints the answer (the JSON body,
 * or with --json always the body) and returns the exit code.  load and
 * resume use the restore timeout (timeout.c) and store the returned
 * clientId; new stores the clientId of the new session; detach and close
 * forget it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "restore.h"
#include "xmalloc.h"

/* Print a JSON body on stdout as one line. */
static void
print_body(const struct http_resp *r)
{
	json_object	*obj;

	if ((obj = http_resp_json(r)) != NULL) {
		puts(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(obj);
	} else if (r->body != NULL && r->len > 0)
		fwrite(r->body, 1, r->len, stdout);
}

/* --json for an answer without a body (204): {sessionId, status}. */
static void
print_done(const struct rctx *ctx, const struct http_resp *r)
{
	json_object	*o = xjson_object_new_object();

	if (ctx->session_id != NULL)
		json_object_object_add(o, "sessionId",
		    xjson_object_new_string(ctx->session_id));
	json_object_object_add(o, "status", xjson_object_new_int((int)r->status));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/*
 * Print an answer: with --json the body as one line, else as a person
 * reads it (fn: a table or key/value lines; NULL: the body as it is).
 */
static void
print_answer(const struct rctx *ctx, const struct http_resp *r,
    void (*fn)(const struct rctx *, json_object *))
{
	json_object	*obj;

	if (ctx->json && (r->body == NULL || r->len == 0)) {
		print_done(ctx, r);
		return;
	}
	if (ctx->json || fn == NULL || (obj = http_resp_json(r)) == NULL) {
		print_body(r);
		return;
	}
	fn(ctx, obj);
	json_object_put(obj);
}

/* human_keyvalue() in print_answer()'s shape. */
static void
print_kv(const struct rctx *ctx, json_object *obj)
{
	(void)ctx;
	human_keyvalue(obj);
}

/*
 * One request with --retry.  ok404: a 404 counts as done (close, detach).
 * Returns 0 on success (resp holds the answer), else the exit code after
 * the error was reported.
 */
static int
run(struct rctx *ctx, struct http_req *req, struct http_resp *resp,
    int ok404)
{
	struct rerr	e;
	int		attempt = 0;

	for (;;) {
		if (http_do(ctx, req, resp) == 0 ||
		    (ok404 && resp->status == 404))
			return 0;
		output_classify(resp, &e);
		if (!restore_retry_wait(ctx, &e, &attempt))
			return output_error(ctx, resp, &e);
		http_resp_clear(resp);
	}
}

/* A request of a session command with the stored clientId. */
static int
session_call(struct rctx *ctx, const char *method, const char *suffix,
    json_object *body, int ok404, struct http_resp *resp)
{
	struct http_req		 req;
	enum timeout_source	 src;
	char			 id[RESTORE_ID_MAX + 1], *path;
	int			 rc;

	state_client_get(ctx->state, ctx->session_id, id, sizeof(id));
	if ((path = http_session_path(ctx->session_id, suffix)) == NULL)
		return EXIT_FAIL;
	http_req_init(&req, method, path, body, id, timeout_fetch_ms(ctx, &src));
	rc = run(ctx, &req, resp, ok404);
	free(path);
	return rc;
}

/* capabilities: GET /capabilities and refresh the restore budget cache. */
int
cmd_capabilities(struct rctx *ctx, char **args)
{
	struct http_req		 req;
	struct http_resp	 resp;
	enum timeout_source	 src;
	json_object		*caps;
	int			 rc;

	(void)args;
	http_req_init(&req, "GET", "/capabilities", NULL, NULL,
	    timeout_fetch_ms(ctx, &src));
	if ((rc = run(ctx, &req, &resp, 0)) != 0)
		goto out;
	if ((caps = http_resp_json(&resp)) == NULL) {
		struct rerr e;

		output_local(&e, "protocol_error", EXIT_FAIL,
		    "capabilities answer is not a JSON object");
		rc = output_fail(ctx, &e);
		goto out;
	}
	if (state_cap_store(ctx->state, caps) == -1)
		output_verbose(ctx, "cannot write the capability cache");
	output_verbose(ctx, "cached sessionRestoreTimeoutMs: %lld",
	    (long long)state_cap_restore_ms(ctx->state));
	json_object_put(caps);
	print_answer(ctx, &resp, print_kv);
out:
	http_resp_clear(&resp);
	return rc;
}

/*
 * GET the workspace's sessions, at most limit of them (caller clears
 * *resp); 0 or the exit code (quiet: not reported, no retry).  Shared
 * with the id prefixes (prefix.c).
 */
int
commands_list_get(struct rctx *ctx, long limit, struct http_resp *resp,
    int quiet)
{
	struct http_req		 req;
	enum timeout_source	 src;
	char			*esc, *path = NULL;
	int			 rc;

	memset(resp, 0, sizeof(*resp));
	if ((esc = curl_easy_escape(NULL, ctx->cwd, 0)) == NULL ||
	    asprintf(&path, "/workspace/sessions?cwd=%s&limit=%ld", esc,
	    limit) == -1) {
		curl_free(esc);
		return EXIT_FAIL;
	}
	curl_free(esc);
	http_req_init(&req, "GET", path, NULL, NULL, timeout_fetch_ms(ctx, &src));
	if (quiet)
		rc = http_do(ctx, &req, resp) == 0 ? 0 : EXIT_FAIL;
	else
		rc = run(ctx, &req, resp, 0);
	free(path);
	return rc;
}

/*
 * list [--limit N | --all] [--no-header]: one more than asked is fetched,
 * so a cut listing says so on standard error instead of ending silently.
 */
int
cmd_list(struct rctx *ctx, char **args)
{
	struct http_resp	 resp;
	json_object		*obj, *list;
	long			 want, got;
	int			 rc;

	(void)args;
	want = ctx->all ? LIST_MAX : ctx->limit > 0 ? (long)ctx->limit :
	    LIST_DEFAULT;
	if ((rc = commands_list_get(ctx, ctx->json || want == LIST_MAX ?
	    want : want + 1, &resp, 0)) != 0) {
		http_resp_clear(&resp);
		return rc;
	}
	if (ctx->json || (obj = http_resp_json(&resp)) == NULL) {
		print_answer(ctx, &resp, human_list);
		http_resp_clear(&resp);
		return rc;
	}
	list = json_get(obj, "sessions", json_type_array);
	got = list != NULL ? (long)json_object_array_length(list) : 0;
	if (got > want)
		json_object_array_del_idx(list, (size_t)want, (size_t)(got - want));
	human_list(ctx, obj);
	if (got > want || (want == LIST_MAX && got == LIST_MAX))
		fprintf(stderr, "%s: more sessions than the %ld shown "
		    "(--limit N or --all for more)\n", getprogname(), want);
	json_object_put(obj);
	http_resp_clear(&resp);
	return rc;
}

/* The clientId of a session answer into buf ("" none). */
static void
answer_client_id(json_object *obj, char *buf, size_t len)
{
	json_object	*v;

	buf[0] = '\0';
	if (obj != NULL && json_object_object_get_ex(obj, "clientId", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    state_id_valid(json_object_get_string(v)))
		strlcpy(buf, json_object_get_string(v), len);
}

/* Print a session answer: the body with --json, else its sessionId. */
static void
print_session(const struct rctx *ctx, const struct http_resp *r,
    json_object *obj)
{
	json_object	*v;

	if (ctx->json)
		print_body(r);
	else if (obj != NULL && json_object_object_get_ex(obj, "sessionId",
	    &v) && json_object_is_type(v, json_type_string))
		puts(json_object_get_string(v));
}

/*
 * A --model-service the agent did not take: the session is there (its id
 * was printed), but not as asked, so the command fails.
 */
static int
model_refused(struct rctx *ctx, json_object *obj)
{
	json_object *v;
	struct rerr e;

	if (ctx->model_service == NULL ||
	    !json_object_object_get_ex(obj, "modelApplied", &v) ||
	    !json_object_is_type(v, json_type_boolean) || json_object_get_boolean(v))
		return EXIT_OK;
	output_local(&e, "model_switch_failed", EXIT_FAIL,
	    "%s: model %s was not applied (the session is %s)", ctx->command,
	    ctx->model_service, json_get_str(obj, "sessionId") != NULL ?
	    json_get_str(obj, "sessionId") : "?");
	if (ctx->json) {	/* stdout has the answer: the reason on stderr */
		fprintf(stderr, "%s: %s\n", getprogname(), e.message);
		return e.exit_code;
	}
	return output_fail(ctx, &e);
}

/*
 * POST /session in the workspace; store the new clientId.  thread: a new
 * session of its own (new), else the workspace's default one (attach).
 */
static int
create(struct rctx *ctx, int thread)
{
	struct http_req		 req;
	struct http_resp	 resp;
	enum timeout_source	 src;
	json_object		*body, *obj, *v;
	char			 id[RESTORE_ID_MAX + 1];
	int			 rc;

	body = xjson_object_new_object();
	json_object_object_add(body, "cwd", xjson_object_new_string(ctx->cwd));
	if (thread)
		json_object_object_add(body, "sessionScope", xjson_object_new_string("thread"));
	if (ctx->new_id != NULL)
		json_object_object_add(body, "sessionId", xjson_object_new_string(ctx->new_id));
	if (ctx->approval_mode != NULL)
		json_object_object_add(body, "approvalMode",
		    xjson_object_new_string(ctx->approval_mode));
	if (ctx->model_service != NULL)
		json_object_object_add(body, "modelServiceId",
		    xjson_object_new_string(ctx->model_service));
	http_req_init(&req, "POST", "/session", body, NULL,
	    timeout_fetch_ms(ctx, &src));
	if ((rc = run(ctx, &req, &resp, 0)) == 0 &&
	    (obj = http_resp_json(&resp)) == NULL) {
		struct rerr e;

		output_local(&e, "protocol_error", EXIT_FAIL,
		    "the answer is not a JSON object");
		rc = output_fail(ctx, &e);
	} else if (rc == 0) {
		answer_client_id(obj, id, sizeof(id));
		if (obj != NULL && json_object_object_get_ex(obj, "sessionId",
		    &v) && json_object_is_type(v, json_type_string) &&
		    state_id_valid(json_object_get_string(v)))
			state_client_put(ctx->state, json_object_get_string(v),
			    id);
		print_session(ctx, &resp, obj);
		rc = model_refused(ctx, obj);
		json_object_put(obj);
	}
	json_object_put(body);
	http_resp_clear(&resp);
	return rc;
}

/* new: a session of its own, every time. */
int
cmd_new(struct rctx *ctx, char **args)
{
	(void)args;
	return create(ctx, 1);
}

/* attach: the workspace's default session, shared with other clients. */
int
cmd_attach(struct rctx *ctx, char **args)
{
	(void)args;
	return create(ctx, 0);
}

/* POST /session/sid/<action> under the restore timeout. */
int
commands_restore_session(const struct rctx *ctx, const char *action, const char *sid,
    const char *client_id, struct http_resp *resp, char *new_id,
    size_t new_id_len)
{
	struct http_req		 req;
	enum timeout_source	 src;
	json_object		*body, *obj;
	char			 suffix[16], *path;
	int			 disabled, rc;

	snprintf(suffix, sizeof(suffix), "/%s", action);
	if ((path = http_session_path(sid, suffix)) == NULL)
		return -1;
	body = xjson_object_new_object();
	json_object_object_add(body, "cwd", xjson_object_new_string(ctx->cwd));
	if (ctx->approval_mode != NULL)
		json_object_object_add(body, "approvalMode",
		    xjson_object_new_string(ctx->approval_mode));
	if (strcmp(action, "load") == 0 && ctx->page_size > 0)
		json_object_object_add(body, "historyPageSize",
		    xjson_object_new_int64(ctx->page_size));
	if (strcmp(action, "load") == 0 && ctx->replay_mode != NULL) {
		json_object_object_add(body, "compactedReplayMode",
		    xjson_object_new_string(ctx->replay_mode));
		json_object_object_add(body, "liveReplayMode",
		    xjson_object_new_string(ctx->replay_mode));
	}
	http_req_init(&req, "POST", path, body, client_id,
	    timeout_restore_ms(ctx, &src, &disabled));
	req.progress = 1;
	if (req.timeout_ms > 0)
		output_verbose(ctx, "%s timeout %lld ms (%s)", action,
		    (long long)req.timeout_ms, timeout_source_name(src));
	else
		output_verbose(ctx, "%s timeout: no timer (%s%s)", action,
		    timeout_source_name(src), disabled ? ", over 2^31-1" : "");
	rc = http_do(ctx, &req, resp);
	if (rc == 0) {
		obj = http_resp_json(resp);
		answer_client_id(obj, new_id, new_id_len);
		if (state_client_put(ctx->state, sid, new_id) == -1)
			output_verbose(ctx, "cannot store the clientId");
		json_object_put(obj);
	}
	json_object_put(body);
	free(path);
	return rc;
}

/*
 * After load or resume, on a terminal (or with -v): what was restored and
 * what to do next, on standard error so that standard output stays the
 * id scripts read.
 */
static void
restore_summary(const struct rctx *ctx, const char *action, json_object *obj)
{
	json_object	*v;
	const char	*sid = json_get_str(obj, "sessionId");
	size_t		 n = 0;
	int		 more;

	if (ctx->json || ctx->quiet || sid == NULL ||
	    (!ctx->verbose && !isatty(STDERR_FILENO)))
		return;
	if ((v = json_get(obj, "compactedReplay", json_type_array)) != NULL)
		n = json_object_array_length(v);
	more = json_object_object_get_ex(obj, "historyHasMore", &v) &&
	    json_object_get_boolean(v);
	fprintf(stderr, "%s: %s %s", getprogname(),
	    json_object_object_get_ex(obj, "attached", &v) &&
	    json_object_get_boolean(v) ? "attached to the live session" :
	    strcmp(action, "load") == 0 ? "loaded" : "resumed", sid);
	if (strcmp(action, "load") == 0)
		fprintf(stderr, ", %zu history events%s", n,
		    more ? " (older ones not replayed)" : "");
	if (json_object_object_get_ex(obj, "hasActivePrompt", &v) &&
	    json_object_get_boolean(v))
		fputs(", a turn is running", stderr);
	fprintf(stderr, "\n%s: next: %s show %s, %s prompt %s TEXT, "
	    "%s follow %s\n", getprogname(), getprogname(), sid,
	    getprogname(), sid, getprogname(), sid);
}

/* load ID / resume ID. */
static int
cmd_restore(struct rctx *ctx, const char *action)
{
	struct http_resp	 resp;
	struct rerr		 e;
	json_object		*obj;
	char			 id[RESTORE_ID_MAX + 1], new_id[RESTORE_ID_MAX + 1];
	int			 attempt = 0, rc = EXIT_OK;

	state_client_get(ctx->state, ctx->session_id, id, sizeof(id));
	while (commands_restore_session(ctx, action, ctx->session_id, id, &resp,
	    new_id, sizeof(new_id)) == -1) {
		output_classify(&resp, &e);
		if (!restore_retry_wait(ctx, &e, &attempt)) {
			rc = output_error(ctx, &resp, &e);
			http_resp_clear(&resp);
			return rc;
		}
		http_resp_clear(&resp);
	}
	if ((obj = http_resp_json(&resp)) == NULL) {
		output_local(&e, "protocol_error", EXIT_FAIL,
		    "the answer is not a JSON object");
		rc = output_fail(ctx, &e);
	} else {
		print_session(ctx, &resp, obj);
		restore_summary(ctx, action, obj);
	}
	json_object_put(obj);
	http_resp_clear(&resp);
	return rc;
}

/* load ID: restore with history replay. */
int
cmd_load(struct rctx *ctx, char **args)
{
	(void)args;
	return cmd_restore(ctx, "load");
}

/* resume ID: restore without replay. */
int
cmd_resume(struct rctx *ctx, char **args)
{
	(void)args;
	return cmd_restore(ctx, "resume");
}

/* prompt ID [TEXT|-]: see prompt.c. */
int
cmd_prompt_args(struct rctx *ctx, char **args)
{
	return cmd_prompt(ctx, args[0]);
}

/* events ID: see events.c. */
int
cmd_events_args(struct rctx *ctx, char **args)
{
	(void)args;
	return cmd_events(ctx);
}

/* A session command printing the answer (body: NULL none, else taken). */
int
commands_call(struct rctx *ctx, const char *method, const char *suffix,
    json_object *b, int print)
{
	struct http_resp	 resp;
	int			 rc;

	if ((rc = session_call(ctx, method, suffix, b, 0, &resp)) == 0 &&
	    (print || ctx->json))
		print_answer(ctx, &resp, print ? print_kv : NULL);
	json_object_put(b);
	http_resp_clear(&resp);
	return rc;
}

/* commands_call() with an empty body (or none). */
static int
simple(struct rctx *ctx, const char *method, const char *suffix, int body,
    int print)
{
	return commands_call(ctx, method, suffix,
	    body ? xjson_object_new_object() : NULL, print);
}

/* cancel ID: POST /session/:id/cancel {}. */
int
cmd_cancel(struct rctx *ctx, char **args)
{
	(void)args;
	return simple(ctx, "POST", "/cancel", 1, 0);
}

/* The cancel of a prompt's ^C or --max-time: no answer printed. */
int
commands_cancel(struct rctx *ctx)
{
	struct http_resp	 resp;
	json_object		*b = xjson_object_new_object();
	int			 rc;

	rc = session_call(ctx, "POST", "/cancel", b, 0, &resp);
	json_object_put(b);
	http_resp_clear(&resp);
	return rc;
}

/* heartbeat ID: print the answer. */
int
cmd_heartbeat(struct rctx *ctx, char **args)
{
	(void)args;
	return simple(ctx, "POST", "/heartbeat", 1, 1);
}

/* One pending interaction for people, with the command that answers it. */
static void
print_interaction(const struct rctx *ctx, json_object *it)
{
	json_object *action = json_get_obj(it, "action");
	const char *kind = json_get_str(it, "kind"), *id = json_get_str(it, "requestId");
	const char *title = json_get_str(action, "title"), *type = json_get_str(action, "type");

	if (id == NULL)
		return;
	if (title == NULL)
		title = json_get_str(it, "title");
	printf("pending %s %s: %s%s%s%s\n", kind != NULL ? kind : "interaction", id,
	    title != NULL ? title : "(no title)", type != NULL ? " (" : "",
	    type != NULL ? type : "", type != NULL ? ")" : "");
	printf("  answer: %s permission %s %s allow|deny\n", getprogname(),
	    ctx->session_id, id);
}

/* status's answer: key/value lines, then each pending request. */
static void
print_status(const struct rctx *ctx, json_object *obj)
{
	json_object *list = NULL;

	if (json_object_object_get_ex(obj, "pendingInteractions", &list))
		json_object_get(list);
	json_object_object_del(obj, "pendingInteractions");
	human_keyvalue(obj);
	if (list != NULL && json_object_is_type(list, json_type_array))
		for (size_t i = 0; i < json_object_array_length(list); i++)
			print_interaction(ctx, json_object_array_get_idx(list, i));
	json_object_put(list);
}

/* status ID: print the live status, and how to answer what it waits for. */
int
cmd_status(struct rctx *ctx, char **args)
{
	struct http_resp	 resp;
	int			 rc;

	(void)args;
	if ((rc = session_call(ctx, "GET", "/status", NULL, 0, &resp)) == 0)
		print_answer(ctx, &resp, print_status);
	http_resp_clear(&resp);
	return rc;
}

/* detach / close: 204 or 404 is done; the stored clientId is forgotten. */
static int
forget(struct rctx *ctx, const char *method, const char *suffix)
{
	struct http_resp	 resp;
	int			 rc;

	if ((rc = session_call(ctx, method, suffix, NULL, 1, &resp)) == 0) {
		if (resp.status == 404)
			output_verbose(ctx, "not live (404): nothing to do");
		if (ctx->json)
			print_done(ctx, &resp);
		state_client_put(ctx->state, ctx->session_id, NULL);
	}
	http_resp_clear(&resp);
	return rc;
}

/* detach ID: only with a stored clientId. */
int
cmd_detach(struct rctx *ctx, char **args)
{
	char	id[RESTORE_ID_MAX + 1];

	(void)args;
	state_client_get(ctx->state, ctx->session_id, id, sizeof(id));
	if (id[0] == '\0') {
		/* As the SDK: without a clientId there is nothing to detach. */
		output_verbose(ctx, "no clientId stored: nothing to detach");
		return EXIT_OK;
	}
	return forget(ctx, "POST", "/detach");
}

/* close ID: DELETE /session/:id. */
int
cmd_close(struct rctx *ctx, char **args)
{
	(void)args;
	return forget(ctx, "DELETE", "");
}
