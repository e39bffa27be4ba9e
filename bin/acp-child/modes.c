/* SPDX-License-Identifier: ISC */
/*
 * modes.c: the echo agent's model and approval modes.  It advertises one
 * model ("echo") and upstream's five approval modes in session/new and in
 * load and resume answers (modes-state.c), accepts session/set_model for
 * the advertised model only, and switches a session's mode through upstream's extension
 * qwen/control/session/approval_mode {mode} (answered {previous, current})
 * or ACP session/set_mode {modeId} (answered {}), each announced first as
 * a current_mode_update.  The echo agent asks no permissions, so a mode
 * changes nothing else; the answers are what a client of it needs.  With
 * --agent-acp nothing is advertised and the switches are refused (-32601):
 * the agent, started on a session's first prompt, would not see them.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "approval.h"
#include "child.h"
#include "load.h"
#include "json.h"
#include "rpc-frame.h"
#include "xmalloc.h"

int
modes_is_switch(const char *method)
{
	return strcmp(method, "session/set_model") == 0 ||
	    strcmp(method, "session/set_mode") == 0 ||
	    strcmp(method, "qwen/control/session/approval_mode") == 0;
}

/* current_mode_update, then the answer. */
static void
set_mode(struct child *c, struct rpc_msg *m, struct session *s, int acp)
{
	const char *mode = json_get_str(m->params, acp ? "modeId" : "mode");
	json_object *u, *p, *r;

	if (!approval_mode_known(mode)) {
		child_send_error(c, m->id, RPC_INVALID_PARAMS,
		    "Invalid approval mode; allowed: plan, default, auto-edit, auto, yolo", NULL);
		return;
	}
	u = xjson_object_new_object();
	json_object_object_add(u, "sessionUpdate", xjson_object_new_string("current_mode_update"));
	json_object_object_add(u, "currentModeId", xjson_object_new_string(mode));
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(p, "update", u);
	child_send(c, rpc_new_notification("session/update", p));
	r = xjson_object_new_object();
	if (!acp) {
		json_object_object_add(r, "previous", xjson_object_new_string(s->mode));
		json_object_object_add(r, "current", xjson_object_new_string(mode));
	}
	strlcpy(s->mode, mode, sizeof(s->mode));
	child_send_result(c, m->id, r);
}

/* A switch for a registered session, answered at once (even mid-turn). */
void
modes_request(struct child *c, struct rpc_msg *m)
{
	const char *sid = json_get_str(m->params, "sessionId"), *model;
	struct session *s;

	if (c->opts.agent_acp != NULL) {
		/* Not forwarded: the agent would not see it (it starts later). */
		child_send_error(c, m->id, RPC_METHOD_NOT_FOUND, "Model and mode switches "
		    "are not available with --agent-acp", NULL);
		return;
	}
	if (sid == NULL || (s = session_find(&c->sessions, sid)) == NULL || !s->registered) {
		child_send_not_found(c, m->id, sid != NULL ? sid : "");
		return;
	}
	if (strcmp(m->method, "session/set_model") != 0) {
		set_mode(c, m, s, strcmp(m->method, "session/set_mode") == 0);
		return;
	}
	model = json_get_str(m->params, "modelId");
	if (model == NULL || strcmp(model, MODES_ECHO_MODEL) != 0) {
		child_send_error(c, m->id, RPC_INVALID_PARAMS,
		    "Unknown model: this agent has only \"" MODES_ECHO_MODEL "\"", NULL);
		return;
	}
	child_send_result(c, m->id, xjson_object_new_object());
}
