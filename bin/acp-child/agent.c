/* SPDX-License-Identifier: ISC */
/*
 * agent.c: per-prompt agent processes (a command run by spawn_start(),
 * exits watched with a pidfd) and the echo agent.
 */
#include "config.h"

#include <sys/pidfd.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent.h"
#include "log.h"
#include "spawn.h"
#include "utf8.h"

#define AGENT_READ_SIZE		65536
#define ECHO_CHUNKS		3

struct agent {
	struct event_base	*base;
	struct agent_cbs	 cbs;
	void			*arg;
	/* Command agent. */
	pid_t			 pid;
	int			 in_fd, out_fd, pidfd;
	struct event		*ev_in, *ev_out, *ev_exit, *ev_kill;
	size_t			 in_off;
	uint64_t		 out_total;
	struct utf8_carry	 carry;
	int			 exited, paused, too_large;
	/* Echo agent. */
	struct event		*ev_echo;
	size_t			 echo_off;
	int			 echo_step;
	/* Both. */
	char			*prompt;
	size_t			 prompt_len;
	int			 cancelled;
};

static void	agent_finish(struct agent *, enum agent_end, int, const char *);

void
agent_pre_exec(void *arg)
{
	(void)arg;
	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
}

/* Signal the agent's process group (the pid alone if the group is gone). */
static void
agent_signal(struct agent *ag, int sig)
{
	if (ag->pid <= 0 || ag->exited)
		return;
	if (kill(-ag->pid, sig) == -1)
		kill(ag->pid, sig);
}

/* Hand over output as valid UTF-8. */
static void
agent_emit(struct agent *ag, const char *buf, size_t len, int final)
{
	char *clean;
	size_t n;

	if ((clean = utf8_clean(&ag->carry, buf, len, final, &n)) == NULL)
		return;
	if (n > 0 && !ag->cancelled)
		ag->cbs.chunk(ag->arg, clean, n);
	free(clean);
}

/* Read what is there: 0 read some, -1 nothing now, 1 at EOF or error. */
static int
agent_read(struct agent *ag)
{
	char buf[AGENT_READ_SIZE];
	ssize_t n;

	n = read(ag->out_fd, buf, sizeof(buf));
	if (n == -1)
		return errno == EAGAIN || errno == EINTR ? -1 : 1;
	if (n == 0)
		return 1;
	ag->out_total += (uint64_t)n;
	if (ag->out_total > AGENT_MAX_OUTPUT) {
		if (!ag->too_large)
			agent_signal(ag, SIGKILL);
		ag->too_large = 1;
		return 0;
	}
	agent_emit(ag, buf, (size_t)n, 0);
	return 0;
}

static void
agent_close_out(struct agent *ag)
{
	if (ag->out_fd == -1)
		return;
	event_del(ag->ev_out);
	close(ag->out_fd);
	ag->out_fd = -1;
}

static void
agent_out_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent *ag = arg;

	(void)fd;
	(void)what;
	if (agent_read(ag) == 1)
		agent_close_out(ag);
}

static void
agent_close_in(struct agent *ag)
{
	if (ag->in_fd == -1)
		return;
	event_del(ag->ev_in);
	close(ag->in_fd);
	ag->in_fd = -1;
}

/* Feed the prompt; close stdin when all of it is written or refused. */
static void
agent_in_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent *ag = arg;
	ssize_t n;

	(void)fd;
	(void)what;
	n = write(ag->in_fd, ag->prompt + ag->in_off, ag->prompt_len - ag->in_off);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		ag->in_off += (size_t)n;
	if (n == -1 || ag->in_off == ag->prompt_len)
		agent_close_in(ag);
}

/* The process exited: collect its status, take its last output, end. */
static void
agent_exit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent *ag = arg;
	int st, status = -1;

	(void)fd;
	(void)what;
	if (spawn_wait(ag->pid, &st) == -1)
		log_warn("agent %ld: waitpid", (long)ag->pid);
	else
		status = spawn_status(st);
	ag->exited = 1;
	/* What it wrote before exiting is in the pipe; stop at EAGAIN. */
	while (ag->out_fd != -1 && !ag->too_large && !ag->cancelled) {
		int r = agent_read(ag);
		if (r == 1)
			agent_close_out(ag);
		if (r != 0)
			break;
	}
	/* Whatever it left running in its group goes with it. */
	if (kill(-ag->pid, SIGKILL) == -1 && errno != ESRCH)
		log_debug("agent: cannot kill process group %ld", (long)ag->pid);
	if (ag->cancelled)
		agent_finish(ag, AGENT_END_CANCELLED, status, NULL);
	else if (ag->too_large)
		agent_finish(ag, AGENT_END_FAILED, status,
		    "agent output exceeds 64 MiB");
	else if (status != 0)
		agent_finish(ag, AGENT_END_FAILED, status, "agent command failed");
	else
		agent_finish(ag, AGENT_END_OK, 0, NULL);
}

static void
agent_kill_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	agent_signal(arg, SIGKILL);
}

/* Free everything; the process (if any) has been waited for. */
static void
agent_free(struct agent *ag)
{
	if (ag->ev_in != NULL)
		event_free(ag->ev_in);
	if (ag->ev_out != NULL)
		event_free(ag->ev_out);
	if (ag->ev_exit != NULL)
		event_free(ag->ev_exit);
	if (ag->ev_kill != NULL)
		event_free(ag->ev_kill);
	if (ag->ev_echo != NULL)
		event_free(ag->ev_echo);
	if (ag->in_fd != -1)
		close(ag->in_fd);
	if (ag->out_fd != -1)
		close(ag->out_fd);
	if (ag->pidfd != -1)
		close(ag->pidfd);
	free(ag->prompt);
	free(ag);
}

static void
agent_finish(struct agent *ag, enum agent_end end, int status, const char *msg)
{
	if (end == AGENT_END_OK && ag->carry.len > 0)
		agent_emit(ag, "", 0, 1);
	ag->cbs.done(ag->arg, end, status, msg);
	agent_free(ag);
}

/* The echo agent: "echo: " then the prompt, in ECHO_CHUNKS pieces. */
static void
agent_echo_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent *ag = arg;
	struct timeval tv = { 0, 1000 };
	size_t left, take;

	(void)fd;
	(void)what;
	if (ag->cancelled) {
		agent_finish(ag, AGENT_END_CANCELLED, 0, NULL);
		return;
	}
	if (ag->echo_step == 0)
		ag->cbs.chunk(ag->arg, "echo: ", 6);
	left = ag->prompt_len - ag->echo_off;
	take = ag->echo_step >= ECHO_CHUNKS - 1 ? left :
	    utf8_boundary(ag->prompt + ag->echo_off, left,
	    (ag->prompt_len + ECHO_CHUNKS - 1) / ECHO_CHUNKS);
	if (take > 0)
		ag->cbs.chunk(ag->arg, ag->prompt + ag->echo_off, take);
	ag->echo_off += take;
	if (++ag->echo_step >= ECHO_CHUNKS || ag->echo_off == ag->prompt_len) {
		agent_finish(ag, AGENT_END_OK, 0, NULL);
		return;
	}
	evtimer_add(ag->ev_echo, &tv);
}

static struct agent *
agent_alloc(struct event_base *base, const char *prompt, size_t len,
    const struct agent_cbs *cbs, void *arg)
{
	struct agent *ag;

	if ((ag = calloc(1, sizeof(*ag))) == NULL)
		return NULL;
	ag->base = base;
	ag->cbs = *cbs;
	ag->arg = arg;
	ag->in_fd = ag->out_fd = ag->pidfd = -1;
	if ((ag->prompt = malloc(len + 1)) == NULL) {
		free(ag);
		return NULL;
	}
	memcpy(ag->prompt, prompt, len);
	ag->prompt[len] = '\0';
	ag->prompt_len = len;
	return ag;
}

/* Make the prompt valid UTF-8 for the echo (it came from JSON, so it is). */
static struct agent *
agent_start_echo(struct agent *ag, char **cause)
{
	struct timeval tv = { 0, 1000 };

	if ((ag->ev_echo = evtimer_new(ag->base, agent_echo_cb, ag)) == NULL) {
		agent_free(ag);
		*cause = strdup("cannot start echo agent: out of memory");
		return NULL;
	}
	evtimer_add(ag->ev_echo, &tv);
	return ag;
}

int
agent_pipes(int in[2], int out[2])
{
	if (pipe2(in, O_CLOEXEC) == -1)
		return -1;
	if (pipe2(out, O_CLOEXEC) == -1) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	return 0;
}

/* Events for the running process; -1 on failure. */
static int
agent_events(struct agent *ag)
{
	ag->ev_in = event_new(ag->base, ag->in_fd, EV_WRITE | EV_PERSIST, agent_in_cb, ag);
	ag->ev_out = event_new(ag->base, ag->out_fd, EV_READ | EV_PERSIST, agent_out_cb, ag);
	ag->ev_exit = event_new(ag->base, ag->pidfd, EV_READ, agent_exit_cb, ag);
	ag->ev_kill = evtimer_new(ag->base, agent_kill_cb, ag);
	if (ag->ev_in == NULL || ag->ev_out == NULL || ag->ev_exit == NULL ||
	    ag->ev_kill == NULL)
		return -1;
	if (ag->prompt_len > 0)
		event_add(ag->ev_in, NULL);
	else
		agent_close_in(ag);
	event_add(ag->ev_out, NULL);
	event_add(ag->ev_exit, NULL);
	return 0;
}

struct agent *
agent_start(struct event_base *base, const char *command, const char *prompt,
    size_t prompt_len, const char *session_id, const char *transcript,
    const struct agent_cbs *cbs, void *arg, char **cause)
{
	struct agent *ag;
	struct spawn_cmd *cmd;
	int in[2], out[2], st;

	*cause = NULL;
	if ((ag = agent_alloc(base, prompt, prompt_len, cbs, arg)) == NULL) {
		*cause = strdup("cannot start agent: out of memory");
		return NULL;
	}
	if (command == NULL)
		return agent_start_echo(ag, cause);
	if (agent_pipes(in, out) == -1) {
		if (asprintf(cause, "cannot start agent: pipe: %s", strerror(errno)) == -1)
			*cause = NULL;
		agent_free(ag);
		return NULL;
	}
	ag->in_fd = in[1];
	ag->out_fd = out[0];
	cmd = spawn_cmd_new_args("/bin/sh", "-c", command, (void *)NULL);
	spawn_cmd_setenv(cmd, "QWEN_SESSION_ID", session_id);
	spawn_cmd_setenv(cmd, "QWEN_TRANSCRIPT", transcript);
	spawn_cmd_unsetenv(cmd, "QWEN_ACP_PARENT_CAPABILITY");
	spawn_cmd_unsetenv(cmd, "QWEN_CODE_PRIVATE_ACP_CAPABILITY");
	spawn_cmd_pre_exec(cmd, agent_pre_exec, NULL);
	/* Closes in[0] and out[1]; a failed fork fails this prompt only. */
	if ((ag->pid = spawn_start(cmd, in[0], out[1], -1)) == -1) {
		if (asprintf(cause, "%s: %s", AGENT_FORK_FAILED, strerror(errno)) == -1)
			*cause = NULL;
		ag->pid = 0;
		agent_free(ag);
		return NULL;
	}
	if ((ag->pidfd = pidfd_open(ag->pid, 0)) == -1 || agent_events(ag) == -1) {
		if (asprintf(cause, "cannot watch agent process: %s",
		    strerror(errno)) == -1)
			*cause = NULL;
		agent_signal(ag, SIGKILL);
		spawn_wait(ag->pid, &st);
		agent_free(ag);
		return NULL;
	}
	return ag;
}

void
agent_cancel(struct agent *ag)
{
	struct timeval tv = { AGENT_CANCEL_GRACE_MS / 1000,
	    (AGENT_CANCEL_GRACE_MS % 1000) * 1000 };

	if (ag == NULL || ag->cancelled)
		return;
	ag->cancelled = 1;
	if (ag->pid <= 0)
		return;		/* the echo timer sees the flag */
	agent_close_in(ag);
	agent_signal(ag, SIGTERM);
	evtimer_add(ag->ev_kill, &tv);
}

void
agent_pause(struct agent *ag, int paused)
{
	if (ag == NULL || ag->pid <= 0 || ag->out_fd == -1 || ag->paused == paused)
		return;
	ag->paused = paused;
	if (paused)
		event_del(ag->ev_out);
	else
		event_add(ag->ev_out, NULL);
}
