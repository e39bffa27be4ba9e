/* SPDX-License-Identifier: ISC */
/*
 * render.c: a session's events as a conversation people read.
 *
 * transcript/show and events/follow print this without --json: the
 * user's prompts after "you>", the agent's answer after "agent>", its
 * thinking after "thinking>", tool calls and their status as "* tool"
 * lines, permission requests, turn ends and the session's own frames as
 * bracketed lines.  Chunks of one kind run on as one paragraph.  Text
 * from the session is printed with control characters (but newlines and
 * tabs) as spaces, so it cannot move the cursor or recolour the terminal.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "restore.h"

/* Print text cleaned, remembering whether it left the line open. */
static void
render_text(struct render *r, const char *text)
{
	const unsigned char *p;

	for (p = (const unsigned char *)text; *p != '\0'; p++) {
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
			putchar(' ');
		else
			putchar(*p);
		r->bol = *p == '\n';
	}
}

/* End the open paragraph, if any, with a newline. */
static void
render_break(struct render *r)
{
	if (!r->bol)
		putchar('\n');
	r->bol = 1;
	r->kind = NULL;
}

/* A chunk of kind under its label: a new paragraph when the kind changes. */
static void
render_chunk(struct render *r, const char *kind, const char *label,
    const char *text)
{
	if (text == NULL || text[0] == '\0')
		return;
	if (r->kind == NULL || strcmp(r->kind, kind) != 0) {
		render_break(r);
		printf("%s ", label);
		r->kind = kind;
		r->bol = 0;
	}
	render_text(r, text);
}

/* One whole line of its own, printf-style, cleaned. */
static void __attribute__((format(printf, 2, 3)))
render_line(struct render *r, const char *fmt, ...)
{
	char	buf[1024];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	render_break(r);
	render_text(r, buf);
	putchar('\n');
	r->bol = 1;
}

/* The title of a tool call (or its id, or its kind). */
static const char *
render_tool_title(json_object *u)
{
	const char *t;

	if ((t = json_get_str(u, "title")) != NULL && t[0] != '\0')
		return t;
	if ((t = json_get_str(u, "kind")) != NULL)
		return t;
	return (t = json_get_str(u, "toolCallId")) != NULL ? t : "tool";
}

/* A plan's entries, one line each. */
static void
render_plan(struct render *r, json_object *u)
{
	json_object	*entries = json_get(u, "entries", json_type_array), *e;
	const char	*st;
	size_t		 i, n = entries != NULL ?
			    json_object_array_length(entries) : 0;

	render_line(r, "[plan: %zu steps]", n);
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(entries, i);
		st = json_get_str(e, "status");
		render_line(r, "  %s %s", st != NULL &&
		    strcmp(st, "completed") == 0 ? "[x]" : st != NULL &&
		    strcmp(st, "in_progress") == 0 ? "[~]" : "[ ]",
		    json_get_str(e, "content") != NULL ?
		    json_get_str(e, "content") : "");
	}
}

/* A session/update: message, thought, tool call, plan, or its kind. */
static void
render_update(struct render *r, json_object *u)
{
	const char *k = json_get_str(u, "sessionUpdate"), *t, *st;

	t = json_get_str(json_get_obj(u, "content"), "text");
	st = json_get_str(u, "status");
	if (k == NULL)
		return;
	if (strcmp(k, "user_message_chunk") == 0)
		render_chunk(r, "user", "you>", t);
	else if (strcmp(k, "agent_message_chunk") == 0)
		render_chunk(r, "agent", "agent>", t);
	else if (strcmp(k, "agent_thought_chunk") == 0)
		render_chunk(r, "thought", "thinking>", t);
	else if (strcmp(k, "tool_call") == 0)
		render_line(r, "* tool %s (%s)", render_tool_title(u),
		    st != NULL ? st : "pending");
	else if (strcmp(k, "tool_call_update") == 0 && st != NULL)
		render_line(r, "* tool %s: %s", json_get_str(u, "title") != NULL ?
		    json_get_str(u, "title") : json_get_str(u, "toolCallId") != NULL ?
		    json_get_str(u, "toolCallId") : "?", st);
	else if (strcmp(k, "plan") == 0)
		render_plan(r, u);
	else if (strcmp(k, "current_mode_update") == 0)
		render_line(r, "[mode: %s]", json_get_str(u, "currentModeId") ?
		    json_get_str(u, "currentModeId") : "?");
}

/* Initialise a rendering: nothing printed yet. */
void
render_init(struct render *r)
{
	memset(r, 0, sizeof(*r));
	r->bol = 1;
}

/* One event envelope (borrowed) as text. */
void
render_event(struct render *r, json_object *env)
{
	json_object	*data = json_get_obj(env, "data");
	const char	*type = json_get_str(env, "type"), *t;

	if (type == NULL)
		return;
	/* Live envelopes carry data.update, transcript pages data itself. */
	if (strcmp(type, "session_update") == 0)
		render_update(r, json_get_obj(data, "update") != NULL ?
		    json_get_obj(data, "update") : data);
	else if (strcmp(type, "permission_request") == 0)
		render_line(r, "[permission asked: %s; answer: qwen-restore "
		    "permission ID %s allow|deny]",
		    render_tool_title(json_get_obj(data, "toolCall")),
		    (t = json_get_str(data, "requestId")) != NULL ? t : "?");
	else if (strcmp(type, "turn_complete") == 0)
		render_line(r, "[turn %s]", (t = json_get_str(data,
		    "stopReason")) != NULL && strcmp(t, "end_turn") != 0 ? t :
		    "complete");
	else if (strcmp(type, "turn_error") == 0)
		render_line(r, "[turn failed: %s]", (t = json_get_str(data,
		    "message")) != NULL ? t : "?");
	else if (strcmp(type, "replay_complete") == 0)
		render_line(r, "[history replayed: live events follow]");
	else if (events_session_end(env))
		render_line(r, "[%s]", type);
}

/* End the output: the last paragraph's newline. */
void
render_end(struct render *r)
{
	if (!r->bol)
		putchar('\n');
	r->bol = 1;
	fflush(stdout);
}
