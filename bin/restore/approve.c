/* SPDX-License-Identifier: ISC */
/*
 * approve.c: what a prompt shows beyond the agent's text, and the answers
 * to the agent's permission requests.
 *
 * With -v, thoughts and tool calls go to stderr as they stream.  A
 * permission_request of one of our prompts is answered by --approve: all
 * (allow), none (deny) or ask (y/n on the terminal; without one it is
 * none, so that cron never hangs).  The permission command answers one
 * request from another process: it finds the request's options in the
 * session's status (pendingInteractions), picks the allow or reject
 * option by its ACP kind, and posts the answer.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "restore.h"

int
approve_parse(const char *s)
{
	if (strcmp(s, "ask") == 0)
		return APPROVE_ASK;
	if (strcmp(s, "all") == 0)
		return APPROVE_ALL;
	if (strcmp(s, "none") == 0)
		return APPROVE_NONE;
	return -1;
}

/* The optionId of the first option of the wanted ACP kind, or NULL. */
static const char *
pick_option(json_object *data, int allow)
{
	static const char *const kinds[2][2] = {
		{ "reject_once", "reject_always" },
		{ "allow_once", "allow_always" },
	};
	json_object *options, *o;
	const char *k;

	if (!json_object_object_get_ex(data, "options", &options) ||
	    !json_object_is_type(options, json_type_array))
		return NULL;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < json_object_array_length(options); i++) {
			o = json_object_array_get_idx(options, i);
			if ((k = json_get_str(o, "kind")) != NULL &&
			    strcmp(k, kinds[allow != 0][pass]) == 0)
				return json_get_str(o, "optionId");
		}
	return NULL;
}

/* POST /session/SID/permission/REQ {outcome}; option_id NULL: cancelled. */
static int
send_answer(struct rctx *ctx, const char *sid, const char *client_id,
    const char *req_id, const char *option_id, struct http_resp *resp)
{
	json_object *body = json_object_new_object(), *o = json_object_new_object();
	struct http_req req;
	enum timeout_source src;
	char *suffix = NULL, *path = NULL;
	int rc = -1;

	json_object_object_add(o, "outcome", json_object_new_string(
	    option_id != NULL ? "selected" : "cancelled"));
	if (option_id != NULL)
		json_object_object_add(o, "optionId", json_object_new_string(option_id));
	json_object_object_add(body, "outcome", o);
	if (asprintf(&suffix, "/permission/%s", req_id) != -1 &&
	    (path = http_session_path(sid, suffix)) != NULL) {
		http_req_init(&req, "POST", path, body, client_id,
		    timeout_fetch_ms(ctx, &src));
		rc = http_do(ctx, &req, resp) == 0 && http_ok(resp) ? 0 : -1;
	}
	free(suffix);
	free(path);
	json_object_put(body);
	return rc;
}

/* What the tool call would do, for people: its title or its kind. */
static const char *
tool_title(json_object *tool)
{
	const char *t = json_get_str(tool, "title");

	return t != NULL ? t : json_get_str(tool, "kind") != NULL ?
	    json_get_str(tool, "kind") : "a tool call";
}

/* Ask y/n on the terminal; 1 yes, 0 no (also: no terminal, EOF). */
static int
ask_tty(json_object *data)
{
	char line[64];
	FILE *tty;
	int yes;

	if ((tty = fopen("/dev/tty", "r+")) == NULL)
		return 0;
	fprintf(tty, "%s: the agent asks to run: %s\nAllow? [y/N] ",
	    getprogname(), tool_title(json_get_obj(data, "toolCall")));
	fflush(tty);
	yes = fgets(line, sizeof(line), tty) != NULL &&
	    (line[0] == 'y' || line[0] == 'Y');
	fclose(tty);
	return yes;
}

void
approve_request(struct rctx *ctx, const char *client_id, json_object *env)
{
	json_object *data = json_get_obj(env, "data");
	const char *req_id = json_get_str(data, "requestId"), *opt;
	struct http_resp resp;
	int allow;

	if (req_id == NULL || ctx->session_id == NULL)
		return;
	allow = ctx->approve == APPROVE_ALL ||
	    (ctx->approve == APPROVE_ASK && ask_tty(data));
	opt = pick_option(data, allow);
	output_verbose(ctx, "permission %s: %s %s", req_id,
	    allow ? "allowing" : "denying", tool_title(json_get_obj(data, "toolCall")));
	memset(&resp, 0, sizeof(resp));
	if (send_answer(ctx, ctx->session_id, client_id, req_id, opt, &resp) == -1)
		output_verbose(ctx, "permission %s: not taken (HTTP %ld)", req_id,
		    resp.status);
	http_resp_clear(&resp);
}

void
approve_show_update(const struct rctx *ctx, json_object *update)
{
	const char *kind = json_get_str(update, "sessionUpdate"), *t, *st;

	if (!ctx->verbose || kind == NULL || ctx->json)
		return;
	if (strcmp(kind, "agent_thought_chunk") == 0 &&
	    (t = json_get_str(json_get_obj(update, "content"), "text")) != NULL) {
		fputs(t, stderr);
		fflush(stderr);
	} else if (strcmp(kind, "tool_call") == 0)
		output_verbose(ctx, "tool call: %s (%s)", tool_title(update),
		    (st = json_get_str(update, "status")) != NULL ? st : "pending");
	else if (strcmp(kind, "tool_call_update") == 0 &&
	    (st = json_get_str(update, "status")) != NULL)
		output_verbose(ctx, "tool call %s: %s",
		    json_get_str(update, "toolCallId") != NULL ?
		    json_get_str(update, "toolCallId") : "?", st);
}

/*
 * The pending interaction req_id of the session, from its status'
 * pendingInteractions (caller puts): one bounded request, so a session
 * whose event ring no longer holds the request's event (a load with
 * history, a long turn) is answered as quickly as a fresh one.
 */
static json_object *
find_request(struct rctx *ctx, const char *client_id, const char *req_id,
    struct rerr *e)
{
	json_object *answer, *list, *it, *found = NULL;
	struct http_resp resp;
	struct http_req req;
	enum timeout_source src;
	const char *id;
	char *path;

	memset(&resp, 0, sizeof(resp));
	if ((path = http_session_path(ctx->session_id, "/status")) == NULL) {
		output_local(e, "internal_error", EXIT_FAIL, "out of memory");
		return NULL;
	}
	http_req_init(&req, "GET", path, NULL, client_id, timeout_fetch_ms(ctx, &src));
	if (http_do(ctx, &req, &resp) == -1 || !http_ok(&resp)) {
		output_classify(&resp, e);
		free(path);
		http_resp_clear(&resp);
		return NULL;
	}
	free(path);
	answer = http_resp_json(&resp);
	http_resp_clear(&resp);
	if (answer != NULL && json_object_object_get_ex(answer, "pendingInteractions",
	    &list) && json_object_is_type(list, json_type_array))
		for (size_t i = 0; found == NULL &&
		    i < json_object_array_length(list); i++) {
			it = json_object_array_get_idx(list, i);
			if ((id = json_get_str(it, "requestId")) != NULL &&
			    strcmp(id, req_id) == 0)
				found = json_object_get(it);
		}
	json_object_put(answer);
	if (found == NULL)
		output_local(e, "permission_not_found", EXIT_NOTFOUND,
		    "no pending permission request %s on session %s", req_id,
		    ctx->session_id);
	return found;
}

/* permission ID REQUEST-ID allow|deny: returns the exit code. */
int
cmd_permission(struct rctx *ctx, char **args)
{
	char client_id[RESTORE_ID_MAX + 1];
	const char *opt = NULL;
	struct http_resp resp;
	json_object *env;
	struct rerr e;
	int allow, rc;

	if (args[0] == NULL || args[1] == NULL ||
	    ((allow = strcmp(args[1], "allow") == 0) == 0 && strcmp(args[1], "deny") != 0)) {
		output_local(&e, "bad_request", EXIT_USAGE,
		    "permission: usage: permission ID REQUEST-ID allow|deny");
		return output_fail(ctx, &e);
	}
	state_client_get(ctx->state, ctx->session_id, client_id, sizeof(client_id));
	if ((env = find_request(ctx, client_id, args[0], &e)) == NULL)
		return output_fail(ctx, &e);
	opt = pick_option(env, allow);
	memset(&resp, 0, sizeof(resp));
	rc = EXIT_OK;
	if (send_answer(ctx, ctx->session_id, client_id, args[0], opt, &resp) == -1) {
		output_classify(&resp, &e);
		if (resp.status == 404) {
			e.exit_code = EXIT_NOTFOUND;
			strlcpy(e.message, "the request is no longer pending "
			    "(answered, cancelled or timed out)", sizeof(e.message));
		}
		rc = output_error(ctx, &resp, &e);
	} else if (ctx->json)
		puts("{}");
	json_object_put(env);
	http_resp_clear(&resp);
	return rc;
}
