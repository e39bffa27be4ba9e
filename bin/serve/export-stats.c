/* SPDX-License-Identifier: ISC */
/*
 * export-stats.c: the statistics of upstream's export metadata, computed
 * from the active chain as upstream's collectSessionMetadata computes
 * them, a record at a time (export-job.c feeds the assistant and tool
 * result records on its thread): totalTokens (every assistant record's
 * usageMetadata.totalTokenCount, and a task tool's executionSummary
 * tokens), contextWindowSize and contextUsagePercent (the last assistant
 * record with both a total and a window), and the files written (tool
 * results whose resultDisplay has a fileName and an original or new
 * content): filesWritten (unique paths: the call's file_path argument,
 * found by call id, else in its tool's call order, else the display's
 * fileName), linesAdded and linesRemoved (its diffStat, else the
 * non-empty lines of the new and the original content).  Bounded: at most
 * STATS_FILES_MAX unique paths and STATS_CALLS_MAX call arguments are
 * kept; past them a path is not added, a call not remembered.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <json-c/json.h>

#include "json.h"
#include "serve.h"
#include "xmalloc.h"

#define STATS_FILES_MAX	10000		/* unique paths kept */
#define STATS_CALLS_MAX	100000		/* call arguments kept */

struct export_stats {
	int64_t		 tokens;
	int		 have_last, have_window;
	int64_t		 last_total, last_window;	/* both set */
	json_object	*window;	/* the last assistant's, any type */
	int64_t		 added, removed;
	json_object	*files;		/* path: true, in the order seen */
	size_t		 nfiles;
	json_object	*by_id;		/* call id: file_path or null */
	json_object	*by_name;	/* tool name: [file_path or null] */
	json_object	*cursor;	/* tool name: its queue's next */
	size_t		 ncalls;
};

/* Caller frees (export_stats_free). */
struct export_stats *
export_stats_new(void)
{
	struct export_stats *st = xcalloc(1, sizeof(*st));

	st->files = xjson_object_new_object();
	st->by_id = xjson_object_new_object();
	st->by_name = xjson_object_new_object();
	st->cursor = xjson_object_new_object();
	return st;
}

/* NULL-safe. */
void
export_stats_free(struct export_stats *st)
{
	if (st == NULL)
		return;
	json_object_put(st->window);
	json_object_put(st->files);
	json_object_put(st->by_id);
	json_object_put(st->by_name);
	json_object_put(st->cursor);
	free(st);
}

/* o's member key as it is (NULL: absent or null). */
static json_object *
mem(json_object *o, const char *key)
{
	json_object *v;

	return o != NULL && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A JSON number's value, or 0 when v is no number (upstream's ?? 0). */
static int64_t
num(json_object *v)
{
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	if (json_object_is_type(v, json_type_double))
		return (int64_t)json_object_get_double(v);
	return 0;
}

/* Whether v is a JSON number. */
static int
is_num(json_object *v)
{
	return json_object_is_type(v, json_type_int) ||
	    json_object_is_type(v, json_type_double);
}

/* A call's arguments as upstream normalizes them (an object, or a JSON
   text of one), or NULL (caller puts). */
static json_object *
call_args(json_object *fc)
{
	json_object *a = json_get(fc, "args", json_type_object);
	const char *s;

	if (a != NULL)
		return json_object_get(a);
	if ((s = json_get_str(fc, "args")) == NULL ||
	    (a = json_tokener_parse(s)) == NULL)
		return NULL;
	if (json_object_is_type(a, json_type_object))
		return a;
	json_object_put(a);
	return NULL;
}

/* An assistant record's function calls remembered by id and by name. */
static void
stats_calls(struct export_stats *st, json_object *rec)
{
	json_object *parts = json_get(json_get_obj(rec, "message"), "parts",
	    json_type_array), *fc, *args, *q, *path;
	const char *name, *id, *fp;
	size_t i, n = parts != NULL ? json_object_array_length(parts) : 0;

	for (i = 0; i < n && st->ncalls < STATS_CALLS_MAX; i++) {
		fc = json_get_obj(json_object_array_get_idx(parts, i), "functionCall");
		if ((name = json_get_str(fc, "name")) == NULL || name[0] == '\0' ||
		    (args = call_args(fc)) == NULL)
			continue;
		fp = json_get_str(args, "file_path");
		path = fp != NULL && fp[0] != '\0' ? xjson_object_new_string(fp) : NULL;
		json_object_put(args);
		if ((id = json_get_str(fc, "id")) != NULL && id[0] != '\0')
			json_object_object_add(st->by_id, id, json_object_get(path));
		if ((q = json_get(st->by_name, name, json_type_array)) == NULL) {
			q = xjson_object_new_array();
			json_object_object_add(st->by_name, name, q);
		}
		json_object_array_add(q, path);
		st->ncalls++;
	}
}

/* The result's tool name and call id (its functionResponse's). */
static void
result_call(json_object *rec, const char **name, const char **id)
{
	json_object *parts = json_get(json_get_obj(rec, "message"), "parts",
	    json_type_array), *fr;
	const char *s;
	size_t i, n = parts != NULL ? json_object_array_length(parts) : 0;

	*name = NULL;
	*id = json_get_str(json_get_obj(rec, "toolCallResult"), "callId");
	if (*id != NULL && (*id)[0] == '\0')
		*id = NULL;
	for (i = 0; i < n; i++) {
		fr = json_get_obj(json_object_array_get_idx(parts, i),
		    "functionResponse");
		if (*name == NULL && (s = json_get_str(fr, "name")) != NULL &&
		    s[0] != '\0')
			*name = s;
		if (*id == NULL && (s = json_get_str(fr, "id")) != NULL &&
		    s[0] != '\0')
			*id = s;
	}
}

/*
 * The file_path argument of the result's call (NULL when the call had
 * none or is not known): by its call id, else the next of its tool's
 * calls (each result of the tool takes one, as upstream's cursor).
 */
static const char *
result_path(struct export_stats *st, json_object *rec)
{
	const char *name, *id;
	json_object *v, *q;
	int64_t k;

	result_call(rec, &name, &id);
	if (id != NULL && json_object_object_get_ex(st->by_id, id, &v))
		return v != NULL ? json_object_get_string(v) : NULL;
	if (name == NULL || (q = json_get(st->by_name, name, json_type_array)) == NULL)
		return NULL;
	k = num(json_get(st->cursor, name, json_type_int));
	if ((size_t)k >= json_object_array_length(q))
		return NULL;
	json_object_object_add(st->cursor, name, xjson_object_new_int64(k + 1));
	v = json_object_array_get_idx(q, (size_t)k);
	return v != NULL ? json_object_get_string(v) : NULL;
}

/* The non-empty lines of a content (upstream's split("\n") filtered). */
static int64_t
lines_of(json_object *v)
{
	const char *s = json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) : "", *nl;
	int64_t n = 0;

	for (; ; s = nl + 1) {
		nl = strchr(s, '\n');
		if ((nl != NULL ? nl : s + strlen(s)) > s)
			n++;
		if (nl == NULL)
			return n;
	}
}

/* A tool result that wrote a file (fp: its call's file_path, or NULL):
   its path and its lines counted. */
static void
stats_file(struct export_stats *st, json_object *d, const char *fp)
{
	json_object *diff;
	const char *name = json_get_str(d, "fileName");

	if (!json_object_object_get_ex(d, "originalContent", NULL) &&
	    !json_object_object_get_ex(d, "newContent", NULL))
		return;
	if (name == NULL)
		fp = "unknown";
	else if (fp == NULL)
		fp = name;
	if (!json_object_object_get_ex(st->files, fp, NULL) &&
	    st->nfiles < STATS_FILES_MAX) {
		json_object_object_add(st->files, fp, xjson_object_new_boolean(1));
		st->nfiles++;
	}
	if ((diff = json_get_obj(d, "diffStat")) != NULL) {
		st->added += num(mem(diff, "model_added_lines"));
		st->removed += num(mem(diff, "model_removed_lines"));
	} else if (!json_object_get_boolean(json_get(d, "truncatedForSession",
	    json_type_boolean))) {
		st->added += lines_of(json_get(d, "newContent", json_type_string));
		st->removed += lines_of(json_get(d, "originalContent", json_type_string));
	}
}

/* A task tool's own tokens (its executionSummary), else 0. */
static int64_t
task_tokens(json_object *d)
{
	json_object *s = json_get_obj(d, "executionSummary"), *t;
	const char *type = json_get_str(d, "type");

	if (type == NULL || strcmp(type, "task_execution") != 0 || s == NULL)
		return 0;
	if ((t = mem(s, "totalTokens")) != NULL && is_num(t))
		return num(t);
	return num(mem(s, "inputTokens")) +
	    num(mem(s, "outputTokens")) +
	    num(mem(s, "thoughtTokens")) +
	    num(mem(s, "cachedTokens"));
}

/* An assistant record's tokens and context window. */
static void
stats_assistant(struct export_stats *st, json_object *rec)
{
	json_object *total = NULL, *win = NULL;

	json_object_object_get_ex(json_get_obj(rec, "usageMetadata"),
	    "totalTokenCount", &total);
	st->tokens += num(total);
	if (!json_object_object_get_ex(rec, "contextWindowSize", &win))
		return;
	json_object_put(st->window);
	st->window = json_object_get(win);
	st->have_window = 1;
	if (total != NULL && is_num(total) && is_num(win)) {
		st->have_last = 1;
		st->last_total = num(total);
		st->last_window = num(win);
	}
}

/* One record of the chain (borrowed). */
void
export_stats_record(struct export_stats *st, json_object *rec)
{
	const char *type = json_get_str(rec, "type"), *fp;
	json_object *d, *tcr;
	int64_t t;

	if (type == NULL)
		return;
	if (strcmp(type, "assistant") == 0) {
		stats_assistant(st, rec);
		stats_calls(st, rec);
		return;
	}
	if (strcmp(type, "tool_result") != 0 ||
	    (tcr = json_get_obj(rec, "toolCallResult")) == NULL)
		return;
	/* Every result takes its call's arguments, as upstream's. */
	fp = result_path(st, rec);
	d = json_get_obj(tcr, "resultDisplay");
	if ((t = task_tokens(d)) > 0)
		st->tokens += t;
	if (d != NULL && json_object_object_get_ex(d, "fileName", NULL))
		stats_file(st, d, fp);
}

/* A number of one decimal as JavaScript writes it (12, 12.5). */
static json_object *
decimal(double v)
{
	char buf[64];

	if (v == floor(v))
		snprintf(buf, sizeof(buf), "%.0f", v);
	else
		snprintf(buf, sizeof(buf), "%.1f", v);
	return xjson_object_new_double_s(v, buf);
}

/*
 * Upstream's statistics into meta, after its promptCount and in its
 * order: contextUsagePercent and contextWindowSize (when known),
 * totalTokens, filesWritten, linesAdded, linesRemoved, uniqueFiles.
 */
void
export_stats_meta(struct export_stats *st, json_object *meta)
{
	json_object *files = xjson_object_new_array();
	double pct;

	if (st->have_last && st->last_window != 0) {
		pct = round((double)st->last_total / (double)st->last_window *
		    1000.0) / 10.0;
		json_object_object_add(meta, "contextUsagePercent", decimal(pct));
	} else if (st->have_last)
		json_object_object_add(meta, "contextUsagePercent", NULL);
	if (st->have_last)
		json_object_object_add(meta, "contextWindowSize",
		    xjson_object_new_int64(st->last_window));
	else if (st->have_window)
		json_object_object_add(meta, "contextWindowSize",
		    json_object_get(st->window));
	json_object_object_add(meta, "totalTokens", xjson_object_new_int64(st->tokens));
	json_object_object_add(meta, "filesWritten", xjson_object_new_int64(
	    (int64_t)st->nfiles));
	json_object_object_add(meta, "linesAdded", xjson_object_new_int64(st->added));
	json_object_object_add(meta, "linesRemoved", xjson_object_new_int64(st->removed));
	json_object_object_foreach(st->files, k, v) {
		(void)v;
		json_object_array_add(files, xjson_object_new_string(k));
	}
	json_object_object_add(meta, "uniqueFiles", files);
}

/* A member of meta as upstream's template literal writes it. */
static const char *
meta_text(json_object *meta, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(meta, key, &v))
		return NULL;
	return v != NULL ? json_object_get_string(v) : "null";
}

/* One "- **Label**: value" line, when meta has key. */
static void
md_line(struct evbuffer *out, json_object *meta, const char *label,
    const char *key, const char *unit)
{
	const char *v = meta_text(meta, key);

	if (v != NULL)
		evbuffer_add_printf(out, "- **%s**: %s%s\n", label, v, unit);
}

/*
 * The Markdown header's statistics, as upstream lays them out after the
 * prompt count: tokens and context, files, and the unique files in a
 * <details> block.
 */
void
export_stats_md(json_object *meta, struct evbuffer *out)
{
	json_object *files = json_get(meta, "uniqueFiles", json_type_array);
	size_t i, n = files != NULL ? json_object_array_length(files) : 0;

	evbuffer_add(out, "\n", 1);
	md_line(out, meta, "Total Tokens", "totalTokens", "");
	md_line(out, meta, "Context Window Size", "contextWindowSize", "");
	md_line(out, meta, "Context Usage", "contextUsagePercent", "%");
	evbuffer_add(out, "\n", 1);
	md_line(out, meta, "Files Written", "filesWritten", "");
	md_line(out, meta, "Lines Added", "linesAdded", "");
	md_line(out, meta, "Lines Removed", "linesRemoved", "");
	if (n == 0)
		return;
	evbuffer_add_printf(out, "\n<details>\n<summary><strong>Unique Files "
	    "Referenced (%zu)</strong></summary>\n\n", n);
	for (i = 0; i < n; i++) {
		evbuffer_add(out, "- `", 3);
		export_doc_text(out, json_object_get_string(
		    json_object_array_get_idx(files, i)), 0);
		evbuffer_add(out, "`\n", 2);
	}
	evbuffer_add_printf(out, "</details>\n");
}

/* The page's statistics, a list under its title (html). */
void
export_stats_html(json_object *meta, struct evbuffer *out)
{
	static const char *const rows[][2] = {
		{ "Total Tokens", "totalTokens" },
		{ "Context Window Size", "contextWindowSize" },
		{ "Context Usage", "contextUsagePercent" },
		{ "Files Written", "filesWritten" },
		{ "Lines Added", "linesAdded" },
		{ "Lines Removed", "linesRemoved" },
	};
	const char *v;

	evbuffer_add_printf(out, "<ul class=\"stats\">\n");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if ((v = meta_text(meta, rows[i][1])) != NULL)
			evbuffer_add_printf(out, "<li>%s: %s%s</li>\n", rows[i][0],
			    v, i == 2 ? "%" : "");
	evbuffer_add_printf(out, "</ul>\n");
}
