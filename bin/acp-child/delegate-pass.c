/* SPDX-License-Identifier: ISC */
/*
 * delegate-pass.c: the agent-level session calls this child does not
 * answer itself (the qwen/status/session/ and qwen/control/session/
 * families, session/set_config_option), passed to the --agent-acp agent;
 * its answer is
 * passed back, id for id, unchanged.  A session the agent has not resumed
 * yet (the background resume still on its way, or the agent starting) is
 * answered at once with data.code runtime_still_starting, which the daemon
 * turns into a 503 with Retry-After, rather than held.
 */
#include "config.h"

#include <sys/queue.h>

#include <string.h>

#include "child.h"
#include "delegate.h"
#include "delegate-int.h"
#include "json.h"

/* Whether method is an agent-level session call the agent may know. */
static int
pass_method(const char *method)
{
	return strncmp(method, "qwen/status/session/", 20) == 0 ||
	    strncmp(method, "qwen/control/session/", 21) == 0 ||
	    strcmp(method, "session/set_config_option") == 0;
}

int
delegate_pass(struct child *c, struct rpc_msg *m)
{
	const char *sid = json_get_str(m->params, "sessionId");
	struct session *s;
	struct call *k;
	json_object *data;

	if (c->opts.agent_acp == NULL || !pass_method(m->method) || sid == NULL ||
	    (s = session_find(&c->sessions, sid)) == NULL)
		return 0;
	if (dlg.state != D_READY || !s->delegated) {
		data = json_object_new_object();
		json_object_object_add(data, "code",
		    json_object_new_string("runtime_still_starting"));
		child_send(c, rpc_new_error(json_object_get(m->id), RPC_INTERNAL_ERROR,
		    "The agent has not resumed this session yet", data));
		return 1;
	}
	if ((k = delegate_call_new(CALL_PASS, sid, m->id, NULL)) == NULL) {
		child_send(c, rpc_new_error(json_object_get(m->id), RPC_INTERNAL_ERROR,
		    "out of memory", NULL));
		return 1;
	}
	delegate_call(k, m->method, json_object_get(m->params));
	return 1;
}

/* The agent's answer to a passed call, to our parent as it came. */
void
delegate_pass_answer(struct child *c, struct call *k, struct rpc_msg *m)
{
	if (m->kind == RPC_RESULT)
		child_send_result(c, k->peer_id, json_object_get(m->result));
	else
		child_send(c, rpc_new_error_obj(json_object_get(k->peer_id), m->error));
}

/* The agent went with the call unanswered. */
void
delegate_pass_gone(struct child *c, struct call *k)
{
	child_send(c, rpc_new_error(json_object_get(k->peer_id), RPC_INTERNAL_ERROR,
	    "The agent exited before it answered", NULL));
}
