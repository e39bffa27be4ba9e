/* SPDX-License-Identifier: ISC */
/*
 * failfork.c: an LD_PRELOAD shim that makes fork() fail with EAGAIN while
 * the file named by $FAILFORK_FILE exists, as it does at RLIMIT_NPROC or
 * under memory pressure.  An empty file fails every fork; a file holding
 * a number N fails only the N-th fork this process makes while the file
 * exists (the others succeed), so a test can aim at the fork that comes
 * after a first successful one: with a placeholder-then-libpipeline
 * design that is libpipeline's own, which ends the process.  vfork()
 * fails the same way and otherwise forks (a wrapper cannot return into
 * a vforked child's borrowed stack; a fork is a valid vfork).
 */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* Whether this fork fails: the file exists and names no other fork. */
static int
failfork_now(const char *flag)
{
	static long seen;
	char buf[32];
	ssize_t n;
	int fd;

	if ((fd = open(flag, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	seen++;
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10) == seen;
}

pid_t
fork(void)
{
	static pid_t (*real_fork)(void);
	const char *flag = getenv("FAILFORK_FILE");

	if (flag != NULL && failfork_now(flag)) {
		errno = EAGAIN;
		return -1;
	}
	if (real_fork == NULL)
		real_fork = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	return real_fork();
}

pid_t
vfork(void)
{
	return fork();
}
