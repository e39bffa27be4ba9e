/*
 * forkslot.c: a placeholder child that holds a process slot until the
 * real fork (forkslot.h says why).
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "forkslot.h"

int
forkslot_take(pid_t *pid)
{
	pid_t p;

	*pid = -1;
	if ((p = fork()) == -1)
		return -1;
	if (p == 0) {
		/* Only async-signal-safe calls here: the parent has threads. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	*pid = p;
	return 0;
}

void
forkslot_release(pid_t pid)
{
	int saved = errno;

	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	/* ECHILD: libpipeline's handler reaped it first; either way it is gone. */
	while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	errno = saved;
}
