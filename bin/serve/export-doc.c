/* SPDX-License-Identifier: ISC */
/*
 * export-doc.c: upstream's export documents written a record at a time.
 * A record of the active chain becomes the messages upstream's exporter
 * makes of it (user and assistant text, the assistant's thoughts as a
 * "thinking" message, a tool result as a tool_call message; consecutive
 * text of one role merged into one message), and each message is written
 * as it is finished: jsonl (a session_metadata line, then a message a
 * line), json (its session-export object: sessionId, startTime, messages,
 * metadata), md (its Markdown layout) and html (a static page of the
 * messages, then the json document in its data block: a second pass).
 * Nothing but the message being merged is kept (export-job.c reads).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <json-c/json.h>

#include "clock.h"
#include "json.h"
#include "serve.h"
#include "xmalloc.h"

#define DOC_PLAIN	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define DOC_PRETTY	(JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | \
    JSON_C_TO_STRING_NOSLASHESCAPE)

static const struct {
	const char	*name;
	const char	*mime;
} formats[] = {
	[EXPORT_HTML] = { "html", "text/html; charset=utf-8" },
	[EXPORT_MD] = { "md", "text/markdown; charset=utf-8" },
	[EXPORT_JSON] = { "json", "application/json; charset=utf-8" },
	[EXPORT_JSONL] = { "jsonl", "application/jsonl; charset=utf-8" },
};

/* A document being written. */
struct export_doc {
	char		*id;
	int		 fmt;
	int		 pass;		/* html: 0 the page, 1 its data block */
	size_t		 written;	/* messages written in this pass */
	json_object	*meta;		/* upstream's metadata */
	json_object	*cur;		/* the message being merged, or NULL */
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

/* A document of session id as fmt, its metadata meta (taken). */
struct export_doc *
export_doc_new(const char *id, int fmt, json_object *meta)
{
	struct export_doc *d = xcalloc(1, sizeof(*d));

	d->id = xstrdup(id);
	d->fmt = fmt;
	d->meta = meta;
	return d;
}

/* NULL-safe. */
void
export_doc_free(struct export_doc *d)
{
	if (d == NULL)
		return;
	json_object_put(d->meta);
	json_object_put(d->cur);
	free(d->id);
	free(d);
}

/* ---- escaping ---------------------------------------------------------- */

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

/* & and < (upstream's Markdown sanitizing of header fields). */
static const char *
md_repl(char c)
{
	return c == '&' ? "&amp;" : c == '<' ? "&lt;" : NULL;
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

/* JSON inside <script>: no "<" may close it (as upstream escapes it). */
static const char *
json_repl(char c)
{
	return c == '<' ? "\\u003c" : c == '>' ? "\\u003e" : c == '&' ?
	    "\\u0026" : NULL;
}

/* s as it is (upstream's Markdown keeps a message's text unescaped). */
static void
raw_text(struct evbuffer *out, const char *s)
{
	evbuffer_add(out, s, strlen(s));
}

static void
html_text(struct evbuffer *out, const char *s)
{
	escape(out, s, html_repl);
}

/* s as a header field of the document: html's escaping, or md's. */
void
export_doc_text(struct evbuffer *out, const char *s, int html)
{
	escape(out, s, html ? html_repl : md_repl);
}

/* o pretty, each line indented by indent spaces more (json's nesting). */
static void
json_indented(struct evbuffer *out, json_object *o, int indent)
{
	const char *s = json_object_to_json_string_ext(o, DOC_PRETTY), *nl;

	/* Pretty output breaks lines only between values: strings keep \n escaped. */
	while ((nl = strchr(s, '\n')) != NULL) {
		evbuffer_add(out, s, (size_t)(nl - s + 1));
		evbuffer_add_printf(out, "%*s", indent, "");
		s = nl + 1;
	}
	evbuffer_add(out, s, strlen(s));
}

/* ---- messages ---------------------------------------------------------- */

/* A message's text parts joined by newlines (upstream's message text). */
static void
msg_text(struct evbuffer *out, json_object *m, void (*esc)(struct evbuffer *,
    const char *))
{
	json_object *parts = json_get(json_get_obj(m, "message"), "parts",
	    json_type_array);
	const char *t;

	for (size_t i = 0; parts != NULL && i < json_object_array_length(parts); i++) {
		if (i > 0)
			evbuffer_add(out, "\n", 1);
		if ((t = json_get_str(json_object_array_get_idx(parts, i),
		    "text")) != NULL)
			esc(out, t);
	}
}

/* A tool_call message as upstream's Markdown shows it (title, status). */
static void
md_tool(struct evbuffer *out, json_object *m)
{
	json_object *tc = json_get_obj(m, "toolCall");
	const char *title = json_get_str(tc, "title");
	const char *status = json_get_str(tc, "status");

	evbuffer_add_printf(out, "### Tool: ");
	escape(out, title != NULL ? title : "", md_repl);
	evbuffer_add_printf(out, "\n**Status**: ");
	escape(out, status != NULL ? status : "", md_repl);
	evbuffer_add_printf(out, "\n");
}

/* One finished message (borrowed) into out, in the document's format. */
static void
doc_write(struct export_doc *d, json_object *m, struct evbuffer *out)
{
	const char *type = json_get_str(m, "type");
	int user = type != NULL && strcmp(type, "user") == 0;

	if (d->fmt == EXPORT_JSONL) {
		evbuffer_add(out, "\n", 1);
		raw_text(out, json_object_to_json_string_ext(m, DOC_PLAIN));
	} else if (d->fmt == EXPORT_JSON) {
		evbuffer_add_printf(out, "%s\n    ", d->written > 0 ? "," : "");
		json_indented(out, m, 4);
	} else if (d->fmt == EXPORT_MD) {
		if (strcmp(type, "tool_call") == 0)
			md_tool(out, m);
		else {
			evbuffer_add_printf(out, "## %s\n\n", user ? "User" :
			    "Assistant");
			msg_text(out, m, raw_text);
		}
		evbuffer_add_printf(out, "\n\n\n");
	} else if (d->pass == 1) {
		if (d->written > 0)
			evbuffer_add(out, ",", 1);
		escape(out, json_object_to_json_string_ext(m, DOC_PLAIN), json_repl);
	} else if (strcmp(type, "tool_call") != 0) {
		evbuffer_add_printf(out, "<section class=\"%s\"><h2>%s</h2><pre>",
		    user ? "user" : "assistant", user ? "User" : "Assistant");
		msg_text(out, m, html_text);
		evbuffer_add_printf(out, "</pre></section>\n");
	}
	d->written++;
}

/* The message being merged, written and dropped. */
static void
doc_flush(struct export_doc *d, struct evbuffer *out)
{
	if (d->cur == NULL)
		return;
	doc_write(d, d->cur, out);
	json_object_put(d->cur);
	d->cur = NULL;
}

/* A new message of rec's: uuid, sessionId, timestamp, type (caller puts). */
static json_object *
msg_new(struct export_doc *d, json_object *rec, const char *type)
{
	json_object *m = xjson_object_new_object();
	const char *v;

	if ((v = json_get_str(rec, "uuid")) != NULL)
		json_object_object_add(m, "uuid", xjson_object_new_string(v));
	json_object_object_add(m, "sessionId", xjson_object_new_string(d->id));
	if ((v = json_get_str(rec, "timestamp")) != NULL)
		json_object_object_add(m, "timestamp", xjson_object_new_string(v));
	json_object_object_add(m, "type", xjson_object_new_string(type));
	return m;
}

/* Text of role (user, assistant, thinking) onto the message being merged. */
static void
doc_text(struct export_doc *d, json_object *rec, const char *type,
    const char *role, const char *text, struct evbuffer *out)
{
	json_object *msg, *part;

	msg = json_get_obj(d->cur, "message");
	if (d->cur != NULL && (strcmp(json_get_str(d->cur, "type"), type) != 0 ||
	    strcmp(json_get_str(msg, "role"), role) != 0))
		doc_flush(d, out);
	if (d->cur == NULL) {
		d->cur = msg_new(d, rec, type);
		msg = xjson_object_new_object();
		json_object_object_add(msg, "role", xjson_object_new_string(role));
		json_object_object_add(msg, "parts", xjson_object_new_array());
		json_object_object_add(d->cur, "message", msg);
	}
	part = xjson_object_new_object();
	json_object_object_add(part, "text", xjson_object_new_string(text));
	json_object_array_add(json_get(msg, "parts", json_type_array), part);
}

/* A user or assistant record's text parts (thoughts: role thinking). */
static void
doc_parts(struct export_doc *d, json_object *rec, int user, struct evbuffer *out)
{
	json_object *parts = json_get(json_get_obj(rec, "message"), "parts",
	    json_type_array), *p, *usage;
	const char *t;

	for (size_t i = 0; parts != NULL && i < json_object_array_length(parts); i++) {
		p = json_object_array_get_idx(parts, i);
		if ((t = json_get_str(p, "text")) == NULL || t[0] == '\0')
			continue;
		if (user)
			doc_text(d, rec, "user", "user", t, out);
		else
			doc_text(d, rec, "assistant", json_object_get_boolean(
			    json_get(p, "thought", json_type_boolean)) ?
			    "thinking" : "assistant", t, out);
	}
	usage = json_get(rec, "usageMetadata", json_type_object);
	if (!user && usage != NULL && d->cur != NULL &&
	    !json_object_object_get_ex(d->cur, "usageMetadata", NULL))
		json_object_object_add(d->cur, "usageMetadata",
		    json_object_get(usage));
}

/* ---- tool results ------------------------------------------------------ */

/* The first part of rec holding member key (functionResponse, ...). */
static json_object *
rec_part(json_object *rec, const char *key)
{
	json_object *parts = json_get(json_get_obj(rec, "message"), "parts",
	    json_type_array), *v;

	for (size_t i = 0; parts != NULL && i < json_object_array_length(parts); i++)
		if ((v = json_get_obj(json_object_array_get_idx(parts, i),
		    key)) != NULL)
			return v;
	return NULL;
}

/* {type: content, content: {type: text, text}} onto arr. */
static void
content_text(json_object *arr, const char *text)
{
	json_object *c = xjson_object_new_object(), *t = xjson_object_new_object();

	json_object_object_add(t, "type", xjson_object_new_string("text"));
	json_object_object_add(t, "text", xjson_object_new_string(text));
	json_object_object_add(c, "type", xjson_object_new_string("content"));
	json_object_object_add(c, "content", t);
	json_object_array_add(arr, c);
}

/* A response's text: its output, its error, or the response as JSON. */
static const char *
response_text(json_object *resp)
{
	const char *s;

	if ((s = json_get_str(resp, "output")) != NULL ||
	    (s = json_get_str(resp, "error")) != NULL)
		return s;
	return resp != NULL ? json_object_to_json_string_ext(resp, DOC_PLAIN) :
	    "null";
}

/* A result's content: its file diff, else its text and responses. */
static json_object *
tool_content(json_object *rec, json_object *display)
{
	json_object *arr = xjson_object_new_array(), *parts, *p, *d, *fr;
	const char *path, *t;

	if (json_get_str(display, "fileName") != NULL &&
	    json_object_object_get_ex(display, "newContent", NULL)) {
		d = xjson_object_new_object();
		path = json_get_str(display, "filePath");
		json_object_object_add(d, "type", xjson_object_new_string("diff"));
		json_object_object_add(d, "path", xjson_object_new_string(path != NULL ?
		    path : json_get_str(display, "fileName")));
		t = json_get_str(display, "originalContent");
		json_object_object_add(d, "oldText", xjson_object_new_string(
		    t != NULL ? t : ""));
		json_object_object_add(d, "newText", json_object_get(json_get(
		    display, "newContent", json_type_string)));
		json_object_array_add(arr, d);
		return arr;
	}
	parts = json_get(json_get_obj(rec, "message"), "parts", json_type_array);
	for (size_t i = 0; parts != NULL && i < json_object_array_length(parts); i++) {
		p = json_object_array_get_idx(parts, i);
		if ((t = json_get_str(p, "text")) != NULL && t[0] != '\0')
			content_text(arr, t);
		else if ((fr = json_get_obj(p, "functionResponse")) != NULL)
			content_text(arr, response_text(json_get(fr, "response",
			    json_type_object)));
	}
	return arr;
}

/* The toolCall of a tool_result record, as upstream's export builds it. */
static json_object *
tool_call(json_object *rec, const char *name)
{
	json_object *res = json_get_obj(rec, "toolCallResult"), *tc, *fc, *args;
	json_object *display = json_get(res, "resultDisplay", json_type_object);
	const char *id = json_get_str(res, "callId");
	int64_t ms;

	if (id == NULL)
		id = json_get_str(rec_part(rec, "functionResponse"), "id");
	tc = xjson_object_new_object();
	json_object_object_add(tc, "toolCallId", xjson_object_new_string(
	    id != NULL ? id : ""));
	json_object_object_add(tc, "kind", xjson_object_new_string(
	    strcmp(name, "exit_plan_mode") == 0 ||
	    strcmp(name, "enter_plan_mode") == 0 ? "switch_mode" : "other"));
	json_object_object_add(tc, "title", xjson_object_new_string(
	    name[0] != '\0' ? name : "tool_call"));
	json_object_object_add(tc, "status", xjson_object_new_string(
	    json_object_object_get_ex(res, "error", &args) && args != NULL ?
	    "failed" : "completed"));
	fc = rec_part(rec, "functionCall");
	if ((args = json_get(fc, "args", json_type_object)) != NULL ||
	    (args = json_get(res, "args", json_type_object)) != NULL ||
	    (args = json_get(res, "args", json_type_string)) != NULL)
		json_object_object_add(tc, "rawInput", json_object_get(args));
	json_object_object_add(tc, "content", tool_content(rec, display));
	if ((ms = clock_iso_parse(json_get_str(rec, "timestamp"))) != -1)
		json_object_object_add(tc, "timestamp", xjson_object_new_int64(ms));
	return tc;
}

/* A tool_result record: a tool_call message (todo_write's is its plan). */
static void
doc_tool(struct export_doc *d, json_object *rec, struct evbuffer *out)
{
	const char *name = json_get_str(rec_part(rec, "functionResponse"), "name");
	const char *parent = json_get_str(rec, "parentUuid");
	json_object *m;

	if (name == NULL)
		name = "";
	if (strcmp(name, "todo_write") == 0)
		return;
	doc_flush(d, out);
	m = msg_new(d, rec, "tool_call");
	if (parent != NULL)
		json_object_object_add(m, "parentUuid", xjson_object_new_string(parent));
	json_object_object_add(m, "toolCall", tool_call(rec, name));
	doc_write(d, m, out);
	json_object_put(m);
}

/* One record of the chain (borrowed): its messages, into out as finished. */
void
export_doc_record(struct export_doc *d, json_object *rec, struct evbuffer *out)
{
	const char *type = json_get_str(rec, "type");

	if (type == NULL)
		return;
	if (strcmp(type, "user") == 0)
		doc_parts(d, rec, 1, out);
	else if (strcmp(type, "assistant") == 0)
		doc_parts(d, rec, 0, out);
	else if (strcmp(type, "tool_result") == 0)
		doc_tool(d, rec, out);
}

/* ---- the document's frame ---------------------------------------------- */

/* One "- **Label**: value" line of the Markdown header, when set. */
static void
md_field(struct evbuffer *out, const char *label, json_object *o,
    const char *key, int code)
{
	const char *v = json_get_str(o, key);

	if (v == NULL || v[0] == '\0')
		return;
	evbuffer_add_printf(out, "- **%s**: %s", label, code ? "`" : "");
	escape(out, v, md_repl);
	evbuffer_add_printf(out, "%s\n", code ? "`" : "");
}

/* The Markdown header as upstream lays it out. */
static void
md_head(struct export_doc *d, struct evbuffer *out)
{
	json_object *meta = d->meta;

	evbuffer_add_printf(out, "# Chat Session Export\n\n");
	md_field(out, "Session ID", meta, "sessionId", 1);
	md_field(out, "Start Time", meta, "startTime", 0);
	md_field(out, "Exported", meta, "exportTime", 0);
	evbuffer_add(out, "\n", 1);
	md_field(out, "Working Directory", meta, "cwd", 1);
	md_field(out, "Git Branch", meta, "gitBranch", 1);
	evbuffer_add(out, "\n", 1);
	md_field(out, "Model", meta, "model", 0);
	md_field(out, "Channel", meta, "channel", 0);
	evbuffer_add_printf(out, "- **Prompt Count**: %s\n",
	    json_object_get_string(json_get(meta, "promptCount", json_type_int)));
	export_stats_md(meta, out);
	evbuffer_add_printf(out, "\n---\n\n");
}

/* A string member of the metadata as a JSON text (for the json head). */
static const char *
meta_json(struct export_doc *d, const char *key)
{
	json_object *v = json_get(d->meta, key, json_type_string);

	return v != NULL ? json_object_to_json_string_ext(v, DOC_PLAIN) : "\"\"";
}

/* What comes before the first message of this pass. */
void
export_doc_head(struct export_doc *d, struct evbuffer *out)
{
	json_object *line;

	d->written = 0;
	if (d->fmt == EXPORT_JSONL) {
		/* upstream's first line: the metadata, typed session_metadata */
		line = xjson_object_new_object();
		json_object_object_add(line, "type",
		    xjson_object_new_string("session_metadata"));
		json_object_object_foreach(d->meta, k, v)
			json_object_object_add(line, k, json_object_get(v));
		raw_text(out, json_object_to_json_string_ext(line, DOC_PLAIN));
		json_object_put(line);
	} else if (d->fmt == EXPORT_JSON) {
		evbuffer_add_printf(out, "{\n  \"sessionId\": %s,\n", meta_json(d,
		    "sessionId"));
		evbuffer_add_printf(out, "  \"startTime\": %s,\n  \"messages\": [",
		    meta_json(d, "startTime"));
	} else if (d->fmt == EXPORT_MD)
		md_head(d, out);
	else if (d->pass == 0) {
		evbuffer_add_printf(out, "<!doctype html>\n<html lang=\"en\">\n"
		    "<head>\n<meta charset=\"UTF-8\" />\n<meta http-equiv="
		    "\"Content-Security-Policy\" content=\"default-src 'none'; "
		    "style-src 'unsafe-inline'\" />\n<title>Chat Session Export"
		    "</title>\n<style>body{font-family:sans-serif;max-width:60em;"
		    "margin:auto}pre{white-space:pre-wrap}</style>\n</head>\n"
		    "<body>\n<h1>Chat Session Export</h1>\n<p>Session <code>");
		html_text(out, d->id);
		evbuffer_add_printf(out, "</code></p>\n");
		export_stats_html(d->meta, out);
	} else {
		evbuffer_add_printf(out, "<script type=\"application/json\" "
		    "id=\"transcript-document\">{\"sessionId\":");
		escape(out, meta_json(d, "sessionId"), json_repl);
		evbuffer_add_printf(out, ",\"startTime\":");
		escape(out, meta_json(d, "startTime"), json_repl);
		evbuffer_add_printf(out, ",\"messages\":[");
	}
}

/*
 * What comes after the last message of this pass: 1 when the document
 * takes another pass over the chain (html's data block), 0 at its end.
 */
int
export_doc_tail(struct export_doc *d, struct evbuffer *out)
{
	doc_flush(d, out);
	if (d->fmt == EXPORT_JSON) {
		evbuffer_add_printf(out, "%s],\n  \"metadata\": ", d->written > 0 ?
		    "\n  " : "");
		json_indented(out, d->meta, 2);
		evbuffer_add_printf(out, "\n}");
	} else if (d->fmt == EXPORT_HTML && d->pass == 0) {
		d->pass = 1;
		return 1;
	} else if (d->fmt == EXPORT_HTML) {
		evbuffer_add_printf(out, "],\"metadata\":");
		escape(out, json_object_to_json_string_ext(d->meta, DOC_PLAIN),
		    json_repl);
		evbuffer_add_printf(out, "}</script>\n</body>\n</html>\n");
	}
	return 0;
}
