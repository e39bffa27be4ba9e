/*
 * failfork.c: an LD_PRELOAD shim that makes fork() fail with EAGAIN while
 * the file named by $FAILFORK_FILE exists, as it does at RLIMIT_NPROC or
 * under memory pressure.  It stands in for both our own fork and
 * libpipeline's (which ends the process when fork fails).
 */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

pid_t
fork(void)
{
	static pid_t (*real_fork)(void);
	const char *flag = getenv("FAILFORK_FILE");

	if (flag != NULL && access(flag, F_OK) == 0) {
		errno = EAGAIN;
		return -1;
	}
	if (real_fork == NULL)
		real_fork = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	return real_fork();
}
