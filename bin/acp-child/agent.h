/* SPDX-License-Identifier: ISC */
/*
 * agent.h: the process that answers a prompt.
 *
 * With a command, each prompt runs `sh -c CMD` (a command that
 * spawn_start() forks for) in its own process group: the prompt text on its stdin, QWEN_SESSION_ID and
 * QWEN_TRANSCRIPT in its environment, its stdout streamed back (as valid
 * UTF-8, a split character held until complete) as it arrives.  Exit 0
 * ends the turn; anything else fails the prompt.  Cancel sends SIGTERM to
 * the group and SIGKILL after a grace.  Exit is watched with a pidfd;
 * spawn_wait() reaps only once it is readable; nothing takes SIGCHLD.
 *
 * Without a command a built-in deterministic echo agent answers
 * "echo: <prompt>" in three chunks, so everything works offline.
 */
#ifndef QWEN_ACP_AGENT_H
#define QWEN_ACP_AGENT_H

#include <stddef.h>

struct event_base;
struct agent;

enum agent_end {
	AGENT_END_OK,		/* exit 0: stopReason end_turn */
	AGENT_END_FAILED,	/* non-zero exit, signal, output too large */
	AGENT_END_CANCELLED,	/* agent_cancel() was called */
};

struct agent_cbs {
	/* Some output (valid UTF-8, len > 0). */
	void	(*chunk)(void *arg, const char *text, size_t len);
	/*
	 * The agent is over; message describes a failure (NULL otherwise).
	 * The agent frees itself after this returns: drop the pointer.
	 */
	void	(*done)(void *arg, enum agent_end end, int status, const char *message);
};

#define AGENT_CANCEL_GRACE_MS	2000
#define AGENT_MAX_OUTPUT	(64u * 1024 * 1024)

/*
 * Start the agent for one prompt.  command NULL: the echo agent.  prompt
 * is copied.  NULL + *cause (caller frees) when it cannot start.
 */
/* How a cause starts when no process could be forked (retryable). */
#define AGENT_FORK_FAILED	"cannot start agent: fork"

struct agent	*agent_start(struct event_base *, const char *command,
		    const char *prompt, size_t prompt_len, const char *session_id,
		    const char *transcript, const struct agent_cbs *, void *arg,
		    char **cause);

/* Ask it to stop; done() follows with AGENT_END_CANCELLED. */
void	agent_cancel(struct agent *);

/* Stop / resume reading its output (output back-pressure). */
void	agent_pause(struct agent *, int paused);
/*
 * The pre-exec hook of every agent process (also the --agent-acp one),
 * async-signal-safe: its own process group and SIGPIPE's default back
 * (spawn_start() has reset the signals we catch and emptied the mask).
 */
void	agent_pre_exec(void *);
/* An agent's stdin and stdout pipes (CLOEXEC; our ends non-blocking); 0 or -1. */
int	agent_pipes(int in[2], int out[2]);


#endif
