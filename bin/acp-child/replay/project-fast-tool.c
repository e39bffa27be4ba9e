/* SPDX-License-Identifier: ISC */
/*
 * project-fast-tool.c: tool calls and tool results of the fast replay
 * projection, mirroring project-tool.c rule for rule (same bytes).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "project-int.h"

#define T	(&x->tape)
#define E	(&x->p->enc)

/* Tool call arguments on the tape. */
struct project_fast_arg {
	struct pctx	*x;
	int		 obj;
};

static const char *
tape_arg_str(void *a, const char *key)
{
	struct project_fast_arg *pa = a;

	return jt_get_str(&pa->x->tape, pa->obj, key, &pa->x->oom);
}

static int
tape_arg_num(void *a, const char *key, double *v)
{
	struct project_fast_arg *pa = a;
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
tape_arg_true(void *a, const char *key)
{
	struct project_fast_arg *pa = a;

	return jt_get_typed(&pa->x->tape, pa->obj, key, JT_TRUE) >= 0;
}

/* ,"_meta":{"toolName":name,"provenance":p[,"serverId":s], */
static void
project_fast_tool_meta(struct pctx *x, const char *name)
{
	const char *prov, *server;
	size_t n;

	prov = project_provenance(name, &server, &n);
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

/* A functionCall part (its name non-empty): a tool_call, tracked as pending. */
int
project_fast_tool_call(struct pctx *x, int fc, size_t idx)
{
	int args = jt_get_typed(T, fc, "args", JT_OBJ), off;
	const char *id = jt_get_str(T, fc, "id", &x->oom);
	const char *name = jt_get_str(T, fc, "name", &x->oom), *kind, *path;
	struct project_fast_arg pa = { x, args };
	struct project_args a = { tape_arg_str, tape_arg_num, tape_arg_true, &pa };
	char buf[128], title[PROJECT_TITLE_MAX];
	double line;

	if (strcmp(name, "todo_write") == 0)
		return 0;			/* its result becomes a plan */
	id = project_tool_start(x, name, id, idx, &a, buf, title, &kind, &path, &line);
	project_fast_begin(x, "tool_call");
	project_fast_str(x, "toolCallId", id);
	jbuf_puts(E, ",\"status\":\"in_progress\"");
	project_fast_str(x, "title", title);
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
	project_fast_str(x, "kind", kind);
	jbuf_puts(E, ",\"rawInput\":");
	if (args >= 0)
		jt_write(E, T, args);
	else
		jbuf_put(E, "{}", 2);
	project_fast_tool_meta(x, name);
	return project_fast_close(x);
}


/* {"type":"content","content":{"type":"text","text": ... }} around node
   (or s when node is -1). */
static void
project_fast_text_block(struct pctx *x, int node, const char *s, size_t n)
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
project_fast_response_text(struct pctx *x, int resp)
{
	struct jbuf b;
	int v;

	if ((v = jt_get_typed(T, resp, "output", JT_STR)) >= 0 ||
	    (v = jt_get_typed(T, resp, "error", JT_STR)) >= 0) {
		project_fast_text_block(x, v, NULL, 0);
		return;
	}
	memset(&b, 0, sizeof b);
	jt_write(&b, T, resp);
	if (b.oom)
		x->oom = 1;
	project_fast_text_block(x, -1, b.p ? b.p : "", b.len);
	jbuf_free(&b);
}

/* The content blocks of a tool result (project-tool.c's result_content). */
static void
project_fast_result_content(struct pctx *x, int tcr, int display)
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
		project_fast_str(x, "path", path);
		jbuf_puts(E, ",\"oldText\":");
		project_fast_member_or(x, display, "originalContent", "");
		jbuf_puts(E, ",\"newText\":");
		project_fast_member_or(x, display, "newContent", "");
		jbuf_puts(E, "}]");
		return;
	}
	if ((v = jt_get_typed(T, tcr, "error", JT_OBJ)) >= 0 &&
	    (v = jt_get_typed(T, v, "message", JT_STR)) >= 0 && T->n[v].len > 0) {
		jbuf_put(E, "[", 1);
		project_fast_text_block(x, v, NULL, 0);
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
			project_fast_text_block(x, v, NULL, 0);
		}
		resp = jt_get_typed(T, jt_get_typed(T, part, "functionResponse", JT_OBJ),
		    "response", JT_OBJ);
		if (resp >= 0) {
			if (n++ > 0)
				jbuf_put(E, ",", 1);
			project_fast_response_text(x, resp);
		}
	}
	jbuf_put(E, "]", 1);
}

/* The first functionResponse part's string member key (non-empty when
   nonempty is set), or NULL. */
static const char *
project_fast_response_member(struct pctx *x, const char *key, int nonempty)
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
project_fast_failed(struct pctx *x, int tcr)
{
	const char *st = tcr >= 0 ? jt_get_str(T, tcr, "status", &x->oom) : NULL;
	int e = jt_get(T, tcr, "error");

	return (st != NULL && strcmp(st, "success") != 0) ||
	    (e >= 0 && T->n[e].type != JT_NULL);
}

/* tool_result records: tool_call_update; plans (todo_write) and a
   subagent's usage go through json-c. */
int
project_fast_tool_result(struct pctx *x)
{
	int tcr = jt_get_typed(T, 0, "toolCallResult", JT_OBJ), display = -1, rc, art;
	const char *id = NULL, *name = project_fast_response_member(x, "name", 0), *dt;
	json_object *pe;

	if (name == NULL)
		name = "";
	if (tcr >= 0) {
		if ((id = jt_get_str(T, tcr, "callId", &x->oom)) != NULL && *id == '\0')
			id = NULL;
		display = jt_get(T, tcr, "resultDisplay");
	}
	dt = display >= 0 ? jt_get_str(T, display, "type", &x->oom) : NULL;
	if (strcmp(name, "todo_write") == 0 || (dt && strcmp(dt, "task_execution") == 0))
		return project_record_jsonc(x);
	if (id == NULL)
		id = project_fast_response_member(x, "id", 1);
	id = project_result_call(x, id, *name ? name : NULL, &pe);
	project_fast_begin(x, "tool_call_update");
	project_fast_str(x, "toolCallId", id);
	project_fast_str(x, "status", project_fast_failed(x, tcr) ? "failed" : "completed");
	jbuf_puts(E, ",\"content\":");
	project_fast_result_content(x, tcr, display);
	project_fast_tool_meta(x, name);
	if ((art = jt_get_typed(T, tcr, "artifacts", JT_ARR)) >= 0 && T->n[art].len > 0) {
		jbuf_puts(E, "\"artifacts\":");
		jt_write(E, T, art);
		jbuf_put(E, ",", 1);
	}
	project_tail_meta(x);
	if (display >= 0) {
		jbuf_puts(E, ",\"rawOutput\":");
		jt_write(E, T, display);
	}
	project_tail_top(x);
	rc = project_span(x, x->uoff);
	json_object_put(pe);
	return rc;
}
