/*
 * project-fast.c: the replay projection straight from a record's bytes.
 *
 * The record is read into a jtape (jtape.c) and each update is written
 * with the jsonw writer, text and raw subtrees copied from the input.  It
 * mirrors project.c and project-tool.c rule for rule and must produce the
 * same bytes; the json-c path stays the reference (PROJECT_JSONC, and
 * qwen-inspect --replay-compare checks the two agree).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "project-int.h"

#define T	(&x->tape)
#define E	(&x->p->enc)

/* Start an update {"sessionUpdate":kind. */
static void
pf_begin(struct pctx *x, const char *kind)
{
	x->uoff = pj_sep(x);
	jbuf_puts(E, "{\"sessionUpdate\":\"");
	jbuf_puts(E, kind);
	jbuf_put(E, "\"", 1);
}

/* Close the update with the record's _meta tail (after any extra
   members, each ending with ','). */
static int
pf_close(struct pctx *x)
{
	jbuf_put(E, x->sfx.p, x->sfx.len);
	return pj_span(x, x->uoff);
}

static int
pf_end(struct pctx *x)
{
	jbuf_puts(E, ",\"_meta\":{");
	return pf_close(x);
}

/* ,"key":s (a C string). */
static void
pf_str(struct pctx *x, const char *key, const char *s)
{
	jbuf_put(E, ",\"", 2);
	jbuf_puts(E, key);
	jbuf_put(E, "\":", 2);
	jsonw_string(E, s, strlen(s));
}

/* A text chunk (text from string node, or s when node is -1), up to the
   opening of _meta. */
static void
pf_text(struct pctx *x, const char *kind, int node, const char *s)
{
	pf_begin(x, kind);
	jbuf_puts(E, ",\"content\":{\"type\":\"text\",\"text\":");
	if (node >= 0)
		jt_write(E, T, node);
	else
		jsonw_string(E, s, strlen(s));
	jbuf_puts(E, "},\"_meta\":{");
}

static int
pf_chunk(struct pctx *x, const char *kind, int node, const char *s)
{
	pf_text(x, kind, node, s);
	return pf_close(x);
}

/* The string member key of obj, or "" (node written when present). */
static void
pf_member_or(struct pctx *x, int obj, const char *key, const char *dflt)
{
	int v = jt_get_typed(T, obj, key, JT_STR);

	if (v >= 0)
		jt_write(E, T, v);
	else
		jsonw_string(E, dflt, strlen(dflt));
}

/* A user image part. */
static int
pf_image(struct pctx *x, int inl)
{
	pf_begin(x, "user_message_chunk");
	jbuf_puts(E, ",\"content\":{\"type\":\"image\",\"mimeType\":");
	pf_member_or(x, inl, "mimeType", "");
	jbuf_puts(E, ",\"data\":");
	pf_member_or(x, inl, "data", "");
	jbuf_put(E, "}", 1);
	return pf_end(x);
}

/* user records: text parts, images, or the displayText of tagged kinds. */
static int
pf_user(struct pctx *x)
{
	static const char *const tagged[] = { "notification", "cron",
	    "mid_turn_user_message", "goal_runtime", NULL };
	int sp = jt_get_typed(T, 0, "systemPayload", JT_OBJ);
	int msg = jt_get_typed(T, 0, "message", JT_OBJ);
	int parts = jt_get_typed(T, msg, "parts", JT_ARR), part, v, k;
	const char *sub = jt_get_str(T, 0, "subtype", &x->oom), *display;
	uint32_t i;

	display = sp >= 0 ? jt_get_str(T, sp, "displayText", &x->oom) : NULL;
	for (k = 0; sub != NULL && tagged[k] != NULL; k++)
		if (strcmp(sub, tagged[k]) == 0)
			return display ? pf_chunk(x, "user_message_chunk", -1, display) : 0;
	if (display && jt_get(T, sp, "hookContext") >= 0)
		return pf_chunk(x, "user_message_chunk", -1, display);
	for (i = 0, part = JT_FIRST(parts); parts >= 0 && i < T->n[parts].len;
	    i++, part = JT_NEXT(T, part)) {
		if ((v = jt_get_typed(T, part, "text", JT_STR)) >= 0) {
			if (pf_chunk(x, "user_message_chunk", v, NULL) == -1)
				return -1;
		} else if ((v = jt_get_typed(T, part, "inlineData", JT_OBJ)) >= 0) {
			if (pf_image(x, v) == -1)
				return -1;
		}
	}
	return 0;
}

/* The empty agent chunk carrying usageMetadata. */
static int
pf_usage(struct pctx *x, int usage)
{
	pf_text(x, "agent_message_chunk", -1, "");
	jbuf_puts(E, "\"usage\":");
	jt_write(E, T, usage);
	jbuf_put(E, ",", 1);
	return pf_close(x);
}

/* A functionCall part: a tool_call, tracked as pending. */
static int
pf_tool_call(struct pctx *x, int fc, size_t idx)
{
	int args = jt_get_typed(T, fc, "args", JT_OBJ), i;
	const char *id = jt_get_str(T, fc, "id", &x->oom);
	const char *name = jt_get_str(T, fc, "name", &x->oom), *v = NULL;
	char buf[128], title[256];

	if (name == NULL)
		name = "tool";
	if (strcmp(name, "todo_write") == 0)
		return 0;			/* its result becomes a plan */
	id = pj_call_id(x, id, idx, buf);
	for (i = 0; args >= 0 && pj_title_keys[i] != NULL && v == NULL; i++)
		v = jt_get_str(T, args, pj_title_keys[i], &x->oom);
	snprintf(title, sizeof title, "%s%s%.200s", name, v ? ": " : "", v ? v : "");
	pf_begin(x, "tool_call");
	pf_str(x, "toolCallId", id);
	pf_str(x, "title", title);
	pf_str(x, "kind", pj_tool_kind(name));
	jbuf_puts(E, ",\"status\":\"in_progress\",\"locations\":[");
	for (i = 0, v = NULL; args >= 0 && pj_path_keys[i] != NULL && v == NULL; i++)
		v = jt_get_str(T, args, pj_path_keys[i], &x->oom);
	if (v != NULL) {
		jbuf_puts(E, "{\"path\":");
		jsonw_string(E, v, strlen(v));
		jbuf_put(E, "}", 1);
	}
	jbuf_puts(E, "],\"rawInput\":");
	if (args >= 0)
		jt_write(E, T, args);
	else
		jbuf_put(E, "{}", 2);
	pj_pending_add(x, id, name);
	return pf_end(x);
}

/* assistant records: thoughts, text, tool calls, usage. */
static int
pf_assistant(struct pctx *x)
{
	int msg = jt_get_typed(T, 0, "message", JT_OBJ);
	int parts = jt_get_typed(T, msg, "parts", JT_ARR), part, fc, text, th;
	int usage = jt_get_typed(T, 0, "usageMetadata", JT_OBJ), rc = 0;
	uint32_t i;

	for (i = 0, part = JT_FIRST(parts); rc == 0 && parts >= 0 &&
	    i < T->n[parts].len; i++, part = JT_NEXT(T, part)) {
		if ((fc = jt_get_typed(T, part, "functionCall", JT_OBJ)) >= 0) {
			if (usage >= 0) {
				rc = pf_usage(x, usage);
				usage = -1;
			}
			if (rc == 0)
				rc = pf_tool_call(x, fc, i);
		} else if ((text = jt_get_typed(T, part, "text", JT_STR)) >= 0) {
			th = jt_get_typed(T, part, "thought", JT_TRUE);
			rc = pf_chunk(x, th >= 0 ? "agent_thought_chunk" :
			    "agent_message_chunk", text, NULL);
		}
	}
	if (rc == 0 && usage >= 0)
		rc = pf_usage(x, usage);
	return rc;
}

/* system records: slash_command results and cancelled turns. */
static int
pf_system(struct pctx *x)
{
	int sp = jt_get_typed(T, 0, "systemPayload", JT_OBJ), items, it;
	const char *sub = jt_get_str(T, 0, "subtype", &x->oom), *s;
	uint32_t i;

	if (sub == NULL || sp < 0)
		return 0;
	if (strcmp(sub, "slash_command") == 0 &&
	    (s = jt_get_str(T, sp, "phase", &x->oom)) != NULL &&
	    strcmp(s, "result") == 0 &&
	    (items = jt_get_typed(T, sp, "outputHistoryItems", JT_ARR)) >= 0) {
		for (i = 0, it = JT_FIRST(items); i < T->n[items].len;
		    i++, it = JT_NEXT(T, it))
			if ((s = jt_get_str(T, it, "text", &x->oom)) != NULL &&
			    pf_chunk(x, "agent_message_chunk", -1, s) == -1)
				return -1;
	} else if (strcmp(sub, "turn_result") == 0 &&
	    (s = jt_get_str(T, sp, "state", &x->oom)) != NULL &&
	    strcmp(s, "cancelled") == 0) {
		pf_text(x, "agent_message_chunk", -1, "");
		jbuf_puts(E, "\"promptCancelled\":true,");
		return pf_close(x);
	} else if (strcmp(sub, "background_task_completed") == 0 &&
	    (s = jt_get_str(T, sp, "displayText", &x->oom)) != NULL) {
		return pf_chunk(x, "agent_message_chunk", -1, s);
	}
	return 0;
}

/* A todo_write result as a plan update. */
static int
pf_plan(struct pctx *x, int display)
{
	int todos = jt_get_typed(T, display, "todos", JT_ARR), td;
	uint32_t i;

	pf_begin(x, "plan");
	jbuf_puts(E, ",\"entries\":[");
	for (i = 0, td = JT_FIRST(todos); todos >= 0 && i < T->n[todos].len;
	    i++, td = JT_NEXT(T, td)) {
		jbuf_puts(E, i > 0 ? ",{\"content\":" : "{\"content\":");
		pf_member_or(x, td, "content", "");
		jbuf_puts(E, ",\"priority\":\"medium\",\"status\":");
		pf_member_or(x, td, "status", "pending");
		jbuf_put(E, "}", 1);
	}
	jbuf_put(E, "]", 1);
	return pf_end(x);
}

/* The content blocks of a tool result: a diff, or the output/error text. */
static void
pf_result_content(struct pctx *x, int display, int resp)
{
	const char *path;
	int text = -1, v;

	if (display >= 0 && jt_get_typed(T, display, "fileDiff", JT_STR) >= 0) {
		path = jt_get_str(T, display, "filePath", &x->oom);
		if (path == NULL)
			path = jt_get_str(T, display, "fileName", &x->oom);
		jbuf_puts(E, "[{\"type\":\"diff\"");
		pf_str(x, "path", path ? path : "");
		jbuf_puts(E, ",\"oldText\":");
		if ((v = jt_get_typed(T, display, "originalContent", JT_STR)) >= 0)
			jt_write(E, T, v);
		else
			jbuf_put(E, "null", 4);
		jbuf_puts(E, ",\"newText\":");
		pf_member_or(x, display, "newContent", "");
		jbuf_puts(E, "}]");
		return;
	}
	if (resp >= 0) {
		text = jt_get_typed(T, resp, "output", JT_STR);
		if (text < 0)
			text = jt_get_typed(T, resp, "error", JT_STR);
		if (text < 0 && (v = jt_get_typed(T, resp, "error", JT_OBJ)) >= 0)
			text = jt_get_typed(T, v, "message", JT_STR);
	}
	if (text < 0) {
		jbuf_put(E, "[]", 2);
		return;
	}
	jbuf_puts(E, "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":");
	jt_write(E, T, text);
	jbuf_puts(E, "}}]");
}

/* The first functionResponse part of the record, or -1. */
static int
pf_function_response(struct pctx *x)
{
	int msg = jt_get_typed(T, 0, "message", JT_OBJ);
	int parts = jt_get_typed(T, msg, "parts", JT_ARR), part, fr;
	uint32_t i;

	for (i = 0, part = JT_FIRST(parts); parts >= 0 && i < T->n[parts].len;
	    i++, part = JT_NEXT(T, part))
		if ((fr = jt_get_typed(T, part, "functionResponse", JT_OBJ)) >= 0)
			return fr;
	return -1;
}

/* Whether a tool result failed. */
static int
pf_failed(struct pctx *x, int tcr, int resp)
{
	const char *st = tcr >= 0 ? jt_get_str(T, tcr, "status", &x->oom) : NULL;
	int e = jt_get(T, tcr, "error");

	return (st != NULL && strcmp(st, "success") != 0) ||
	    (e >= 0 && T->n[e].type != JT_NULL) ||
	    (tcr < 0 && jt_get(T, resp, "error") >= 0);
}

/* tool_result records: tool_call_update (or plan for todo_write). */
static int
pf_tool_result(struct pctx *x)
{
	int tcr = jt_get_typed(T, 0, "toolCallResult", JT_OBJ);
	int fr = pf_function_response(x), display = -1, resp, rc;
	const char *id = NULL, *name = jt_get_str(T, fr, "name", &x->oom), *dt;
	json_object *pe;
	char buf[128];

	if (tcr >= 0) {
		id = jt_get_str(T, tcr, "callId", &x->oom);
		if ((display = jt_get(T, tcr, "resultDisplay")) >= 0 &&
		    T->n[display].type == JT_NULL)
			display = -1;		/* json-c's null is no object */
	}
	if (id == NULL && fr >= 0)
		id = jt_get_str(T, fr, "id", &x->oom);
	resp = jt_get_typed(T, fr, "response", JT_OBJ);
	pe = pj_take_pending(x, id, name);
	if (id == NULL && pe != NULL)
		id = json_get_str(pe, "id");
	dt = display >= 0 ? jt_get_str(T, display, "type", &x->oom) : NULL;
	if ((name && strcmp(name, "todo_write") == 0) || (dt && strcmp(dt, "todo_list") == 0)) {
		json_object_put(pe);
		return pf_plan(x, display);
	}
	if (id == NULL) {
		snprintf(buf, sizeof buf, "qwen-replay-tool:%.64s:0",
		    json_object_get_string(x->uuid));
		id = buf;
	}
	pf_begin(x, "tool_call_update");
	pf_str(x, "toolCallId", id);
	pf_str(x, "status", pf_failed(x, tcr, resp) ? "failed" : "completed");
	jbuf_puts(E, ",\"content\":");
	pf_result_content(x, display, resp);
	if (display >= 0) {
		jbuf_puts(E, ",\"rawOutput\":");
		jt_write(E, T, display);
	}
	rc = pf_end(x);
	json_object_put(pe);
	return rc;
}

int
pf_record(struct pctx *x)
{
	int rc = 0;

	switch (transcript_type(x->t, x->c->rec[x->pos])) {
	case TX_USER:
		rc = pf_user(x);
		break;
	case TX_ASSISTANT:
		rc = pf_assistant(x);
		break;
	case TX_TOOL_RESULT:
		rc = pf_tool_result(x);
		break;
	case TX_SYSTEM:
		rc = pf_system(x);
		break;
	}
	return x->oom ? -1 : rc;
}
