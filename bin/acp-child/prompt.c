/* SPDX-License-Identifier: ISC */
/*
 * prompt.c: session/prompt and session/cancel.
 *
 * A prompt appends the user record, runs the agent (agent.h), streams
 * its output as agent_message_chunk notifications, and on a clean exit
 * appends the assistant record (parentUuid = the user record) and
 * answers {stopReason:"end_turn"}.  One prompt runs at a time per session;
 * later ones wait in the session's queue.  Cancel stops the running one
 * (stopReason "cancelled") and answers the queued ones the same way.  A
 * failed or cancelled turn appends no assistant record.  Each prompt
 * is one span `qwen-code.daemon.session_prompt`, a child of the
 * traceparent in its _meta: ids and the stop reason only, no content.
 * A prompt marked as the continuation of a cut-off turn (continue.c)
 * runs the agent on the unanswered user record instead of appending one.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "append.h"
#include "child.h"
#include "delegate.h"
#include "json.h"
#include "log.h"
#include "profiler.h"
#include "trace.h"
#include "xmalloc.h"

struct prompt {
	struct child	*c;
	struct session	*s;
	json_object	*req_id;	/* private copy */
	struct agent	*agent;
	char		*text;		/* the agent's answer so far */
	size_t		 len, cap;
	int		 paused;
	struct span	*span;
};

/* The prompt's span, joined to the daemon's trace when _meta carries it. */
static struct span *
prompt_span_start(struct rpc_msg *m, struct session *s)
{
	struct span *sp;

	sp = profiler_span_start("qwen-code.daemon.session_prompt",
	    json_get_obj(m->params, "_meta"));
	span_set_str(sp, "qwen-code.daemon.operation", "acp_session_prompt");
	span_set_str(sp, "session.id", s->id);
	return sp;
}

/* End the span with the turn's stop reason, or its error kind. */
static void
prompt_span_end(struct child *c, struct span *sp, const char *stop,
    const char *error_kind)
{
	if (stop != NULL)
		span_set_str(sp, "qwen-code.daemon.prompt.stop_reason", stop);
	if (error_kind != NULL) {
		span_set_str(sp, "qwen-code.daemon.error_kind", error_kind);
		span_set_status(sp, SPAN_STATUS_ERROR, error_kind);
	}
	span_end(sp, c->trace);
}

/* The text blocks of params.prompt joined by blank lines.  Caller frees. */
static char *
prompt_text(json_object *params, size_t *lenp)
{
	json_object *arr, *blk, *type, *text;
	char *out = NULL, *p;
	size_t i, n, len = 0, tl;

	if (params == NULL || !json_object_object_get_ex(params, "prompt", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return NULL;
	n = json_object_array_length(arr);
	for (i = 0; i < n; i++) {
		blk = json_object_array_get_idx(arr, i);
		if (!json_object_is_type(blk, json_type_object) ||
		    !json_object_object_get_ex(blk, "type", &type) ||
		    strcmp(json_object_get_string(type), "text") != 0 ||
		    !json_object_object_get_ex(blk, "text", &text) ||
		    !json_object_is_type(text, json_type_string))
			continue;
		tl = (size_t)json_object_get_string_len(text);
		if ((p = realloc(out, len + tl + 3)) == NULL) {
			free(out);
			return NULL;
		}
		out = p;
		if (len > 0) {
			memcpy(out + len, "\n\n", 2);
			len += 2;
		}
		memcpy(out + len, json_object_get_string(text), tl);
		len += tl;
		out[len] = '\0';
	}
	*lenp = len;
	return out;
}

/* Append one record of this session; 0, or -1 after answering the error. */
static int
prompt_append(struct child *c, struct session *s, json_object *id,
    const char *type, const char *text, size_t len)
{
	char uuid[37], *cause = NULL;
	json_object *rec;
	int rc;

	rec = append_record_new(type, s->tail, s->id, s->cwd,
	    c->opts.agent_command != NULL ? "agent-command" : "echo", text, len, uuid);
	rc = appender_append(s->app, rec, &cause);
	json_object_put(rec);
	if (rc == -1) {
		log_warnx("session %s: %s", s->id, cause != NULL ? cause : "append failed");
		child_send_error(c, id, RPC_INTERNAL_ERROR, cause != NULL ? cause :
		    "cannot append to the transcript",
		    child_error_data("transcript_write_failed"));
		free(cause);
		return -1;
	}
	free(s->tail);
	s->tail = xstrdup(uuid);
	return 0;
}

static void
prompt_chunk(void *arg, const char *text, size_t len)
{
	struct prompt *p = arg;
	json_object *params, *update, *content;
	char *nb;

	if (p->len + len + 1 > p->cap) {
		size_t cap = (p->len + len + 1) * 2;
		if ((nb = realloc(p->text, cap)) == NULL)
			return;
		p->text = nb;
		p->cap = cap;
	}
	memcpy(p->text + p->len, text, len);
	p->len += len;
	content = xjson_object_new_object();
	json_object_object_add(content, "type", xjson_object_new_string("text"));
	json_object_object_add(content, "text", xjson_object_new_string_len(text, (int)len));
	update = xjson_object_new_object();
	json_object_object_add(update, "sessionUpdate",
	    xjson_object_new_string("agent_message_chunk"));
	json_object_object_add(update, "content", content);
	params = xjson_object_new_object();
	json_object_object_add(params, "sessionId", xjson_object_new_string(p->s->id));
	json_object_object_add(params, "update", update);
	child_send(p->c, rpc_new_notification("session/update", params));
	if (child_out_full(p->c) && !p->paused) {
		p->paused = 1;
		p->c->npaused++;
		agent_pause(p->agent, 1);
	}
}

static json_object *
prompt_stop(const char *reason)
{
	json_object *o = xjson_object_new_object();

	json_object_object_add(o, "stopReason", xjson_object_new_string(reason));
	return o;
}

static void
prompt_done(void *arg, enum agent_end end, int status, const char *message)
{
	struct prompt *p = arg;
	struct child *c = p->c;
	struct session *s = p->s;
	json_object *data;
	char msg[128];

	p->agent = NULL;
	if (end == AGENT_END_OK) {
		if (prompt_append(c, s, p->req_id, "assistant", p->text != NULL ?
		    p->text : "", p->len) == 0) {
			child_send_result(c, p->req_id, prompt_stop("end_turn"));
			prompt_span_end(c, p->span, "end_turn", NULL);
		} else
			prompt_span_end(c, p->span, NULL, "transcript_write_failed");
	} else if (end == AGENT_END_CANCELLED) {
		child_send_result(c, p->req_id, prompt_stop("cancelled"));
		prompt_span_end(c, p->span, "cancelled", NULL);
	} else {
		prompt_span_end(c, p->span, NULL, "agent_failed");
		data = child_error_data("agent_failed");
		json_object_object_add(data, "exitStatus", xjson_object_new_int(status));
		snprintf(msg, sizeof(msg), "%s (status %d)",
		    message != NULL ? message : "agent failed", status);
		child_send_error(c, p->req_id, RPC_INTERNAL_ERROR, msg, data);
	}
	s->prompt = NULL;
	s->busy = 0;
	json_object_put(p->req_id);
	free(p->text);
	free(p);
	child_session_idle(c, s);
}

/*
 * The error data of an agent that did not start: no process to be had
 * now (fork failed) is retryable, where a bad agent command is not.
 */
json_object *
prompt_agent_error_data(const char *cause)
{
	json_object *d = child_error_data("agent_failed");

	if (cause != NULL && strncmp(cause, AGENT_FORK_FAILED,
	    strlen(AGENT_FORK_FAILED)) == 0) {
		json_object_object_add(d, "code",
		    xjson_object_new_string("agent_spawn_failed"));
		json_object_object_add(d, "retryable", xjson_object_new_boolean(1));
	}
	return d;
}

void
prompt_start(struct child *c, struct rpc_msg *m, struct session *s)
{
	static const struct agent_cbs cbs = { prompt_chunk, prompt_done };
	struct prompt *p;
	struct span *sp;
	char *text, *cause = NULL;
	size_t len = 0;
	int cont;

	if (c->opts.agent_acp != NULL) {
		delegate_prompt(c, m, s);	/* _meta goes on to the agent */
		return;
	}
	sp = prompt_span_start(m, s);
	cont = continue_marked(m->params);
	if ((text = cont ? continue_text(s, &len) : prompt_text(m->params, &len)) == NULL) {
		child_send_error(c, m->id, RPC_INVALID_PARAMS, cont ?
		    "nothing to continue: the session does not end with an unanswered prompt" :
		    "session/prompt needs params.prompt with at least one text block",
		    NULL);
		prompt_span_end(c, sp, NULL, "invalid_params");
		return;
	}
	/* A continuation answers the user record already there. */
	if (!cont && prompt_append(c, s, m->id, "user", text, len) == -1) {
		free(text);
		prompt_span_end(c, sp, NULL, "transcript_write_failed");
		return;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		free(text);
		child_send_error(c, m->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
		prompt_span_end(c, sp, NULL, "internal");
		return;
	}
	p->c = c;
	p->s = s;
	p->span = sp;
	json_object_deep_copy(m->id, &p->req_id, NULL);
	p->agent = agent_start(c->base, c->opts.agent_command, text, len, s->id,
	    s->path, &cbs, p, &cause);
	free(text);
	if (p->agent == NULL) {
		child_send_error(c, m->id, RPC_INTERNAL_ERROR, cause != NULL ? cause :
		    "cannot start the agent", prompt_agent_error_data(cause));
		free(cause);
		prompt_span_end(c, sp, NULL, "agent_failed");
		json_object_put(p->req_id);
		free(p);
		return;
	}
	s->prompt = p;
	s->busy = 1;
}

void
prompt_cancel(struct child *c, struct session *s, int queued)
{
	struct session_op *op, *next;

	if (s->prompt != NULL && s->prompt->agent != NULL)
		agent_cancel(s->prompt->agent);
	if (c->opts.agent_acp != NULL)
		delegate_cancel(c, s, queued);
	for (op = queued ? TAILQ_FIRST(&s->queue) : NULL; op != NULL; op = next) {
		next = TAILQ_NEXT(op, entry);
		if (strcmp(op->msg.method, "session/prompt") != 0)
			continue;
		TAILQ_REMOVE(&s->queue, op, entry);
		s->nqueue--;
		child_send_result(c, op->msg.id, prompt_stop("cancelled"));
		rpc_msg_clear(&op->msg);
		free(op);
	}
}

void
prompt_pause_all(struct child *c, int paused)
{
	struct session *s;

	if (!paused) {
		if (c->npaused == 0)
			return;		/* nobody to wake */
		c->npaused = 0;
	}
	RB_FOREACH(s, session_tree, &c->sessions) {
		if (s->prompt == NULL || s->prompt->agent == NULL ||
		    s->prompt->paused == paused)
			continue;
		s->prompt->paused = paused;
		agent_pause(s->prompt->agent, paused);
	}
}
