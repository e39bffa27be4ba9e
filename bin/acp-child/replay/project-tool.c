/* SPDX-License-Identifier: ISC */
/*
 * project-tool.c: tool calls and tool results of the replay projection
 * (tool_call, tool_call_update, plan for todo_write, failed calls whose
 * result is missing from the saved history).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "project-int.h"
#include "xmalloc.h"

#define MISSING_RESULT "Tool result missing from saved history; the previous " \
	"run likely ended before this tool completed."

const char *
project_call_id(struct pctx *x, const char *id, size_t idx, char buf[128])
{
	char uuid[64];

	if (id != NULL && *id != '\0')
		return id;
	snprintf(uuid, sizeof uuid, "%s", json_object_get_string(x->uuid));
	snprintf(buf, 128, "qwen-replay-tool:%s:%zu", uuid, idx);
	return buf;
}

/* Tool call arguments through json-c. */
static const char *
jsonc_arg_str(void *o, const char *key)
{
	return json_get_str(o, key);
}

static int
jsonc_arg_num(void *o, const char *key, double *v)
{
	json_object *n = NULL;

	json_object_object_get_ex(o, key, &n);
	if (!json_object_is_type(n, json_type_int) && !json_object_is_type(n, json_type_double))
		return -1;
	*v = json_object_get_double(n);
	return 0;
}

static int
jsonc_arg_true(void *o, const char *key)
{
	json_object *b = json_get(o, key, json_type_boolean);

	return b != NULL && json_object_get_boolean(b);
}

/* The tool's name and provenance in an update's _meta (new object). */
json_object *
project_tool_meta(const char *name)
{
	json_object *meta = xjson_object_new_object();
	const char *prov, *server;
	size_t n;

	prov = project_provenance(name, &server, &n);
	json_object_object_add(meta, "toolName", xjson_object_new_string(name));
	json_object_object_add(meta, "provenance", xjson_object_new_string(prov));
	if (server != NULL)
		json_object_object_add(meta, "serverId",
		    xjson_object_new_string_len(server, (int)n));
	return meta;
}

/* A tool_call update for a functionCall part (its name non-empty). */
int
project_tool_call(struct pctx *x, json_object *fc, size_t idx)
{
	json_object *args = json_get(fc, "args", json_type_object), *u, *loc, *locs, *off;
	const char *id = json_get_str(fc, "id"), *name = json_get_str(fc, "name");
	const char *kind, *path;
	struct project_args a;
	char buf[128], title[PROJECT_TITLE_MAX];
	double line;

	if (strcmp(name, "todo_write") == 0)
		return 0;			/* its result becomes a plan */
	if (args == NULL)
		args = xjson_object_new_object();
	else
		json_object_get(args);
	a.str = jsonc_arg_str;
	a.num = jsonc_arg_num;
	a.istrue = jsonc_arg_true;
	a.arg = args;
	id = project_tool_start(x, name, id, idx, &a, buf, title, &kind, &path, &line);
	u = project_update("tool_call");
	json_object_object_add(u, "toolCallId", xjson_object_new_string(id));
	json_object_object_add(u, "status", xjson_object_new_string("in_progress"));
	json_object_object_add(u, "title", xjson_object_new_string(title));
	json_object_object_add(u, "content", xjson_object_new_array());
	locs = xjson_object_new_array();
	if (path != NULL) {
		loc = xjson_object_new_object();
		json_object_object_add(loc, "path", xjson_object_new_string(path));
		off = NULL;
		if (line >= 0)
			json_object_object_get_ex(args, "offset", &off);
		json_object_object_add(loc, "line", json_object_get(off));
		json_object_array_add(locs, loc);
	}
	json_object_object_add(u, "locations", locs);
	json_object_object_add(u, "kind", xjson_object_new_string(kind));
	json_object_object_add(u, "rawInput", args);
	return project_emit(x, u, project_tool_meta(name));
}

void
project_pending_add(struct pctx *x, const char *id, const char *name)
{
	json_object *pe = xjson_object_new_object();

	json_object_object_add(pe, "id", xjson_object_new_string(id));
	json_object_object_add(pe, "name", xjson_object_new_string(name));
	json_object_object_add(pe, "pos", xjson_object_new_int64((int64_t)x->pos));
	json_object_object_add(pe, "uuid", json_object_get(x->uuid));
	json_object_object_add(pe, "ts", xjson_object_new_int64(x->ts));
	json_object_array_add(x->pending, pe);
}

json_object *
project_take_pending(struct pctx *x, const char *id, const char *name)
{
	size_t i, n = json_object_array_length(x->pending), hit = n, hits = 0;
	json_object *pe;
	const char *v;

	for (i = 0; id != NULL && i < n && hit == n; i++)
		if ((v = json_get_str(json_object_array_get_idx(x->pending, i), "id")) &&
		    strcmp(v, id) == 0)
			hit = i;
	for (i = 0; id == NULL && name != NULL && i < n; i++)
		if ((v = json_get_str(json_object_array_get_idx(x->pending, i), "name")) &&
		    strcmp(v, name) == 0) {
			hit = i;
			hits++;
		}
	if (hit == n || (id == NULL && hits != 1))
		return NULL;
	pe = json_object_get(json_object_array_get_idx(x->pending, hit));
	json_object_array_del_idx(x->pending, hit, 1);
	return pe;
}

/* Whether a call is pending under id. */
static int
pending_has(struct pctx *x, const char *id)
{
	size_t i, n = json_object_array_length(x->pending);
	const char *v;

	for (i = 0; i < n; i++)
		if ((v = json_get_str(json_object_array_get_idx(x->pending, i), "id")) &&
		    strcmp(v, id) == 0)
			return 1;
	return 0;
}

const char *
project_alloc_id(struct pctx *x, const char *cand, int reuse)
{
	json_object *v;
	char *id;
	int n;

	if ((!reuse || !pending_has(x, cand)) &&
	    json_object_object_get_ex(x->used, cand, NULL)) {
		for (n = 2;; n++) {
			xasprintf(&id, "%s:%d", cand, n);
			if (!json_object_object_get_ex(x->used, id, NULL))
				break;
			free(id);
		}
		v = xjson_object_new_string(id);
		free(id);
	} else
		v = xjson_object_new_string(cand);
	json_object_object_add(x->used, json_object_get_string(v), v);
	return json_object_get_string(v);
}

const char *
project_result_call(struct pctx *x, const char *id, const char *name, json_object **pe)
{
	char buf[128];

	if (id != NULL) {
		id = project_alloc_id(x, id, 1);
		*pe = project_take_pending(x, id, NULL);
		return id;
	}
	if ((*pe = project_take_pending(x, NULL, name)) != NULL)
		return json_get_str(*pe, "id");
	return project_alloc_id(x, project_result_id(x, buf), 0);
}

/* A string member as a new reference, or a new empty string. */
static json_object *
str_ref(json_object *obj, const char *key)
{
	json_object *v = json_get(obj, key, json_type_string);

	return v != NULL ? json_object_get(v) : xjson_object_new_string("");
}

/* {"type":"content","content":{"type":"text","text":text}} (takes text). */
static json_object *
text_block(json_object *text)
{
	json_object *b = xjson_object_new_object(), *inner = xjson_object_new_object();

	json_object_object_add(inner, "type", xjson_object_new_string("text"));
	json_object_object_add(inner, "text", text);
	json_object_object_add(b, "type", xjson_object_new_string("content"));
	json_object_object_add(b, "content", inner);
	return b;
}

/* The text of a functionResponse's response: output, error, or the
   whole payload encoded (new object). */
static json_object *
response_text(struct pctx *x, json_object *resp)
{
	json_object *v;
	struct jbuf b;

	if ((v = json_get(resp, "output", json_type_string)) != NULL ||
	    (v = json_get(resp, "error", json_type_string)) != NULL)
		return json_object_get(v);
	memset(&b, 0, sizeof b);
	jsonw_value(&b, resp);
	if (b.oom)
		x->oom = 1;
	v = xjson_object_new_string_len(b.p ? b.p : "", (int)b.len);
	jbuf_free(&b);
	return v;
}

/* The content blocks of a tool result, as the agent builds them: a diff
   when the display is one, else the error's message, else the record's
   text parts and response texts. */
static json_object *
result_content(struct pctx *x, json_object *r, json_object *tcr, json_object *display)
{
	json_object *arr = xjson_object_new_array(), *b, *parts, *part, *v, *resp;
	const char *path;
	size_t i;

	if (json_object_is_type(display, json_type_object) &&
	    json_object_object_get_ex(display, "fileName", NULL) &&
	    json_object_object_get_ex(display, "newContent", NULL)) {
		b = xjson_object_new_object();
		if ((path = json_get_str(display, "filePath")) == NULL &&
		    (path = json_get_str(display, "fileName")) == NULL)
			path = "";
		json_object_object_add(b, "type", xjson_object_new_string("diff"));
		json_object_object_add(b, "path", xjson_object_new_string(path));
		json_object_object_add(b, "oldText", str_ref(display, "originalContent"));
		json_object_object_add(b, "newText", str_ref(display, "newContent"));
		json_object_array_add(arr, b);
		return arr;
	}
	if ((v = json_get(tcr, "error", json_type_object)) != NULL &&
	    (v = json_get(v, "message", json_type_string)) != NULL &&
	    json_object_get_string_len(v) > 0) {
		json_object_array_add(arr, text_block(json_object_get(v)));
		return arr;
	}
	parts = json_get(json_get(r, "message", json_type_object), "parts", json_type_array);
	for (i = 0; parts && i < json_object_array_length(parts); i++) {
		part = json_object_array_get_idx(parts, i);
		if ((v = json_get(part, "text", json_type_string)) != NULL &&
		    json_object_get_string_len(v) > 0)
			json_object_array_add(arr, text_block(json_object_get(v)));
		resp = json_get(json_get(part, "functionResponse", json_type_object),
		    "response", json_type_object);
		if (resp != NULL)
			json_object_array_add(arr, text_block(response_text(x, resp)));
	}
	return arr;
}

/* The first functionResponse part's string member key (non-empty when
   nonempty is set), or NULL. */
static const char *
response_member(json_object *r, const char *key, int nonempty)
{
	json_object *msg = json_get(r, "message", json_type_object);
	json_object *parts = json_get(msg, "parts", json_type_array), *fr;
	const char *s;
	size_t i;

	for (i = 0; parts && i < json_object_array_length(parts); i++)
		if ((fr = json_get(json_object_array_get_idx(parts, i),
		    "functionResponse", json_type_object)) != NULL &&
		    (s = json_get_str(fr, key)) != NULL && (!nonempty || *s != '\0'))
			return s;
	return NULL;
}

const char *
project_result_id(struct pctx *x, char buf[128])
{
	snprintf(buf, 128, "qwen-replay-tool:%.64s:result", json_object_get_string(x->uuid));
	return buf;
}

/* A subagent's token counts (its execution summary), as the usage of its
   call: nothing when the summary holds none. */
static int
task_usage(struct pctx *x, json_object *display, const char *id)
{
	static const char *const keys[][2] = {
		{ "inputTokens", "promptTokenCount" },
		{ "outputTokens", "candidatesTokenCount" },
		{ "thoughtTokens", "thoughtsTokenCount" },
		{ "cachedTokens", "cachedContentTokenCount" },
		{ "totalTokens", "totalTokenCount" },
		{ NULL, NULL }
	};
	json_object *sum = json_get(display, "executionSummary", json_type_object);
	json_object *usage = xjson_object_new_object(), *v;
	int i, rc = 0;

	for (i = 0; sum != NULL && keys[i][0] != NULL; i++)
		if (json_object_object_get_ex(sum, keys[i][0], &v) &&
		    (json_object_is_type(v, json_type_int) ||
		    json_object_is_type(v, json_type_double)))
			json_object_object_add(usage, keys[i][1], json_object_get(v));
	if (json_object_object_length(usage) > 0)
		rc = project_usage(x, usage, id);
	json_object_put(usage);
	return rc;
}

/* tool_result records: tool_call_update (or plan for todo_write). */
int
project_tool_result(struct pctx *x, json_object *r)
{
	json_object *tcr = json_get(r, "toolCallResult", json_type_object);
	json_object *display = NULL, *u, *pe, *v, *meta;
	const char *id = NULL, *name = response_member(r, "name", 0), *st, *dt;
	int failed, rc, has_display = 0;

	if (name == NULL)
		name = "";
	if (tcr != NULL) {
		if ((id = json_get_str(tcr, "callId")) != NULL && *id == '\0')
			id = NULL;
		has_display = json_object_object_get_ex(tcr, "resultDisplay", &display);
	}
	if (id == NULL)
		id = response_member(r, "id", 1);
	id = project_result_call(x, id, *name ? name : NULL, &pe);
	if (strcmp(name, "todo_write") == 0) {
		rc = project_plan(x, display, id);
		json_object_put(pe);
		return rc;
	}
	st = tcr ? json_get_str(tcr, "status") : NULL;
	failed = (st != NULL && strcmp(st, "success") != 0) ||
	    (tcr && json_object_object_get_ex(tcr, "error", &v) && v != NULL);
	u = project_update("tool_call_update");
	json_object_object_add(u, "toolCallId", xjson_object_new_string(id));
	json_object_object_add(u, "status", xjson_object_new_string(failed ?
	    "failed" : "completed"));
	json_object_object_add(u, "content", result_content(x, r, tcr, display));
	meta = project_tool_meta(name);
	if ((v = json_get(tcr, "artifacts", json_type_array)) != NULL &&
	    json_object_array_length(v) > 0)
		json_object_object_add(meta, "artifacts", json_object_get(v));
	rc = project_emit_raw(x, u, meta, has_display, display);
	if (rc == 0 && (dt = json_get_str(display, "type")) != NULL &&
	    strcmp(dt, "task_execution") == 0)
		rc = task_usage(x, display, id);
	json_object_put(pe);
	return rc;
}

/* Every call still pending at the end of the window failed, dated and
   attributed to the record of its call. */
int
project_fail_pending(struct pctx *x)
{
	json_object *pe, *u, *content, *v;
	const char *name;
	size_t i;

	for (i = 0; i < json_object_array_length(x->pending); i++) {
		pe = json_object_array_get_idx(x->pending, i);
		json_object_object_get_ex(pe, "pos", &v);
		x->pos = (size_t)json_object_get_int64(v);
		json_object_object_get_ex(pe, "uuid", &v);
		json_object_put(x->uuid);
		x->uuid = json_object_get(v);
		json_object_object_get_ex(pe, "ts", &v);
		project_set_ts(x, json_object_get_int64(v));
		name = json_get_str(pe, "name");
		u = project_update("tool_call_update");
		json_object_object_add(u, "toolCallId",
		    xjson_object_new_string(json_get_str(pe, "id")));
		json_object_object_add(u, "status", xjson_object_new_string("failed"));
		content = xjson_object_new_array();
		json_object_array_add(content,
		    text_block(xjson_object_new_string(MISSING_RESULT)));
		json_object_object_add(u, "content", content);
		if (project_emit(x, u, project_tool_meta(name)) == -1)
			return -1;
	}
	return 0;
}
