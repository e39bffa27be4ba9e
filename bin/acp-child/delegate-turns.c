/* SPDX-License-Identifier: ISC */
/*
 * delegate-turns.c: the turns the --agent-acp agent starts on its own (a
 * background notification turn, a goal turn), followed as they pass
 * through us so that an agent that exits in one does not leave it running
 * at the daemon.  The daemon holds a session's background turn from the
 * start_turn it accepted to the matching end_turn: an agent that dies in
 * between never sends that end, and the session would refuse every later
 * turn and keep stamping updates with the dead one's id.  So when the
 * agent is gone we send the end ourselves, reason "agent_exited", for
 * every turn we saw accepted or asked and not answered yet (the daemon
 * ignores an end for a turn it does not run).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "delegate-int.h"
#include "json.h"
#include "xmalloc.h"

#define TURN_ID_MAX	256	/* the daemon refuses longer ids (autoturn.c) */

/* A bounded string member of o, or NULL. */
static const char *
id_member(json_object *o, const char *key)
{
	const char *v = json_get_str(o, key);

	return v != NULL && v[0] != '\0' && strlen(v) <= TURN_ID_MAX ? v : NULL;
}

static struct session *
turn_session(struct child *c, json_object *params)
{
	const char *sid = json_get_str(params, "sessionId");

	return sid != NULL ? session_find(&c->sessions, sid) : NULL;
}

/* A turn's id into its slot (NULL: none); out of memory is fatal, as for
   the child's other small state. */
static void
set_turn(char **slot, const char *v)
{
	free(*slot);
	*slot = v != NULL ? xstrdup(v) : NULL;
}

/* The agent asks to start a turn (its start_turn's params): the turn is
   held as running until the daemon refuses it, so that an agent gone
   before the answer has it ended too.  One running already: the daemon
   refuses this one. */
void
delegate_turns_asked(struct child *c, json_object *asked)
{
	struct session *s;
	const char *id;

	if ((s = turn_session(c, asked)) != NULL && s->auto_turn == NULL &&
	    (id = id_member(asked, "turnId")) != NULL)
		set_turn(&s->auto_turn, id);
}

/* The daemon answered the agent's start_turn (asked: its params; result
   NULL for an error, a refusal too). */
void
delegate_turns_answered(struct child *c, json_object *asked, json_object *result)
{
	struct session *s;
	json_object *a;
	const char *id;

	if ((s = turn_session(c, asked)) == NULL ||
	    (id = id_member(asked, "turnId")) == NULL)
		return;
	if (result != NULL && json_object_object_get_ex(result, "accepted", &a) &&
	    json_object_get_boolean(a))
		set_turn(&s->auto_turn, id);
	else if (s->auto_turn != NULL && strcmp(s->auto_turn, id) == 0)
		set_turn(&s->auto_turn, NULL);
}

/* A start_turn or end_turn notification of the agent, passed up. */
void
delegate_turns_note(struct child *c, const char *method, json_object *params)
{
	const char *source = json_get_str(params, "source"), *id;
	struct session *s;

	if (source == NULL || (s = turn_session(c, params)) == NULL)
		return;
	if (strcmp(source, "goal") == 0) {
		if (strcmp(method, "_qwencode/start_turn") == 0) {
			id = id_member(params, "promptId");
			set_turn(&s->goal_turn, id != NULL ? id : "");
		} else
			set_turn(&s->goal_turn, NULL);
	} else if (strcmp(source, "background_notification") == 0 &&
	    strcmp(method, "_qwencode/end_turn") == 0 && s->auto_turn != NULL &&
	    (id = json_get_str(params, "turnId")) != NULL &&
	    strcmp(id, s->auto_turn) == 0)
		set_turn(&s->auto_turn, NULL);
}

/* _qwencode/end_turn {sessionId, source, reason "agent_exited", key: id}. */
static void
send_end(struct child *c, const char *sid, const char *source,
    const char *key, const char *id)
{
	json_object *p = json_object_new_object();

	json_object_object_add(p, "sessionId", json_object_new_string(sid));
	json_object_object_add(p, "source", json_object_new_string(source));
	json_object_object_add(p, "reason", json_object_new_string("agent_exited"));
	if (id != NULL && id[0] != '\0')
		json_object_object_add(p, key, json_object_new_string(id));
	child_send(c, rpc_new_notification("_qwencode/end_turn", p));
}

/* The agent is gone: end every turn of its that still runs. */
void
delegate_turns_end_all(struct child *c)
{
	struct session *s;

	RB_FOREACH(s, session_tree, &c->sessions) {
		if (s->auto_turn != NULL)
			send_end(c, s->id, "background_notification", "turnId",
			    s->auto_turn);
		if (s->goal_turn != NULL)
			send_end(c, s->id, "goal", "promptId", s->goal_turn);
		set_turn(&s->auto_turn, NULL);
		set_turn(&s->goal_turn, NULL);
	}
}
