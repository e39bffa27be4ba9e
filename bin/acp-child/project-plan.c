/*
 * project-plan.c: todo_write results as plan updates, as the agent replays
 * them: the todos it accepts (string content, a known status), each with
 * its id and blockers under _meta.qwenTodo; the plan's id, the call's id
 * and _meta.stats, the session's token counts summed over the records
 * replayed before the plan (the agent's replay sums them the same way,
 * from zero on a fresh load; its API time is not in the transcript).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "project-int.h"
#include "xmalloc.h"

void
pj_add_usage(struct pctx *x, double prompt, double cached, double cand)
{
	x->cum[0] += prompt;
	x->cum[1] += cached;
	x->cum[2] += cand;
}

void
pj_num(char *buf, size_t n, double v)
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

/* A number as a json-c value printed as JavaScript prints it (new). */
static json_object *
js_number(double v)
{
	char buf[48];

	pj_num(buf, sizeof buf, v);
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

	json_object_object_add(stats, "promptTokens", js_number(x->cum[0]));
	json_object_object_add(stats, "cachedTokens", js_number(x->cum[1]));
	json_object_object_add(stats, "candidateTokens", js_number(x->cum[2]));
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
pj_plan(struct pctx *x, json_object *display, const char *call_id)
{
	json_object *own, *d, *todos, *u, *entries, *e;
	size_t i;
	int rc;

	if ((d = plan_display(display, &own)) == NULL)
		return 0;
	todos = json_get(d, "todos", json_type_array);
	entries = xjson_object_new_array();
	for (i = 0; i < json_object_array_length(todos); i++)
		if ((e = plan_entry(json_object_array_get_idx(todos, i))) != NULL)
			json_object_array_add(entries, e);
	u = pj_update("plan");
	json_object_object_add(u, "entries", entries);
	x->plan_call = call_id;
	rc = pj_emit(x, u, plan_meta(x, d));
	x->plan_call = NULL;
	json_object_put(own);
	return rc;
}
