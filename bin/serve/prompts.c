/* SPDX-License-Identifier: ISC */
/*
 * prompts.c: a session's prompt FIFO.  One prompt runs on the child at a
 * time and the rest wait, in order; a prompt goes out from the loop just
 * after its 202 was queued.  Each runs under an absolute deadline
 * (--prompt-deadline-ms, shortened by the body's deadlineMs): past it,
 * every subscriber gets turn_error prompt_deadline_exceeded, the child is
 * told to cancel, and the session takes its next prompt once the child
 * lets go of the expired one (or after a grace), its late output dropped.
 * A prompt on the child is one span `qwen-code.daemon.bridge` (operation
 * session.prompt) whose traceparent goes in the request's _meta, so the
 * child's work joins the daemon's trace.
 */
#include "config.h"

#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include "clock.h"
#include "errors.h"
#include "json.h"
#include "log.h"
#include "serve.h"
#include "trace.h"
#include "xmalloc.h"

struct prompt {
	TAILQ_ENTRY(prompt)	 entry;
	char			 id[SERVE_PROMPT_ID_MAX + 1];
	char			 client_id[SERVE_CLIENT_ID_MAX + 1];
	json_object		*params;
	struct channel_req		*req;
	struct session		*s;
	int64_t			 deadline_ms;	/* 0: none */
	struct event		*deadline_ev;
	struct span		*span;		/* from dispatch to settlement */
	uint64_t		 started_ms;	/* dispatched (monotonic) */
	json_object		*content;	/* the prompt's blocks (for listing) */
	uint64_t		 queued_at_ms;	/* wall clock */
	uint64_t		 started_wall_ms;	/* dispatched (wall clock) */
	int			 announced;	/* waited: pending_prompt_* told */
	int			 promoted;	/* a mid-turn message's */
};

static void	prompts_pump(struct session *);
static void	(*prompts_idle)(struct session *);
static void	on_expired_grace(evutil_socket_t, short, void *);

static void
on_pump(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what;
	prompts_pump(arg);
}

int
prompts_init(struct session *s)
{
	TAILQ_INIT(&s->queue);
	if ((s->pump_ev = evtimer_new(serve_base, on_pump, s)) == NULL ||
	    (s->grace_ev = evtimer_new(serve_base, on_expired_grace, s)) == NULL) {
		if (s->pump_ev != NULL)
			event_free(s->pump_ev);
		s->pump_ev = NULL;
		return -1;
	}
	return 0;
}

/* How p ended, on its span: the result, and the error code if any. */
static void
prompt_span_result(struct prompt *p, const char *result, const char *code)
{
	metrics_prompt(result, clock_mono_ms() - p->started_ms);
	log_info("session %s: prompt %s ended (%s) after %llu ms", p->s->id, p->id,
	    result, (unsigned long long)(clock_mono_ms() - p->started_ms));
	span_set_str(p->span, "qwen-code.daemon.prompt.result", result);
	if (code != NULL)
		span_set_status(p->span, SPAN_STATUS_ERROR, code);
}

static void
prompt_free(struct prompt *p)
{
	if (p == NULL)
		return;
	channel_forget(p->req);
	if (p->deadline_ev != NULL)
		event_free(p->deadline_ev);
	json_object_put(p->params);
	json_object_put(p->content);
	span_end(p->span, serve_trace);
	free(p);
}

/*
 * Start p's span and put its traceparent in p->params._meta (made an
 * object if the client sent none, or something else).
 */
static void
prompt_span_start(struct session *s, struct prompt *p)
{
	json_object *meta;
	struct trace_ctx tc;
	char tp[TRACEPARENT_LEN + 1];

	p->started_ms = clock_mono_ms();
	p->span = span_start("qwen-code.daemon.bridge", SPAN_KIND_CLIENT, NULL);
	span_set_str(p->span, "qwen-code.daemon.operation", "session.prompt");
	span_set_str(p->span, "qwen-code.daemon.bridge.operation", "session.prompt");
	span_set_str(p->span, "session.id", s->id);
	span_set_str(p->span, "qwen-code.daemon.prompt.id", p->id);
	span_set_int(p->span, "qwen-code.daemon.channel.id", channel_serial(s->channel));
	span_set_int(p->span, "qwen-code.daemon.prompt.deadline_ms", p->deadline_ms);
	if (p->span == NULL)
		return;
	reqid_session_span(s, p->span);
	if ((meta = json_get_obj(p->params, "_meta")) == NULL) {
		meta = xjson_object_new_object();
		json_object_object_add(p->params, "_meta", meta);
	}
	span_context(p->span, &tc);
	trace_format_traceparent(&tc, tp, sizeof(tp));
	json_object_object_add(meta, "qwen.telemetry.traceparent",
	    xjson_object_new_string(tp));
}

void
prompts_clear(struct session *s)
{
	struct prompt *p;

	if (s->active != NULL)
		prompt_span_result(s->active, "session_closed", NULL);
	prompt_free(s->active);
	prompt_free(s->expired);
	s->active = s->expired = NULL;
	while ((p = TAILQ_FIRST(&s->queue)) != NULL) {
		TAILQ_REMOVE(&s->queue, p, entry);
		prompt_free(p);
	}
	s->queued = 0;
	if (s->pump_ev != NULL)
		event_free(s->pump_ev);
	if (s->grace_ev != NULL)
		event_free(s->grace_ev);
	s->pump_ev = s->grace_ev = NULL;
}

size_t
prompts_pending(const struct session *s)
{
	return s->queued + (s->active != NULL);
}

const char *
prompts_active(const struct session *s, const char **client_id)
{
	if (client_id != NULL)
		*client_id = s->active != NULL && s->active->client_id[0] ?
		    s->active->client_id : NULL;
	return s->active != NULL ? s->active->id : NULL;
}

/* p's turn status in state (caller owns). */
static json_object *
prompt_turn(struct prompt *p, const char *state)
{
	struct turn_facts f = { state, p->id, p->content, p->queued_at_ms,
	    p->started_wall_ms, p->client_id };

	return turns_new(p->s, &f);
}

/* p is over, in state: its status kept for GET .../turns/:promptId. */
static void
prompt_settle(struct prompt *p, const char *state, const char *stop,
    const char *message, const char *code)
{
	turns_settle(p->s, prompt_turn(p, state), stop, message, code);
}

/* The last turn's error, kept for status until the next prompt starts. */
static void
turn_error_keep(struct session *s, const char *message, const char *code,
    const char *kind)
{
	json_object *e = xjson_object_new_object();

	json_object_object_add(e, "message", xjson_object_new_string(message));
	if (code != NULL)
		json_object_object_add(e, "code", xjson_object_new_string(code));
	if (kind != NULL)
		json_object_object_add(e, "errorKind", xjson_object_new_string(kind));
	json_object_put(s->turn_error);
	s->turn_error = e;
}

/* turn_error for p; extra: more data fields (takes ownership, NULL-safe). */
static void
turn_error_ex(struct session *s, struct prompt *p, const char *message,
    const char *code, const char *kind, json_object *extra)
{
	json_object *d = extra != NULL ? extra : xjson_object_new_object();

	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "message", xjson_object_new_string(message));
	if (code != NULL)
		json_object_object_add(d, "code", xjson_object_new_string(code));
	if (kind != NULL)
		json_object_object_add(d, "errorKind", xjson_object_new_string(kind));
	json_object_object_add(d, "promptId", xjson_object_new_string(p->id));
	turn_error_keep(s, message, code, kind);
	prompt_settle(p, "error", NULL, message, code);
	bus_publish(s->bus, "turn_error", d, p->id,
	    p->client_id[0] ? p->client_id : NULL, 0);
}

static void
turn_error(struct session *s, struct prompt *p, const char *message,
    const char *code, const char *kind)
{
	turn_error_ex(s, p, message, code, kind, NULL);
}

static char	*prompt_text(json_object *);

/*
 * pending_prompt_added / _started / _completed for p, a prompt that had
 * to wait behind another (upstream announces only those): state is
 * "completed" or "removed" for _completed, NULL otherwise.
 */
static void
pending_event(struct session *s, struct prompt *p, const char *type,
    const char *state)
{
	json_object *d = xjson_object_new_object();
	char *text;

	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "promptId", xjson_object_new_string(p->id));
	if (state != NULL)
		json_object_object_add(d, "state", xjson_object_new_string(state));
	else {
		text = prompt_text(p->content);
		json_object_object_add(d, "text", xjson_object_new_string(text));
		free(text);
	}
	if (strcmp(type, "pending_prompt_added") == 0)
		json_object_object_add(d, "queuedAt",
		    xjson_object_new_int64((int64_t)p->queued_at_ms));
	bus_publish(s->bus, type, d, p->id,
	    p->client_id[0] ? p->client_id : NULL, 0);
}

/* p is over: a prompt that waited says so with pending_prompt_completed. */
static void
pending_settled(struct session *s, struct prompt *p, const char *state)
{
	if (p->announced)
		pending_event(s, p, "pending_prompt_completed", state);
	p->announced = 0;
}

/* The expired prompt is over (answered or given up on): take the next. */
static void
expired_settled(struct session *s, int may_close)
{
	
	evtimer_del(s->grace_ev);
	prompt_free(s->expired);
	s->expired = NULL;
	s->last_active_mono_ms = clock_mono_ms();
	prompts_pump(s);
	if (may_close && clients_count(&s->clients) == 0 && !session_held(s))
		session_close(s, "last_client_detached", NULL);
}

/* The child never answered the cancel of an expired prompt. */
static void
on_expired_grace(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)fd; (void)what;
	log_warnx("session %s: the agent did not end an expired prompt; "
	    "its answer will be dropped", s->id);
	expired_settled(s, 1);
}

/*
 * The running prompt is past its absolute deadline: every subscriber gets
 * turn_error prompt_deadline_exceeded, the child is told to cancel, and
 * the session moves on once the child lets go of it (or after a grace).
 */
static void
on_prompt_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct prompt *p = arg;
	struct session *s = p->s;
		struct timeval tv = { SERVE_PROMPT_CANCEL_GRACE_MS / 1000,
	    (SERVE_PROMPT_CANCEL_GRACE_MS % 1000) * 1000 };
	json_object *c, *d;
	char msg[128];

	(void)fd; (void)what;
	if (s->active != p)
		return;
	log_warnx("session %s: a prompt exceeded its %lld ms deadline", s->id,
	    (long long)p->deadline_ms);
	snprintf(msg, sizeof(msg), "Prompt exceeded its deadline of %lld ms",
	    (long long)p->deadline_ms);
	d = xjson_object_new_object();
	json_object_object_add(d, "deadlineMs", xjson_object_new_int64(p->deadline_ms));
	turn_error_ex(s, p, msg, "prompt_deadline_exceeded",
	    "prompt_deadline_exceeded", d);
	prompt_span_result(p, "deadline_exceeded", "prompt_deadline_exceeded");
	pending_settled(s, p, "completed");
	c = xjson_object_new_object();
	json_object_object_add(c, "sessionId", xjson_object_new_string(s->id));
	channel_notify(s->channel, "session/cancel", c);
	s->active = NULL;
	s->expired = p;
	evtimer_add(s->grace_ev, &tv);
}

/* A non-empty string member of obj, or NULL. */
static const char *
str_member(json_object *obj, const char *key)
{
	json_object *v;

	if (obj == NULL || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
		return NULL;
	return json_object_get_string(v);
}

/*
 * What the agent said went wrong, in upstream's order: data itself when
 * it is a string, data.details, data.message, data.error (or its
 * message), then the error's own message ("Internal error" says least).
 */
static const char *
rpc_error_words(json_object *err)
{
	json_object *data = NULL, *e = NULL;
	const char *w;

	(void)json_object_object_get_ex(err, "data", &data);
	if (data != NULL && json_object_is_type(data, json_type_string) &&
	    json_object_get_string_len(data) > 0)
		return json_object_get_string(data);
	if ((w = str_member(data, "details")) != NULL ||
	    (w = str_member(data, "message")) != NULL)
		return w;
	if (data != NULL && json_object_object_get_ex(data, "error", &e)) {
		if (json_object_is_type(e, json_type_string) &&
		    json_object_get_string_len(e) > 0)
			return json_object_get_string(e);
		if ((w = str_member(e, "message")) != NULL)
			return w;
	}
	return (w = str_member(err, "message")) != NULL ? w : "Prompt failed";
}

/*
 * turn_error for a JSON-RPC error answer to the prompt, as upstream's
 * daemon maps one: the agent's own words and code (data.code, else the
 * JSON-RPC code as a string: "-32603"), data.loopType; and our
 * classification alongside in errorKind (data.errorKind, a "terminated"
 * stream, else acp_error).
 */
static void
turn_error_rpc(struct session *s, struct prompt *p, json_object *err)
{
	json_object *data = NULL, *extra = xjson_object_new_object(), *v;
	const char *msg = rpc_error_words(err), *code, *kind, *loop;
	char num[24];

	(void)json_object_object_get_ex(err, "data", &data);
	if (!json_object_is_type(data, json_type_object))
		data = NULL;
	if ((code = str_member(data, "code")) == NULL &&
	    json_object_object_get_ex(err, "code", &v) && json_object_is_type(v, json_type_int)) {
		snprintf(num, sizeof(num), "%lld", (long long)json_object_get_int64(v));
		code = num;
	}
	if ((kind = str_member(data, "errorKind")) == NULL)
		kind = strcasecmp(msg, "terminated") == 0 ?
		    "model_stream_interrupted" : "acp_error";
	if ((loop = str_member(data, "loopType")) != NULL)
		json_object_object_add(extra, "loopType", xjson_object_new_string(loop));
	turn_error_ex(s, p, msg, code != NULL ? code : "acp_error", kind, extra);
	prompt_span_result(p, "error", code != NULL ? code : "acp_error");
}

/* The child answered session/prompt (or could not). */
static void
on_prompt_done(void *arg, enum channel_outcome o, json_object *payload)
{
	struct prompt *p = arg;
	struct session *s = p->s;
	json_object *d, *v;
	const char *stop = "end_turn";

	p->req = NULL;
	if (p == s->expired) {
		expired_settled(s, o != CHANNEL_CLOSED);	/* its turn_error is out */
		return;
	}
	s->active = NULL;
	s->last_active_mono_ms = clock_mono_ms();
	if (o == CHANNEL_RESULT) {
		if (json_object_object_get_ex(payload, "stopReason", &v) &&
		    json_object_is_type(v, json_type_string))
			stop = json_object_get_string(v);
		d = xjson_object_new_object();
		json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
		json_object_object_add(d, "stopReason", xjson_object_new_string(stop));
		json_object_object_add(d, "promptId", xjson_object_new_string(p->id));
		bus_publish(s->bus, "turn_complete", d, p->id,
		    p->client_id[0] ? p->client_id : NULL, 0);
		prompt_span_result(p, "complete", NULL);
		/* As upstream: a turn that stopped as cancelled was cancelled. */
		prompt_settle(p, strcmp(stop, "cancelled") == 0 ? "cancelled" :
		    "completed", stop, NULL, NULL);
		span_set_str(p->span, "qwen-code.daemon.prompt.stop_reason", stop);
	} else if (o == CHANNEL_ERROR) {
		turn_error_rpc(s, p, payload);
	} else {
		turn_error(s, p, "The agent process exited during the prompt",
		    "channel_closed", "acp_channel_unavailable");
		prompt_span_result(p, "error", "channel_closed");
	}
	pending_settled(s, p, "completed");
	prompt_free(p);
	prompts_pump(s);
	/* The last turn: what waited for it mid-turn runs now. */
	if (o != CHANNEL_CLOSED && s->active == NULL && s->expired == NULL &&
	    s->queued == 0 && prompts_idle != NULL)
		prompts_idle(s);
	/*
	 * Its last client detached while the prompt ran (a REST detach, an
	 * ACP connection that went away): once nothing holds it, it goes, as
	 * it does on a detach with nothing running.  (A dead child removes its
	 * sessions itself, with session_died.)
	 */
	if (o != CHANNEL_CLOSED && clients_count(&s->clients) == 0 && !session_held(s))
		session_close(s, "last_client_detached", NULL);
}

/* Arm p's absolute deadline as it goes to the child. */
static void
prompt_arm_deadline(struct prompt *p)
{
	struct timeval tv;

	if (p->deadline_ms <= 0 ||
	    (p->deadline_ev = evtimer_new(serve_base, on_prompt_deadline, p)) == NULL)
		return;
	tv.tv_sec = p->deadline_ms / 1000;
	tv.tv_usec = (p->deadline_ms % 1000) * 1000;
	evtimer_add(p->deadline_ev, &tv);
}

/*
 * Replace p's blocks naming attachments by their files' content, as it
 * goes to the agent (upstream resolves them at dispatch): 0, or -1 after
 * settling p as a turn error (one removed while p waited).
 */
static int
prompt_expand(struct session *s, struct prompt *p)
{
	json_object *c, *r;
	struct qerr *e = NULL;

	if (!json_object_object_get_ex(p->params, "prompt", &c) ||
	    !json_object_is_type(c, json_type_array))
		return 0;
	/* A promoted mid-turn message degrades, as upstream's does. */
	if (p->promoted) {
		json_object_object_add(p->params, "prompt", attachments_ref_degrade(
		    channel_workspace(s->channel), s->id, c, NULL));
		return 0;
	}
	r = attachments_ref_resolve(channel_workspace(s->channel), s->id, c, &e);
	if (r != NULL) {
		json_object_object_add(p->params, "prompt", r);
		return 0;
	}
	s->active = NULL;
	turn_error(s, p, e != NULL ? qerr_message(e) :
	    "Unknown or unavailable session attachment",
	    "session_attachment_gone", NULL);
	qerr_free(e);
	prompt_span_result(p, "error", "session_attachment_gone");
	pending_settled(s, p, "completed");
	prompt_free(p);
	return -1;
}

/* Start the next queued prompt when none runs (nor an expired one). */
static void
prompts_pump(struct session *s)
{
	struct prompt *p;

	while (s->active == NULL && s->expired == NULL &&
	    (p = TAILQ_FIRST(&s->queue)) != NULL) {
		TAILQ_REMOVE(&s->queue, p, entry);
		s->queued--;
		s->active = p;
		p->started_wall_ms = clock_wall_ms();
		json_object_put(s->turn_error);
		s->turn_error = NULL;
		if (p->announced)
			pending_event(s, p, "pending_prompt_started", NULL);
		prompt_span_start(s, p);
		log_info("session %s: prompt %s started", s->id, p->id);
		if (prompt_expand(s, p) == -1)
			continue;
		p->req = channel_request(s->channel, "session/prompt", p->params, 0,
		    on_prompt_done, p);
		p->params = NULL;
		if (p->req == NULL) {
			s->active = NULL;
			turn_error(s, p, "The agent process is not available",
			    "acp_channel_unavailable", "acp_channel_unavailable");
			prompt_span_result(p, "error", "acp_channel_unavailable");
			pending_settled(s, p, "completed");
			prompt_free(p);
		} else
			prompt_arm_deadline(p);
	}
}

/* prompt must be a non-empty array of objects. */
static int
prompt_valid(json_object *body)
{
	json_object *v;
	size_t n;

	if (!json_object_object_get_ex(body, "prompt", &v) ||
	    !json_object_is_type(v, json_type_array) ||
	    (n = json_object_array_length(v)) == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(v, i),
		    json_type_object))
			return 0;
	return 1;
}

void
prompts_set_idle(void (*fn)(struct session *))
{
	prompts_idle = fn;
}

static const char *prompts_admit_as(struct session *, json_object *,
		    const char *, int, const char *);

const char *
prompts_admit(struct session *s, json_object *body, const char *client_id,
    int cont)
{
	return prompts_admit_as(s, body, client_id, cont, NULL);
}

const char *
prompts_admit_id(struct session *s, json_object *body, const char *client_id,
    const char *id)
{
	return prompts_admit_as(s, body, client_id, 0, id);
}

static const char *
prompts_admit_as(struct session *s, json_object *body, const char *client_id,
    int cont, const char *id)
{
		struct timeval now = { 0, SERVE_PROMPT_DISPATCH_MS * 1000 };
	struct prompt *p;
	json_object *params = NULL, *v;

	/* A continuation has no text of its own (upstream sends prompt: []). */
	if (!cont && !prompt_valid(body)) {
		errno = EINVAL;
		return NULL;
	}
	if (conf.max_pending_prompts > 0 &&
	    prompts_pending(s) >= (size_t)conf.max_pending_prompts) {
		errno = ENOBUFS;
		return NULL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    json_object_deep_copy(body, &params, NULL) != 0) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	json_object_object_del(params, "deadlineMs");
	json_object_object_del(params, "eventDetailMode");
	json_object_object_del(params, "delivery");
	/* Only POST /session/:id/continue marks a continuation, not a client. */
	if ((v = json_get_obj(params, "_meta")) != NULL)
		json_object_object_del(v, SERVE_CONTINUE_META);
	if (cont) {
		if ((v = json_get_obj(params, "_meta")) == NULL) {
			v = xjson_object_new_object();
			json_object_object_add(params, "_meta", v);
		}
		json_object_object_add(v, SERVE_CONTINUE_META,
		    xjson_object_new_boolean(1));
	}
	json_object_object_add(params, "sessionId", xjson_object_new_string(s->id));
	p->promoted = id != NULL;
	if (id != NULL && strlen(id) < sizeof(p->id))
		strlcpy(p->id, id, sizeof(p->id));
	else
		uuid_new(p->id);
	if (client_id != NULL)
		strlcpy(p->client_id, client_id, sizeof(p->client_id));
	p->params = params;
	p->s = s;
	p->queued_at_ms = clock_wall_ms();
	if (json_object_object_get_ex(params, "prompt", &v))
		p->content = json_object_get(v);
	/* deadlineMs (checked by the route) can only shorten the flag's. */
	p->deadline_ms = conf.prompt_deadline_ms;
	if (json_object_object_get_ex(body, "deadlineMs", &v) && v != NULL &&
	    (p->deadline_ms <= 0 || json_object_get_int64(v) < p->deadline_ms))
		p->deadline_ms = json_object_get_int64(v);
	/* It waits behind another: announced, as upstream does. */
	if (s->active != NULL || s->expired != NULL || s->queued > 0) {
		p->announced = 1;
		pending_event(s, p, "pending_prompt_added", NULL);
	}
	TAILQ_INSERT_TAIL(&s->queue, p, entry);
	s->queued++;
	s->last_active_mono_ms = clock_mono_ms();
	/* Start it from the loop, after the 202 has been queued. */
	event_add(s->pump_ev, &now);
	return p->id;
}

void
prompts_cancel(struct session *s, const char *client_id)
{
	json_object *p, *d;

	if (s->active == NULL)
		return;
	permission_cancel_session(s, 1);
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	channel_notify(s->channel, "session/cancel", p);
	d = xjson_object_new_object();
	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "promptId", xjson_object_new_string(s->active->id));
	bus_publish(s->bus, "prompt_cancelled", d, s->active->id, client_id, 0);
}


/*
 * A session/update of s (params borrowed): published for the running
 * prompt, or dropped as late output of an expired one.
 */
void
prompts_update(struct session *s, json_object *params)
{
	struct prompt *p = s->active;
	const char *turn = p == NULL ? autoturn_prompt_id(s) : NULL;

	if (s->expired != NULL) {
		log_debug("session %s: late output of an expired prompt dropped", s->id);
		return;
	}
	s->last_active_mono_ms = clock_mono_ms();
	bus_publish(s->bus, "session_update", json_object_get(params),
	    p != NULL ? p->id : turn, p != NULL && p->client_id[0] ? p->client_id : NULL, 0);
}

/* The text of a prompt's text blocks, joined (caller frees). */
static char *
prompt_text(json_object *content)
{
	json_object *b, *t;
	char *out = xstrdup(""), *n;

	for (size_t i = 0; content != NULL && i < json_object_array_length(content); i++) {
		b = json_object_array_get_idx(content, i);
		if (!json_object_object_get_ex(b, "text", &t) ||
		    !json_object_is_type(t, json_type_string))
			continue;
		xasprintf(&n, "%s%s%s", out, out[0] ? "\n" : "", json_object_get_string(t));
		free(out);
		out = n;
	}
	return out;
}

/* One entry of GET /session/:id/pending-prompts (caller owns). */
static json_object *
prompt_summary(struct prompt *p, const char *state)
{
	json_object *o = xjson_object_new_object();
	char *text = prompt_text(p->content);

	json_object_object_add(o, "promptId", xjson_object_new_string(p->id));
	json_object_object_add(o, "text", xjson_object_new_string(text));
	free(text);
	if (p->content != NULL)
		json_object_object_add(o, "content", json_object_get(p->content));
	json_object_object_add(o, "queuedAt", xjson_object_new_int64((int64_t)p->queued_at_ms));
	json_object_object_add(o, "state", xjson_object_new_string(state));
	if (p->client_id[0])
		json_object_object_add(o, "originatorClientId",
		    xjson_object_new_string(p->client_id));
	return o;
}

/* The running prompt, then the queued ones in order (caller owns). */
json_object *
prompts_list(struct session *s)
{
	json_object *a = xjson_object_new_array();
	struct prompt *p;

	if (s->active != NULL)
		json_object_array_add(a, prompt_summary(s->active, "running"));
	TAILQ_FOREACH(p, &s->queue, entry)
		json_object_array_add(a, prompt_summary(p, "queued"));
	return a;
}

/* Take a queued prompt out of the FIFO: 1 removed, 0 not queued. */
int
prompts_remove(struct session *s, const char *prompt_id)
{
	struct prompt *p;

	TAILQ_FOREACH(p, &s->queue, entry)
		if (strcmp(p->id, prompt_id) == 0)
			break;
	if (p == NULL)
		return 0;
	TAILQ_REMOVE(&s->queue, p, entry);
	s->queued--;
	pending_settled(s, p, "removed");
	prompt_settle(p, "cancelled", NULL, NULL, NULL);
	prompt_free(p);
	return 1;
}

/*
 * What status says of the work: "active" while a prompt runs (or an
 * expired one has not let go), else "idle"; whether the last turn ended
 * in turn_error, and that error.
 */
void
prompts_status(struct session *s, json_object *o)
{
	json_object_object_add(o, "activeWorkState", xjson_object_new_string(
	    s->active != NULL || s->expired != NULL ? "active" : "idle"));
	json_object_object_add(o, "hasTurnError",
	    xjson_object_new_boolean(s->turn_error != NULL));
	if (s->turn_error != NULL)
		json_object_object_add(o, "turnError", json_object_get(s->turn_error));
}

json_object *
prompts_turn(struct session *s, const char *prompt_id)
{
	struct prompt *p;

	if (s->active != NULL &&
	    (prompt_id == NULL || strcmp(s->active->id, prompt_id) == 0))
		return prompt_turn(s->active, "running");
	TAILQ_FOREACH(p, &s->queue, entry)
		if (prompt_id == NULL || strcmp(p->id, prompt_id) == 0)
			return prompt_turn(p, "queued");
	return NULL;
}
