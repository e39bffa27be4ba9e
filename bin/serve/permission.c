/* SPDX-License-Identifier: ISC */
/*
 * permission.c: the child's session/request_permission requests, held
 * until a client answers.  Each becomes a permission_request event on
 * the session's bus (ACP clients get it as a session/request_permission
 * request on their session stream) with a requestId of ours; the first
 * valid answer (POST /session/:id/permission/:requestId, or an ACP
 * client's reply) goes back to the child, later ones find nothing (404).
 * An unanswered request is cancelled after --permission-response-timeout-ms
 * (0: never), and when its session is cancelled, closed or dies.  Every
 * resolution is told to every subscriber as permission_resolved.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

/* Held requests per session; more are cancelled at once (upstream: 64). */
#define PERMISSION_MAX_PER_SESSION	64

struct perm {
	TAILQ_ENTRY(perm)	 entry;
	char			 request_id[UUID_LEN + 1];
	char			 session_id[SERVE_SESSION_ID_MAX + 1];
	char			 prompt_id[UUID_LEN + 1];	/* "" none */
	struct session		*s;
	struct channel		*ch;
	unsigned		 serial;	/* of the child that asked */
	json_object		*rpc_id;	/* the child's request id */
	json_object		*interaction;	/* as status shows it (upstream's shape) */
	struct event		*timer;
};
static TAILQ_HEAD(, perm) perms = TAILQ_HEAD_INITIALIZER(perms);

static struct perm *
permission_find(const char *request_id)
{
	struct perm *p;

	TAILQ_FOREACH(p, &perms, entry)
		if (strcmp(p->request_id, request_id) == 0)
			return p;
	return NULL;
}

static size_t
permission_count(const struct session *s)
{
	struct perm *p;
	size_t n = 0;

	TAILQ_FOREACH(p, &perms, entry)
		n += p->s == s;
	return n;
}

size_t
permission_pending(const struct session *s)
{
	return permission_count(s);
}

/* {outcome:"selected",optionId} or {outcome:"cancelled"}; caller owns. */
static json_object *
outcome_new(const char *option_id)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "outcome",
	    json_object_new_string(option_id != NULL ? "selected" : "cancelled"));
	if (option_id != NULL)
		json_object_object_add(o, "optionId", json_object_new_string(option_id));
	return o;
}

/* Answer the child (when it still runs), tell the subscribers, free p. */
static void
permission_resolve(struct perm *p, const char *option_id, const char *voter, int tell)
{
	json_object *res, *d;

	TAILQ_REMOVE(&perms, p, entry);
	if (p->ch != NULL) {
		res = json_object_new_object();
		json_object_object_add(res, "outcome", outcome_new(option_id));
		channel_reply(p->ch, p->serial, p->rpc_id, res);
	}
	if (tell && p->s != NULL) {
		d = json_object_new_object();
		json_object_object_add(d, "requestId", json_object_new_string(p->request_id));
		json_object_object_add(d, "outcome", outcome_new(option_id));
		if (voter != NULL)
			json_object_object_add(d, "voterClientId", json_object_new_string(voter));
		bus_publish(p->s->bus, "permission_resolved", d,
		    p->prompt_id[0] ? p->prompt_id : NULL, voter, 0);
	}
	log_info("session %s: permission %s %s", p->session_id, p->request_id,
	    option_id != NULL ? "answered" : "cancelled");
	if (p->timer != NULL)
		event_free(p->timer);
	json_object_put(p->rpc_id);
	json_object_put(p->interaction);
	free(p);
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what;
	permission_resolve(arg, NULL, NULL, 1);
}

/* Member name of params' object obj copied into out as as (when present). */
static void
copy_member(json_object *out, const char *as, json_object *obj, const char *name)
{
	json_object *v;

	if (obj != NULL && json_object_object_get_ex(obj, name, &v) && v != NULL)
		json_object_object_add(out, as, json_object_get(v));
}

/* [{optionId, label?, kind?}] from the child's options (caller owns). */
static json_object *
interaction_options(json_object *params)
{
	json_object *opts, *o, *v, *out = json_object_new_array(), *e;
	size_t n;

	if (!json_object_object_get_ex(params, "options", &opts) ||
	    !json_object_is_type(opts, json_type_array))
		return out;
	n = json_object_array_length(opts);
	for (size_t i = 0; i < n; i++) {
		o = json_object_array_get_idx(opts, i);
		e = json_object_new_object();
		json_object_object_add(e, "optionId", json_object_new_string(
		    json_object_object_get_ex(o, "optionId", &v) &&
		    json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) : ""));
		if (json_object_object_get_ex(o, "name", &v) &&
		    json_object_is_type(v, json_type_string))
			json_object_object_add(e, "label", json_object_get(v));
		if (json_object_object_get_ex(o, "kind", &v) &&
		    json_object_is_type(v, json_type_string))
			json_object_object_add(e, "kind", json_object_get(v));
		json_object_array_add(out, e);
	}
	return out;
}

/*
 * The request as a late client sees it in status' pendingInteractions:
 * upstream's {requestId, kind, createdAt, action|questions, options}.  A
 * tool call whose _meta.qwenInteractionKind is "user_question" is a
 * question to the user, with its questions keyed by position.
 */
static json_object *
interaction_new(const struct perm *p, json_object *params)
{
	json_object *o = json_object_new_object(), *tool = NULL, *meta = NULL;
	json_object *a, *qs, *q, *out, *v;
	char iso[CLOCK_ISO_LEN], key[24];
	const char *k = NULL;

	if (json_object_object_get_ex(params, "toolCall", &tool) &&
	    !json_object_is_type(tool, json_type_object))
		tool = NULL;
	if (tool != NULL && json_object_object_get_ex(tool, "_meta", &meta) &&
	    json_object_is_type(meta, json_type_object) &&
	    json_object_object_get_ex(meta, "qwenInteractionKind", &v) &&
	    json_object_is_type(v, json_type_string))
		k = json_object_get_string(v);
	clock_iso_time(clock_wall_ms(), iso);
	json_object_object_add(o, "requestId", json_object_new_string(p->request_id));
	if (k != NULL && strcmp(k, "user_question") == 0) {
		json_object_object_add(o, "kind", json_object_new_string("user_question"));
		json_object_object_add(o, "createdAt", json_object_new_string(iso));
		copy_member(o, "title", tool, "title");
		out = json_object_new_array();
		if ((json_object_object_get_ex(meta, "qwenQuestions", &qs) ||
		    (json_object_object_get_ex(tool, "rawInput", &v) &&
		    json_object_object_get_ex(v, "questions", &qs))) &&
		    json_object_is_type(qs, json_type_array))
			for (size_t i = 0; i < json_object_array_length(qs); i++) {
				q = json_object_array_get_idx(qs, i);
				if (!json_object_is_type(q, json_type_object))
					continue;
				v = json_object_new_object();
				json_object_object_foreach(q, qk, qv)
					json_object_object_add(v, qk,
					    json_object_get(qv));
				snprintf(key, sizeof(key), "%zu", i);
				json_object_object_add(v, "answerKey",
				    json_object_new_string(key));
				json_object_array_add(out, v);
			}
		json_object_object_add(o, "questions", out);
	} else {
		json_object_object_add(o, "kind", json_object_new_string("permission"));
		json_object_object_add(o, "createdAt", json_object_new_string(iso));
		a = json_object_new_object();
		copy_member(a, "type", tool, "kind");
		copy_member(a, "title", tool, "title");
		copy_member(a, "content", tool, "content");
		copy_member(a, "locations", tool, "locations");
		copy_member(a, "input", tool, "rawInput");
		json_object_object_add(o, "action", a);
	}
	json_object_object_add(o, "options", interaction_options(params));
	return o;
}

/* Whether p asks the user a question rather than for a permission. */
static int
permission_is_question(const struct perm *p)
{
	const char *k = json_get_str(p->interaction, "kind");

	return k != NULL && strcmp(k, "user_question") == 0;
}

json_object *
permission_interactions(const struct session *s)
{
	json_object *out = xjson_object_new_array();
	struct perm *p;

	TAILQ_FOREACH(p, &perms, entry)
		if (p->s == s && p->interaction != NULL)
			json_object_array_add(out,
			    json_object_get(p->interaction));
	return out;
}

size_t
permission_questions(const struct session *s)
{
	struct perm *p;
	size_t n = 0;

	TAILQ_FOREACH(p, &perms, entry)
		n += p->s == s && permission_is_question(p);
	return n;
}

/* permission_request {requestId, sessionId, toolCall, options}. */
static void
publish_request(struct perm *p, json_object *params)
{
	json_object *d = json_object_new_object(), *v;
	const char *origin = NULL;

	json_object_object_add(d, "requestId", json_object_new_string(p->request_id));
	json_object_object_add(d, "sessionId", json_object_new_string(p->session_id));
	json_object_object_add(d, "toolCall",
	    json_object_object_get_ex(params, "toolCall", &v) ? json_object_get(v) : NULL);
	json_object_object_add(d, "options",
	    json_object_object_get_ex(params, "options", &v) &&
	    json_object_is_type(v, json_type_array) ? json_object_get(v) :
	    json_object_new_array());
	(void)prompts_active(p->s, &origin);
	bus_publish(p->s->bus, "permission_request", d,
	    p->prompt_id[0] ? p->prompt_id : NULL, origin, 0);
}

/* Hold a request, or cancel it at once when no session can answer it. */
void
permission_ask(struct channel *ch, json_object *rpc_id, json_object *params)
{
	struct timeval tv;
	struct session *s = NULL;
	struct perm *p;
	json_object *v;

	if (params != NULL && json_object_object_get_ex(params, "sessionId", &v) &&
	    json_object_is_type(v, json_type_string))
		s = sessions_find(json_object_get_string(v));
	if (s == NULL || s->channel != ch || permission_count(s) >= PERMISSION_MAX_PER_SESSION ||
	    (p = calloc(1, sizeof(*p))) == NULL) {
		v = json_object_new_object();
		json_object_object_add(v, "outcome", outcome_new(NULL));
		channel_reply(ch, channel_serial(ch), rpc_id, v);
		return;
	}
	uuid_new(p->request_id);
	strlcpy(p->session_id, s->id, sizeof(p->session_id));
	strlcpy(p->prompt_id, prompts_active(s, NULL) != NULL ?
	    prompts_active(s, NULL) : "", sizeof(p->prompt_id));
	p->s = s;
	p->ch = ch;
	p->serial = channel_serial(ch);
	p->rpc_id = json_object_get(rpc_id);
	p->interaction = interaction_new(p, params);
	TAILQ_INSERT_TAIL(&perms, p, entry);
	metrics_permission_asked();
	log_info("session %s: permission %s requested", s->id, p->request_id);
	publish_request(p, params);
	if (conf.permission_timeout_ms > 0 &&
	    (p->timer = evtimer_new(serve_base, on_timeout, p)) != NULL) {
		tv.tv_sec = (time_t)(conf.permission_timeout_ms / 1000);
		tv.tv_usec = (suseconds_t)(conf.permission_timeout_ms % 1000) * 1000;
		evtimer_add(p->timer, &tv);
	}
}

/* Is option_id one the child offered (its interaction's options)? */
static int
option_allowed(const struct perm *p, const char *option_id)
{
	json_object *opts = json_get(p->interaction, "options", json_type_array);
	const char *id;

	for (size_t i = 0; opts != NULL && i < json_object_array_length(opts); i++)
		if ((id = json_get_str(json_object_array_get_idx(opts, i),
		    "optionId")) != NULL && id[0] != '\0' && strcmp(id, option_id) == 0)
			return 1;
	return 0;
}

enum permission_answer
permission_answer(const char *session_id, const char *request_id, json_object *outcome,
    const char *voter)
{
	struct perm *p = permission_find(request_id);
	json_object *kind, *opt;
	const char *k, *id = NULL;

	if (outcome == NULL || !json_object_is_type(outcome, json_type_object) ||
	    !json_object_object_get_ex(outcome, "outcome", &kind) ||
	    !json_object_is_type(kind, json_type_string))
		return PERMISSION_BAD_OUTCOME;
	k = json_object_get_string(kind);
	if (strcmp(k, "selected") == 0) {
		if (!json_object_object_get_ex(outcome, "optionId", &opt) ||
		    !json_object_is_type(opt, json_type_string) ||
		    json_object_get_string_len(opt) == 0)
			return PERMISSION_BAD_OUTCOME;
		id = json_object_get_string(opt);
	} else if (strcmp(k, "cancelled") != 0)
		return PERMISSION_BAD_OUTCOME;
	if (p == NULL || (session_id != NULL && strcmp(p->session_id, session_id) != 0))
		return PERMISSION_NOT_FOUND;
	if (id != NULL && !option_allowed(p, id))
		return PERMISSION_BAD_OPTION;
	permission_resolve(p, id, voter, 1);
	return PERMISSION_ACCEPTED;
}

const char *
permission_session_of(const char *request_id)
{
	struct perm *p = permission_find(request_id);

	return p != NULL ? p->session_id : NULL;
}

void
permission_cancel_session(struct session *s, int child_alive)
{
	struct perm *p, *next;

	TAILQ_FOREACH_SAFE(p, &perms, entry, next) {
		if (p->s != s)
			continue;
		if (!child_alive)
			p->ch = NULL;
		permission_resolve(p, NULL, NULL, 1);
	}
}

void
permission_forget_session(struct session *s)
{
	struct perm *p, *next;

	TAILQ_FOREACH_SAFE(p, &perms, entry, next)
		if (p->s == s)
			permission_resolve(p, NULL, NULL, 0);
}
