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
#include <stdlib.h>
#include <string.h>

#include "project-int.h"

#define T	(&x->tape)
#define E	(&x->p->enc)

/* Open an update {"sessionUpdate":kind. */
static void
pf_open(struct pctx *x, const char *kind)
{
	x->uoff = pj_sep(x);
	jbuf_puts(E, "{\"sessionUpdate\":\"");
	jbuf_puts(E, kind);
	jbuf_put(E, "\"", 1);
}

/* Start an update that is no text chunk (it ends a text segment). */
static void
pf_begin(struct pctx *x, const char *kind)
{
	pf_open(x, kind);
	pj_segment(x, PJ_LANE_NONE, 1);
}

/* Close the update with the record's _meta tail (after any extra
   members, each ending with ','). */
static int
pf_close(struct pctx *x)
{
	pj_tail(x);
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
	pf_open(x, kind);
	pj_segment(x, pj_text_lane(kind, node >= 0 ? T->n[node].len > 0 : *s != '\0'), 0);
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
	pf_open(x, "user_message_chunk");
	pj_segment(x, PJ_LANE_IMAGE, 0);
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
			if (T->n[v].len > 0 &&
			    pf_chunk(x, "user_message_chunk", v, NULL) == -1)
				return -1;
		} else if ((v = jt_get_typed(T, part, "inlineData", JT_OBJ)) >= 0) {
			if (pf_image(x, v) == -1)
				return -1;
		}
	}
	return 0;
}

/* The empty agent chunk carrying the record's usage under ACP's names. */
static int
pf_usage(struct pctx *x, int usage)
{
	int i, v, n = 0;

	pf_text(x, "agent_message_chunk", -1, "");
	jbuf_puts(E, "\"usage\":{");
	for (i = 0; pj_usage_keys[i][0] != NULL; i++) {
		v = jt_get_typed(T, usage, pj_usage_keys[i][0], JT_NUM);
		if (v < 0 && i >= 3)
			continue;
		jbuf_puts(E, n++ > 0 ? ",\"" : "\"");
		jbuf_puts(E, pj_usage_keys[i][1]);
		jbuf_put(E, "\":", 2);
		if (v >= 0)
			jt_write(E, T, v);
		else
			jbuf_put(E, "0", 1);
	}
	jbuf_puts(E, "},");
	return pf_close(x);
}

/* Tool call arguments on the tape. */
struct pf_arg {
	struct pctx	*x;
	int		 obj;
};

static const char *
pa_str(void *a, const char *key)
{
	struct pf_arg *pa = a;

	return jt_get_str(&pa->x->tape, pa->obj, key, &pa->x->oom);
}

static int
pa_num(void *a, const char *key, double *v)
{
	struct pf_arg *pa = a;
	int n = jt_get_typed(&pa->x->tape, pa->obj, key, JT_NUM);
	char buf[64];

	if (n < 0 || pa->x->tape.n[n].len >= sizeof buf)
		return -1;
	memcpy(buf, pa->x->tape.n[n].p, pa->x->tape.n[n].len);
	buf[pa->x->tape.n[n].len] = '\0';
	*v = strtod(buf, NULL);
	return 0;
}

static int
pa_true(void *a, const char *key)
{
	struct pf_arg *pa = a;

	return jt_get_typed(&pa->x->tape, pa->obj, key, JT_TRUE) >= 0;
}

/* ,"_meta":{"toolName":name,"provenance":p[,"serverId":s], */
static void
pf_tool_meta(struct pctx *x, const char *name)
{
	const char *prov, *server;
	size_t n;

	prov = pj_provenance(name, &server, &n);
	jbuf_puts(E, ",\"_meta\":{\"toolName\":");
	jsonw_string(E, name, strlen(name));
	jbuf_puts(E, ",\"provenance\":");
	jsonw_string(E, prov, strlen(prov));
	if (server != NULL) {
		jbuf_puts(E, ",\"serverId\":");
		jsonw_string(E, server, n);
	}
	jbuf_put(E, ",", 1);
}

/* A functionCall part: a tool_call, tracked as pending. */
static int
pf_tool_call(struct pctx *x, int fc, size_t idx)
{
	int args = jt_get_typed(T, fc, "args", JT_OBJ), off;
	const char *id = jt_get_str(T, fc, "id", &x->oom);
	const char *name = jt_get_str(T, fc, "name", &x->oom), *kind, *path;
	struct pf_arg pa = { x, args };
	struct pj_args a = { pa_str, pa_num, pa_true, &pa };
	char buf[128], title[PJ_TITLE_MAX];
	double line;

	if (name == NULL)
		name = "tool";
	if (strcmp(name, "todo_write") == 0)
		return 0;			/* its result becomes a plan */
	id = pj_call_id(x, id, idx, buf);
	kind = pj_tool_present(name, &a, x->cwd, title, sizeof title, &path, &line);
	pf_begin(x, "tool_call");
	pf_str(x, "toolCallId", id);
	jbuf_puts(E, ",\"status\":\"in_progress\"");
	pf_str(x, "title", title);
	jbuf_puts(E, ",\"content\":[],\"locations\":[");
	if (path != NULL) {
		jbuf_puts(E, "{\"path\":");
		jsonw_string(E, path, strlen(path));
		jbuf_puts(E, ",\"line\":");
		if (line >= 0 && (off = jt_get_typed(T, args, "offset", JT_NUM)) >= 0)
			jt_write(E, T, off);
		else
			jbuf_put(E, "null", 4);
		jbuf_put(E, "}", 1);
	}
	jbuf_put(E, "]", 1);
	pf_str(x, "kind", kind);
	jbuf_puts(E, ",\"rawInput\":");
	if (args >= 0)
		jt_write(E, T, args);
	else
		jbuf_put(E, "{}", 2);
	pj_pending_add(x, id, name);
	pf_tool_meta(x, name);
	return pf_close(x);
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
		} else if ((text = jt_get_typed(T, part, "text", JT_STR)) >= 0 &&
		    T->n[text].len > 0) {
			th = jt_get_typed(T, part, "thought", JT_TRUE);
			rc = pf_chunk(x, th >= 0 ? "agent_thought_chunk" :
			    "agent_message_chunk", text, NULL);
		}
	}
	if (rc == 0 && usage >= 0)
		rc = pf_usage(x, usage);
	return rc;
}

/* One output item of a slash command's result (project.c's slash_item). */
static int
pf_slash_item(struct pctx *x, int item)
{
	const char *s = jt_get_str(T, item, "text", &x->oom);
	char *text;
	int i, v;

	if (s == NULL)
		return 0;
	text = pj_markdown_breaks(s);
	pf_text(x, "agent_message_chunk", -1, text);
	free(text);
	jbuf_puts(E, "\"source\":\"slash_command\",");
	for (i = 0; pj_slash_meta[i][0] != NULL; i++)
		if ((v = jt_get_typed(T, item, pj_slash_meta[i][0],
		    pj_slash_meta[i][1][0] == 'o' ? JT_OBJ : JT_ARR)) >= 0) {
			jbuf_put(E, "\"", 1);
			jbuf_puts(E, pj_slash_meta[i][0]);
			jbuf_put(E, "\":", 2);
			jt_write(E, T, v);
			jbuf_put(E, ",", 1);
		}
	return pf_close(x);
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
			if (pf_slash_item(x, it) == -1)
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

/* {"type":"content","content":{"type":"text","text": ... }} around node
   (or s when node is -1). */
static void
pf_text_block(struct pctx *x, int node, const char *s, size_t n)
{
	jbuf_puts(E, "{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":");
	if (node >= 0)
		jt_write(E, T, node);
	else
		jsonw_string(E, s, n);
	jbuf_puts(E, "}}");
}

/* A response's text: output, error, or the whole payload encoded. */
static void
pf_response_text(struct pctx *x, int resp)
{
	struct jbuf b;
	int v;

	if ((v = jt_get_typed(T, resp, "output", JT_STR)) >= 0 ||
	    (v = jt_get_typed(T, resp, "error", JT_STR)) >= 0) {
		pf_text_block(x, v, NULL, 0);
		return;
	}
	memset(&b, 0, sizeof b);
	jt_write(&b, T, resp);
	if (b.oom)
		x->oom = 1;
	pf_text_block(x, -1, b.p ? b.p : "", b.len);
	jbuf_free(&b);
}

/* The content blocks of a tool result (project-tool.c's result_content). */
static void
pf_result_content(struct pctx *x, int tcr, int display)
{
	int msg, parts, part, v, resp, n = 0;
	const char *path;
	uint32_t i;

	if (display >= 0 && T->n[display].type == JT_OBJ &&
	    jt_get(T, display, "fileName") >= 0 && jt_get(T, display, "newContent") >= 0) {
		if ((path = jt_get_str(T, display, "filePath", &x->oom)) == NULL &&
		    (path = jt_get_str(T, display, "fileName", &x->oom)) == NULL)
			path = "";
		jbuf_puts(E, "[{\"type\":\"diff\"");
		pf_str(x, "path", path);
		jbuf_puts(E, ",\"oldText\":");
		pf_member_or(x, display, "originalContent", "");
		jbuf_puts(E, ",\"newText\":");
		pf_member_or(x, display, "newContent", "");
		jbuf_puts(E, "}]");
		return;
	}
	if ((v = jt_get_typed(T, tcr, "error", JT_OBJ)) >= 0 &&
	    (v = jt_get_typed(T, v, "message", JT_STR)) >= 0 && T->n[v].len > 0) {
		jbuf_put(E, "[", 1);
		pf_text_block(x, v, NULL, 0);
		jbuf_put(E, "]", 1);
		return;
	}
	jbuf_put(E, "[", 1);
	msg = jt_get_typed(T, 0, "message", JT_OBJ);
	parts = jt_get_typed(T, msg, "parts", JT_ARR);
	for (i = 0, part = JT_FIRST(parts); parts >= 0 && i < T->n[parts].len;
	    i++, part = JT_NEXT(T, part)) {
		if ((v = jt_get_typed(T, part, "text", JT_STR)) >= 0 && T->n[v].len > 0) {
			if (n++ > 0)
				jbuf_put(E, ",", 1);
			pf_text_block(x, v, NULL, 0);
		}
		resp = jt_get_typed(T, jt_get_typed(T, part, "functionResponse", JT_OBJ),
		    "response", JT_OBJ);
		if (resp >= 0) {
			if (n++ > 0)
				jbuf_put(E, ",", 1);
			pf_response_text(x, resp);
		}
	}
	jbuf_put(E, "]", 1);
}

/* The first functionResponse part's string member key (non-empty when
   nonempty is set), or NULL. */
static const char *
pf_response_member(struct pctx *x, const char *key, int nonempty)
{
	int msg = jt_get_typed(T, 0, "message", JT_OBJ);
	int parts = jt_get_typed(T, msg, "parts", JT_ARR), part, fr;
	const char *s;
	uint32_t i;

	for (i = 0, part = JT_FIRST(parts); parts >= 0 && i < T->n[parts].len;
	    i++, part = JT_NEXT(T, part))
		if ((fr = jt_get_typed(T, part, "functionResponse", JT_OBJ)) >= 0 &&
		    (s = jt_get_str(T, fr, key, &x->oom)) != NULL &&
		    (!nonempty || *s != '\0'))
			return s;
	return NULL;
}

/* Whether a tool result failed. */
static int
pf_failed(struct pctx *x, int tcr)
{
	const char *st = tcr >= 0 ? jt_get_str(T, tcr, "status", &x->oom) : NULL;
	int e = jt_get(T, tcr, "error");

	return (st != NULL && strcmp(st, "success") != 0) ||
	    (e >= 0 && T->n[e].type != JT_NULL);
}

/* tool_result records: tool_call_update (or plan for todo_write). */
static int
pf_tool_result(struct pctx *x)
{
	int tcr = jt_get_typed(T, 0, "toolCallResult", JT_OBJ), display = -1, rc, art;
	const char *id = NULL, *name = pf_response_member(x, "name", 0), *dt;
	json_object *pe;
	char buf[128];

	if (name == NULL)
		name = "";
	if (tcr >= 0) {
		if ((id = jt_get_str(T, tcr, "callId", &x->oom)) != NULL && *id == '\0')
			id = NULL;
		display = jt_get(T, tcr, "resultDisplay");
	}
	if (id == NULL)
		id = pf_response_member(x, "id", 1);
	pe = pj_take_pending(x, id, *name ? name : NULL);
	if (id == NULL && pe != NULL)
		id = json_get_str(pe, "id");
	dt = display >= 0 ? jt_get_str(T, display, "type", &x->oom) : NULL;
	if (strcmp(name, "todo_write") == 0 || (dt && strcmp(dt, "todo_list") == 0)) {
		json_object_put(pe);
		return pf_plan(x, display >= 0 && T->n[display].type != JT_NULL ?
		    display : -1);
	}
	if (id == NULL) {
		snprintf(buf, sizeof buf, "qwen-replay-tool:%.64s:0",
		    json_object_get_string(x->uuid));
		id = buf;
	}
	pf_begin(x, "tool_call_update");
	pf_str(x, "toolCallId", id);
	pf_str(x, "status", pf_failed(x, tcr) ? "failed" : "completed");
	jbuf_puts(E, ",\"content\":");
	pf_result_content(x, tcr, display);
	pf_tool_meta(x, name);
	if ((art = jt_get_typed(T, tcr, "artifacts", JT_ARR)) >= 0 && T->n[art].len > 0) {
		jbuf_puts(E, "\"artifacts\":");
		jt_write(E, T, art);
		jbuf_put(E, ",", 1);
	}
	pj_tail_meta(x);
	if (display >= 0) {
		jbuf_puts(E, ",\"rawOutput\":");
		jt_write(E, T, display);
	}
	pj_tail_top(x);
	rc = pj_span(x, x->uoff);
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
