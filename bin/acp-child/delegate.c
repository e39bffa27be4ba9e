/* SPDX-License-Identifier: ISC */
/*
 * delegate.c: the sessions and turns at the ACP agent (--agent-acp
 * 'CMD ARGS') that answers this child's prompts.
 *
 * One agent process per child, initialized with a private-parent secret
 * of our own, then each session is resumed there once: from a compact
 * transcript whose new records come back to the real one under our lease
 * (agent_view(); compact.c, mirror.c), or from the real transcript, our
 * writer lease released first so that the agent can write.  With --agent-prestart
 * (the default) the agent starts with the child, and each session is
 * resumed there in the background once its load or resume has been
 * answered (never before: loads stay ours and fast), so that the first
 * prompt finds the agent and the session ready; a prompt that comes
 * before waits for them.  Without it the agent starts on the first
 * prompt and the session is resumed then.
 * A session's prompt is forwarded with a fresh id; the agent's
 * session/update notifications go to our parent unchanged, its
 * session/request_permission requests too (as our requests, whose
 * answers we hand back), and its answer ends the turn.  Until the agent
 * is ready the session's subscribers see a session_info_update saying so.
 * An agent that exits fails the turns it held (errorKind agent_failed)
 * and is started again after a backoff (1 s, doubling to 30 s while it
 * keeps dying young): at once with --agent-prestart, else by the first
 * prompt after it.  The process and the wire are delegate-proc.c's.
 */
#include "config.h"

#include <sys/queue.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "append.h"
#include "child.h"
#include "clock.h"
#include "compact.h"
#include "delegate.h"
#include "delegate-int.h"
#include "json.h"
#include "lease.h"
#include "log.h"
#include "paths.h"
#include "xmalloc.h"

/* The turn of the session ends: let its queue run. */
static void
turn_over(struct child *c, const char *sid)
{
	struct session *s = session_find(&c->sessions, sid);

	if (s == NULL)
		return;
	s->busy = 0;
	child_session_idle(c, s);
}

/*
 * Fail the parent's prompt with a classified error and end the turn; a
 * cause from agent_start()'s family (a failed fork) classifies itself.
 */
static void
fail_turn_cause(struct child *c, const char *sid, json_object *pid,
    const char *msg, const char *cause)
{
	child_send_error(c, pid, RPC_INTERNAL_ERROR, cause != NULL ? cause : msg,
	    prompt_agent_error_data(cause));
	turn_over(c, sid);
}

static void
fail_turn(struct child *c, const char *sid, json_object *pid, const char *msg)
{
	fail_turn_cause(c, sid, pid, msg, NULL);
}

/* session/update {sessionUpdate:"session_info_update", _meta: state}. */
static void
tell_state(struct child *c, const char *sid, const char *state)
{
	json_object *p = json_object_new_object(), *u = json_object_new_object();
	json_object *meta = json_object_new_object(), *d = json_object_new_object();

	json_object_object_add(d, "state", json_object_new_string(state));
	json_object_object_add(meta, "qwen.delegate", d);
	json_object_object_add(u, "sessionUpdate", json_object_new_string("session_info_update"));
	json_object_object_add(u, "_meta", meta);
	json_object_object_add(p, "sessionId", json_object_new_string(sid));
	json_object_object_add(p, "update", u);
	child_send(c, rpc_new_notification("session/update", p));
}

/* ---- sessions at the agent ---------------------------------------------- */

/* Our lease and appender on s, for the copy back.  0, or -1 (logged). */
static int
hold_writer(struct child *c, struct session *s, int exists)
{
	char *cause = NULL;

	if (s->lease == NULL && lease_acquire(c->opts.data_dir, s->id,
	    c->owner_id, &s->lease, &cause) != LEASE_OK) {
		log_warnx("session %s: no writer lease for the agent's records: %s",
		    s->id, cause != NULL ? cause : "?");
		free(cause);
		return -1;
	}
	if (s->app == NULL &&
	    (s->app = appender_new(s->path, c->opts.do_fsync, !exists)) == NULL)
		return -1;
	return 0;
}

/* The agent writes s's real transcript itself: no lease, no appender of
   ours; with a runtime directory the real file is linked in there. */
static void
view_direct(struct session *s)
{
	char *cause = NULL;

	mirror_stop(s->mirror);
	s->mirror = NULL;
	s->compact = 0;
	appender_free(s->app);
	s->app = NULL;
	lease_release(s->lease);
	s->lease = NULL;
	if (s->agent_path != NULL &&
	    compact_link_real(s->path, s->agent_path, &cause) == -1) {
		log_warnx("session %s: %s", s->id, cause != NULL ? cause : "?");
		free(cause);
	}
}

/*
 * What the agent resumes s from: a compact transcript in its runtime
 * directory, what it appends there copied back under our lease; else
 * (no runtime directory, no index at hand, refused once, an error) the
 * real transcript.
 */
static void
agent_view(struct child *c, struct session *s, int exists)
{
	struct compact_stats st = { 0 };
	char *cause = NULL;
	uint64_t t0 = clock_mono_ms();
	int rc = -1;

	if (dlg.rtdir == NULL) {
		view_direct(s);
		return;
	}
	if (s->agent_path == NULL)
		s->agent_path = paths_transcript(dlg.rtdir, s->cwd != NULL ?
		    s->cwd : c->opts.workspace, s->id);
	mirror_stop(s->mirror);
	s->mirror = NULL;
	if ((s->compact_refused && exists) || (exists && s->tx == NULL) ||
	    hold_writer(c, s, exists) == -1) {
		view_direct(s);
		return;
	}
	if (!exists)
		rc = compact_link_real(s->path, s->agent_path, &cause);
	else
		rc = compact_write(s->tx, s->agent_path, &st, &cause);
	if (rc == 0 && (s->mirror = mirror_start(c->base, s->agent_path, s->id,
	    s->app, st.bytes, &cause)) != NULL) {
		s->compact = 1;
		if (exists)
			log_info("session %s: the agent resumes a compact transcript "
			    "(%llu of %llu bytes; %llu records kept from before the "
			    "checkpoint, %llu from it on; %llu ms)", s->id,
			    (unsigned long long)st.bytes, (unsigned long long)st.source,
			    (unsigned long long)st.before, (unsigned long long)st.after,
			    (unsigned long long)(clock_mono_ms() - t0));
		return;
	}
	log_warnx("session %s: no compact transcript: %s", s->id,
	    cause != NULL ? cause : "?");
	free(cause);
	view_direct(s);
}

/*
 * Resume s at the agent (from agent_view()'s transcript), then prompt.
 * A session with no transcript yet (session/new, nothing said) cannot be
 * resumed: the agent creates it under our id instead.  An agent that
 * offers session/load and not session/resume is asked to load it (the
 * history it replays is dropped: our parent has it from us).
 */
static void
resume_send(struct child *c, struct session *s, struct call *k)
{
	json_object *p = json_object_new_object(), *meta;
	int exists = s->path != NULL && access(s->path, F_OK) == 0;

	agent_view(c, s, exists);
	json_object_object_add(p, "sessionId", json_object_new_string(s->id));
	json_object_object_add(p, "cwd", json_object_new_string(s->cwd != NULL ?
	    s->cwd : c->opts.workspace));
	json_object_object_add(p, "mcpServers", json_object_new_array());
	if (!exists) {
		meta = json_object_new_object();
		json_object_object_add(meta, "qwen-code/sessionId", json_object_new_string(s->id));
		json_object_object_add(p, "_meta", meta);
	}
	log_info("session %s: %s it at the agent%s", s->id, exists ? "resuming" :
	    "creating", k->peer_id == NULL ? " (in the background)" : "");
	s->warming = 1;
	k->loading = exists && dlg.load_only;
	delegate_call(k, !exists ? "session/new" : k->loading ? "session/load" :
	    "session/resume", p);
}

/* Whether the agent is replaying sid's history to us (a session/load). */
static int
delegate_loading(const char *sid)
{
	struct call *k;

	TAILQ_FOREACH(k, &dlg.calls, entry)
		if (k->kind == CALL_RESUME && k->loading && sid != NULL &&
		    strcmp(k->sid, sid) == 0)
			return 1;
	return 0;
}

/*
 * How the agent restores a session, from what initialize says it offers:
 * session/resume (sessionCapabilities.resume) when it does, else
 * session/load when loadSession is true, else resume all the same.
 */
static void
delegate_capabilities(json_object *result)
{
	json_object *caps = json_get_obj(result, "agentCapabilities"), *v;

	dlg.load_only = json_get_obj(json_get_obj(caps, "sessionCapabilities"),
	    "resume") == NULL && json_object_object_get_ex(caps, "loadSession", &v) &&
	    json_object_get_boolean(v);
}

/*
 * An agent's JSON-RPC error for the log: its code and errorKind, never
 * its message, which may quote the prompt or the transcript.
 */
static void
error_brief(json_object *error, char *buf, size_t size)
{
	json_object *code, *data, *kind;
	const char *k = NULL;

	code = json_object_object_get(error, "code");
	data = json_object_object_get(error, "data");
	kind = data != NULL ? json_object_object_get(data, "errorKind") : NULL;
	if (kind != NULL && json_object_is_type(kind, json_type_string) &&
	    strlen(json_object_get_string(kind)) < 64)
		k = json_object_get_string(kind);
	snprintf(buf, size, "code %d%s%s", code != NULL ?
	    json_object_get_int(code) : 0, k != NULL ? ", " : "", k != NULL ? k : "");
}

/*
 * The agent refused to resume s from its compact transcript: say why
 * (the code and kind, never the text), and resume the real one instead.
 * 1 when the resume was sent again.
 */
static int
compact_refused(struct child *c, struct session *s, struct call *k,
    struct rpc_msg *m)
{
	struct call *again;
	char why[96];

	if (!s->compact || access(s->path, F_OK) == -1)
		return 0;
	error_brief(m->error, why, sizeof(why));
	log_warnx("session %s: the agent refused its compact transcript (%s); "
	    "resuming the real one", s->id, why);
	s->compact_refused = 1;
	if ((again = delegate_call_new(CALL_RESUME, s->id, k->peer_id, k->params)) == NULL)
		return 0;
	resume_send(c, s, again);
	return 1;
}

static void
delegate_resume(struct child *c, struct session *s, json_object *pid, json_object *params)
{
	struct call *k;

	if ((k = delegate_call_new(CALL_RESUME, s->id, pid, params)) == NULL) {
		fail_turn(c, s->id, pid, "out of memory");
		return;
	}
	resume_send(c, s, k);
}

/* A background resume of s, answered to nobody: the next prompt's head start. */
static void
delegate_warm(struct child *c, struct session *s)
{
	struct call *k;

	if (s->delegated || s->warming || !s->registered || c->closing)
		return;
	/* The index is being kept: its compact transcript once it is back. */
	if (dlg.rtdir != NULL && s->tx == NULL && !s->compact_refused) {
		s->warm_later = 1;
		return;
	}
	if ((k = delegate_call_new(CALL_RESUME, s->id, NULL, NULL)) == NULL)
		return;
	resume_send(c, s, k);
}

static void
delegate_send_prompt(struct child *c, struct session *s, json_object *pid,
    json_object *params)
{
	struct call *k;

	(void)c;
	if ((k = delegate_call_new(CALL_PROMPT, s->id, pid, NULL)) == NULL) {
		fail_turn(c, s->id, pid, "out of memory");
		return;
	}
	delegate_call(k, "session/prompt", json_object_get(params));
}

/*
 * The agent is ready (or gone): run or fail the prompts that waited;
 * cause says why it could not be started, when it is known.
 */
void
delegate_release_waiting(struct child *c, int ready, const char *cause)
{
	struct session *s;
	struct call *k;
	TAILQ_HEAD(, call) later = TAILQ_HEAD_INITIALIZER(later);

	if (ready && c->opts.agent_prestart)
		RB_FOREACH(s, session_tree, &c->sessions)
			delegate_warm(c, s);
	while ((k = TAILQ_FIRST(&dlg.waiting)) != NULL) {
		TAILQ_REMOVE(&dlg.waiting, k, entry);
		s = session_find(&c->sessions, k->sid);
		if (s == NULL)
			;
		else if (ready && s->warming) {
			TAILQ_INSERT_TAIL(&later, k, entry);	/* its resume answers first */
			continue;
		} else if (!ready)
			fail_turn_cause(c, k->sid, k->peer_id,
			    "the agent could not be started", cause);
		else if (s->delegated)
			delegate_send_prompt(c, s, k->peer_id, k->params);
		else
			delegate_resume(c, s, k->peer_id, k->params);
		delegate_call_free(k);
	}
	TAILQ_CONCAT(&dlg.waiting, &later, entry);
}

/* s's background resume answered (ok or not): run the prompts it held. */
static void
delegate_release_session(struct child *c, struct session *s)
{
	struct call *k, *next;

	TAILQ_FOREACH_SAFE(k, &dlg.waiting, entry, next) {
		if (strcmp(k->sid, s->id) != 0)
			continue;
		TAILQ_REMOVE(&dlg.waiting, k, entry);
		if (s->delegated) {
			tell_state(c, s->id, "ready");
			delegate_send_prompt(c, s, k->peer_id, k->params);
		} else
			delegate_resume(c, s, k->peer_id, k->params);
		delegate_call_free(k);
	}
}

void
delegate_session_ready(struct child *c, struct session *s)
{
	if (c->opts.agent_acp == NULL || !c->opts.agent_prestart)
		return;
	if (dlg.state == D_READY)
		delegate_warm(c, s);
	else if (dlg.state == D_DOWN)
		delegate_restart(c);		/* warmed once it is ready */
}

void
delegate_index_back(struct child *c, struct session *s)
{
	if (!s->warm_later)
		return;
	s->warm_later = 0;
	delegate_session_ready(c, s);
}

void
delegate_prestart(struct child *c)
{
	if (c->opts.agent_acp != NULL && c->opts.agent_prestart)
		delegate_restart(c);
}

void
delegate_prompt(struct child *c, struct rpc_msg *m, struct session *s)
{
	struct call *k;
	char *cause = NULL;

	s->busy = 1;
	if (dlg.state == D_READY && !s->warming) {
		if (s->delegated)
			delegate_send_prompt(c, s, m->id, m->params);
		else
			delegate_resume(c, s, m->id, m->params);
		return;
	}
	if ((k = delegate_call_new(CALL_PROMPT, s->id, m->id, m->params)) == NULL) {
		fail_turn(c, s->id, m->id, "out of memory");
		return;
	}
	TAILQ_INSERT_TAIL(&dlg.waiting, k, entry);
	tell_state(c, s->id, "starting");
	/* An agent that died recently starts when its backoff is over. */
	if (dlg.state == D_DOWN && !delegate_backing_off() && delegate_start(c, &cause) == -1) {
		delegate_release_waiting(c, 0, cause);
		free(cause);
	}
}

void
delegate_cancel(struct child *c, struct session *s, int queued)
{
	struct call *k, *next;
	json_object *p, *r;

	TAILQ_FOREACH_SAFE(k, &dlg.waiting, entry, next) {
		if (strcmp(k->sid, s->id) != 0)
			continue;
		TAILQ_REMOVE(&dlg.waiting, k, entry);
		r = json_object_new_object();
		json_object_object_add(r, "stopReason", json_object_new_string("cancelled"));
		child_send_result(c, k->peer_id, r);
		delegate_call_free(k);
		turn_over(c, s->id);
	}
	(void)queued;
	if (s->delegated && dlg.state == D_READY) {
		p = json_object_new_object();
		json_object_object_add(p, "sessionId", json_object_new_string(s->id));
		delegate_write(rpc_new_notification("session/cancel", p));
	}
}

void
delegate_session_gone(struct child *c, struct session *s)
{
	json_object *p;

	(void)c;
	mirror_stop(s->mirror);
	s->mirror = NULL;
	/* A background resume still on its way is closed after it. */
	if (!(s->delegated || s->warming) || dlg.state != D_READY)
		return;
	p = json_object_new_object();
	json_object_object_add(p, "sessionId", json_object_new_string(s->id));
	delegate_write(rpc_new_request(json_object_new_int64(++dlg.next_id),
	    "qwen/control/session/close", p));
}

/* ---- messages from the agent -------------------------------------------- */

static struct call *
take_call(int64_t id, enum call_kind not_kind)
{
	struct call *k;

	TAILQ_FOREACH(k, &dlg.calls, entry)
		if (k->id == id && k->kind != not_kind) {
			TAILQ_REMOVE(&dlg.calls, k, entry);
			return k;
		}
	return NULL;
}

/* An answer to one of our requests. */
static void
delegate_answer(struct child *c, struct rpc_msg *m)
{
	struct session *s;
	struct call *k;
	json_object *msg;
	char why[96];

	if (!json_object_is_type(m->id, json_type_int) ||
	    (k = take_call(json_object_get_int64(m->id), CALL_UP)) == NULL)
		return;
	s = k->sid[0] ? session_find(&c->sessions, k->sid) : NULL;
	switch (k->kind) {
	case CALL_INIT:
		dlg.state = m->kind == RPC_RESULT ? D_READY : D_STARTING;
		log_info("agent %ld: initialize %s", (long)dlg.pid,
		    m->kind == RPC_RESULT ? "done" : "refused");
		if (m->kind == RPC_RESULT) {
			delegate_capabilities(m->result);
			delegate_release_waiting(c, 1, NULL);
		} else
			kill(-dlg.pid, SIGTERM);
		break;
	case CALL_RESUME:
		if (s == NULL)
			break;
		if (m->kind != RPC_RESULT && compact_refused(c, s, k, m))
			break;
		log_info("session %s: the agent %s the %s transcript in %llu ms", s->id,
		    m->kind == RPC_RESULT ? "resumed" : "refused",
		    s->compact ? "compact" : "real",
		    (unsigned long long)(clock_mono_ms() - k->sent_ms));
		s->warming = 0;
		if (k->peer_id == NULL) {
			s->delegated = m->kind == RPC_RESULT;
			if (!s->delegated) {
				error_brief(m->error, why, sizeof(why));
				log_warnx("session %s: the agent refused the background "
				    "resume (%s)", s->id, why);
			}
			delegate_release_session(c, s);
		} else if (m->kind == RPC_RESULT) {
			s->delegated = 1;
			tell_state(c, s->id, "ready");
			delegate_send_prompt(c, s, k->peer_id, k->params);
		} else {
			msg = json_object_object_get(m->error, "message");
			fail_turn(c, s->id, k->peer_id, msg != NULL ?
			    json_object_get_string(msg) : "the agent cannot resume the session");
		}
		break;
	case CALL_PROMPT:
		if (s != NULL)
			mirror_drain(s->mirror);	/* what it wrote before it answered */
		if (m->kind == RPC_RESULT)
			child_send_result(c, k->peer_id, json_object_get(m->result));
		else
			child_send(c, rpc_new_error_obj(json_object_get(k->peer_id), m->error));
		turn_over(c, k->sid);
		break;
	case CALL_PASS:
		delegate_pass_answer(c, k, m);
		break;
	case CALL_UP:
		break;
	}
	delegate_call_free(k);
}

/* The agent asks what our parent answers (a permission, the admission of
   a turn of its own, a drain of the mid-turn queue): pass it up,
   remember the way back. */
static void
delegate_ask_parent(struct child *c, struct rpc_msg *m)
{
	struct call *k;

	/* A start_turn's params stay with it: the answer says whether its
	   turn runs (delegate-turns.c). */
	if ((k = delegate_call_new(CALL_UP, NULL, m->id,
	    strcmp(m->method, "_qwencode/start_turn") == 0 ? m->params : NULL)) == NULL) {
		delegate_write(rpc_new_error(json_object_get(m->id), RPC_INTERNAL_ERROR,
		    "out of memory", NULL));
		return;
	}
	TAILQ_INSERT_TAIL(&dlg.calls, k, entry);
	if (k->params != NULL)
		delegate_turns_asked(c, k->params);
	/* A string id: never one of the numbers our parent uses. */
	char id[40];
	snprintf(id, sizeof(id), "agent-%lld", (long long)k->id);
	child_send(c, rpc_new_request(json_object_new_string(id), m->method,
	    json_object_get(m->params)));
}

void
delegate_parent_answer(struct child *c, struct rpc_msg *m)
{
	struct call *k = NULL, *t;
	const char *id;

	if (!json_object_is_type(m->id, json_type_string) ||
	    strncmp(id = json_object_get_string(m->id), "agent-", 6) != 0)
		return;
	TAILQ_FOREACH(t, &dlg.calls, entry)
		if (t->kind == CALL_UP && t->id == strtoll(id + 6, NULL, 10)) {
			k = t;
			break;
		}
	if (k == NULL)
		return;
	TAILQ_REMOVE(&dlg.calls, k, entry);
	if (k->params != NULL)
		delegate_turns_answered(c, k->params,
		    m->kind == RPC_RESULT ? m->result : NULL);
	if (m->kind == RPC_RESULT)
		delegate_write(rpc_new_result(json_object_get(k->peer_id), json_object_get(m->result)));
	else
		delegate_write(rpc_new_error_obj(json_object_get(k->peer_id), m->error));
	delegate_call_free(k);
}

void
delegate_message(struct child *c, struct rpc_msg *m)
{
	switch (m->kind) {
	case RPC_NOTIFICATION:
		if (strcmp(m->method, "session/update") == 0 && m->params != NULL &&
		    !delegate_loading(json_get_str(m->params, "sessionId")))
			child_send(c, rpc_new_notification("session/update",
			    json_object_get(m->params)));
		/* A generation's events go to the daemon's stream as they are,
		   and what the agent says of the turns it starts itself. */
		else if ((strcmp(m->method, "qwen/notify/session/generation/event") == 0 ||
		    strcmp(m->method, "_qwencode/start_turn") == 0 ||
		    strcmp(m->method, "_qwencode/end_turn") == 0) &&
		    m->params != NULL) {
			delegate_turns_note(c, m->method, m->params);
			child_send(c, rpc_new_notification(m->method,
			    json_object_get(m->params)));
		}
		break;
	case RPC_REQUEST:
		if (strcmp(m->method, "session/request_permission") == 0 ||
		    strcmp(m->method, "_qwencode/start_turn") == 0 ||
		    strcmp(m->method, "craft/drainMidTurnQueue") == 0)
			delegate_ask_parent(c, m);
		else
			delegate_write(rpc_new_error(json_object_get(m->id), RPC_METHOD_NOT_FOUND,
			    "Method not found", NULL));
		break;
	case RPC_RESULT:
	case RPC_ERROR:
		delegate_answer(c, m);
		break;
	}
}

/* The agent is gone: its turns fail, its own turns end (delegate-turns.c);
   the next prompt starts another. */
void
delegate_gone(struct child *c)
{
	struct session *s;
	struct call *k;

	RB_FOREACH(s, session_tree, &c->sessions) {
		s->delegated = s->warming = 0;
		/* Its last whole records are copied; a torn line is not. */
		mirror_stop(s->mirror);
		s->mirror = NULL;
		s->compact = 0;
	}
	delegate_turns_end_all(c);
	while ((k = TAILQ_FIRST(&dlg.calls)) != NULL) {
		TAILQ_REMOVE(&dlg.calls, k, entry);
		if (k->kind == CALL_PROMPT || (k->kind == CALL_RESUME && k->peer_id != NULL))
			fail_turn(c, k->sid, k->peer_id, "the agent exited during the turn");
		else if (k->kind == CALL_PASS)
			delegate_pass_gone(c, k);
		delegate_call_free(k);
	}
	delegate_release_waiting(c, 0, NULL);
	if (!c->closing)
		delegate_schedule_restart(c);
	child_check_done(c);
}
