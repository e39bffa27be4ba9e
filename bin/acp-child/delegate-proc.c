/* SPDX-License-Identifier: ISC */
/*
 * delegate-proc.c: the --agent-acp agent's process and wire: a command
 * run by spawn_start() (exits watched with a pidfd), NDJSON JSON-RPC on its
 * stdin/stdout, our requests to it numbered and remembered.  What the
 * messages mean for the sessions is delegate.c's.
 */
#include "config.h"

#include <sys/pidfd.h>
#include <sys/prctl.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "agent.h"
#include "base64.h"
#include "child.h"
#include "clock.h"
#include "compact.h"
#include "delegate.h"
#include "delegate-int.h"
#include "log.h"
#include "spawn.h"

struct delegate dlg = {
	.calls = TAILQ_HEAD_INITIALIZER(dlg.calls),
	.waiting = TAILQ_HEAD_INITIALIZER(dlg.waiting),
	.pidfd = -1,
};

void
delegate_call_free(struct call *k)
{
	json_object_put(k->peer_id);
	json_object_put(k->params);
	free(k);
}

struct call *
delegate_call_new(enum call_kind kind, const char *sid, json_object *peer_id,
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

void
delegate_write(json_object *msg)
{
	size_t len;
	char *line;

	if (dlg.in != NULL && (line = rpc_encode(msg, &len)) != NULL) {
		bufferevent_write(dlg.in, line, len);
		free(line);
	}
	json_object_put(msg);
}

void
delegate_call(struct call *k, const char *method, json_object *params)
{
	TAILQ_INSERT_TAIL(&dlg.calls, k, entry);
	k->sent_ms = clock_mono_ms();
	delegate_write(rpc_new_request(json_object_new_int64(k->id), method, params));
}

/* ---- the agent's process ------------------------------------------------ */

static void	delegate_on_read(struct bufferevent *, void *);
static void	delegate_on_event(struct bufferevent *, short, void *);
static void	delegate_on_exit(evutil_socket_t, short, void *);

static struct bufferevent *
delegate_wrap(struct child *c, int fd, int reading)
{
	struct bufferevent *b;

	evutil_make_socket_nonblocking(fd);
	if ((b = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		close(fd);
		return NULL;
	}
	bufferevent_setcb(b, reading ? delegate_on_read : NULL, NULL, delegate_on_event, c);
	bufferevent_enable(b, reading ? EV_READ : EV_WRITE);
	return b;
}

/* Who started the agent: it dies with us (pre-exec, see below). */
static pid_t	delegate_parent;

/*
 * In the agent's fork: its own process group, and SIGKILL when this
 * child dies, so that a SIGKILLed child leaves no agent behind (a Node
 * agent that outlives it writes files after its owner is gone).  The
 * parent may have died before the prctl: then nobody would tell it.
 * Async-signal-safe.
 */
static void
delegate_pre_exec(void *arg)
{
	agent_pre_exec(arg);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 ||
	    getppid() != delegate_parent)
		_exit(127);
}

/* The command: the argv, our secret, the data directory as QWEN_HOME. */
static struct spawn_cmd *
delegate_command(struct child *c)
{
	struct spawn_cmd *cmd = spawn_cmd_new(c->opts.agent_acp[0]);
	unsigned char raw[32];
	char *cause = NULL;

	for (char **a = c->opts.agent_acp + 1; *a != NULL; a++)
		spawn_cmd_arg(cmd, *a);
	arc4random_buf(raw, sizeof(raw));
	base64_encode(BASE64_URL, raw, sizeof(raw), dlg.secret, sizeof(dlg.secret));
	spawn_cmd_chdir(cmd, c->opts.workspace);
	spawn_cmd_unsetenv(cmd, "QWEN_ACP_PARENT_CAPABILITY");
	spawn_cmd_setenv(cmd, "QWEN_CODE_PRIVATE_ACP_CAPABILITY", dlg.secret);
	spawn_cmd_setenv(cmd, "QWEN_CODE_NO_RELAUNCH", "true");
	spawn_cmd_setenv(cmd, "QWEN_HOME", c->opts.data_dir);
	if (c->opts.agent_compact && dlg.rtdir == NULL &&
	    (dlg.rtdir = compact_runtime_dir(c->opts.data_dir, &cause)) == NULL) {
		log_warnx("agent: no compact transcripts: %s", cause != NULL ? cause : "?");
		free(cause);
	}
	/* Its transcripts (and other runtime files) in our private directory. */
	if (dlg.rtdir != NULL)
		spawn_cmd_setenv(cmd, "QWEN_RUNTIME_DIR", dlg.rtdir);
	else
		spawn_cmd_unsetenv(cmd, "QWEN_RUNTIME_DIR");
	nodecache_env(c, cmd);
	delegate_parent = getpid();
	spawn_cmd_pre_exec(cmd, delegate_pre_exec, NULL);
	return cmd;
}

int
delegate_start(struct child *c, char **cause)
{
	int in[2], out[2];
	struct call *k;

	*cause = NULL;
	if (agent_pipes(in, out) == -1) {
		log_warn("agent: pipe");
		return -1;
	}
	/* Closes in[0] and out[1]; a failed fork fails the prompts, not us. */
	if ((dlg.pid = spawn_start(delegate_command(c), in[0], out[1], -1)) == -1) {
		log_warn("agent: cannot fork");
		if (asprintf(cause, "%s: %s", AGENT_FORK_FAILED, strerror(errno)) == -1)
			*cause = NULL;
		dlg.pid = 0;
		close(in[1]);
		close(out[0]);
		return -1;
	}
	dlg.pidfd = pidfd_open(dlg.pid, 0);
	dlg.in = delegate_wrap(c, in[1], 0);
	dlg.out = delegate_wrap(c, out[0], 1);
	dlg.rd = rpc_reader_new(c->opts.max_frame);
	dlg.ev_exit = dlg.pidfd != -1 ?
	    event_new(c->base, dlg.pidfd, EV_READ, delegate_on_exit, c) : NULL;
	if (dlg.in == NULL || dlg.out == NULL || dlg.rd == NULL || dlg.ev_exit == NULL) {
		log_warnx("agent %ld: cannot watch it", (long)dlg.pid);
		kill(dlg.pid, SIGKILL);
	}
	if (dlg.ev_exit != NULL)
		event_add(dlg.ev_exit, NULL);
	dlg.state = D_STARTING;
	dlg.started_ms = clock_mono_ms();
	log_info("agent %ld started (%s)", (long)dlg.pid, c->opts.agent_acp[0]);
	if ((k = delegate_call_new(CALL_INIT, NULL, NULL, NULL)) != NULL)
		delegate_call(k, "initialize", rpc_acp_initialize_params("qwen-acp-child",
		    PACKAGE_VERSION, dlg.secret));
	return 0;
}

static void
delegate_on_read(struct bufferevent *b, void *arg)
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
		delegate_message(c, &m);
		rpc_msg_clear(&m);
	}
}

static void
delegate_on_event(struct bufferevent *b, short what, void *arg)
{
	(void)arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		bufferevent_disable(b, EV_READ | EV_WRITE);
}

/* The agent exited: tear its process state down, then its sessions. */
static void
delegate_on_exit(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;
	int st, status = -1;

	(void)fd; (void)what;
	if (dlg.out != NULL)
		delegate_on_read(dlg.out, c);	/* what it wrote before it went */
	if (spawn_wait(dlg.pid, &st) == -1)
		log_warn("agent %ld: waitpid", (long)dlg.pid);
	else
		status = spawn_status(st);
	log_warnx("agent %ld exited (status %d)", (long)dlg.pid, status);
	event_free(dlg.ev_exit);
	dlg.ev_exit = NULL;
	if (dlg.kill_ev != NULL) {
		event_free(dlg.kill_ev);
		dlg.kill_ev = NULL;
	}
	close(dlg.pidfd);
	dlg.pidfd = -1;
	if (dlg.in != NULL)	/* closed already at shutdown */
		bufferevent_free(dlg.in);
	if (dlg.out != NULL)
		bufferevent_free(dlg.out);
	dlg.in = dlg.out = NULL;
	rpc_reader_free(dlg.rd);
	dlg.rd = NULL;
	dlg.pid = 0;
	dlg.state = D_DOWN;
	delegate_gone(c);
}

/* An agent that lived this long restarts after the shortest backoff. */
#define DELEGATE_BACKOFF_MIN_MS	1000
#define DELEGATE_BACKOFF_MAX_MS	30000
#define DELEGATE_LIVED_MS		60000
/* SIGTERM to SIGKILL at shutdown: within the daemon's grace for us. */
#define DELEGATE_KILL_GRACE_MS		1500

int
delegate_backing_off(void)
{
	return dlg.restart_ev != NULL && evtimer_pending(dlg.restart_ev, NULL);
}

void
delegate_restart(struct child *c)
{
	char *cause = NULL;

	if (dlg.state != D_DOWN || delegate_backing_off() || c->closing)
		return;
	if (delegate_start(c, &cause) == -1) {
		log_warnx("agent: cannot start it: %s", cause != NULL ? cause : "?");
		delegate_release_waiting(c, 0, cause);
		free(cause);
	}
}

static void
delegate_on_restart(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;

	(void)fd; (void)what;
	if (c->opts.agent_prestart || !TAILQ_EMPTY(&dlg.waiting))
		delegate_restart(c);
}

void
delegate_schedule_restart(struct child *c)
{
	struct timeval tv;

	if (clock_mono_ms() - dlg.started_ms >= DELEGATE_LIVED_MS || dlg.backoff_ms == 0)
		dlg.backoff_ms = DELEGATE_BACKOFF_MIN_MS;
	else if ((dlg.backoff_ms *= 2) > DELEGATE_BACKOFF_MAX_MS)
		dlg.backoff_ms = DELEGATE_BACKOFF_MAX_MS;
	if (dlg.restart_ev == NULL &&
	    (dlg.restart_ev = evtimer_new(c->base, delegate_on_restart, c)) == NULL)
		return;
	tv.tv_sec = dlg.backoff_ms / 1000;
	tv.tv_usec = (dlg.backoff_ms % 1000) * 1000;
	log_info("agent: starting it again in %ld ms", dlg.backoff_ms);
	evtimer_add(dlg.restart_ev, &tv);
}

/* Signal the agent's process group (the pid alone if the group is gone). */
static void
delegate_signal(int sig)
{
	if (kill(-dlg.pid, sig) == -1)
		kill(dlg.pid, sig);
}

/* The grace after SIGTERM is over and the agent is still there. */
static void
delegate_on_kill(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what; (void)arg;
	if (dlg.pid <= 0)
		return;
	log_warnx("agent %ld still runs %d ms after SIGTERM: killing it",
	    (long)dlg.pid, DELEGATE_KILL_GRACE_MS);
	delegate_signal(SIGKILL);
}

/*
 * An agent we cannot watch (no pidfd) is killed and reaped here and now;
 * SIGKILL cannot be ignored, so the wait is short.
 */
static void
delegate_kill_unwatched(void)
{
	int st;

	delegate_signal(SIGKILL);
	if (spawn_wait(dlg.pid, &st) == -1)
		log_warn("agent %ld: waitpid", (long)dlg.pid);
	dlg.pid = 0;
	dlg.state = D_DOWN;
}

int
delegate_shutdown(struct child *c)
{
	struct timeval tv = { DELEGATE_KILL_GRACE_MS / 1000,
	    (DELEGATE_KILL_GRACE_MS % 1000) * 1000 };

	if (dlg.restart_ev != NULL) {
		event_free(dlg.restart_ev);
		dlg.restart_ev = NULL;
	}
	if (dlg.pid <= 0 || dlg.kill_ev != NULL)
		return dlg.pid > 0;
	if (dlg.in != NULL) {
		bufferevent_free(dlg.in);	/* EOF on its stdin */
		dlg.in = NULL;
	}
	if (dlg.ev_exit == NULL) {
		delegate_kill_unwatched();
		return 0;
	}
	delegate_signal(SIGTERM);
	/* delegate_on_exit() reaps it and lets the loop end. */
	dlg.kill_ev = evtimer_new(c->base, delegate_on_kill, NULL);
	if (dlg.kill_ev == NULL || evtimer_add(dlg.kill_ev, &tv) == -1)
		delegate_signal(SIGKILL);
	return 1;
}

int
delegate_running(struct child *c)
{
	(void)c;
	return dlg.pid > 0;
}
