/*
 * spawn.c: our own fork, libpipeline's exec (spawn.h says why).
 */
#include "config.h"

#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "spawn.h"

#define SPAWN_SETUP_FAILED	255	/* what libpipeline's failed exec exits with */

/* In the child: fd becomes target (and loses FD_CLOEXEC); -1 keeps ours. */
static int
spawn_move_fd(int fd, int target)
{
	if (fd == -1)
		return 0;
	if (dup2(fd, target) == -1)
		return -1;
	return close(fd);
}

/*
 * In the child: a caught signal would run the parent's handler until exec
 * (exec resets it only then), so it gets SIG_DFL before the mask opens.
 * Ignored signals stay ignored, as they would across exec.
 */
static void
spawn_reset_signals(const sigset_t *mask)
{
	struct sigaction sa, old;
	int sig;

	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	sigemptyset(&sa.sa_mask);
	for (sig = 1; sig < NSIG; sig++) {
		if (sigaction(sig, NULL, &old) == -1)
			continue;	/* not a signal, or SIGKILL/SIGSTOP */
		if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)
			sigaction(sig, &sa, NULL);
	}
	sigprocmask(SIG_SETMASK, mask, NULL);
}

/* The forked child: async-signal-safe calls only until pipecmd_exec. */
static void __attribute__((noreturn))
spawn_child(pipecmd *cmd, int in_fd, int out_fd, int err_fd)
{
	sigset_t none;

	if (spawn_move_fd(in_fd, STDIN_FILENO) == -1 ||
	    spawn_move_fd(out_fd, STDOUT_FILENO) == -1 ||
	    spawn_move_fd(err_fd, STDERR_FILENO) == -1)
		_exit(SPAWN_SETUP_FAILED);
	sigemptyset(&none);
	spawn_reset_signals(&none);
	pipecmd_exec(cmd);	/* exits SPAWN_SETUP_FAILED when exec fails */
}

static void
spawn_close(int fd)
{
	if (fd != -1)
		close(fd);
}

pid_t
spawn_cmd(pipecmd *cmd, int in_fd, int out_fd, int err_fd)
{
	sigset_t all, old;
	pid_t pid;
	int saved;

	if ((in_fd >= 0 && in_fd <= 2) || (out_fd >= 0 && out_fd <= 2) ||
	    (err_fd >= 0 && err_fd <= 2)) {
		pipecmd_free(cmd);
		errno = EINVAL;
		return -1;
	}
	/* A child that exits (a failed exec) must not write our buffers again. */
	fflush(NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if ((pid = fork()) == 0)
		spawn_child(cmd, in_fd, out_fd, err_fd);
	saved = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pipecmd_free(cmd);
	spawn_close(in_fd);
	spawn_close(out_fd);
	spawn_close(err_fd);
	errno = saved;
	return pid;
}

int
spawn_wait(pid_t pid, int *wstatus)
{
	pid_t r;

	while ((r = waitpid(pid, wstatus, 0)) == -1 && errno == EINTR)
		;
	return r == -1 ? -1 : 0;
}

int
spawn_status(int wstatus)
{
	if (WIFSIGNALED(wstatus))
		return WTERMSIG(wstatus) == SIGPIPE ? 0 : 128 + WTERMSIG(wstatus);
	return WEXITSTATUS(wstatus);
}
