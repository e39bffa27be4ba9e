/* SPDX-License-Identifier: ISC */
/*
 * project-plan.c: todo_write results as plan updates, as the agent replays
 * them: the todos it accepts (string content, a known status), each with
 * its id and blockers under _meta.qwenTodo; the plan's id, the call's id
 * and _meta.stats, the token counts summed over the records replayed
 * before the plan, from the window's first record (the agent's replay
 * counts from zero at the first record of its page; its API time is not in
 * the transcript).  A transcript page (PROJECT_CHAIN_STATS) reads the
 * counts of the records before it once, at its first plan, so a plan says
 * the same on every page whichever way they are walked; a restore's window
 * does not, and reads only the bytes it sends.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "project-int.h"
#include "xmalloc.h"

void
project_add_usage(struct pctx *x, double prompt, double cached, double cand)
{
	x->cum[0] += prompt;
	x->cum[1] += cached;
	x->cum[2] += cand;
}

void
project_num(char *buf, size_t n, double v)
{
	char *e;
	int p;

	if (v == 0)
		v = 0;			/* -0 prints as 0 */
	if (v > -1e21 && v < 1e21) {	/* integers print whole */
		snprintf(buf, n, "%.0f", v);
		if (strtod(buf, NULL) == v)
			return;
	}
	for (p = 1; p < 17; p++) {	/* the shortest text that reads back */
		snprintf(buf, n, "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (p == 17)
		snprintf(buf, n, "%.17g", v);
	if ((e = strchr(buf, 'e')) != NULL && (e[2] == '0'))
		memmove(e + 2, e + 3, strlen(e + 3) + 1);	/* e-07: e-7 */
}

double
project_tape_count(const struct jtape *t, int obj, const char *key)
{
	int v = jt_get_typed(t, obj, key, JT_NUM);
	char buf[64];

	if (v < 0 || t->n[v].len >= sizeof buf)
		return 0;
	memcpy(buf, t->n[v].p, t->n[v].len);
	buf[t->n[v].len] = '\0';
	return strtod(buf, NULL);
}

double
project_jsonc_count(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return 0;
	return json_object_get_double(v);
}

/* The token counts one record adds, from its tape: an assistant's usage,
   a subagent's execution summary. */
static void
tape_usage(struct pctx *x, struct jtape *t, enum tx_type type)
{
	const char *dt;
	int u, d, oom = 0;

	if (type == TX_ASSISTANT) {
		if ((u = jt_get_typed(t, 0, "usageMetadata", JT_OBJ)) >= 0)
			project_add_usage(x, project_tape_count(t, u, "promptTokenCount"),
			    project_tape_count(t, u, "cachedContentTokenCount"),
			    project_tape_count(t, u, "candidatesTokenCount"));
		return;
	}
	d = jt_get_typed(t, jt_get_typed(t, 0, "toolCallResult", JT_OBJ),
	    "resultDisplay", JT_OBJ);
	if (d < 0 || (dt = jt_get_str(t, d, "type", &oom)) == NULL ||
	    strcmp(dt, "task_execution") != 0 ||
	    (u = jt_get_typed(t, d, "executionSummary", JT_OBJ)) < 0)
		return;
	project_add_usage(x, project_tape_count(t, u, "inputTokens"),
	    project_tape_count(t, u, "cachedTokens"), project_tape_count(t, u, "outputTokens"));
}

/* tape_usage() for a record json-c reads (several fragments, odd bytes). */
static void
jsonc_usage(struct pctx *x, json_object *r, enum tx_type type)
{
	json_object *u, *d;
	const char *dt;

	if (type == TX_ASSISTANT) {
		if ((u = json_get(r, "usageMetadata", json_type_object)) != NULL)
			project_add_usage(x, project_jsonc_count(u, "promptTokenCount"),
			    project_jsonc_count(u, "cachedContentTokenCount"),
			    project_jsonc_count(u, "candidatesTokenCount"));
		return;
	}
	d = json_get(json_get(r, "toolCallResult", json_type_object), "resultDisplay",
	    json_type_object);
	if ((dt = json_get_str(d, "type")) == NULL || strcmp(dt, "task_execution") != 0 ||
	    (u = json_get(d, "executionSummary", json_type_object)) == NULL)
		return;
	project_add_usage(x, project_jsonc_count(u, "inputTokens"),
	    project_jsonc_count(u, "cachedTokens"), project_jsonc_count(u, "outputTokens"));
}

/* Add the counts of the chain's records before the window; -1 on OOM. */
static int
usage_before(struct pctx *x)
{
	struct jtape t;
	enum tx_type type;
	json_object *r;
	const char *bytes;
	size_t i, n;
	int rc = 0, p;

	memset(&t, 0, sizeof t);
	for (i = 0; rc == 0 && i < x->start; i++) {
		type = transcript_type(x->t, x->c->rec[i]);
		if (type != TX_ASSISTANT && type != TX_TOOL_RESULT)
			continue;
		if ((p = transcript_record_bytes(x->t, x->c->rec[i], &bytes, &n, NULL)) == -1)
			continue;		/* unreadable: replayed as nothing */
		if (p == 1 && (p = jt_parse(&t, bytes, n)) == JT_OK && t.n[0].type == JT_OBJ) {
			tape_usage(x, &t, type);
			continue;
		}
		if (p == JT_OOM)
			rc = -1;
		else if ((r = transcript_load_record(x->t, x->c->rec[i], NULL)) != NULL) {
			jsonc_usage(x, r, type);
			json_object_put(r);
		}
	}
	jt_free(&t);
	return rc;
}

/* A number as a json-c value printed as JavaScript prints it (new). */
static json_object *
plan_number(double v)
{
	char buf[48];

	project_num(buf, sizeof buf, v);
	return xjson_object_new_double_s(v, buf);
}

/* The display's plan: the object itself, or parsed from its JSON text
   into *own (caller puts); NULL when it holds no todo_list. */
static json_object *
plan_display(json_object *display, json_object **own)
{
	json_tokener *tok;
	const char *s;

	*own = NULL;
	if (json_object_is_type(display, json_type_string)) {
		if ((tok = json_tokener_new_ex(TX_JSON_DEPTH)) == NULL)
			return NULL;
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
		*own = json_tokener_parse_ex(tok, json_object_get_string(display),
		    json_object_get_string_len(display) + 1);
		if (json_tokener_get_error(tok) != json_tokener_success) {
			json_object_put(*own);
			*own = NULL;
		}
		json_tokener_free(tok);
		display = *own;
	}
	if (!json_object_is_type(display, json_type_object) ||
	    (s = json_get_str(display, "type")) == NULL || strcmp(s, "todo_list") != 0 ||
	    json_get(display, "todos", json_type_array) == NULL)
		return NULL;
	return display;
}

/* blockedBy when it is an array of strings, else NULL. */
static json_object *
blockers(json_object *td)
{
	json_object *b = json_get(td, "blockedBy", json_type_array);
	size_t i;

	for (i = 0; b != NULL && i < json_object_array_length(b); i++)
		if (!json_object_is_type(json_object_array_get_idx(b, i), json_type_string))
			return NULL;
	return b;
}

/* One plan entry, or NULL for a todo the agent drops. */
static json_object *
plan_entry(json_object *td)
{
	json_object *e, *c = json_get(td, "content", json_type_string), *b, *q, *m, *id;
	const char *st = json_get_str(td, "status");

	if (c == NULL || st == NULL || (strcmp(st, "pending") != 0 &&
	    strcmp(st, "in_progress") != 0 && strcmp(st, "completed") != 0))
		return NULL;
	e = xjson_object_new_object();
	json_object_object_add(e, "content", json_object_get(c));
	json_object_object_add(e, "priority", xjson_object_new_string("medium"));
	json_object_object_add(e, "status", xjson_object_new_string(st));
	id = json_get(td, "id", json_type_string);
	if (id != NULL && json_object_get_string_len(id) == 0)
		id = NULL;
	if (id != NULL || (b = blockers(td)) != NULL) {
		b = blockers(td);
		q = xjson_object_new_object();
		m = xjson_object_new_object();
		if (id != NULL)
			json_object_object_add(q, "id", json_object_get(id));
		if (b != NULL)
			json_object_object_add(q, "blockedBy", json_object_get(b));
		json_object_object_add(m, "qwenTodo", q);
		json_object_object_add(e, "_meta", m);
	}
	return e;
}

/* _meta of the plan: stats, the plan's id, the session-workflow mark. */
static json_object *
plan_meta(struct pctx *x, json_object *d)
{
	json_object *meta = xjson_object_new_object(), *stats = xjson_object_new_object();
	json_object *v, *id;

	json_object_object_add(stats, "promptTokens", plan_number(x->cum[0]));
	json_object_object_add(stats, "cachedTokens", plan_number(x->cum[1]));
	json_object_object_add(stats, "candidateTokens", plan_number(x->cum[2]));
	json_object_object_add(stats, "apiTimeMs", xjson_object_new_int(0));
	json_object_object_add(meta, "stats", stats);
	if ((v = json_get(d, "planId", json_type_string)) != NULL &&
	    json_object_get_string_len(v) > 0) {
		id = xjson_object_new_object();
		json_object_object_add(id, "id", json_object_get(v));
		json_object_object_add(meta, "qwenTodoPlan", id);
	}
	if ((v = json_get(d, "sessionWorkflow", json_type_boolean)) != NULL &&
	    json_object_get_boolean(v))
		json_object_object_add(meta, "qwenSessionWorkflow", xjson_object_new_boolean(1));
	return meta;
}

int
project_plan(struct pctx *x, json_object *display, const char *call_id)
{
	json_object *own, *d, *todos, *u, *entries, *e;
	size_t i;
	int rc;

	if ((d = plan_display(display, &own)) == NULL)
		return 0;
	if (!x->counted) {
		x->counted = 1;
		if (usage_before(x) == -1) {
			json_object_put(own);
			return -1;
		}
	}
	todos = json_get(d, "todos", json_type_array);
	entries = xjson_object_new_array();
	for (i = 0; i < json_object_array_length(todos); i++)
		if ((e = plan_entry(json_object_array_get_idx(todos, i))) != NULL)
			json_object_array_add(entries, e);
	u = project_update("plan");
	json_object_object_add(u, "entries", entries);
	x->plan_call = call_id;
	rc = project_emit(x, u, plan_meta(x, d));
	x->plan_call = NULL;
	json_object_put(own);
	return rc;
}
