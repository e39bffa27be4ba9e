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

#define MISSING_RESULT "Tool result missing from saved history; the tool call " \
	"did not record a result before the session ended."

const char *
pj_tool_kind(const char *name)
{
	static const char *const map[][2] = {
		{ "read_file", "read" }, { "read_many_files", "read" },
		{ "list_directory", "read" }, { "edit", "edit" },
		{ "write_file", "edit" }, { "run_shell_command", "execute" },
		{ "grep_search", "search" }, { "glob", "search" },
		{ "web_fetch", "fetch" }, { "web_search", "fetch" },
		{ "todo_write", "think" }, { NULL, NULL }
	};
	int i;

	for (i = 0; map[i][0] != NULL; i++)
		if (strcmp(name, map[i][0]) == 0)
			return map[i][1];
	return "other";
}

const char *const pj_path_keys[] = { "absolute_path", "file_path", "path", NULL };
const char *const pj_title_keys[] = { "absolute_path", "file_path", "path",
    "command", "pattern", "url", NULL };

const char *
pj_call_id(struct pctx *x, const char *id, size_t idx, char buf[128])
{
	char uuid[64];

	if (id != NULL && *id != '\0')
		return id;
	snprintf(uuid, sizeof uuid, "%s", json_object_get_string(x->uuid));
	snprintf(buf, 128, "qwen-replay-tool:%s:%zu", uuid, idx);
	return buf;
}

/* A tool_call update for a functionCall part. */
int
pj_tool_call(struct pctx *x, json_object *fc, size_t idx)
{
	json_object *args = json_get(fc, "args", json_type_object), *u, *loc, *locs;
	const char *id = json_get_str(fc, "id"), *name = json_get_str(fc, "name"), *v = NULL;
	char buf[128], title[256];
	int i;

	if (name == NULL)
		name = "tool";
	if (strcmp(name, "todo_write") == 0)
		return 0;			/* its result becomes a plan */
	id = pj_call_id(x, id, idx, buf);
	u = pj_update("tool_call");
	json_object_object_add(u, "toolCallId", xjson_object_new_string(id));
	for (i = 0; args && pj_title_keys[i] != NULL && v == NULL; i++)
		v = json_get_str(args, pj_title_keys[i]);
	snprintf(title, sizeof title, "%s%s%.200s", name, v ? ": " : "", v ? v : "");
	json_object_object_add(u, "title", xjson_object_new_string(title));
	json_object_object_add(u, "kind", xjson_object_new_string(pj_tool_kind(name)));
	json_object_object_add(u, "status", xjson_object_new_string("in_progress"));
	locs = xjson_object_new_array();
	for (i = 0, v = NULL; args && pj_path_keys[i] != NULL && v == NULL; i++)
		v = json_get_str(args, pj_path_keys[i]);
	if (v != NULL) {
		loc = xjson_object_new_object();
		json_object_object_add(loc, "path", xjson_object_new_string(v));
		json_object_array_add(locs, loc);
	}
	json_object_object_add(u, "locations", locs);
	json_object_object_add(u, "rawInput", args ? json_object_get(args) :
	    xjson_object_new_object());
	pj_pending_add(x, id, name);
	return pj_emit(x, u, NULL);
}

void
pj_pending_add(struct pctx *x, const char *id, const char *name)
{
	json_object *pe = xjson_object_new_object();

	json_object_object_add(pe, "id", xjson_object_new_string(id));
	json_object_object_add(pe, "name", xjson_object_new_string(name));
	json_object_object_add(pe, "pos", xjson_object_new_int64((int64_t)x->pos));
	json_object_object_add(pe, "uuid", json_object_get(x->uuid));
	json_object_array_add(x->pending, pe);
}

json_object *
pj_take_pending(struct pctx *x, const char *id, const char *name)
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

/* A todo_write result as a plan update. */
static int
plan_update(struct pctx *x, json_object *display)
{
	json_object *todos = json_get(display, "todos", json_type_array);
	json_object *u = pj_update("plan"), *entries = xjson_object_new_array(), *e, *td;
	const char *s;
	size_t i;

	for (i = 0; todos && i < json_object_array_length(todos); i++) {
		td = json_object_array_get_idx(todos, i);
		e = xjson_object_new_object();
		s = json_get_str(td, "content");
		json_object_object_add(e, "content", xjson_object_new_string(s ? s : ""));
		json_object_object_add(e, "priority", xjson_object_new_string("medium"));
		s = json_get_str(td, "status");
		json_object_object_add(e, "status", xjson_object_new_string(s ? s : "pending"));
		json_object_array_add(entries, e);
	}
	json_object_object_add(u, "entries", entries);
	return pj_emit(x, u, NULL);
}

/* A string member as a new reference, or a new empty string / null. */
static json_object *
str_ref(json_object *obj, const char *key, int null_if_absent)
{
	json_object *v = json_get(obj, key, json_type_string);

	if (v != NULL)
		return json_object_get(v);
	return null_if_absent ? NULL : xjson_object_new_string("");
}

/* The content blocks of a tool result: a diff, or the output/error text. */
static json_object *
result_content(json_object *display, json_object *resp)
{
	json_object *arr = xjson_object_new_array(), *b, *inner, *v, *text = NULL;
	const char *path;

	if (display && json_get_str(display, "fileDiff") != NULL) {
		b = xjson_object_new_object();
		path = json_get_str(display, "filePath");
		if (path == NULL)
			path = json_get_str(display, "fileName");
		json_object_object_add(b, "type", xjson_object_new_string("diff"));
		json_object_object_add(b, "path", xjson_object_new_string(path ? path : ""));
		json_object_object_add(b, "oldText", str_ref(display, "originalContent", 1));
		json_object_object_add(b, "newText", str_ref(display, "newContent", 0));
		json_object_array_add(arr, b);
		return arr;
	}
	if (resp != NULL) {
		text = str_ref(resp, "output", 1);
		if (text == NULL)
			text = str_ref(resp, "error", 1);
		if (text == NULL && (v = json_get(resp, "error", json_type_object)))
			text = str_ref(v, "message", 1);
	}
	if (text == NULL)
		return arr;
	inner = xjson_object_new_object();
	json_object_object_add(inner, "type", xjson_object_new_string("text"));
	json_object_object_add(inner, "text", text);
	b = xjson_object_new_object();
	json_object_object_add(b, "type", xjson_object_new_string("content"));
	json_object_object_add(b, "content", inner);
	json_object_array_add(arr, b);
	return arr;
}

/* The first functionResponse part of a record (borrowed), or NULL. */
static json_object *
function_response(json_object *r)
{
	json_object *msg = json_get(r, "message", json_type_object);
	json_object *parts = json_get(msg, "parts", json_type_array), *fr;
	size_t i;

	for (i = 0; parts && i < json_object_array_length(parts); i++)
		if ((fr = json_get(json_object_array_get_idx(parts, i),
		    "functionResponse", json_type_object)) != NULL)
			return fr;
	return NULL;
}

/* tool_result records: tool_call_update (or plan for todo_write). */
int
pj_tool_result(struct pctx *x, json_object *r)
{
	json_object *tcr = json_get(r, "toolCallResult", json_type_object);
	json_object *fr = function_response(r), *display = NULL, *resp, *u, *pe, *v;
	const char *id = NULL, *name = fr ? json_get_str(fr, "name") : NULL, *st, *dt;
	char buf[128];
	int failed, rc;

	if (tcr != NULL) {
		id = json_get_str(tcr, "callId");
		json_object_object_get_ex(tcr, "resultDisplay", &display);
	}
	if (id == NULL && fr != NULL)
		id = json_get_str(fr, "id");
	resp = json_get(fr, "response", json_type_object);
	pe = pj_take_pending(x, id, name);
	if (id == NULL && pe != NULL)
		id = json_get_str(pe, "id");
	dt = display ? json_get_str(display, "type") : NULL;
	if ((name && strcmp(name, "todo_write") == 0) || (dt && strcmp(dt, "todo_list") == 0)) {
		json_object_put(pe);
		return plan_update(x, display);
	}
	if (id == NULL) {
		snprintf(buf, sizeof buf, "qwen-replay-tool:%.64s:0",
		    json_object_get_string(x->uuid));
		id = buf;
	}
	st = tcr ? json_get_str(tcr, "status") : NULL;
	failed = (st != NULL && strcmp(st, "success") != 0) ||
	    (tcr && json_object_object_get_ex(tcr, "error", &v) && v != NULL) ||
	    (tcr == NULL && resp && json_object_object_get_ex(resp, "error", &v));
	u = pj_update("tool_call_update");
	json_object_object_add(u, "toolCallId", xjson_object_new_string(id));
	json_object_object_add(u, "status", xjson_object_new_string(failed ?
	    "failed" : "completed"));
	json_object_object_add(u, "content", result_content(display, resp));
	if (display != NULL)
		json_object_object_add(u, "rawOutput", json_object_get(display));
	rc = pj_emit(x, u, NULL);
	json_object_put(pe);
	return rc;
}

/* Every call still pending at the end of the window failed. */
int
pj_fail_pending(struct pctx *x)
{
	json_object *pe, *u, *content, *inner, *b, *v;
	size_t i;

	for (i = 0; i < json_object_array_length(x->pending); i++) {
		pe = json_object_array_get_idx(x->pending, i);
		json_object_object_get_ex(pe, "pos", &v);
		x->pos = (size_t)json_object_get_int64(v);
		json_object_object_get_ex(pe, "uuid", &v);
		json_object_put(x->uuid);
		x->uuid = json_object_get(v);
		x->ts = -1;
		u = pj_update("tool_call_update");
		json_object_object_add(u, "toolCallId",
		    xjson_object_new_string(json_get_str(pe, "id")));
		json_object_object_add(u, "status", xjson_object_new_string("failed"));
		inner = xjson_object_new_object();
		json_object_object_add(inner, "type", xjson_object_new_string("text"));
		json_object_object_add(inner, "text", xjson_object_new_string(MISSING_RESULT));
		b = xjson_object_new_object();
		json_object_object_add(b, "type", xjson_object_new_string("content"));
		json_object_object_add(b, "content", inner);
		content = xjson_object_new_array();
		json_object_array_add(content, b);
		json_object_object_add(u, "content", content);
		if (pj_emit(x, u, NULL) == -1)
			return -1;
	}
	return 0;
}

