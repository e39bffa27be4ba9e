/* SPDX-License-Identifier: ISC */
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
project_fast_open(struct pctx *x, const char *kind)
{
	x->uoff = project_sep(x);
	jbuf_puts(E, "{\"sessionUpdate\":\"");
	jbuf_puts(E, kind);
	jbuf_put(E, "\"", 1);
}

/* Start an update that is no text chunk (it ends a text segment). */
void
project_fast_begin(struct pctx *x, const char *kind)
{
	project_fast_open(x, kind);
	project_segment(x, PROJECT_LANE_NONE, 1);
}

/* Close the update with the record's _meta tail (after any extra
   members, each ending with ','). */
int
project_fast_close(struct pctx *x)
{
	project_tail(x);
	return project_span(x, x->uoff);
}

int
project_fast_end(struct pctx *x)
{
	jbuf_puts(E, ",\"_meta\":{");
	return project_fast_close(x);
}

/* ,"key":s (a C string). */
void
project_fast_str(struct pctx *x, const char *key, const char *s)
{
	jbuf_put(E, ",\"", 2);
	jbuf_puts(E, key);
	jbuf_put(E, "\":", 2);
	jsonw_string(E, s, strlen(s));
}

/* A text chunk (text from string node, or s when node is -1), up to the
   opening of _meta. */
static void
project_fast_text(struct pctx *x, const char *kind, int node, const char *s)
{
	project_fast_open(x, kind);
	project_segment(x, project_text_lane(kind, node >= 0 ? T->n[node].len > 0 : *s != '\0'), 0);
	jbuf_puts(E, ",\"content\":{\"type\":\"text\",\"text\":");
	if (node >= 0)
		jt_write(E, T, node);
	else
		jsonw_string(E, s, strlen(s));
	jbuf_puts(E, "},\"_meta\":{");
}

static int
project_fast_chunk(struct pctx *x, const char *kind, int node, const char *s)
{
	project_fast_text(x, kind, node, s);
	return project_fast_close(x);
}

/* The string member key of obj, or "" (node written when present). */
void
project_fast_member_or(struct pctx *x, int obj, const char *key, const char *dflt)
{
	int v = jt_get_typed(T, obj, key, JT_STR);

	if (v >= 0)
		jt_write(E, T, v);
	else
		jsonw_string(E, dflt, strlen(dflt));
}

/* A user image part. */
static int
project_fast_image(struct pctx *x, int inl)
{
	project_fast_open(x, "user_message_chunk");
	project_segment(x, PROJECT_LANE_IMAGE, 0);
	jbuf_puts(E, ",\"content\":{\"type\":\"image\",\"mimeType\":");
	project_fast_member_or(x, inl, "mimeType", "");
	jbuf_puts(E, ",\"data\":");
	project_fast_member_or(x, inl, "data", "");
	jbuf_put(E, "}", 1);
	return project_fast_end(x);
}

/* user records: text parts and images, a hook's displayText shown in
   place of the text parts; subtypes, the daemon's prompt ids and
   annotations, and attachments go through json-c. */
static int
project_fast_user(struct pctx *x)
{
	int sp = jt_get_typed(T, 0, "systemPayload", JT_OBJ);
	int msg = jt_get_typed(T, 0, "message", JT_OBJ);
	int parts = jt_get_typed(T, msg, "parts", JT_ARR), part, v, shown = 0;
	const char *display;
	uint32_t i;

	if (jt_get(T, 0, "subtype") >= 0 || jt_get(T, 0, "daemonPromptId") >= 0 ||
	    jt_get(T, sp, "inputAnnotations") >= 0 ||
	    jt_get(T, sp, "attachmentReferences") >= 0 ||
	    jt_get(T, sp, "resourceLinks") >= 0)
		return project_record_jsonc(x);
	display = sp >= 0 ? jt_get_str(T, sp, "displayText", &x->oom) : NULL;
	if (display != NULL && jt_get(T, sp, "hookContext") < 0)
		display = NULL;
	for (i = 0, part = JT_FIRST(parts); parts >= 0 && i < T->n[parts].len;
	    i++, part = JT_NEXT(T, part)) {
		if ((v = jt_get_typed(T, part, "text", JT_STR)) >= 0) {
			if (display != NULL) {	/* shown once, for the first */
				if (!shown++ && *display != '\0' &&
				    project_fast_chunk(x, "user_message_chunk", -1, display) == -1)
					return -1;
			} else if (T->n[v].len > 0 &&
			    project_fast_chunk(x, "user_message_chunk", v, NULL) == -1)
				return -1;
		} else if ((v = jt_get_typed(T, part, "inlineData", JT_OBJ)) >= 0) {
			if (project_fast_image(x, v) == -1)
				return -1;
		}
	}
	if (display != NULL && !shown && *display != '\0')
		return project_fast_chunk(x, "user_message_chunk", -1, display);
	return 0;
}

/* The empty agent chunk carrying the record's usage under ACP's names. */
static int
project_fast_usage(struct pctx *x, int usage)
{
	int i, v, n = 0;

	project_add_usage(x, project_tape_count(T, usage, "promptTokenCount"),
	    project_tape_count(T, usage, "cachedContentTokenCount"),
	    project_tape_count(T, usage, "candidatesTokenCount"));
	project_fast_text(x, "agent_message_chunk", -1, "");
	jbuf_puts(E, "\"usage\":{");
	for (i = 0; project_usage_keys[i][0] != NULL; i++) {
		v = jt_get_typed(T, usage, project_usage_keys[i][0], JT_NUM);
		if (v < 0 && i >= 3)
			continue;
		jbuf_puts(E, n++ > 0 ? ",\"" : "\"");
		jbuf_puts(E, project_usage_keys[i][1]);
		jbuf_put(E, "\":", 2);
		if (v >= 0)
			jt_write(E, T, v);
		else
			jbuf_put(E, "0", 1);
	}
	jbuf_puts(E, "},");
	return project_fast_close(x);
}

/* assistant records: thoughts, text, tool calls, usage. */
static int
project_fast_assistant(struct pctx *x)
{
	int msg = jt_get_typed(T, 0, "message", JT_OBJ);
	int parts = jt_get_typed(T, msg, "parts", JT_ARR), part, fc, text, th;
	int usage = jt_get_typed(T, 0, "usageMetadata", JT_OBJ), rc = 0;
	uint32_t i;

	for (i = 0, part = JT_FIRST(parts); rc == 0 && parts >= 0 &&
	    i < T->n[parts].len; i++, part = JT_NEXT(T, part)) {
		if ((fc = jt_get_typed(T, part, "functionCall", JT_OBJ)) >= 0) {
			if ((th = jt_get_typed(T, fc, "name", JT_STR)) < 0 ||
			    T->n[th].len == 0)
				continue;	/* the agent skips a nameless call */
			if (usage >= 0) {
				rc = project_fast_usage(x, usage);
				usage = -1;
			}
			if (rc == 0)
				rc = project_fast_tool_call(x, fc, i);
		} else if ((text = jt_get_typed(T, part, "text", JT_STR)) >= 0 &&
		    T->n[text].len > 0) {
			th = jt_get_typed(T, part, "thought", JT_TRUE);
			rc = project_fast_chunk(x, th >= 0 ? "agent_thought_chunk" :
			    "agent_message_chunk", text, NULL);
		}
	}
	if (rc == 0 && usage >= 0)
		rc = project_fast_usage(x, usage);
	return rc;
}

/* One output item of a slash command's result (project.c's slash_item). */
static int
project_fast_slash_item(struct pctx *x, int item)
{
	const char *s = jt_get_str(T, item, "text", &x->oom);
	char *text;
	int i, v;

	if (s == NULL)
		return 0;
	text = project_markdown_breaks(s);
	project_fast_text(x, "agent_message_chunk", -1, text);
	free(text);
	jbuf_puts(E, "\"source\":\"slash_command\",");
	for (i = 0; project_slash_meta[i][0] != NULL; i++)
		if ((v = jt_get_typed(T, item, project_slash_meta[i][0],
		    project_slash_meta[i][1][0] == 'o' ? JT_OBJ : JT_ARR)) >= 0) {
			jbuf_put(E, "\"", 1);
			jbuf_puts(E, project_slash_meta[i][0]);
			jbuf_put(E, "\":", 2);
			jt_write(E, T, v);
			jbuf_put(E, ",", 1);
		}
	return project_fast_close(x);
}

/* system records: slash_command results; cancelled turns, background
   notices and subagent readiness go through json-c. */
static int
project_fast_system(struct pctx *x)
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
			if (project_fast_slash_item(x, it) == -1)
				return -1;
	} else if (strcmp(sub, "turn_result") == 0 ||
	    strcmp(sub, "background_task_completed") == 0 ||
	    strcmp(sub, "agent_session_ready") == 0)
		return project_record_jsonc(x);
	return 0;
}

int
project_fast_record(struct pctx *x)
{
	int rc = 0;

	if (jt_get(T, 0, "backgroundTurn") >= 0)	/* a background turn's */
		return project_record_jsonc(x);
	switch (transcript_type(x->t, x->c->rec[x->pos])) {
	case TX_USER:
		rc = project_fast_user(x);
		break;
	case TX_ASSISTANT:
		rc = project_fast_assistant(x);
		break;
	case TX_TOOL_RESULT:
		rc = project_fast_tool_result(x);
		break;
	case TX_SYSTEM:
		rc = project_fast_system(x);
		break;
	}
	return x->oom ? -1 : rc;
}
