/* SPDX-License-Identifier: ISC */
/*
 * spawn.h: start a command with our own fork.
 *
 * A spawn_cmd is built in the parent (argument vector, environment
 * changes, directory, pre-exec hook) and spawn_start() turns it into
 * exactly what execve(2) takes before it forks: the argument array, the
 * whole new environment, and every path the program name resolves to on
 * $PATH.  The forked child then only makes async-signal-safe calls (the
 * parent may have threads, and one may hold malloc's lock at the fork):
 * dup2 of the given descriptors onto 0, 1 and 2, every caught signal back
 * to SIG_DFL and an empty mask, chdir, the pre-exec hook, execve.  All
 * signals are blocked in the parent across the fork, so nothing reaches
 * an inherited handler (libevent's writes to a socket the child shares
 * until exec) before it has been reset.  The fork is a vfork(): the child
 * borrows the parent's memory until execve (it writes none of it; the
 * calling thread waits), so a parent with a big heap neither copies its
 * page tables nor takes a copy-on-write fault on each page it writes next.
 *
 * libpipeline's pipeline_start() would end the process with error(FATAL)
 * when fork() fails, and its pipecmd_exec() sets the environment in the
 * child (malloc); neither is used here.  A failed fork is an ordinary -1
 * with errno: the caller answers 503 or agent_spawn_failed, both
 * retryable.  A command that cannot be run exits 255, as under
 * libpipeline.
 *
 * The caller keeps the pid, watches the exit with pidfd_open() and reaps
 * it with spawn_wait() (waitpid on that pid).  Nothing installs a SIGCHLD
 * handler: our waitpid()s are the only ones.
 */
#ifndef QWEN_SPAWN_H
#define QWEN_SPAWN_H

#include <sys/types.h>

struct spawn_cmd;

/*
 * A command running name (looked up on $PATH when it has no '/'), whose
 * argv[0] is name's last component; a file execve refuses as no
 * executable (no #! line) runs under /bin/sh, as execvp runs it.  An allocation failure here or in the
 * calls below is kept and reported by spawn_start() (ENOMEM).  Never NULL.
 */
struct spawn_cmd *spawn_cmd_new(const char *name);
/* Likewise with the arguments that follow name, up to a NULL. */
struct spawn_cmd *spawn_cmd_new_args(const char *name, ...)
	    __attribute__((sentinel));
void	spawn_cmd_arg(struct spawn_cmd *, const char *arg);
/* Set, or remove, one variable of the command's environment (in order). */
void	spawn_cmd_setenv(struct spawn_cmd *, const char *name, const char *value);
void	spawn_cmd_unsetenv(struct spawn_cmd *, const char *name);
/* Run the command in dir. */
void	spawn_cmd_chdir(struct spawn_cmd *, const char *dir);
/*
 * Call fn(arg) in the child just before exec (after the directory
 * change); fn must be async-signal-safe (setpgid, sigaction).
 */
void	spawn_cmd_pre_exec(struct spawn_cmd *, void (*fn)(void *), void *arg);
void	spawn_cmd_free(struct spawn_cmd *);

/*
 * Fork and run cmd with in_fd, out_fd and err_fd (each -1 to inherit; else
 * above 2) as its stdin, stdout and stderr.  cmd is freed and the three
 * descriptors closed in the parent, also on failure.  Returns the pid, or
 * -1 with errno (EAGAIN, ENOMEM from fork or building cmd; EINVAL for a
 * bad descriptor).  A failed exec shows as exit status 255.
 */
pid_t	spawn_start(struct spawn_cmd *cmd, int in_fd, int out_fd, int err_fd);

/* Reap pid into *wstatus (waitpid's status); -1 with errno (ECHILD). */
int	spawn_wait(pid_t pid, int *wstatus);

/*
 * A wait status as pipeline_wait() returns it: the exit status, or 128
 * plus the signal (a SIGPIPE counts as 0).
 */
int	spawn_status(int wstatus);

#endif
