/*
 * delegate.c: the ACP agent (--agent-acp 'CMD ARGS') that answers this
 * child's prompts.
 *
 * One agent process per child, started through libpipeline on the first
 * prompt (never at load: loads stay ours and fast), initialized with a
 * private-parent secret of our own, then each session is resumed there
 * once (its writer lease released first, so that the agent can write).
 * A session's prompt is forwarded with a fresh id; the agent's
 * session/update notifications go to our parent unchanged, its
 * session/request_permission requests too (as our requests, whose
 * answers we hand back), and its answer ends the turn.  Until the agent
 * is ready the session's subscribers see a session_info_update saying so.
 * An agent that exits fails the turns it held (errorKind agent_failed)
 * and is started again by the next prompt.
 */
#include "config.h"

#include <sys/pidfd.h>
#include <sys/queue.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <pipeline.h>

#include "agent.h"
#include "append.h"
#include "base64.h"
#include "child.h"
#include "delegate.h"
#include "lease.h"
#include "log.h"

enum call_kind { CALL_INIT, CALL_RESUME, CALL_PROMPT, CALL_PERMISSION };

/* A request in flight: ours to the agent, or the agent's to our parent. */
struct call {
	TAILQ_ENTRY(call)	 entry;
	enum call_kind		 kind;
	int64_t			 id;		/* ours (to the agent, or to the parent) */
	json_object		*peer_id;	/* parent's prompt id / agent's request id */
	json_object		*params;	/* CALL_RESUME: the prompt to send next */
	char			 sid[37];
};

struct delegate {
	enum { D_DOWN, D_STARTING, D_READY } state;
	pipeline		*pl;
	pid_t			 pid;
	int			 pidfd;
	struct bufferevent	*in, *out;
	struct event		*ev_exit;
	struct rpc_reader	*rd;
	int64_t			 next_id;
	TAILQ_HEAD(, call)	 calls;
	TAILQ_HEAD(, call)	 waiting;	/* prompts until the agent is ready */
	char			 secret[48];
};

static struct delegate dlg = {
	.calls = TAILQ_HEAD_INITIALIZER(dlg.calls),
	.waiting = TAILQ_HEAD_INITIALIZER(dlg.waiting),
	.pidfd = -1,
};

static void	dlg_send_prompt(struct child *, struct session *, json_object *pid,
		    json_object *params);

static void
call_free(struct call *k)
{
	json_object_put(k->peer_id);
	json_object_put(k->params);
	free(k);
}

static struct call *
call_new(enum call_kind kind, const char *sid, json_object *peer_id,
    json_object *params)
{
	struct call *k;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	k->kind = kind;
	k->id = ++dlg.next_id;
	if (sid != NULL)
		strlcpy(k->sid, sid, sizeof(k->sid));
	if (peer_id != NULL)
		json_object_deep_copy(peer_id, &k->peer_id, NULL);
	if (params != NULL)
		json_object_deep_copy(params, &k->params, NULL);
	return k;
}

/* Write one message to the agent (takes msg). */
static void
dlg_write(json_object *msg)
{
	size_t len;
	char *line;

	if (dlg.in != NULL && (line = rpc_encode(msg, &len)) != NULL) {
		bufferevent_write(dlg.in, line, len);
		free(line);
	}
	json_object_put(msg);
}

/* Send a request to the agent and remember it. */
static void
dlg_call(struct call *k, const char *method, json_object *params)
{
	TAILQ_INSERT_TAIL(&dlg.calls, k, entry);
	dlg_write(rpc_new_request(json_object_new_int64(k->id), method, params));
}

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

/* Fail the parent's prompt with a classified error and end the turn. */
static void
fail_turn(struct child *c, const char *sid, json_object *pid, const char *msg)
{
	child_send_error(c, pid, RPC_INTERNAL_ERROR, msg, child_error_data("agent_failed"));
	turn_over(c, sid);
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

/* ---- the agent's process ------------------------------------------------ */

static void	dlg_on_read(struct bufferevent *, void *);
static void	dlg_on_event(struct bufferevent *, short, void *);
static void	dlg_on_exit(evutil_socket_t, short, void *);

static struct bufferevent *
dlg_wrap(struct child *c, int fd, int reading)
{
	struct bufferevent *b;

	evutil_make_socket_nonblocking(fd);
	if ((b = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		close(fd);
		return NULL;
	}
	bufferevent_setcb(b, reading ? dlg_on_read : NULL, NULL, dlg_on_event, c);
	bufferevent_enable(b, reading ? EV_READ : EV_WRITE);
	return b;
}

/* The command: the argv, our secret, the data directory as QWEN_HOME. */
static pipecmd *
dlg_command(struct child *c)
{
	pipecmd *cmd = pipecmd_new(c->opts.agent_acp[0]);
	unsigned char raw[32];

	for (char **a = c->opts.agent_acp + 1; *a != NULL; a++)
		pipecmd_arg(cmd, *a);
	arc4random_buf(raw, sizeof(raw));
	base64_encode(BASE64_URL, raw, sizeof(raw), dlg.secret, sizeof(dlg.secret));
	pipecmd_chdir(cmd, c->opts.workspace);
	pipecmd_unsetenv(cmd, "QWEN_ACP_PARENT_CAPABILITY");
	pipecmd_setenv(cmd, "QWEN_CODE_PRIVATE_ACP_CAPABILITY", dlg.secret);
	pipecmd_setenv(cmd, "QWEN_CODE_NO_RELAUNCH", "true");
	pipecmd_setenv(cmd, "QWEN_HOME", c->opts.data_dir);
	pipecmd_pre_exec(cmd, agent_pre_exec, NULL, NULL);
	return cmd;
}

/* Start the agent and send initialize; -1 when it cannot run at all. */
static int
dlg_start(struct child *c)
{
	int in[2], out[2];
	sigset_t block, saved;
	struct call *k;

	if (pipe2(in, O_CLOEXEC) == -1)
		return -1;
	if (pipe2(out, O_CLOEXEC) == -1) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	dlg.pl = pipeline_new_commands(dlg_command(c), (void *)NULL);
	pipeline_want_in(dlg.pl, in[0]);
	pipeline_want_out(dlg.pl, out[1]);
	pipeline_ignore_signals(dlg.pl, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &saved);
	pipeline_start(dlg.pl);		/* closes in[0] and out[1] */
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	dlg.pid = pipeline_get_pid(dlg.pl, 0);
	dlg.pidfd = pidfd_open(dlg.pid, 0);
	dlg.in = dlg_wrap(c, in[1], 0);
	dlg.out = dlg_wrap(c, out[0], 1);
	dlg.rd = rpc_reader_new(c->opts.max_frame);
	dlg.ev_exit = dlg.pidfd != -1 ?
	    event_new(c->base, dlg.pidfd, EV_READ, dlg_on_exit, c) : NULL;
	if (dlg.in == NULL || dlg.out == NULL || dlg.rd == NULL || dlg.ev_exit == NULL) {
		log_warnx("agent %ld: cannot watch it", (long)dlg.pid);
		kill(dlg.pid, SIGKILL);
	}
	if (dlg.ev_exit != NULL)
		event_add(dlg.ev_exit, NULL);
	dlg.state = D_STARTING;
	log_info("agent %ld started (%s)", (long)dlg.pid, c->opts.agent_acp[0]);
	if ((k = call_new(CALL_INIT, NULL, NULL, NULL)) != NULL)
		dlg_call(k, "initialize", rpc_acp_initialize_params("qwen-acp-child",
		    PACKAGE_VERSION, dlg.secret));
	return 0;
}

/* ---- sessions at the agent ---------------------------------------------- */

/*
 * Resume s at the agent (releasing our writer lease), then prompt.  A
 * session with no transcript yet (session/new, nothing said) cannot be
 * resumed: the agent creates it under our id instead.
 */
static void
dlg_resume(struct child *c, struct session *s, json_object *pid, json_object *params)
{
	json_object *p = json_object_new_object(), *meta;
	int exists = s->path != NULL && access(s->path, F_OK) == 0;
	struct call *k;

	if ((k = call_new(CALL_RESUME, s->id, pid, params)) == NULL) {
		json_object_put(p);
		fail_turn(c, s->id, pid, "out of memory");
		return;
	}
	/* The agent takes the writer lease; we write nothing meanwhile. */
	appender_free(s->app);
	s->app = NULL;
	lease_release(s->lease);
	s->lease = NULL;
	json_object_object_add(p, "sessionId", json_object_new_string(s->id));
	json_object_object_add(p, "cwd", json_object_new_string(s->cwd != NULL ?
	    s->cwd : c->opts.workspace));
	json_object_object_add(p, "mcpServers", json_object_new_array());
	if (!exists) {
		meta = json_object_new_object();
		json_object_object_add(meta, "qwen-code/sessionId", json_object_new_string(s->id));
		json_object_object_add(p, "_meta", meta);
	}
	log_info("session %s: %s it at the agent", s->id, exists ? "resuming" : "creating");
	dlg_call(k, exists ? "session/resume" : "session/new", p);
}

static void
dlg_send_prompt(struct child *c, struct session *s, json_object *pid,
    json_object *params)
{
	struct call *k;

	(void)c;
	if ((k = call_new(CALL_PROMPT, s->id, pid, NULL)) == NULL) {
		fail_turn(c, s->id, pid, "out of memory");
		return;
	}
	dlg_call(k, "session/prompt", json_object_get(params));
}

/* The agent is ready (or gone): run or fail the prompts that waited. */
static void
dlg_release_waiting(struct child *c, int ready)
{
	struct session *s;
	struct call *k;

	while ((k = TAILQ_FIRST(&dlg.waiting)) != NULL) {
		TAILQ_REMOVE(&dlg.waiting, k, entry);
		s = session_find(&c->sessions, k->sid);
		if (s == NULL)
			;
		else if (!ready)
			fail_turn(c, k->sid, k->peer_id, "the agent could not be started");
		else if (s->delegated)
			dlg_send_prompt(c, s, k->peer_id, k->params);
		else
			dlg_resume(c, s, k->peer_id, k->params);
		call_free(k);
	}
}

void
delegate_prompt(struct child *c, struct rpc_msg *m, struct session *s)
{
	struct call *k;

	s->busy = 1;
	if (dlg.state == D_READY) {
		if (s->delegated)
			dlg_send_prompt(c, s, m->id, m->params);
		else
			dlg_resume(c, s, m->id, m->params);
		return;
	}
	if ((k = call_new(CALL_PROMPT, s->id, m->id, m->params)) == NULL) {
		fail_turn(c, s->id, m->id, "out of memory");
		return;
	}
	TAILQ_INSERT_TAIL(&dlg.waiting, k, entry);
	tell_state(c, s->id, "starting");
	if (dlg.state == D_DOWN && dlg_start(c) == -1)
		dlg_release_waiting(c, 0);
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
		call_free(k);
		turn_over(c, s->id);
	}
	(void)queued;
	if (s->delegated && dlg.state == D_READY) {
		p = json_object_new_object();
		json_object_object_add(p, "sessionId", json_object_new_string(s->id));
		dlg_write(rpc_new_notification("session/cancel", p));
	}
}

void
delegate_session_gone(struct child *c, struct session *s)
{
	json_object *p;

	(void)c;
	if (!s->delegated || dlg.state != D_READY)
		return;
	p = json_object_new_object();
	json_object_object_add(p, "sessionId", json_object_new_string(s->id));
	dlg_write(rpc_new_request(json_object_new_int64(++dlg.next_id),
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
dlg_answer(struct child *c, struct rpc_msg *m)
{
	struct session *s;
	struct call *k;
	json_object *msg;

	if (!json_object_is_type(m->id, json_type_int) ||
	    (k = take_call(json_object_get_int64(m->id), CALL_PERMISSION)) == NULL)
		return;
	s = k->sid[0] ? session_find(&c->sessions, k->sid) : NULL;
	switch (k->kind) {
	case CALL_INIT:
		dlg.state = m->kind == RPC_RESULT ? D_READY : D_STARTING;
		log_info("agent %ld: initialize %s", (long)dlg.pid,
		    m->kind == RPC_RESULT ? "done" : "refused");
		if (m->kind == RPC_RESULT)
			dlg_release_waiting(c, 1);
		else
			kill(-dlg.pid, SIGTERM);
		break;
	case CALL_RESUME:
		if (s == NULL)
			break;
		if (m->kind == RPC_RESULT) {
			s->delegated = 1;
			tell_state(c, s->id, "ready");
			dlg_send_prompt(c, s, k->peer_id, k->params);
		} else {
			msg = json_object_object_get(m->error, "message");
			fail_turn(c, s->id, k->peer_id, msg != NULL ?
			    json_object_get_string(msg) : "the agent cannot resume the session");
		}
		break;
	case CALL_PROMPT:
		if (m->kind == RPC_RESULT)
			child_send_result(c, k->peer_id, json_object_get(m->result));
		else
			child_send(c, rpc_new_error_obj(json_object_get(k->peer_id), m->error));
		turn_over(c, k->sid);
		break;
	case CALL_PERMISSION:
		break;
	}
	call_free(k);
}

/* The agent asks for a permission: ask our parent, remember the way back. */
static void
dlg_ask_parent(struct child *c, struct rpc_msg *m)
{
	struct call *k;

	if ((k = call_new(CALL_PERMISSION, NULL, m->id, NULL)) == NULL) {
		dlg_write(rpc_new_error(json_object_get(m->id), RPC_INTERNAL_ERROR,
		    "out of memory", NULL));
		return;
	}
	TAILQ_INSERT_TAIL(&dlg.calls, k, entry);
	/* A string id: never one of the numbers our parent uses. */
	char id[40];
	snprintf(id, sizeof(id), "agent-%lld", (long long)k->id);
	child_send(c, rpc_new_request(json_object_new_string(id),
	    "session/request_permission", json_object_get(m->params)));
}

void
delegate_parent_answer(struct child *c, struct rpc_msg *m)
{
	struct call *k = NULL, *t;
	const char *id;

	(void)c;
	if (!json_object_is_type(m->id, json_type_string) ||
	    strncmp(id = json_object_get_string(m->id), "agent-", 6) != 0)
		return;
	TAILQ_FOREACH(t, &dlg.calls, entry)
		if (t->kind == CALL_PERMISSION && t->id == strtoll(id + 6, NULL, 10)) {
			k = t;
			break;
		}
	if (k == NULL)
		return;
	TAILQ_REMOVE(&dlg.calls, k, entry);
	if (m->kind == RPC_RESULT)
		dlg_write(rpc_new_result(json_object_get(k->peer_id), json_object_get(m->result)));
	else
		dlg_write(rpc_new_error_obj(json_object_get(k->peer_id), m->error));
	call_free(k);
}

static void
dlg_message(struct child *c, struct rpc_msg *m)
{
	switch (m->kind) {
	case RPC_NOTIFICATION:
		if (strcmp(m->method, "session/update") == 0 && m->params != NULL)
			child_send(c, rpc_new_notification("session/update",
			    json_object_get(m->params)));
		break;
	case RPC_REQUEST:
		if (strcmp(m->method, "session/request_permission") == 0)
			dlg_ask_parent(c, m);
		else
			dlg_write(rpc_new_error(json_object_get(m->id), RPC_METHOD_NOT_FOUND,
			    "Method not found", NULL));
		break;
	case RPC_RESULT:
	case RPC_ERROR:
		dlg_answer(c, m);
		break;
	}
}

static void
dlg_on_read(struct bufferevent *b, void *arg)
{
	struct child *c = arg;
	struct evbuffer *in = bufferevent_get_input(b);
	struct rpc_msg m;
	struct rpc_bad bad;
	enum rpc_read_status st;
	size_t n;

	while ((n = evbuffer_get_length(in)) > 0) {
		size_t take = n > 65536 ? 65536 : n;
		unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)take);
		if (rpc_reader_feed(dlg.rd, p, take) == -1)
			break;
		evbuffer_drain(in, take);
	}
	while ((st = rpc_reader_next(dlg.rd, &m, &bad)) != RPC_READ_MORE) {
		if (st == RPC_READ_BAD) {
			log_warnx("agent %ld: bad frame: %s", (long)dlg.pid, bad.message);
			rpc_bad_clear(&bad);
			continue;
		}
		dlg_message(c, &m);
		rpc_msg_clear(&m);
	}
}

static void
dlg_on_event(struct bufferevent *b, short what, void *arg)
{
	(void)arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		bufferevent_disable(b, EV_READ | EV_WRITE);
}

/* The agent exited: fail what it held; the next prompt starts another. */
static void
dlg_on_exit(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;
	struct session *s;
	struct call *k;
	int status;

	(void)fd; (void)what;
	if (dlg.out != NULL)
		dlg_on_read(dlg.out, c);	/* what it wrote before it went */
	status = pipeline_wait(dlg.pl);
	log_warnx("agent %ld exited (status %d)", (long)dlg.pid, status);
	pipeline_free(dlg.pl);
	dlg.pl = NULL;
	event_free(dlg.ev_exit);
	dlg.ev_exit = NULL;
	close(dlg.pidfd);
	dlg.pidfd = -1;
	bufferevent_free(dlg.in);
	bufferevent_free(dlg.out);
	dlg.in = dlg.out = NULL;
	rpc_reader_free(dlg.rd);
	dlg.rd = NULL;
	dlg.pid = 0;
	dlg.state = D_DOWN;
	RB_FOREACH(s, session_tree, &c->sessions)
		s->delegated = 0;
	while ((k = TAILQ_FIRST(&dlg.calls)) != NULL) {
		TAILQ_REMOVE(&dlg.calls, k, entry);
		if (k->kind == CALL_PROMPT || k->kind == CALL_RESUME)
			fail_turn(c, k->sid, k->peer_id, "the agent exited during the turn");
		call_free(k);
	}
	dlg_release_waiting(c, 0);
	child_check_done(c);
}

int
delegate_shutdown(struct child *c)
{
	(void)c;
	if (dlg.pid <= 0)
		return 0;
	if (dlg.in != NULL) {
		bufferevent_free(dlg.in);	/* EOF on its stdin */
		dlg.in = NULL;
	}
	if (kill(-dlg.pid, SIGTERM) == -1)
		kill(dlg.pid, SIGTERM);
	return 1;
}
