/* SPDX-License-Identifier: ISC */
/*
 * project-system.c: system records of the replay projection, as the agent
 * replays them: a slash command's output, a cancelled turn
 * (promptCancelled), a finished background task's notice, a subagent's
 * readiness; and the backgroundTurn a background notification's turn
 * carries.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "project-int.h"
#include "xmalloc.h"

char *
project_markdown_breaks(const char *s)
{
	size_t n = 0, i;
	char *out, *o;

	for (i = 0; s[i] != '\0'; i++)
		n += s[i] == '\n' ? 3 : 1;
	o = out = xmalloc(n + 1);
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] == '\n') {
			*o++ = ' ';
			*o++ = ' ';
		}
		*o++ = s[i];
	}
	*o = '\0';
	return out;
}

const char *const project_slash_meta[][2] = {
	{ "contextCompression", "o" }, { "contextCompressionNotice", "o" },
	{ "sessionArtifacts", "a" }, { NULL, NULL }
};

/* One output item of a slash command's result: its text with Markdown
   line breaks, source "slash_command" and the item's compression note. */
static int
slash_item(struct pctx *x, json_object *item)
{
	json_object *meta, *v;
	const char *s = json_get_str(item, "text");
	char *text;
	int i, rc;

	if (s == NULL)
		return 0;
	meta = xjson_object_new_object();
	json_object_object_add(meta, "source", xjson_object_new_string("slash_command"));
	for (i = 0; project_slash_meta[i][0] != NULL; i++)
		if ((v = json_get(item, project_slash_meta[i][0], project_slash_meta[i][1][0] == 'o' ?
		    json_type_object : json_type_array)) != NULL)
			json_object_object_add(meta, project_slash_meta[i][0], json_object_get(v));
	text = project_markdown_breaks(s);
	rc = project_chunk(x, "agent_message_chunk", text, meta);
	free(text);
	return rc;
}

/* A finite number member, or -1 when key is absent, 0 when it is no number. */
static int
number_member(json_object *o, const char *key, double *v)
{
	json_object *n = NULL;

	if (!json_object_object_get_ex(o, key, &n))
		return -1;
	if (!json_object_is_type(n, json_type_int) && !json_object_is_type(n, json_type_double))
		return 0;
	*v = json_object_get_double(n);
	return isfinite(*v) ? 1 : 0;
}

/* A cancelled turn: an empty discrete agent chunk with the prompt's id,
   when it was cancelled and how long it had run. */
static int
cancelled_turn(struct pctx *x, json_object *sp)
{
	json_object *meta, *pc, *at;
	const char *pid = json_get_str(sp, "promptId");
	double cancelled, started;
	char num[48];
	int hs;

	if (number_member(sp, "cancelledAt", &cancelled) != 1 || pid == NULL ||
	    *pid == '\0' || (hs = number_member(sp, "startedAt", &started)) == 0)
		return 0;
	if (hs == -1)
		started = cancelled;
	json_object_object_get_ex(sp, "cancelledAt", &at);
	pc = xjson_object_new_object();
	json_object_object_add(pc, "promptId", xjson_object_new_string(pid));
	json_object_object_add(pc, "cancelledAt", json_object_get(at));
	project_num(num, sizeof num, cancelled - started > 0 ? cancelled - started : 0);
	json_object_object_add(pc, "elapsedMs", xjson_object_new_double_s(
	    cancelled - started > 0 ? cancelled - started : 0, num));
	meta = xjson_object_new_object();
	json_object_object_add(meta, "qwenDiscreteMessage", xjson_object_new_boolean(1));
	json_object_object_add(meta, "promptCancelled", pc);
	return project_chunk(x, "agent_message_chunk", "", meta);
}

/* A finished background task's notice: a discrete agent chunk. */
static int
background_done(struct pctx *x, json_object *sp)
{
	json_object *meta, *v;
	const char *s = json_get_str(sp, "displayText");

	if (s == NULL)
		return 0;
	meta = xjson_object_new_object();
	json_object_object_add(meta, "source", xjson_object_new_string("background_task_completed"));
	json_object_object_add(meta, "qwenDiscreteMessage", xjson_object_new_boolean(1));
	if ((v = json_get(sp, "backgroundTask", json_type_object)) != NULL)
		json_object_object_add(meta, "backgroundTask", json_object_get(v));
	return project_chunk(x, "agent_message_chunk", s, meta);
}

/* A subagent's session is ready: an update of its pending call. */
static int
subagent_ready(struct pctx *x, json_object *sp)
{
	json_object *ready = json_get(sp, "subagentSessionReady", json_type_boolean), *u, *meta;
	const char *id = json_get_str(sp, "callId"), *v;
	size_t i, n = json_object_array_length(x->pending);

	if (id == NULL || *id == '\0' || ready == NULL)
		return 0;
	for (i = 0; i < n; i++)
		if ((v = json_get_str(json_object_array_get_idx(x->pending, i), "id")) != NULL &&
		    strcmp(v, id) == 0)
			break;
	if (i == n)
		return 0;
	u = project_update("tool_call_update");
	json_object_object_add(u, "toolCallId", xjson_object_new_string(id));
	meta = xjson_object_new_object();
	json_object_object_add(meta, "subagentSessionReady", json_object_get(ready));
	return project_emit(x, u, meta);
}

int
project_system(struct pctx *x, json_object *r)
{
	json_object *sp = json_get(r, "systemPayload", json_type_object);
	json_object *items;
	const char *sub = json_get_str(r, "subtype"), *s;
	size_t i;

	if (sub == NULL || sp == NULL)
		return 0;
	if (strcmp(sub, "slash_command") == 0 && (s = json_get_str(sp, "phase")) != NULL &&
	    strcmp(s, "result") == 0 &&
	    (items = json_get(sp, "outputHistoryItems", json_type_array)) != NULL) {
		for (i = 0; i < json_object_array_length(items); i++)
			if (slash_item(x, json_object_array_get_idx(items, i)) == -1)
				return -1;
	} else if (strcmp(sub, "turn_result") == 0 &&
	    (s = json_get_str(sp, "state")) != NULL && strcmp(s, "cancelled") == 0)
		return cancelled_turn(x, sp);
	else if (strcmp(sub, "background_task_completed") == 0)
		return background_done(x, sp);
	else if (strcmp(sub, "agent_session_ready") == 0)
		return subagent_ready(x, sp);
	return 0;
}

json_object *
project_background_turn(json_object *r)
{
	static const char *const kinds[] = { "agent", "monitor", "shell", "workflow",
	    "peer", NULL };
	static const char *const opt[] = { "toolUseId", "sourceTurnId", "label", NULL };
	json_object *b = json_get(r, "backgroundTurn", json_type_object), *o, *v;
	const char *turn = json_get_str(b, "turnId"), *task = json_get_str(b, "taskId");
	const char *kind = json_get_str(b, "kind");
	double at;
	int k;

	if (turn == NULL || *turn == '\0' || strlen(turn) > 256 || task == NULL ||
	    *task == '\0' || strlen(task) > 256 || kind == NULL ||
	    number_member(b, "startedAt", &at) != 1 || at < 0)
		return NULL;
	for (k = 0; kinds[k] != NULL && strcmp(kinds[k], kind) != 0; k++)
		;
	if (kinds[k] == NULL)
		return NULL;
	for (k = 0; opt[k] != NULL; k++)
		if (json_object_object_get_ex(b, opt[k], &v) &&
		    (!json_object_is_type(v, json_type_string) ||
		    json_object_get_string_len(v) > 4096))
			return NULL;
	o = xjson_object_new_object();
	json_object_object_add(o, "turnId", json_object_get(json_get(b, "turnId", json_type_string)));
	json_object_object_add(o, "taskId", json_object_get(json_get(b, "taskId", json_type_string)));
	json_object_object_add(o, "kind", json_object_get(json_get(b, "kind", json_type_string)));
	json_object_object_get_ex(b, "startedAt", &v);
	json_object_object_add(o, "startedAt", json_object_get(v));
	for (k = 0; opt[k] != NULL; k++)
		if ((v = json_get(b, opt[k], json_type_string)) != NULL)
			json_object_object_add(o, opt[k], json_object_get(v));
	return o;
}
