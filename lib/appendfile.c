/* SPDX-License-Identifier: ISC */
/* appendfile.c: open and atomically reopen append-only files. */
#include "config.h"	/* _GNU_SOURCE, for dup3 */

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "appendfile.h"

/* Private to the user: logs and traces may name sessions. */
int
appendfile_open(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

/*
 * dup3 swaps the descriptor atomically, so a thread writing meanwhile
 * writes to the old or the new file, never to a closed descriptor or to
 * whatever reused its number.
 */
int
appendfile_reopen(int fd, const char *path)
{
	int nfd, saved;

	if ((nfd = appendfile_open(path)) == -1)
		return -1;
	if (dup3(nfd, fd, O_CLOEXEC) == -1) {
		saved = errno;
		close(nfd);
		errno = saved;
		return -1;
	}
	close(nfd);
	return 0;
}
