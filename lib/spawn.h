/*
 * spawn.h: start a libpipeline command with our own fork.
 *
 * libpipeline builds the command (pipecmd: argv, environment changes,
 * directory, pre-exec hook), but its pipeline_start() ends the process
 * with error(FATAL) when fork() fails, and a daemon must not die of an
 * EAGAIN.  So pipeline_start() is never called: spawn_cmd() forks itself
 * (a failed fork is an ordinary -1 with errno: the caller answers 503 or
 * agent_spawn_failed, both retryable), and the forked child lets
 * libpipeline run the command with pipecmd_exec(), which execs in the
 * current process and never forks.
 *
 * Between fork and pipecmd_exec the child does only async-signal-safe
 * work (the parent may have threads): dup2 of the given descriptors onto
 * 0, 1 and 2, every caught signal back to SIG_DFL, then an empty signal
 * mask.  All signals are blocked in the parent across the fork, so
 * nothing reaches an inherited handler (libevent's writes to a socket the
 * child shares until exec) before it has been reset.
 *
 * The caller keeps the pid, watches the exit with pidfd_open() and reaps
 * it with spawn_wait() (waitpid on that pid).  Since libpipeline never
 * starts a pipeline, its SIGCHLD handler (which reaps with waitpid(-1))
 * is never installed: SIGCHLD stays at its default and our waitpid()s
 * are the only ones.
 */
#ifndef QWEN_SPAWN_H
#define QWEN_SPAWN_H

#include <sys/types.h>

#include <pipeline.h>

/*
 * Fork and run cmd with in_fd, out_fd and err_fd (each -1 to inherit; else
 * above 2) as its stdin, stdout and stderr.  In the parent cmd is freed
 * and the three descriptors closed, also on failure.  Returns the pid, or
 * -1 with errno (EAGAIN, ENOMEM from fork; EINVAL for a bad descriptor).
 * A failed exec shows as exit status 255, as with pipeline_start().
 */
pid_t	spawn_cmd(pipecmd *cmd, int in_fd, int out_fd, int err_fd);

/* Reap pid into *wstatus (waitpid's status); -1 with errno (ECHILD). */
int	spawn_wait(pid_t pid, int *wstatus);

/*
 * A wait status as pipeline_wait() returns it: the exit status, or 128
 * plus the signal (a SIGPIPE counts as 0).
 */
int	spawn_status(int wstatus);

#endif
