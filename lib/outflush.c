/* SPDX-License-Identifier: ISC */
/*
 * outflush.c: the write status of a stdio stream at exit (see outflush.h).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>

#include "outflush.h"

/* Whether fd is a pipe or socket whose reader has gone. */
static int
reader_gone(int fd)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLOUT };
	struct stat	st;

	if (fd < 0 || fstat(fd, &st) == -1 ||
	    !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return 0;
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLERR | POLLHUP));
}

/* 0: written (or the reader left); -1 and errno: a write error. */
int
outflush(FILE *f)
{
	int	saved = errno;

	errno = 0;
	if (fflush(f) == 0 && !ferror(f)) {
		errno = saved;
		return 0;
	}
	/* An earlier write failed and this flush had nothing left to say. */
	if (errno == 0)
		errno = saved != 0 ? saved : EIO;
	if (errno == EPIPE || reader_gone(fileno(f)))
		return 0;
	return -1;
}
