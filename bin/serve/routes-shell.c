/* SPDX-License-Identifier: ISC */
/*
 * routes-shell.c: POST /session/:id/shell, upstream's direct session
 * shell.
 *
 * Off unless --enable-session-shell: then 403 session_shell_disabled, as
 * upstream's daemon answers it.  On, a live session's registered client
 * (X-Qwen-Client-Id is required: 403 client_id_required) runs {command}
 * with /bin/sh -c in the session's workspace, as upstream's daemon runs it
 * itself and not its agent: stdin /dev/null, stdout and stderr one pipe,
 * its own process group, killed after 120 s (upstream's
 * SHELL_COMMAND_TIMEOUT_MS) or when its client goes before the answer
 * (upstream's response "close"): either is aborted.  The session's event stream
 * gets user_shell_command {sessionId, command, cwd}, a session_update
 * shell_output per piece of output (_meta.source "user-shell") and
 * user_shell_result {sessionId, exitCode, signal, aborted}; the agent is
 * told through qwen/control/session/shell_history {sessionId, command,
 * output (its first 10000 bytes, then "... (truncated)"), exitCode}, its
 * failure only logged; the answer is {exitCode, output, aborted}.  Output
 * is made valid UTF-8; the answer keeps its first 1 MiB; a command is at
 * most 64 KiB; at most 8 run at once (429 shell_limit_exceeded).
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "errors.h"
#include "json.h"
#include "log.h"
#include "serve.h"
#include "spawn.h"
#include "utf8.h"
#include "xmalloc.h"

#define SHELL_COMMAND_MAX	(64 * 1024)
#define SHELL_OUTPUT_MAX	(1024 * 1024)
#define SHELL_HISTORY_MAX	10000	/* upstream's MAX_SHELL_OUTPUT_FOR_HISTORY */
#define SHELL_TIMEOUT_S		120	/* upstream's SHELL_COMMAND_TIMEOUT_MS */
#define SHELL_RUNNING_MAX	8
#define SHELL_READ_MAX		(64 * 1024)

struct shell_run {
	LIST_ENTRY(shell_run)	 entry;
	struct evhttp_request	*req;
	struct channel		*ch;
	struct channel_req	*history;
	char			 id[SERVE_SESSION_ID_MAX + 1];
	char			*client_id;
	char			*command;
	pid_t			 pid;
	int			 pidfd, out_fd;
	struct event		*out_ev, *pid_ev, *timer;
	struct utf8_carry	 carry;
	char			*out;
	size_t			 out_len;
	int			 aborted;
	json_object		*exit_code;	/* the answer's, null when signalled */
};

static LIST_HEAD(, shell_run) shell_runs = LIST_HEAD_INITIALIZER(shell_runs);
static size_t shell_running;

/* An event on the session's stream, when it is still there. */
static void
shell_publish(struct shell_run *r, const char *type, json_object *data)
{
	struct session *s = sessions_find(r->id);

	if (s == NULL || s->bus == NULL) {
		json_object_put(data);
		return;
	}
	bus_publish(s->bus, type, data, NULL, r->client_id, 0);
}

static json_object *
shell_data(struct shell_run *r)
{
	json_object *d = xjson_object_new_object();

	json_object_object_add(d, "sessionId", xjson_object_new_string(r->id));
	return d;
}

/* One piece of output: a shell_output update, and kept for the answer. */
static void
shell_output(struct shell_run *r, const char *buf, size_t len, int final)
{
	json_object *d, *u, *m;
	size_t n, keep;
	char *text = utf8_clean(&r->carry, buf, len, final, &n);

	if (text == NULL || n == 0) {
		free(text);
		return;
	}
	keep = SHELL_OUTPUT_MAX - r->out_len;
	keep = utf8_boundary(text, n, n < keep ? n : keep);
	if (keep > 0) {
		r->out = xreallocarray(r->out, r->out_len + keep + 1, 1);
		memcpy(r->out + r->out_len, text, keep);
		r->out_len += keep;
		r->out[r->out_len] = '\0';
	}
	u = xjson_object_new_object();
	json_object_object_add(u, "sessionUpdate", xjson_object_new_string("shell_output"));
	json_object_object_add(u, "output", json_object_new_string_len(text, (int)n));
	m = xjson_object_new_object();
	json_object_object_add(m, "serverTimestamp",
	    json_object_new_int64((int64_t)clock_wall_ms()));
	json_object_object_add(m, "source", xjson_object_new_string("user-shell"));
	json_object_object_add(u, "_meta", m);
	d = shell_data(r);
	json_object_object_add(d, "update", u);
	shell_publish(r, "session_update", d);
	free(text);
}

/* Read what the pipe holds: 0 while open, 1 at its end. */
static int
shell_read(struct shell_run *r)
{
	char buf[SHELL_READ_MAX];
	ssize_t n;

	for (;;) {
		n = read(r->out_fd, buf, sizeof(buf));
		if (n > 0) {
			shell_output(r, buf, (size_t)n, 0);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		return n == -1 && errno == EAGAIN ? 0 : 1;
	}
}

static void
shell_on_out(evutil_socket_t fd, short what, void *arg)
{
	struct shell_run *r = arg;

	(void)fd; (void)what;
	if (shell_read(r))
		event_del(r->out_ev);
}

static void
shell_free(struct shell_run *r)
{
	int st;

	LIST_REMOVE(r, entry);
	shell_running--;
	if (r->pid > 0) {
		kill(-r->pid, SIGKILL);
		(void)spawn_wait(r->pid, &st);
	}
	if (r->history != NULL)
		channel_forget(r->history);
	channel_control_end(r->ch);
	if (r->out_ev != NULL)
		event_free(r->out_ev);
	if (r->pid_ev != NULL)
		event_free(r->pid_ev);
	if (r->timer != NULL)
		event_free(r->timer);
	if (r->out_fd != -1)
		close(r->out_fd);
	if (r->pidfd != -1)
		close(r->pidfd);
	json_object_put(r->exit_code);
	free(r->client_id);
	free(r->command);
	free(r->out);
	free(r);
}

/* upstream's answer {exitCode, output, aborted}, then the run is done. */
static void
shell_answer(struct shell_run *r)
{
	json_object *b = xjson_object_new_object();

	json_object_object_add(b, "exitCode", json_object_get(r->exit_code));
	json_object_object_add(b, "output",
	    xjson_object_new_string(r->out != NULL ? r->out : ""));
	json_object_object_add(b, "aborted", json_object_new_boolean(r->aborted));
	conn_watch_gone(r->req, NULL, NULL);	/* the reply may free req */
	http_reply_json(r->req, 200, b);
	shell_free(r);
}

/* The agent took the history (or could not): the answer goes. */
static void
shell_on_history(void *arg, enum channel_outcome o, json_object *payload)
{
	struct shell_run *r = arg;

	(void)payload;
	r->history = NULL;
	if (o != CHANNEL_RESULT)
		log_info("session %s: shell history not taken by the agent", r->id);
	shell_answer(r);
}

/* qwen/control/session/shell_history to the agent; 0 when it went. */
static int
shell_history(struct shell_run *r)
{
	json_object *p = shell_data(r);
	const char *out = r->out != NULL ? r->out : "";
	size_t n = strlen(out), cut = utf8_boundary(out, n, SHELL_HISTORY_MAX);
	char *h;

	if (sessions_find(r->id) == NULL) {
		json_object_put(p);
		return -1;
	}
	if (n > SHELL_HISTORY_MAX) {
		h = xmalloc(cut + sizeof("\n... (truncated)"));
		memcpy(h, out, cut);
		memcpy(h + cut, "\n... (truncated)", sizeof("\n... (truncated)"));
	} else
		h = xstrdup(out);
	json_object_object_add(p, "command", xjson_object_new_string(r->command));
	json_object_object_add(p, "output", xjson_object_new_string(h));
	json_object_object_add(p, "exitCode", json_object_get(r->exit_code));
	free(h);
	r->history = channel_request(r->ch, "qwen/control/session/shell_history",
	    p, (uint64_t)conf.init_timeout_ms, shell_on_history, r);
	return r->history != NULL ? 0 : -1;
}

/* The command exited: its last output, its result, the agent told. */
static void
shell_on_exit(evutil_socket_t fd, short what, void *arg)
{
	struct shell_run *r = arg;
	json_object *d;
	int st = 0, sig = 0;

	(void)fd; (void)what;
	(void)shell_read(r);
	shell_output(r, "", 0, 1);
	if (spawn_wait(r->pid, &st) == 0) {
		if (WIFEXITED(st))
			r->exit_code = json_object_new_int(WEXITSTATUS(st));
		else if (WIFSIGNALED(st))
			sig = WTERMSIG(st);
	}
	r->pid = 0;
	evtimer_del(r->timer);
	d = shell_data(r);
	json_object_object_add(d, "exitCode", json_object_get(r->exit_code));
	json_object_object_add(d, "signal", sig ? json_object_new_int(sig) : NULL);
	json_object_object_add(d, "aborted", json_object_new_boolean(r->aborted));
	shell_publish(r, "user_shell_result", d);
	if (shell_history(r) == -1)
		shell_answer(r);
}

/* Past upstream's 120 s: the group killed, the run aborted. */
static void
shell_on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct shell_run *r = arg;

	(void)fd; (void)what;
	r->aborted = 1;
	if (r->pid > 0)
		kill(-r->pid, SIGKILL);
}

/* The client went away before the answer: the group killed, the run
   aborted, as upstream's request close aborts it (the stream still gets
   the result, the agent the history). */
static void
shell_on_gone(void *arg)
{
	struct shell_run *r = arg;

	if (r->pid > 0) {
		r->aborted = 1;
		kill(-r->pid, SIGKILL);
	}
}

/* In the forked child, before exec: a process group of its own. */
static void
shell_pre_exec(void *arg)
{
	(void)arg;
	(void)setpgid(0, 0);
}

/* Fork the command: 0, or -1 (errno) with nothing left open. */
static int
shell_spawn(struct shell_run *r, const char *cwd)
{
	struct spawn_cmd *cmd = spawn_cmd_new_args("/bin/sh", "-c", r->command,
	    NULL);
	int p[2], in, err, e;

	spawn_cmd_chdir(cmd, cwd);
	spawn_cmd_pre_exec(cmd, shell_pre_exec, NULL);
	if ((in = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1) {
		spawn_cmd_free(cmd);
		return -1;
	}
	if (pipe2(p, O_CLOEXEC) == -1) {
		e = errno;
		close(in);
		spawn_cmd_free(cmd);
		errno = e;
		return -1;
	}
	if ((err = fcntl(p[1], F_DUPFD_CLOEXEC, 3)) == -1) {
		e = errno;
		close(in);
		close(p[0]);
		close(p[1]);
		spawn_cmd_free(cmd);
		errno = e;
		return -1;
	}
	/* Closes in, p[1] and err, also when it fails. */
	if ((r->pid = spawn_start(cmd, in, p[1], err)) == -1) {
		r->pid = 0;
		close(p[0]);
		return -1;
	}
	r->out_fd = p[0];
	evutil_make_socket_nonblocking(r->out_fd);
	r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	return 0;
}

/* The run's events; -1 when they cannot be had (the command killed). */
static int
shell_watch(struct shell_run *r)
{
	struct timeval tv = { SHELL_TIMEOUT_S, 0 };

	r->out_ev = event_new(serve_base, r->out_fd, EV_READ | EV_PERSIST,
	    shell_on_out, r);
	r->pid_ev = r->pidfd == -1 ? NULL :
	    event_new(serve_base, r->pidfd, EV_READ, shell_on_exit, r);
	r->timer = evtimer_new(serve_base, shell_on_timeout, r);
	if (r->out_ev == NULL || r->pid_ev == NULL || r->timer == NULL)
		return -1;
	event_add(r->out_ev, NULL);
	event_add(r->pid_ev, NULL);
	evtimer_add(r->timer, &tv);
	return 0;
}

/* The request's command, trimmed and checked: caller frees; NULL after the 400. */
static char *
shell_command(struct http_ctx *ctx)
{
	const char *c = json_get_str(ctx->body, "command");
	size_t n;

	while (c != NULL && (*c == ' ' || (*c >= '\t' && *c <= '\r')))
		c++;
	n = c != NULL ? strlen(c) : 0;
	while (n > 0 && (c[n - 1] == ' ' || (c[n - 1] >= '\t' && c[n - 1] <= '\r')))
		n--;
	if (n > 0 && n <= SHELL_COMMAND_MAX)
		return xstrndup(c, n);
	http_send_qerr(ctx->req, qerr_new("bad_request", "%s", n == 0 ?
	    "`command` is required and must be a non-empty string" :
	    "`command` is longer than 65536 bytes"));
	return NULL;
}

/* The checks before a run: 0, or -1 after upstream's answer. */
static int
shell_allowed(struct http_ctx *ctx)
{
	if (!conf.session_shell) {
		http_error(ctx->req, "session_shell_disabled", NULL);
		return -1;
	}
	if (ctx->client_id == NULL) {
		http_send_qerr(ctx->req, qerr_new("client_id_required",
		    "Direct session shell requires a session-bound client id"));
		return -1;
	}
	if (shell_running >= SHELL_RUNNING_MAX) {
		http_error(ctx->req, "shell_limit_exceeded", NULL);
		return -1;
	}
	return 0;
}

static struct shell_run *
shell_new(struct http_ctx *ctx, struct session *s, char *command)
{
	struct shell_run *r = xcalloc(1, sizeof(*r));

	r->req = ctx->req;
	r->ch = s->channel;
	r->command = command;
	r->client_id = xstrdup(ctx->client_id);
	r->pidfd = r->out_fd = -1;
	strlcpy(r->id, s->id, sizeof(r->id));
	channel_control_begin(r->ch);
	LIST_INSERT_HEAD(&shell_runs, r, entry);
	shell_running++;
	return r;
}

/* POST /session/:id/shell {command}: run it, when the daemon allows it. */
void
route_session_shell(struct http_ctx *ctx)
{
	const char *cwd;
	struct session *s;
	struct shell_run *r;
	json_object *d;
	char *command;

	if ((s = routes_session(ctx)) == NULL || shell_allowed(ctx) == -1 ||
	    (command = shell_command(ctx)) == NULL)
		return;
	cwd = channel_workspace(s->channel);
	r = shell_new(ctx, s, command);
	d = shell_data(r);
	json_object_object_add(d, "command", xjson_object_new_string(command));
	json_object_object_add(d, "cwd", xjson_object_new_string(cwd));
	shell_publish(r, "user_shell_command", d);
	if (shell_spawn(r, cwd) == -1 || shell_watch(r) == -1) {
		d = shell_data(r);
		json_object_object_add(d, "exitCode", NULL);
		json_object_object_add(d, "signal", NULL);
		json_object_object_add(d, "aborted", json_object_new_boolean(0));
		json_object_object_add(d, "error",
		    xjson_object_new_string("The command could not be started"));
		shell_publish(r, "user_shell_result", d);
		http_send_qerr(ctx->req, qerr_new("internal", "%s",
		    "The command could not be started"));
		shell_free(r);
		return;
	}
	conn_watch_gone(ctx->req, shell_on_gone, r);
}

/* At exit: every run's group killed, its request dropped (its client's
   watch first: the connections are freed after the runs). */
void
route_shell_free_all(void)
{
	struct shell_run *r;

	while ((r = LIST_FIRST(&shell_runs)) != NULL) {
		conn_watch_gone(r->req, NULL, NULL);
		shell_free(r);
	}
}
