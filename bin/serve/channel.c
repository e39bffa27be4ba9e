/* SPDX-License-Identifier: ISC */
/*
 * channel.c: one qwen-acp-child per workspace, started on demand with
 * spawn_start() (our fork and exec; exits watched with a pidfd) and
 * initialized with a fresh private-parent secret; its death becomes
 * session_died for each of its sessions and the channel is respawned on
 * next use.  When it has nothing left to do is channel-idle.c's, the
 * JSON-RPC traffic channel-rpc.c's.
 */
#include "config.h"

#include <sys/syscall.h>
#include <sys/wait.h>

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

#include "base64.h"
#include "clock.h"
#include "log.h"
#include "rpc-frame.h"
#include "rpc-pending.h"
#include "channel-int.h"
#include "serve.h"
#include "spawn.h"
#include "xmalloc.h"

static TAILQ_HEAD(, channel) channels = TAILQ_HEAD_INITIALIZER(channels);
static unsigned channel_next_serial;
const struct channel_events *channel_hooks;	/* main.c's, at startup */

/* ---- lifecycle ---------------------------------------------------------- */

static void
fail_waiting(struct channel *ch, enum channel_outcome o)
{
	struct channel_req *r;

	while ((r = TAILQ_FIRST(&ch->waiting)) != NULL) {
		TAILQ_REMOVE(&ch->waiting, r, entry);
		channel_req_finish(r, o, NULL);
	}
}

static void
on_initialized(void *arg, enum channel_outcome o, json_object *payload)
{
	struct channel *ch = arg;
	struct channel_req *r;

	(void)payload;
	if (ch->state == CH_DYING) {
		/* Ended while starting (an abandoned restore's kill): no sends. */
		fail_waiting(ch, CHANNEL_CLOSED);
		return;
	}
	if (o != CHANNEL_RESULT) {
		log_warnx("child %ld: initialize %s", (long)ch->pid,
		    o == CHANNEL_TIMEOUT ? "timed out" : "failed");
		fail_waiting(ch, o == CHANNEL_TIMEOUT ? CHANNEL_INIT_TIMEOUT : CHANNEL_CLOSED);
		channel_end(ch, 1);
		return;
	}
	log_info("child %ld initialized", (long)ch->pid);
	ch->state = CH_READY;
	while ((r = TAILQ_FIRST(&ch->waiting)) != NULL) {
		TAILQ_REMOVE(&ch->waiting, r, entry);
		channel_req_send(ch, r);
	}
}

/* A fresh private-parent secret: 32 random bytes, base64url. */
static void
new_secret(char *out, size_t size)
{
	unsigned char raw[32];

	arc4random_buf(raw, sizeof(raw));
	if (base64_encode(BASE64_URL, raw, sizeof(raw), out, size) == -1)
		out[0] = '\0';
}

static struct bufferevent *
wrap_fd(int fd, bufferevent_data_cb rd, bufferevent_event_cb ev, void *arg)
{
	struct bufferevent *b;

	evutil_make_socket_nonblocking(fd);
	b = bufferevent_socket_new(serve_base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (b == NULL) {
		close(fd);
		return NULL;
	}
	bufferevent_setcb(b, rd, NULL, ev, arg);
	if (rd != NULL)
		bufferevent_enable(b, EV_READ);
	return b;
}

/* The child's stdin, stdout and stderr pipes; -1 leaves none open. */
static int
channel_pipes(int in[2], int out[2], int err[2])
{
	int saved;

	if (pipe2(in, O_CLOEXEC) == -1)
		return -1;
	if (pipe2(out, O_CLOEXEC) == 0) {
		if (pipe2(err, O_CLOEXEC) == 0)
			return 0;
		saved = errno;
		close(out[0]);
		close(out[1]);
		errno = saved;
	}
	saved = errno;
	close(in[0]);
	close(in[1]);
	errno = saved;
	return -1;
}

static void	on_exit_ready(evutil_socket_t, short, void *);
static void	respawn(struct channel *);

/* Spawn the child and send initialize. */
void
channel_start(struct channel *ch)
{
	int in[2], out[2], err[2];
	struct channel_req *r;

	if (channel_pipes(in, out, err) == -1) {
		log_warn("pipe");
		return;
	}
	new_secret(ch->secret, sizeof(ch->secret));
	/* Closes in[0], out[1] and err[1]; a failed fork is not the end of us. */
	ch->pid = spawn_start(child_cmd_new(ch->workspace, ch->secret),
	    in[0], out[1], err[1]);
	if (ch->pid == -1) {
		/* The state stays idle: the request fails with a 503. */
		log_warn("cannot start %s: fork", conf.child_path);
		ch->pid = 0;
		close(in[1]);
		close(out[0]);
		close(err[0]);
		return;
	}
	ch->pidfd = (int)syscall(SYS_pidfd_open, ch->pid, 0);
	ch->started_ms = clock_mono_ms();
	ch->killed = 0;
	ch->idle_end = 0;
	ch->kill_stage = 0;
	channel_hooks->child_started(ch->serial != 0);
	ch->serial = ++channel_next_serial;
	ch->in = wrap_fd(in[1], NULL, channel_on_in_event, ch);
	/* Big answers (bulk replays) come in big reads, not 4 KiB ones. */
	(void)fcntl(out[0], F_SETPIPE_SZ, CHANNEL_PIPE_SIZE);
	evutil_make_socket_nonblocking(out[0]);
	ch->out_fd = out[0];
	ch->out_eof = 0;
	ch->out_ev = event_new(serve_base, out[0], EV_READ,
	    channel_on_out_ready, ch);
	ch->err = wrap_fd(err[0], channel_on_err_read, channel_on_err_event,
	    ch);
	ch->rd = rpc_reader_new(0);
	if (ch->rd != NULL)
		replay_raw_setup(ch->rd);
	ch->pending = rpc_pending_new();
	ch->deadline_ev = evtimer_new(serve_base, channel_on_deadline, ch);
	ch->pid_ev = event_new(serve_base, ch->pidfd, EV_READ, on_exit_ready,
	    ch);
	if (ch->pidfd == -1 || ch->in == NULL || ch->out_ev == NULL ||
	    ch->rd == NULL || ch->pending == NULL || ch->pid_ev == NULL) {
		log_warnx("cannot watch child %ld", (long)ch->pid);
		kill(ch->pid, SIGKILL);
	}
	if (ch->pid_ev != NULL)
		event_add(ch->pid_ev, NULL);
	if (ch->out_ev != NULL)
		event_add(ch->out_ev, NULL);
	bufferevent_enable(ch->in, EV_WRITE);
	log_info("started %s (pid %ld) for %s",
	    conf.child_argv != NULL ? conf.child_argv[0] : conf.child_path, (long)ch->pid,
	    ch->workspace);
	ch->state = CH_READY;	/* so that initialize goes out now */
	r = channel_request(ch, "initialize",
	    rpc_acp_initialize_params("qwen-serve-bridge", PACKAGE_VERSION, ch->secret),
	    (uint64_t)conf.init_timeout_ms, on_initialized, ch);
	ch->state = r != NULL ? CH_STARTING : CH_DYING;
}

/* The next step of an ending child's escalation: TERM, then (ev fires
   again after a grace) KILL. */
void
channel_kill_step(pid_t pid, int *stage, struct event *ev)
{
	struct timeval tv = { CHANNEL_KILL_GRACE_MS / 1000, 0 };

	(*stage)++;
	log_info("child %ld: sending %s", (long)pid,
	    *stage == 1 ? "SIGTERM" : "SIGKILL");
	kill(pid, *stage == 1 ? SIGTERM : SIGKILL);
	if (*stage == 1)
		event_add(ev, &tv);
}

static void
on_kill_timer(evutil_socket_t fd, short what, void *arg)
{
	struct channel *ch = arg;

	(void)fd; (void)what;
	if (ch->pid > 0)
		channel_kill_step(ch->pid, &ch->kill_stage, ch->kill_ev);
}

/*
 * End the child: close its stdin (a clean child exits on EOF), then TERM
 * and KILL after grace periods; hard skips the polite step.  Requests are
 * failed when the exit is seen.
 */
void
channel_end(struct channel *ch, int hard)
{
	struct timeval tv = { CHANNEL_KILL_GRACE_MS / 1000, 0 };

	if (ch->state == CH_IDLE)
		return;
	if (ch->state != CH_DYING) {
		log_info("ending child %ld%s", (long)ch->pid, hard ? " (failed)" : "");
		ch->killed = !hard;
	}
	if (hard)
		ch->idle_end = 0;
	ch->state = CH_DYING;
	if (ch->in != NULL) {
		bufferevent_free(ch->in);
		ch->in = NULL;
	}
	if (ch->kill_ev == NULL)
		ch->kill_ev = evtimer_new(serve_base, on_kill_timer, ch);
	if (!evtimer_pending(ch->kill_ev, NULL)) {
		if (hard)
			on_kill_timer(-1, 0, ch);
		else
			event_add(ch->kill_ev, &tv);
	}
}

static void
drain_one(int64_t id, void *arg, void *ctx)
{
	(void)id; (void)ctx;
	channel_req_finish(arg, CHANNEL_CLOSED, NULL);
}

/* Free what is left of ch's child (NULL-safe: a corpse took some of it);
   ch is idle after. */
void
channel_release(struct channel *ch)
{
	if (ch->pid_ev != NULL)
		event_free(ch->pid_ev);
	ch->pid_ev = NULL;
	if (ch->pidfd != -1)
		close(ch->pidfd);
	ch->pidfd = -1;
	if (ch->in != NULL)
		bufferevent_free(ch->in);
	if (ch->out_ev != NULL)
		event_free(ch->out_ev);
	ch->out_ev = NULL;
	if (ch->out_fd != -1)
		close(ch->out_fd);
	ch->out_fd = -1;
	if (ch->err != NULL)
		bufferevent_free(ch->err);
	ch->in = ch->err = NULL;
	rpc_reader_free(ch->rd);
	ch->rd = NULL;
	rpc_pending_free(ch->pending);
	ch->pending = NULL;
	if (ch->deadline_ev != NULL)
		event_free(ch->deadline_ev);
	ch->deadline_ev = NULL;
	if (ch->kill_ev != NULL)
		event_del(ch->kill_ev);
	ch->state = CH_IDLE;
}

/* Reap pid (its pidfd is readable): its exit code or signal (-1 and 0
   when unknown), counted and logged.  killed: we ended it. */
void
channel_reap(pid_t pid, int killed, int *code, int *sig)
{
	int st;

	*code = -1;
	*sig = 0;
	if (spawn_wait(pid, &st) == -1)
		log_warn("child %ld: waitpid", (long)pid);
	else if (WIFEXITED(st))
		*code = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		*sig = WTERMSIG(st);
	channel_hooks->child_exited(killed);
	log_info("child %ld exited (%s %d)", (long)pid,
	    *sig ? "signal" : "status", *sig ? *sig : *code);
}

/* The pidfd is readable: reap, fail everything, tell the sessions. */
static void
on_exit_ready(evutil_socket_t fd, short what, void *arg)
{
	struct channel *ch = arg;
	int code, sig, killed = ch->killed;

	(void)fd; (void)what;
	/* Take what the child wrote before it exited. */
	channel_out_drain(ch);
	channel_reap(ch->pid, killed, &code, &sig);
	ch->pid = 0;	/* reaped: never signal that number again */
	ch->state = CH_DYING;
	fail_waiting(ch, CHANNEL_CLOSED);
	rpc_pending_drain(ch->pending, drain_one, NULL);
	channel_hooks->sessions_died(ch, code, sig, killed);
	channel_hooks->inflight_died(ch);
	channel_release(ch);
	respawn(ch);
	channel_rewarm(ch);
}

/* A request for ch while its child ends for idleness: the child goes on
   ending on its own (channel-corpse.c) and a fresh one starts now. */
void
channel_restart_ended(struct channel *ch)
{
	if (ch->state != CH_DYING || !ch->idle_end || serve_shutting_down() ||
	    channel_corpse_take(ch) == -1)
		return;
	if (TAILQ_EMPTY(&ch->respawn))
		channel_start(ch);
	else
		respawn(ch);
}

/* Requests that came while an idle child was ending get a fresh one. */
static void
respawn(struct channel *ch)
{
	struct channel_req *r;

	if (TAILQ_EMPTY(&ch->respawn))
		return;
	if (!serve_shutting_down())
		channel_start(ch);
	while ((r = TAILQ_FIRST(&ch->respawn)) != NULL) {
		TAILQ_REMOVE(&ch->respawn, r, entry);
		if (ch->state == CH_STARTING)
			TAILQ_INSERT_TAIL(&ch->waiting, r, entry);
		else
			channel_req_finish(r, CHANNEL_CLOSED, NULL);
	}
}

void
channel_set_events(const struct channel_events *ev)
{
	channel_hooks = ev;
}

struct channel *
channel_get(const char *workspace)
{
	struct channel *ch;

	TAILQ_FOREACH(ch, &channels, entry)
		if (strcmp(ch->workspace, workspace) == 0)
			return ch;
	if ((ch = calloc(1, sizeof(*ch))) == NULL)
		return NULL;
	if ((ch->workspace = strdup(workspace)) == NULL) {
		free(ch);
		return NULL;
	}
	ch->pidfd = -1;
	ch->out_fd = -1;
	TAILQ_INIT(&ch->waiting);
	TAILQ_INIT(&ch->respawn);
	ch->idle_ev = evtimer_new(serve_base, channel_on_idle, ch);
	ch->more_ev = evtimer_new(serve_base, channel_on_more, ch);
	TAILQ_INSERT_TAIL(&channels, ch, entry);
	return ch;
}

void
channel_session_added(struct channel *ch)
{
	ch->nsessions++;
	event_del(ch->idle_ev);
}

void
channel_session_removed(struct channel *ch)
{
	if (ch->nsessions > 0)
		ch->nsessions--;
	channel_check_idle(ch);
}

void
channel_control_begin(struct channel *ch)
{
	ch->control_ops++;
	event_del(ch->idle_ev);
}

void
channel_control_end(struct channel *ch)
{
	if (ch->control_ops > 0)
		ch->control_ops--;
	channel_check_idle(ch);
}

unsigned
channel_control_ops(const struct channel *ch)
{
	return ch->control_ops;
}

/* Condemnation may have changed (restore-fsm): apply the policy again. */
void
channel_reconsider(struct channel *ch)
{
	channel_check_idle(ch);
}

/*
 * Mark ch dying now; its child gets TERM now and KILL after a grace.
 * Requests that come meanwhile go to a fresh child once it has exited.
 */
void
channel_kill(struct channel *ch)
{
	if (ch->state == CH_IDLE || ch->state == CH_DYING)
		return;
	log_info("child %ld: nothing else on it, ending it", (long)ch->pid);
	channel_end(ch, 1);
	ch->killed = 1;
}

size_t
channel_nsessions(const struct channel *ch)
{
	return ch->nsessions;
}

const char *
channel_workspace(const struct channel *ch)
{
	return ch->workspace;
}

int
channel_idle_pending(const struct channel *ch)
{
	return ch->idle_ev != NULL && evtimer_pending(ch->idle_ev, NULL);
}

unsigned
channel_serial(const struct channel *ch)
{
	return ch->serial;
}

int
channel_alive(const struct channel *ch)
{
	return ch->state == CH_READY || ch->state == CH_STARTING;
}

size_t
channel_running(void)
{
	struct channel *ch;
	size_t n = 0;

	TAILQ_FOREACH(ch, &channels, entry)
		n += ch->state != CH_IDLE;
	return n + channel_corpses();
}

size_t
channel_shutdown(void)
{
	struct channel *ch;

	TAILQ_FOREACH(ch, &channels, entry)
		if (ch->state != CH_IDLE)
			channel_end(ch, 0);
	return channel_running();
}

/* Free every channel (after the loop has stopped; all are idle). */
void
channel_free_all(void)
{
	struct channel *ch;

	while ((ch = TAILQ_FIRST(&channels)) != NULL) {
		TAILQ_REMOVE(&channels, ch, entry);
		if (ch->idle_ev != NULL)
			event_free(ch->idle_ev);
		if (ch->warm_ev != NULL)
			event_free(ch->warm_ev);
		if (ch->kill_ev != NULL)
			event_free(ch->kill_ev);
		if (ch->more_ev != NULL)
			event_free(ch->more_ev);
		free(ch->workspace);
		free(ch);
	}
}
