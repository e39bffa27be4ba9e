/* SPDX-License-Identifier: ISC */
/*
 * rpc.c: JSON-RPC dispatch of the ACP methods.
 *
 * initialize must come first (and pass the private parent capability
 * check when QWEN_ACP_PARENT_CAPABILITY is set; a failed check refuses
 * every later request for good).  Session requests for a busy session
 * wait in its queue.  Unknown methods get -32601; notifications other
 * than session/cancel and replies to nothing are ignored.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "delegate.h"
#include "json.h"
#include "lagmon.h"
#include "log.h"
#include "paths.h"
#include "txpage.h"
#include "xmalloc.h"

#define CAP_KEY		"qwen-code/private-parent-capability"
#define CAP_MESSAGE	"Invalid private ACP parent capability"

/* Equal strings, in time that does not depend on where they differ. */
static int
rpc_secret_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i;
	unsigned char d = la != lb;

	for (i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

static json_object *
rpc_capabilities(void)
{
	json_object *caps = xjson_object_new_object(), *o, *meta;

	json_object_object_add(caps, "loadSession", xjson_object_new_boolean(1));
	o = xjson_object_new_object();
	json_object_object_add(o, "image", xjson_object_new_boolean(0));
	json_object_object_add(o, "audio", xjson_object_new_boolean(0));
	json_object_object_add(o, "embeddedContext", xjson_object_new_boolean(0));
	json_object_object_add(caps, "promptCapabilities", o);
	o = xjson_object_new_object();
	json_object_object_add(o, "resume", xjson_object_new_object());
	json_object_object_add(caps, "sessionCapabilities", o);
	o = xjson_object_new_object();
	json_object_object_add(o, "http", xjson_object_new_boolean(0));
	json_object_object_add(o, "sse", xjson_object_new_boolean(0));
	json_object_object_add(caps, "mcpCapabilities", o);
	meta = xjson_object_new_object();
	o = xjson_object_new_object();
	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(meta, "qwen.session.loadReplay", o);
	o = xjson_object_new_object();
	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(meta, "qwen.status.loopLag", o);
	json_object_object_add(caps, "_meta", meta);
	return caps;
}

static void
rpc_initialize(struct child *c, struct rpc_msg *m)
{
	json_object *res, *info;
	const char *cap;

	if (c->opts.parent_capability != NULL) {
		cap = json_get_str(json_get_obj(m->params, "_meta"), CAP_KEY);
		if (c->denied || cap == NULL ||
		    !rpc_secret_equal(cap, c->opts.parent_capability)) {
			c->denied = 1;
			c->initialized = 0;
			log_warnx("initialize: %s", CAP_MESSAGE);
			child_send_error(c, m->id, RPC_INVALID_PARAMS, CAP_MESSAGE, NULL);
			return;
		}
	}
	c->initialized = 1;
	res = xjson_object_new_object();
	json_object_object_add(res, "protocolVersion", xjson_object_new_int(1));
	info = xjson_object_new_object();
	json_object_object_add(info, "name", xjson_object_new_string("qwen-acp-child"));
	json_object_object_add(info, "title", xjson_object_new_string("qwen-serve ACP child"));
	json_object_object_add(info, "version", xjson_object_new_string(PACKAGE_VERSION));
	json_object_object_add(res, "agentInfo", info);
	json_object_object_add(res, "authMethods", xjson_object_new_array());
	json_object_object_add(res, "agentCapabilities", rpc_capabilities());
	child_send_result(c, m->id, res);
}

static void
rpc_loop_lag(struct child *c, struct rpc_msg *m)
{
	struct lag_snapshot ls;
	json_object *o = xjson_object_new_object();

	lagmon_snapshot(c->lag, &ls);
	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(o, "intervalMs", xjson_object_new_int((int)ls.interval_ms));
	json_object_object_add(o, "samples", xjson_object_new_int64((int64_t)ls.samples));
	json_object_object_add(o, "window", xjson_object_new_int64((int64_t)ls.window));
	json_object_object_add(o, "meanMs", xjson_object_new_double(ls.mean_ms));
	json_object_object_add(o, "p50Ms", xjson_object_new_double(ls.p50_ms));
	json_object_object_add(o, "p99Ms", xjson_object_new_double(ls.p99_ms));
	json_object_object_add(o, "maxMs", xjson_object_new_double(ls.max_ms));
	json_object_object_add(o, "sessions", xjson_object_new_int64((int64_t)c->nsessions));
	child_send_result(c, m->id, o);
}

/* Remove s from the table and free it (it must not be busy). */
static void
rpc_drop_session(struct child *c, struct session *s)
{
	delegate_session_gone(c, s);
	RB_REMOVE(session_tree, &c->sessions, s);
	c->nsessions--;
	session_free(s);
}

static void	rpc_forget_session(struct child *, struct session *);

static void
rpc_close(struct child *c, struct rpc_msg *m, struct session *s)
{
	json_object *res = xjson_object_new_object();

	json_object_object_add(res, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(res, "closed", xjson_object_new_boolean(1));
	child_send_result(c, m->id, res);
	rpc_forget_session(c, s);
}

/*
 * Run a session request now (s idle, or NULL when unknown).  Returns 1
 * when s was freed.
 */
static int
rpc_session_run(struct child *c, struct rpc_msg *m, struct session *s,
    const char *sid)
{
	const char *method = m->method;

	if (strcmp(method, "session/load") == 0) {
		load_start(c, m, s, sid, 0);
		return 0;
	}
	if (strcmp(method, "session/resume") == 0 ||
	    strcmp(method, "unstable_resumeSession") == 0) {
		load_start(c, m, s, sid, 1);
		return 0;
	}
	if (s == NULL || !s->registered) {
		child_send_not_found(c, m->id, sid);
		return 0;
	}
	if (strcmp(method, "session/prompt") == 0) {
		prompt_start(c, m, s);
		return 0;
	}
	if (strcmp(method, "qwen/control/session/continue") == 0) {
		continue_request(c, m, s);
		return 0;
	}
	if (title_is_method(method)) {
		title_set(c, m, s);
		return 0;
	}
	rpc_close(c, m, s);
	return 1;
}

static int
rpc_is_session_method(const char *method)
{
	return strcmp(method, "session/load") == 0 ||
	    strcmp(method, "session/resume") == 0 ||
	    strcmp(method, "unstable_resumeSession") == 0 ||
	    strcmp(method, "session/prompt") == 0 || title_is_method(method) ||
	    strcmp(method, "qwen/control/session/continue") == 0 ||
	    strcmp(method, "qwen/control/session/close") == 0;
}

/* Validate the session id, then run now or wait behind the busy session. */
static void
rpc_session_request(struct child *c, struct rpc_msg *m)
{
	const char *sid = json_get_str(m->params, "sessionId");
	struct session *s;

	if (sid == NULL || !paths_valid_session_id(sid)) {
		json_object *data = child_error_data("invalid_session_id");
		json_object_object_add(data, "httpStatus", xjson_object_new_int(400));
		child_send_error(c, m->id, RPC_INVALID_PARAMS, sid == NULL ?
		    "params.sessionId (a string) is required" :
		    "Invalid session id: expected 32-36 hex digits and dashes", data);
		return;
	}
	s = session_find(&c->sessions, sid);
	if (s != NULL && s->busy) {
		if (strcmp(m->method, "qwen/control/session/close") == 0)
			prompt_cancel(c, s, 1);
		if (session_enqueue(s, m, CHILD_MAX_QUEUED) == -1)
			child_send_error(c, m->id, RPC_INTERNAL_ERROR,
			    "too many requests queued for this session",
			    child_error_data("prompt_queue_full"));
		return;
	}
	rpc_session_run(c, m, s, sid);
}

/* Dispatch what was queued for a session that is gone, in order. */
static void
rpc_flush_queue(struct child *c, struct session *s)
{
	struct rpc_msg m;

	while (session_dequeue(s, &m) == 0) {
		rpc_dispatch(c, &m);
		rpc_msg_clear(&m);
	}
}

/* Drop s; requests queued behind it are dispatched again, in order. */
static void
rpc_forget_session(struct child *c, struct session *s)
{
	struct session_op *op;
	struct session tmp;

	TAILQ_INIT(&tmp.queue);
	tmp.nqueue = 0;
	while ((op = TAILQ_FIRST(&s->queue)) != NULL) {
		TAILQ_REMOVE(&s->queue, op, entry);
		TAILQ_INSERT_TAIL(&tmp.queue, op, entry);
		tmp.nqueue++;
	}
	s->nqueue = 0;
	rpc_drop_session(c, s);
	rpc_flush_queue(c, &tmp);
}

void
rpc_session_idle(struct child *c, struct session *s)
{
	struct rpc_msg m;

	if (!s->registered && !s->busy) {
		/* The first restore failed: requests behind it start over. */
		rpc_forget_session(c, s);
		child_check_done(c);
		return;
	}
	while (!s->busy && session_dequeue(s, &m) == 0) {
		/* Shutting down: what was queued still runs, but no new turn. */
		if (c->closing && strcmp(m.method, "session/prompt") == 0) {
			json_object *res = xjson_object_new_object();
			json_object_object_add(res, "stopReason",
			    xjson_object_new_string("cancelled"));
			child_send_result(c, m.id, res);
			rpc_msg_clear(&m);
			continue;
		}
		int freed = rpc_session_run(c, &m, s, s->id);
		rpc_msg_clear(&m);
		if (freed)
			break;
	}
	child_check_done(c);
}

static void
rpc_notification(struct child *c, struct rpc_msg *m)
{
	const char *sid;
	struct session *s;

	if (strcmp(m->method, "session/cancel") != 0) {
		log_debug("ignoring notification %s", m->method);
		return;
	}
	if (!c->initialized)
		return;
	if ((sid = json_get_str(m->params, "sessionId")) == NULL ||
	    (s = session_find(&c->sessions, sid)) == NULL)
		return;
	prompt_cancel(c, s, 0);
}

void
rpc_dispatch(struct child *c, struct rpc_msg *m)
{
	if (m->kind == RPC_RESULT || m->kind == RPC_ERROR) {
		/* Answers to the permission requests of the --agent-acp agent. */
		delegate_parent_answer(c, m);
	} else if (m->kind == RPC_NOTIFICATION) {
		rpc_notification(c, m);
	} else if (strcmp(m->method, "initialize") == 0) {
		rpc_initialize(c, m);
	} else if (c->denied) {
		child_send_error(c, m->id, RPC_INVALID_PARAMS, CAP_MESSAGE, NULL);
	} else if (!c->initialized) {
		child_send_error(c, m->id, RPC_INVALID_REQUEST,
		    "Not initialized: send initialize first", NULL);
	} else if (strcmp(m->method, "session/new") == 0) {
		load_new(c, m);
	} else if (rpc_is_session_method(m->method)) {
		rpc_session_request(c, m);
	} else if (modes_is_switch(m->method)) {
		modes_request(c, m);
	} else if (txpage_is_method(m->method)) {
		txpage_request(c, m);
	} else if (strcmp(m->method, "qwen/status/loop_lag") == 0) {
		rpc_loop_lag(c, m);
	} else if (delegate_pass(c, m)) {
		;	/* the --agent-acp agent's to answer */
	} else {
		char msg[160];
		snprintf(msg, sizeof(msg), "Method not found: %.120s", m->method);
		child_send_error(c, m->id, RPC_METHOD_NOT_FOUND, msg, NULL);
	}
	rpc_msg_clear(m);
}

/*
 * At shutdown: cancel running and queued prompts; other queued requests
 * still run (rpc_session_idle), and sessions are freed at teardown.  The
 * --agent-acp agent is ended (its turns fail when it goes).
 */
void
rpc_shutdown_sessions(struct child *c)
{
	struct session *s;

	RB_FOREACH(s, session_tree, &c->sessions)
		prompt_cancel(c, s, 1);
	(void)delegate_shutdown(c);
}
