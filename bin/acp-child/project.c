/*
 * project.c: chain records to ACP SessionUpdate objects, per
 * upstream-transcript.md 3.8.  Every update carries _meta.timestamp (epoch
 * ms, when the record has a valid one) and
 * _meta.qwenTranscript.sourceRecordIds = [uuid].
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "project.h"
#include "txindex.h"

#define MISSING_RESULT "Tool result missing from saved history; the tool call " \
	"did not record a result before the session ended."
#define GAP_NOTICE "Earlier history could not be restored: a parent record is " \
	"missing from the saved transcript."

struct pctx {
	struct transcript *t;
	const struct tx_chain *c;
	struct projection *p;
	size_t pos;			/* chain index of the current record */
	json_object *uuid;		/* current record's uuid string */
	int64_t ts;			/* -1: none */
	json_object *pending;		/* [{id, name, pos, uuid}] */
};

/* Member of obj as a string, or NULL. */
static const char *
get_str(json_object *obj, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Member of obj of the given type, or NULL (borrowed). */
static json_object *
get_typed(json_object *obj, const char *key, enum json_type type)
{
	json_object *v;

	if (obj == NULL || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

/* ISO-8601 UTC "YYYY-MM-DDTHH:MM:SS[.mmm]Z" to epoch ms, -1 when invalid. */
static int64_t
parse_ts(const char *s)
{
	int y, mo, d, h, mi, sec, ms = 0, n = 0;
	struct tm tm;
	time_t tt;

	if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h,
	    &mi, &sec, &n) != 6 || n != 19)
		return -1;
	s += n;
	if (*s == '.') {
		if (sscanf(s + 1, "%3d%n", &ms, &n) != 1 || n != 3)
			return -1;
		s += 4;
	}
	if (strcmp(s, "Z") != 0 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 60)
		return -1;
	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((tt = timegm(&tm)) == (time_t)-1)
		return -1;
	return (int64_t)tt * 1000 + ms;
}

/* Add _meta to u and append it to the projection (takes u). */
static int
emit(struct pctx *x, json_object *u, json_object *extra_meta)
{
	struct projection *p = x->p;
	json_object *meta, *qt, *ids;
	size_t *no;

	meta = extra_meta ? extra_meta : json_object_new_object();
	if (x->ts >= 0)
		json_object_object_add(meta, "timestamp", json_object_new_int64(x->ts));
	qt = json_object_new_object();
	ids = json_object_new_array();
	json_object_array_add(ids, json_object_get(x->uuid));
	json_object_object_add(qt, "sourceRecordIds", ids);
	json_object_object_add(meta, "qwenTranscript", qt);
	json_object_object_add(u, "_meta", meta);
	if (json_object_array_length(p->updates) == p->cap) {
		if ((no = reallocarray(p->origin, p->cap * 2 + 64, sizeof *no)) == NULL) {
			json_object_put(u);
			return -1;
		}
		p->origin = no;
		p->cap = p->cap * 2 + 64;
	}
	p->origin[json_object_array_length(p->updates)] = x->pos;
	json_object_array_add(p->updates, u);
	return 0;
}

/* A new update of the given kind. */
static json_object *
update(const char *kind)
{
	json_object *u = json_object_new_object();

	json_object_object_add(u, "sessionUpdate", json_object_new_string(kind));
	return u;
}

/* A text chunk update (text borrowed; copied). */
static int
chunk(struct pctx *x, const char *kind, const char *text, json_object *meta)
{
	json_object *u = update(kind), *content = json_object_new_object();

	json_object_object_add(content, "type", json_object_new_string("text"));
	json_object_object_add(content, "text", json_object_new_string(text));
	json_object_object_add(u, "content", content);
	return emit(x, u, meta);
}

/* A text chunk sharing a parsed string (takes a reference to text). */
static int
chunk_obj(struct pctx *x, const char *kind, json_object *text)
{
	json_object *u = update(kind), *content = json_object_new_object();

	json_object_object_add(content, "type", json_object_new_string("text"));
	json_object_object_add(content, "text", json_object_get(text));
	json_object_object_add(u, "content", content);
	return emit(x, u, NULL);
}

/* A user image part. */
static int
image_chunk(struct pctx *x, json_object *inl)
{
	json_object *u = update("user_message_chunk"), *content = json_object_new_object();
	const char *mime = get_str(inl, "mimeType"), *data = get_str(inl, "data");

	json_object_object_add(content, "type", json_object_new_string("image"));
	json_object_object_add(content, "mimeType", json_object_new_string(mime ? mime : ""));
	json_object_object_add(content, "data", json_object_new_string(data ? data : ""));
	json_object_object_add(u, "content", content);
	return emit(x, u, NULL);
}

/* user records (3.8): text parts, images, or the displayText of tagged kinds. */
static int
project_user(struct pctx *x, json_object *r)
{
	static const char *const tagged[] = { "notification", "cron",
	    "mid_turn_user_message", "goal_runtime", NULL };
	json_object *sp = get_typed(r, "systemPayload", json_type_object);
	json_object *msg = get_typed(r, "message", json_type_object);
	json_object *parts = get_typed(msg, "parts", json_type_array), *part, *v;
	const char *sub = get_str(r, "subtype"), *display;
	size_t i;
	int k;

	display = sp ? get_str(sp, "displayText") : NULL;
	for (k = 0; sub != NULL && tagged[k] != NULL; k++)
		if (strcmp(sub, tagged[k]) == 0)
			return display ? chunk(x, "user_message_chunk", display, NULL) : 0;
	if (display && json_object_object_get_ex(sp, "hookContext", &v))
		return chunk(x, "user_message_chunk", display, NULL);
	for (i = 0; parts && i < json_object_array_length(parts); i++) {
		part = json_object_array_get_idx(parts, i);
		if ((v = get_typed(part, "text", json_type_string)) != NULL) {
			if (chunk_obj(x, "user_message_chunk", v) == -1)
				return -1;
		} else if ((v = get_typed(part, "inlineData", json_type_object)) != NULL) {
			if (image_chunk(x, v) == -1)
				return -1;
		}
	}
	return 0;
}

/* The empty agent chunk carrying usageMetadata. */
static int
usage_chunk(struct pctx *x, json_object *usage)
{
	json_object *meta = json_object_new_object();

	json_object_object_add(meta, "usage", json_object_get(usage));
	return chunk(x, "agent_message_chunk", "", meta);
}

/* ACP tool kind of a qwen-code tool name. */
static const char *
tool_kind(const char *name)
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

/* A tool_call update for a functionCall part. */
static int
tool_call(struct pctx *x, json_object *fc, size_t idx)
{
	static const char *const path_keys[] = { "absolute_path", "file_path", "path", NULL };
	static const char *const title_keys[] = { "absolute_path", "file_path", "path",
	    "command", "pattern", "url", NULL };
	json_object *args = get_typed(fc, "args", json_type_object), *u, *loc, *locs, *pe;
	const char *id = get_str(fc, "id"), *name = get_str(fc, "name"), *v = NULL;
	char buf[128], title[256], uuid[64];
	int i;

	if (name == NULL)
		name = "tool";
	if (strcmp(name, "todo_write") == 0)
		return 0;			/* its result becomes a plan */
	if (id == NULL || *id == '\0') {
		snprintf(uuid, sizeof uuid, "%s", json_object_get_string(x->uuid));
		snprintf(buf, sizeof buf, "qwen-replay-tool:%s:%zu", uuid, idx);
		id = buf;
	}
	u = update("tool_call");
	json_object_object_add(u, "toolCallId", json_object_new_string(id));
	for (i = 0; args && title_keys[i] != NULL && v == NULL; i++)
		v = get_str(args, title_keys[i]);
	snprintf(title, sizeof title, "%s%s%.200s", name, v ? ": " : "", v ? v : "");
	json_object_object_add(u, "title", json_object_new_string(title));
	json_object_object_add(u, "kind", json_object_new_string(tool_kind(name)));
	json_object_object_add(u, "status", json_object_new_string("in_progress"));
	locs = json_object_new_array();
	for (i = 0, v = NULL; args && path_keys[i] != NULL && v == NULL; i++)
		v = get_str(args, path_keys[i]);
	if (v != NULL) {
		loc = json_object_new_object();
		json_object_object_add(loc, "path", json_object_new_string(v));
		json_object_array_add(locs, loc);
	}
	json_object_object_add(u, "locations", locs);
	json_object_object_add(u, "rawInput", args ? json_object_get(args) :
	    json_object_new_object());
	pe = json_object_new_object();
	json_object_object_add(pe, "id", json_object_new_string(id));
	json_object_object_add(pe, "name", json_object_new_string(name));
	json_object_object_add(pe, "pos", json_object_new_int64((int64_t)x->pos));
	json_object_object_add(pe, "uuid", json_object_get(x->uuid));
	json_object_array_add(x->pending, pe);
	return emit(x, u, NULL);
}

/* assistant records: thoughts, text, tool calls, usage. */
static int
project_assistant(struct pctx *x, json_object *r)
{
	json_object *msg = get_typed(r, "message", json_type_object);
	json_object *parts = get_typed(msg, "parts", json_type_array), *part, *fc, *v;
	json_object *usage = get_typed(r, "usageMetadata", json_type_object), *text;
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && parts && i < json_object_array_length(parts); i++) {
		part = json_object_array_get_idx(parts, i);
		if ((fc = get_typed(part, "functionCall", json_type_object)) != NULL) {
			if (usage != NULL) {
				rc = usage_chunk(x, usage);
				usage = NULL;
			}
			if (rc == 0)
				rc = tool_call(x, fc, i);
		} else if ((text = get_typed(part, "text", json_type_string)) != NULL) {
			v = get_typed(part, "thought", json_type_boolean);
			rc = chunk_obj(x, v && json_object_get_boolean(v) ?
			    "agent_thought_chunk" : "agent_message_chunk", text);
		}
	}
	if (rc == 0 && usage != NULL)
		rc = usage_chunk(x, usage);
	return rc;
}

/* Remove and return (caller puts) the pending call matching id, else the
   only pending call named name; NULL when none. */
static json_object *
take_pending(struct pctx *x, const char *id, const char *name)
{
	size_t i, n = json_object_array_length(x->pending), hit = n, hits = 0;
	json_object *pe;
	const char *v;

	for (i = 0; id != NULL && i < n && hit == n; i++)
		if ((v = get_str(json_object_array_get_idx(x->pending, i), "id")) &&
		    strcmp(v, id) == 0)
			hit = i;
	for (i = 0; id == NULL && name != NULL && i < n; i++)
		if ((v = get_str(json_object_array_get_idx(x->pending, i), "name")) &&
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
	json_object *todos = get_typed(display, "todos", json_type_array);
	json_object *u = update("plan"), *entries = json_object_new_array(), *e, *td;
	const char *s;
	size_t i;

	for (i = 0; todos && i < json_object_array_length(todos); i++) {
		td = json_object_array_get_idx(todos, i);
		e = json_object_new_object();
		s = get_str(td, "content");
		json_object_object_add(e, "content", json_object_new_string(s ? s : ""));
		json_object_object_add(e, "priority", json_object_new_string("medium"));
		s = get_str(td, "status");
		json_object_object_add(e, "status", json_object_new_string(s ? s : "pending"));
		json_object_array_add(entries, e);
	}
	json_object_object_add(u, "entries", entries);
	return emit(x, u, NULL);
}

/* A string member as a new reference, or a new empty string / null. */
static json_object *
str_ref(json_object *obj, const char *key, int null_if_absent)
{
	json_object *v = get_typed(obj, key, json_type_string);

	if (v != NULL)
		return json_object_get(v);
	return null_if_absent ? NULL : json_object_new_string("");
}

/* The content blocks of a tool result: a diff, or the output/error text. */
static json_object *
result_content(json_object *display, json_object *resp)
{
	json_object *arr = json_object_new_array(), *b, *inner, *v, *text = NULL;
	const char *path;

	if (display && get_str(display, "fileDiff") != NULL) {
		b = json_object_new_object();
		path = get_str(display, "filePath");
		if (path == NULL)
			path = get_str(display, "fileName");
		json_object_object_add(b, "type", json_object_new_string("diff"));
		json_object_object_add(b, "path", json_object_new_string(path ? path : ""));
		json_object_object_add(b, "oldText", str_ref(display, "originalContent", 1));
		json_object_object_add(b, "newText", str_ref(display, "newContent", 0));
		json_object_array_add(arr, b);
		return arr;
	}
	if (resp != NULL) {
		text = str_ref(resp, "output", 1);
		if (text == NULL)
			text = str_ref(resp, "error", 1);
		if (text == NULL && (v = get_typed(resp, "error", json_type_object)))
			text = str_ref(v, "message", 1);
	}
	if (text == NULL)
		return arr;
	inner = json_object_new_object();
	json_object_object_add(inner, "type", json_object_new_string("text"));
	json_object_object_add(inner, "text", text);
	b = json_object_new_object();
	json_object_object_add(b, "type", json_object_new_string("content"));
	json_object_object_add(b, "content", inner);
	json_object_array_add(arr, b);
	return arr;
}

/* The first functionResponse part of a record (borrowed), or NULL. */
static json_object *
function_response(json_object *r)
{
	json_object *msg = get_typed(r, "message", json_type_object);
	json_object *parts = get_typed(msg, "parts", json_type_array), *fr;
	size_t i;

	for (i = 0; parts && i < json_object_array_length(parts); i++)
		if ((fr = get_typed(json_object_array_get_idx(parts, i),
		    "functionResponse", json_type_object)) != NULL)
			return fr;
	return NULL;
}

/* tool_result records: tool_call_update (or plan for todo_write). */
static int
project_tool_result(struct pctx *x, json_object *r)
{
	json_object *tcr = get_typed(r, "toolCallResult", json_type_object);
	json_object *fr = function_response(r), *display = NULL, *resp, *u, *pe, *v;
	const char *id = NULL, *name = fr ? get_str(fr, "name") : NULL, *st, *dt;
	char buf[128];
	int failed, rc;

	if (tcr != NULL) {
		id = get_str(tcr, "callId");
		json_object_object_get_ex(tcr, "resultDisplay", &display);
	}
	if (id == NULL && fr != NULL)
		id = get_str(fr, "id");
	resp = get_typed(fr, "response", json_type_object);
	pe = take_pending(x, id, name);
	if (id == NULL && pe != NULL)
		id = get_str(pe, "id");
	dt = display ? get_str(display, "type") : NULL;
	if ((name && strcmp(name, "todo_write") == 0) || (dt && strcmp(dt, "todo_list") == 0)) {
		json_object_put(pe);
		return plan_update(x, display);
	}
	if (id == NULL) {
		snprintf(buf, sizeof buf, "qwen-replay-tool:%.64s:0",
		    json_object_get_string(x->uuid));
		id = buf;
	}
	st = tcr ? get_str(tcr, "status") : NULL;
	failed = (st != NULL && strcmp(st, "success") != 0) ||
	    (tcr && json_object_object_get_ex(tcr, "error", &v) && v != NULL) ||
	    (tcr == NULL && resp && json_object_object_get_ex(resp, "error", &v));
	u = update("tool_call_update");
	json_object_object_add(u, "toolCallId", json_object_new_string(id));
	json_object_object_add(u, "status", json_object_new_string(failed ?
	    "failed" : "completed"));
	json_object_object_add(u, "content", result_content(display, resp));
	if (display != NULL)
		json_object_object_add(u, "rawOutput", json_object_get(display));
	rc = emit(x, u, NULL);
	json_object_put(pe);
	return rc;
}

/* Every call still pending at the end of the window failed. */
static int
fail_pending(struct pctx *x)
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
		u = update("tool_call_update");
		json_object_object_add(u, "toolCallId",
		    json_object_new_string(get_str(pe, "id")));
		json_object_object_add(u, "status", json_object_new_string("failed"));
		inner = json_object_new_object();
		json_object_object_add(inner, "type", json_object_new_string("text"));
		json_object_object_add(inner, "text", json_object_new_string(MISSING_RESULT));
		b = json_object_new_object();
		json_object_object_add(b, "type", json_object_new_string("content"));
		json_object_object_add(b, "content", inner);
		content = json_object_new_array();
		json_object_array_add(content, b);
		json_object_object_add(u, "content", content);
		if (emit(x, u, NULL) == -1)
			return -1;
	}
	return 0;
}

/* system records: slash_command results and cancelled turns. */
static int
project_system(struct pctx *x, json_object *r)
{
	json_object *sp = get_typed(r, "systemPayload", json_type_object);
	json_object *items, *meta;
	const char *sub = get_str(r, "subtype"), *s;
	size_t i;

	if (sub == NULL || sp == NULL)
		return 0;
	if (strcmp(sub, "slash_command") == 0 && (s = get_str(sp, "phase")) != NULL &&
	    strcmp(s, "result") == 0 &&
	    (items = get_typed(sp, "outputHistoryItems", json_type_array)) != NULL) {
		for (i = 0; i < json_object_array_length(items); i++) {
			s = get_str(json_object_array_get_idx(items, i), "text");
			if (s != NULL && chunk(x, "agent_message_chunk", s, NULL) == -1)
				return -1;
		}
	} else if (strcmp(sub, "turn_result") == 0 &&
	    (s = get_str(sp, "state")) != NULL && strcmp(s, "cancelled") == 0) {
		meta = json_object_new_object();
		json_object_object_add(meta, "promptCancelled", json_object_new_boolean(1));
		return chunk(x, "agent_message_chunk", "", meta);
	} else if (strcmp(sub, "background_task_completed") == 0 &&
	    (s = get_str(sp, "displayText")) != NULL) {
		return chunk(x, "agent_message_chunk", s, NULL);
	}
	return 0;
}

/* Project one record. */
static int
project_record(struct pctx *x, json_object *r)
{
	switch (transcript_type(x->t, x->c->rec[x->pos])) {
	case TX_USER:
		return project_user(x, r);
	case TX_ASSISTANT:
		return project_assistant(x, r);
	case TX_TOOL_RESULT:
		return project_tool_result(x, r);
	case TX_SYSTEM:
		return project_system(x, r);
	}
	return 0;
}

/* Set the per-record context (uuid, timestamp). */
static void
record_context(struct pctx *x, json_object *r)
{
	char buf[37];
	const char *s;
	size_t n;

	json_object_put(x->uuid);
	s = transcript_uuid_ref(x->t, x->c->rec[x->pos], buf, &n);
	x->uuid = json_object_new_string_len(s, (int)n);
	x->ts = r ? parse_ts(get_str(r, "timestamp")) : -1;
}

int
project_window(struct transcript *t, const struct tx_chain *c, size_t start,
    struct projection *p, char **cause)
{
	struct pctx x = { t, c, p, start, NULL, -1, NULL };
	json_object *r;
	int rc = 0;

	project_clear(p);
	p->updates = json_object_new_array();
	x.pending = json_object_new_array();
	if (start == 0 && c->gaps && c->len > 0) {
		record_context(&x, NULL);
		json_object *meta = json_object_new_object();
		json_object_object_add(meta, "qwenDiscreteMessage", json_object_new_boolean(1));
		rc = chunk(&x, "agent_message_chunk", GAP_NOTICE, meta);
	}
	for (x.pos = start; rc == 0 && x.pos < c->len; x.pos++) {
		if ((r = transcript_load_record(t, c->rec[x.pos], cause)) == NULL) {
			if (errno == EBADMSG)
				continue;	/* indexed but json-c refuses it: skip */
			rc = -1;
			break;
		}
		record_context(&x, r);
		rc = project_record(&x, r);
		json_object_put(r);
		if (rc == -1)
			tx_cause(cause, "replay: out of memory");
	}
	if (rc == 0)
		rc = fail_pending(&x);
	json_object_put(x.uuid);
	json_object_put(x.pending);
	if (rc == -1)
		project_clear(p);
	return rc;
}

void
project_clear(struct projection *p)
{
	json_object_put(p->updates);
	free(p->origin);
	memset(p, 0, sizeof *p);
}
