/* SPDX-License-Identifier: ISC */
/*
 * export-doc.c: a persisted transcript rendered as upstream's export
 * documents: json (its session-export shape: sessionId, startTime,
 * messages, metadata), md (its Markdown layout) and html (a static page
 * carrying the same document).  The messages are the user and assistant
 * records with text, in file order.  The document is fed a slice of
 * the transcript at a time (export-job.c reads the file).
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <json-c/json.h>

#include "clock.h"
#include "json.h"
#include "rpc-frame.h"
#include "serve.h"
#include "xmalloc.h"

#define EXPORT_JSON_FLAGS	(JSON_C_TO_STRING_PRETTY | \
    JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

static const struct {
	const char	*name;
	const char	*mime;
} formats[] = {
	[EXPORT_HTML] = { "html", "text/html; charset=utf-8" },
	[EXPORT_MD] = { "md", "text/markdown; charset=utf-8" },
	[EXPORT_JSON] = { "json", "application/json; charset=utf-8" },
	[EXPORT_JSONL] = { "jsonl", "application/x-ndjson" },
};

/* The format named (NULL: upstream's default, html), or -1. */
int
export_format(const char *name)
{
	if (name == NULL)
		return EXPORT_HTML;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(name, formats[i].name) == 0)
			return (int)i;
	return -1;
}

/* The query value that names fmt. */
const char *
export_format_name(int fmt)
{
	return formats[fmt].name;
}

/* The Content-Type fmt is sent as (upstream's). */
const char *
export_mime(int fmt)
{
	return formats[fmt].mime;
}

/* The text parts of a record's message ({text} and {text, thought}). */
static json_object *
record_parts(json_object *rec)
{
	json_object *parts = json_get(json_get_obj(rec, "message"), "parts",
	    json_type_array), *out = xjson_object_new_array(), *p, *q, *v;
	size_t n = parts != NULL ? json_object_array_length(parts) : 0;

	for (size_t i = 0; i < n; i++) {
		p = json_object_array_get_idx(parts, i);
		if (json_get_str(p, "text") == NULL)
			continue;
		q = xjson_object_new_object();
		json_object_object_add(q, "text",
		    xjson_object_new_string(json_get_str(p, "text")));
		if ((v = json_get(p, "thought", json_type_boolean)) != NULL)
			json_object_object_add(q, "thought", json_object_get(v));
		json_object_array_add(out, q);
	}
	return out;
}

/* Copy rec's string member key into o (when it has one). */
static void
copy_str(json_object *o, const char *as, json_object *rec, const char *key)
{
	const char *s = json_get_str(rec, key);

	if (s != NULL)
		json_object_object_add(o, as, xjson_object_new_string(s));
}

/* One record into the document: a message, the metadata it carries. */
static void
doc_record(json_object *doc, json_object *meta, json_object *rec, size_t *prompts)
{
	const char *type = json_get_str(rec, "type"), *role;
	json_object *m, *msg, *parts;

	if (!json_object_object_get_ex(doc, "startTime", NULL))
		copy_str(doc, "startTime", rec, "timestamp");
	if (!json_object_object_get_ex(meta, "cwd", NULL)) {
		copy_str(meta, "cwd", rec, "cwd");
		copy_str(meta, "gitBranch", rec, "gitBranch");
	}
	if (type == NULL || (strcmp(type, "user") != 0 && strcmp(type, "assistant") != 0))
		return;
	if (strcmp(type, "user") == 0)
		(*prompts)++;
	else if (!json_object_object_get_ex(meta, "model", NULL))
		copy_str(meta, "model", rec, "model");
	parts = record_parts(rec);
	if (json_object_array_length(parts) == 0) {
		json_object_put(parts);
		return;
	}
	m = xjson_object_new_object();
	copy_str(m, "uuid", rec, "uuid");
	json_object_object_add(m, "sessionId", json_object_get(
	    json_get(doc, "sessionId", json_type_string)));
	copy_str(m, "timestamp", rec, "timestamp");
	json_object_object_add(m, "type", xjson_object_new_string(type));
	msg = xjson_object_new_object();
	role = json_get_str(json_get_obj(rec, "message"), "role");
	json_object_object_add(msg, "role", xjson_object_new_string(
	    role != NULL ? role : strcmp(type, "user") == 0 ? "user" : "model"));
	json_object_object_add(msg, "parts", parts);
	json_object_object_add(m, "message", msg);
	json_object_array_add(json_get(doc, "messages", json_type_array), m);
}

/* o's members in upstream's order (names first, the rest after); puts o. */
static json_object *
in_order(json_object *o, const char *const *names)
{
	json_object *out = xjson_object_new_object(), *v;

	for (; *names != NULL; names++)
		if (json_object_object_get_ex(o, *names, &v))
			json_object_object_add(out, *names, json_object_get(v));
	json_object_object_foreach(o, k, val)
		if (!json_object_object_get_ex(out, k, NULL))
			json_object_object_add(out, k, json_object_get(val));
	json_object_put(o);
	return out;
}

/* Whether a line may be a record the document uses (parsed only then). */
static int
line_wanted(const char *line, size_t len, int first)
{
	return first || memmem(line, len, "\"type\":\"user\"", 13) != NULL ||
	    memmem(line, len, "\"type\":\"assistant\"", 18) != NULL ||
	    memmem(line, len, "\"type\": \"user\"", 14) != NULL ||
	    memmem(line, len, "\"type\": \"assistant\"", 19) != NULL;
}

/* A document being built, a slice of the transcript at a time. */
struct export_doc {
	json_object	*doc, *meta;
	json_tokener	*tok;
	size_t		 prompts;
	int		 first;
};

/* A new document for session id (caller frees with export_doc_free). */
struct export_doc *
export_doc_new(const char *id)
{
	struct export_doc *d = xcalloc(1, sizeof(*d));

	if ((d->tok = json_tokener_new_ex(RPC_MAX_DEPTH)) == NULL)
		fatalx("out of memory (json tokener)");
	d->doc = xjson_object_new_object();
	d->meta = xjson_object_new_object();
	d->first = 1;
	json_object_object_add(d->doc, "sessionId", xjson_object_new_string(id));
	json_object_object_add(d->doc, "messages", xjson_object_new_array());
	return d;
}

/* NULL-safe. */
void
export_doc_free(struct export_doc *d)
{
	if (d == NULL)
		return;
	json_object_put(d->doc);
	json_object_put(d->meta);
	json_tokener_free(d->tok);
	free(d);
}

/* One line (not NUL-terminated) into the document, when it is a record. */
static void
doc_line(struct export_doc *d, const char *line, size_t len)
{
	json_object *rec;

	if (len == 0 || len > INT_MAX || !line_wanted(line, len, d->first))
		return;
	json_tokener_reset(d->tok);
	rec = json_tokener_parse_ex(d->tok, line, (int)len);
	if (rec != NULL && json_object_is_type(rec, json_type_object)) {
		doc_record(d->doc, d->meta, rec, &d->prompts);
		d->first = 0;
	}
	json_object_put(rec);
}

/*
 * The whole lines of buf[0..*len) into the document; the last partial
 * one is moved to buf's start (*len its length), or taken too when final.
 */
void
export_doc_lines(struct export_doc *d, char *buf, size_t *len, int final)
{
	char *p = buf, *nl, *end = buf + *len;

	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		doc_line(d, p, (size_t)(nl - p));
		p = nl + 1;
	}
	if (final) {
		doc_line(d, p, (size_t)(end - p));
		p = end;
	}
	*len = (size_t)(end - p);
	memmove(buf, p, *len);
}

/* The finished document, members in upstream's order (borrowed from d). */
static json_object *
doc_finish(struct export_doc *d)
{
	static const char *const doc_keys[] = { "sessionId", "startTime",
	    "messages", "metadata", NULL };
	static const char *const meta_keys[] = { "sessionId", "startTime",
	    "exportTime", "cwd", "gitBranch", "model", "channel", "promptCount",
	    NULL };
	json_object *doc = d->doc, *meta = d->meta;
	char now[CLOCK_ISO_LEN];

	if (!json_object_object_get_ex(doc, "startTime", NULL))
		json_object_object_add(doc, "startTime", xjson_object_new_string(""));
	clock_iso_now(now);
	json_object_object_add(meta, "sessionId", json_object_get(
	    json_get(doc, "sessionId", json_type_string)));
	json_object_object_add(meta, "startTime", json_object_get(
	    json_get(doc, "startTime", json_type_string)));
	json_object_object_add(meta, "exportTime", xjson_object_new_string(now));
	json_object_object_add(meta, "channel", xjson_object_new_string("daemon"));
	json_object_object_add(meta, "promptCount",
	    xjson_object_new_int64((int64_t)d->prompts));
	json_object_object_add(doc, "metadata", in_order(meta, meta_keys));
	d->meta = NULL;
	d->doc = in_order(doc, doc_keys);
	return d->doc;
}

/* s into out with each character that repl maps replaced (runs copied whole). */
static void
escape(struct evbuffer *out, const char *s, const char *(*repl)(char))
{
	const char *run = s, *r;

	for (; *s != '\0'; s++) {
		if ((r = repl(*s)) == NULL)
			continue;
		evbuffer_add(out, run, (size_t)(s - run));
		evbuffer_add(out, r, strlen(r));
		run = s + 1;
	}
	evbuffer_add(out, run, (size_t)(s - run));
}

/* & and < (upstream's Markdown sanitizing). */
static const char *
md_repl(char c)
{
	return c == '&' ? "&amp;" : c == '<' ? "&lt;" : NULL;
}

/* s with & and < escaped, as upstream's Markdown header fields. */
static void
md_text(struct evbuffer *out, const char *s)
{
	escape(out, s, md_repl);
}

/* s as it is (upstream's Markdown keeps a message's text unescaped). */
static void
md_raw(struct evbuffer *out, const char *s)
{
	evbuffer_add(out, s, strlen(s));
}

/* A message's text parts joined by newlines (upstream's message text). */
static void
msg_text(struct evbuffer *out, json_object *m, void (*esc)(struct evbuffer *,
    const char *))
{
	json_object *parts = json_get(json_get_obj(m, "message"), "parts",
	    json_type_array);

	for (size_t i = 0; parts != NULL && i < json_object_array_length(parts); i++) {
		if (i > 0)
			evbuffer_add(out, "\n", 1);
		esc(out, json_get_str(json_object_array_get_idx(parts, i), "text"));
	}
}

/* One "- **Label**: value" line of the Markdown header, when set. */
static void
md_field(struct evbuffer *out, const char *label, json_object *o,
    const char *key, int code)
{
	const char *v = json_get_str(o, key);

	if (v == NULL || v[0] == '\0')
		return;
	evbuffer_add_printf(out, "- **%s**: %s", label, code ? "`" : "");
	md_text(out, v);
	evbuffer_add_printf(out, "%s\n", code ? "`" : "");
}

/* The document as upstream's Markdown export lays it out. */
static void
render_md(struct evbuffer *out, json_object *doc)
{
	json_object *meta = json_get_obj(doc, "metadata"), *msgs, *m;

	evbuffer_add_printf(out, "# Chat Session Export\n\n");
	md_field(out, "Session ID", doc, "sessionId", 1);
	md_field(out, "Start Time", doc, "startTime", 0);
	md_field(out, "Exported", meta, "exportTime", 0);
	evbuffer_add(out, "\n", 1);
	md_field(out, "Working Directory", meta, "cwd", 1);
	md_field(out, "Git Branch", meta, "gitBranch", 1);
	evbuffer_add(out, "\n", 1);
	md_field(out, "Model", meta, "model", 0);
	md_field(out, "Channel", meta, "channel", 0);
	evbuffer_add_printf(out, "- **Prompt Count**: %s\n\n", json_object_get_string(
	    json_get(meta, "promptCount", json_type_int)));
	evbuffer_add_printf(out, "\n---\n\n");
	msgs = json_get(doc, "messages", json_type_array);
	for (size_t i = 0; i < json_object_array_length(msgs); i++) {
		m = json_object_array_get_idx(msgs, i);
		evbuffer_add_printf(out, "## %s\n\n", strcmp(json_get_str(m, "type"),
		    "user") == 0 ? "User" : "Assistant");
		msg_text(out, m, md_raw);
		evbuffer_add_printf(out, "\n\n\n");
	}
}

/* HTML text and attribute values. */
static const char *
html_repl(char c)
{
	switch (c) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&#39;";
	}
	return NULL;
}

/* s escaped for HTML text. */
static void
html_text(struct evbuffer *out, const char *s)
{
	escape(out, s, html_repl);
}

/* JSON inside <script>: no "<" may close it (as upstream escapes it). */
static const char *
json_repl(char c)
{
	return c == '<' ? "\\u003c" : c == '>' ? "\\u003e" : c == '&' ? "\\u0026" : NULL;
}

/* A JSON text escaped for its script element. */
static void
html_json(struct evbuffer *out, const char *s)
{
	escape(out, s, json_repl);
}

/*
 * A static page: every message as escaped text (no script runs: the
 * policy allows none), and the json document in its
 * script#transcript-document data block, as upstream's page carries it.
 */
static void
render_html(struct evbuffer *out, json_object *doc)
{
	json_object *msgs = json_get(doc, "messages", json_type_array), *m;
	int user;

	evbuffer_add_printf(out, "<!doctype html>\n<html lang=\"en\">\n<head>\n"
	    "<meta charset=\"UTF-8\" />\n<meta http-equiv=\"Content-Security-Policy\" "
	    "content=\"default-src 'none'; style-src 'unsafe-inline'\" />\n"
	    "<title>Chat Session Export</title>\n<style>body{font-family:sans-serif;"
	    "max-width:60em;margin:auto}pre{white-space:pre-wrap}</style>\n"
	    "</head>\n<body>\n<h1>Chat Session Export</h1>\n<p>Session <code>");
	html_text(out, json_get_str(doc, "sessionId"));
	evbuffer_add_printf(out, "</code></p>\n");
	for (size_t i = 0; i < json_object_array_length(msgs); i++) {
		m = json_object_array_get_idx(msgs, i);
		user = strcmp(json_get_str(m, "type"), "user") == 0;
		evbuffer_add_printf(out, "<section class=\"%s\"><h2>%s</h2><pre>",
		    user ? "user" : "assistant", user ? "User" : "Assistant");
		msg_text(out, m, html_text);
		evbuffer_add_printf(out, "</pre></section>\n");
	}
	evbuffer_add_printf(out, "<script type=\"application/json\" "
	    "id=\"transcript-document\">");
	html_json(out, json_object_to_json_string_ext(doc,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	evbuffer_add_printf(out, "</script>\n</body>\n</html>\n");
}

/* The document, finished, rendered as fmt (not jsonl) into out. */
void
export_doc_render(struct export_doc *d, int fmt, struct evbuffer *out)
{
	json_object *doc = doc_finish(d);
	const char *s;

	if (fmt == EXPORT_JSON) {
		s = json_object_to_json_string_ext(doc, EXPORT_JSON_FLAGS);
		evbuffer_add(out, s, strlen(s));
	} else if (fmt == EXPORT_MD)
		render_md(out, doc);
	else
		render_html(out, doc);
}
