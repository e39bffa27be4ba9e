/* SPDX-License-Identifier: ISC */
/*
 * autoturn.c: the turns an agent starts on its own, as upstream's bridge
 * sees them: a background notification turn (a background task of its
 * finished and the agent answers it) and a goal turn.
 *
 * A background turn asks first: the request _qwencode/start_turn
 * {sessionId, source "background_notification", turnId, taskId, kind,
 * startedAt, toolUseId?, sourceTurnId?, label?, afterPromptId?} is
 * {accepted: false} while a prompt or another automatic turn runs on the
 * session (the agent then waits and asks again), else {accepted: true}
 * and the session's stream gets a session_update (promptId the turn's id)
 * carrying _meta {source "background_notification_turn_started",
 * qwenDiscreteMessage, backgroundTurn}.  While it runs, the agent's
 * updates carry the turn's id as their promptId.  The notification
 * _qwencode/end_turn {sessionId, reason, turnId?, source} ends it:
 * turn_complete {sessionId, promptId, stopReason, backgroundTurn} and
 * background_notification_turn_complete {sessionId, reason, turnId}, so a
 * client's turn settles as it does for a prompt.  A goal turn only says
 * it starts and ends (source "goal"; turn_complete when it names its
 * promptId).  Anything malformed is refused or dropped, as upstream's.
 *
 * afterPromptId is checked, not waited on.  Upstream's bridge holds the
 * answer while the prompt it names (the agent's last completed one) is
 * still settling, then admits the turn unless another prompt got in;
 * here a prompt settles in the same loop turn that reads the child's
 * answer to it, which the child sent before this request, so the prompt
 * named is never still active: a prompt that is active is a later one,
 * which upstream refuses too.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

#define AUTOTURN_ID_MAX		256	/* turnId, taskId, promptId */
#define AUTOTURN_TEXT_MAX	4096	/* toolUseId, sourceTurnId, label */
#define AUTOTURN_REASON_MAX	128

/* The session sid that ch serves, or NULL. */
static struct session *
owned(struct channel *ch, const char *sid)
{
	struct session *s;

	if (sid == NULL || sid[0] == '\0' || (s = sessions_find(sid)) == NULL ||
	    s->channel != ch)
		return NULL;
	return s;
}

/* A string member of at most max bytes, 1 when present (into *out). */
static int
str_member(json_object *o, const char *k, size_t max, int required,
    const char **out)
{
	json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(o, k, &v))
		return required ? -1 : 0;
	if (!json_object_is_type(v, json_type_string) ||
	    (size_t)json_object_get_string_len(v) > max ||
	    (required && json_object_get_string_len(v) == 0))
		return -1;
	*out = json_object_get_string(v);
	return 1;
}

/* The turn of a start_turn, as upstream's bridge keeps it, or NULL. */
static json_object *
turn_parse(json_object *p)
{
	static const char *const kinds[] = { "agent", "monitor", "shell",
	    "workflow", "peer", NULL };
	static const char *const extra[] = { "toolUseId", "sourceTurnId",
	    "label", NULL };
	const char *turn_id, *task_id, *kind, *s;
	json_object *t, *v;
	double at;
	int i, has, known = 0;

	if (str_member(p, "turnId", AUTOTURN_ID_MAX, 1, &turn_id) == -1 ||
	    str_member(p, "taskId", AUTOTURN_ID_MAX, 1, &task_id) == -1 ||
	    (kind = json_get_str(p, "kind")) == NULL ||
	    !json_object_object_get_ex(p, "startedAt", &v) ||
	    (!json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_double)))
		return NULL;
	for (i = 0; kinds[i] != NULL; i++)
		known |= strcmp(kind, kinds[i]) == 0;
	at = json_object_get_double(v);
	if (!known || !isfinite(at) || at < 0)
		return NULL;
	t = xjson_object_new_object();
	json_object_object_add(t, "turnId", xjson_object_new_string(turn_id));
	json_object_object_add(t, "taskId", xjson_object_new_string(task_id));
	json_object_object_add(t, "kind", xjson_object_new_string(kind));
	json_object_object_add(t, "startedAt", json_object_get(v));
	for (i = 0; extra[i] != NULL; i++) {
		if ((has = str_member(p, extra[i], AUTOTURN_TEXT_MAX, 0, &s)) == -1) {
			json_object_put(t);
			return NULL;
		}
		if (has)
			json_object_object_add(t, extra[i], xjson_object_new_string(s));
	}
	return t;
}

static json_object *
answer(int accepted)
{
	json_object *r = xjson_object_new_object();

	json_object_object_add(r, "accepted", json_object_new_boolean(accepted));
	return r;
}

/* The stream's word that the turn started: upstream's discrete chunk. */
static void
publish_started(struct session *s, json_object *turn)
{
	const char *label = json_get_str(turn, "label");
	json_object *d = xjson_object_new_object(), *u, *c, *m;

	u = xjson_object_new_object();
	json_object_object_add(u, "sessionUpdate",
	    xjson_object_new_string("agent_message_chunk"));
	c = xjson_object_new_object();
	json_object_object_add(c, "type", xjson_object_new_string("text"));
	json_object_object_add(c, "text", xjson_object_new_string(label != NULL ?
	    label : json_get_str(turn, "taskId")));
	json_object_object_add(u, "content", c);
	m = xjson_object_new_object();
	json_object_object_add(m, "source",
	    xjson_object_new_string("background_notification_turn_started"));
	json_object_object_add(m, "qwenDiscreteMessage", json_object_new_boolean(1));
	json_object_object_add(m, "backgroundTurn", json_object_get(turn));
	json_object_object_add(u, "_meta", m);
	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "update", u);
	bus_publish(s->bus, "session_update", d, json_get_str(turn, "turnId"),
	    NULL, 0);
}

json_object *
autoturn_start(struct channel *ch, json_object *p)
{
	const char *source = json_get_str(p, "source"), *after, *id;
	struct session *s;
	json_object *turn;

	if ((s = owned(ch, json_get_str(p, "sessionId"))) == NULL ||
	    source == NULL || strcmp(source, "background_notification") != 0 ||
	    str_member(p, "afterPromptId", AUTOTURN_TEXT_MAX, 0, &after) == -1 ||
	    (turn = turn_parse(p)) == NULL)
		return answer(0);
	id = json_get_str(turn, "turnId");
	if (s->bg_turn != NULL &&
	    strcmp(json_get_str(s->bg_turn, "turnId"), id) == 0) {
		json_object_put(turn);
		return answer(1);	/* asked again: already running */
	}
	if (s->bg_turn != NULL || s->goal_turn || prompts_active(s, NULL) != NULL) {
		json_object_put(turn);
		return answer(0);
	}
	s->bg_turn = turn;
	log_debug("session %s: background turn %s started", s->id, id);
	publish_started(s, turn);
	return answer(1);
}

/* turn_complete for promptId, with the background turn when it was one. */
static void
publish_complete(struct session *s, const char *prompt_id, const char *reason,
    json_object *turn)
{
	json_object *d = xjson_object_new_object();

	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "promptId", xjson_object_new_string(prompt_id));
	json_object_object_add(d, "stopReason", xjson_object_new_string(reason));
	if (turn != NULL)
		json_object_object_add(d, "backgroundTurn", json_object_get(turn));
	bus_publish(s->bus, "turn_complete", d, prompt_id, NULL, 0);
}

static void
publish_bg_complete(struct session *s, const char *reason, const char *turn_id)
{
	json_object *d = xjson_object_new_object();

	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "reason", xjson_object_new_string(reason));
	if (turn_id != NULL)
		json_object_object_add(d, "turnId", xjson_object_new_string(turn_id));
	bus_publish(s->bus, "background_notification_turn_complete", d, turn_id,
	    NULL, 0);
}

/* _qwencode/end_turn: the automatic turn is over. */
static void
end_turn(struct session *s, json_object *p, const char *source)
{
	const char *reason, *prompt_id, *turn_id;
	json_object *turn = s->bg_turn;

	if (str_member(p, "reason", AUTOTURN_REASON_MAX, 1, &reason) == -1)
		return;
	if (strcmp(source, "goal") == 0) {
		s->goal_turn = 0;
		if (str_member(p, "promptId", AUTOTURN_ID_MAX, 1, &prompt_id) == 1)
			publish_complete(s, prompt_id, reason, NULL);
		return;
	}
	if (str_member(p, "turnId", AUTOTURN_ID_MAX, 0, &turn_id) == -1)
		return;
	if (turn_id != NULL) {
		if (turn == NULL || strcmp(json_get_str(turn, "turnId"), turn_id) != 0)
			return;
		s->bg_turn = NULL;
		log_debug("session %s: background turn %s ended (%s)", s->id,
		    turn_id, reason);
		publish_complete(s, turn_id, reason, turn);
		publish_bg_complete(s, reason, turn_id);
		json_object_put(turn);
		return;
	}
	if (turn == NULL)
		publish_bg_complete(s, reason, NULL);
}

void
autoturn_notify(struct channel *ch, const char *method, json_object *p)
{
	const char *source = json_get_str(p, "source");
	struct session *s;

	if (source == NULL || (strcmp(source, "goal") != 0 &&
	    strcmp(source, "background_notification") != 0) ||
	    (s = owned(ch, json_get_str(p, "sessionId"))) == NULL)
		return;
	if (strcmp(method, "_qwencode/end_turn") == 0)
		end_turn(s, p, source);
	else if (strcmp(method, "_qwencode/start_turn") == 0 &&
	    strcmp(source, "goal") == 0)
		s->goal_turn = 1;
}

const char *
autoturn_prompt_id(const struct session *s)
{
	return s->bg_turn != NULL ? json_get_str(s->bg_turn, "turnId") : NULL;
}

void
autoturn_clear(struct session *s)
{
	json_object_put(s->bg_turn);
	s->bg_turn = NULL;
	s->goal_turn = 0;
}
