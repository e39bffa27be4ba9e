/* SPDX-License-Identifier: ISC */
/*
 * pidfile.c: --pidfile for supervisors other than systemd.
 *
 * libbsd's pidfile_open(3) creates the file, locks it (flock) and tells
 * whose it is when another daemon holds the lock; pidfile_write(3) puts
 * our pid in; pidfile_remove(3) unlinks it if it is still the file we
 * opened.  A locked file belongs to a running daemon and is refused; an
 * unlocked one is stale (its daemon died) and is taken over.
 *
 * What libbsd lacks, and this file keeps:
 *   - a read-only check for --check-config (pidfile_open creates the file);
 *   - close-on-exec on its descriptor, so no child inherits the lock;
 *   - removal only by the process that took it: spawn_start() forks, and a
 *     child that exits before its exec must not unlink our file;
 *   - fsync of the pid.
 * What it does not give: the old write-under-a-temporary-name-then-link,
 * so a reader racing the start may see an empty file for an instant
 * (supervisors read the file after the daemon said it is ready).
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve.h"
#include "xmalloc.h"

static struct pidfh *pid_fh;
static pid_t pid_owner;

/*
 * Whether a running daemon holds path (it is locked): 1 with its pid in
 * *pid (0 if unreadable), 0 if absent or stale, -1 on error (errno).
 */
static int
pidfile_held(const char *path, long *pid)
{
	char buf[32];
	ssize_t n;
	int fd, held;

	*pid = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	held = flock(fd, LOCK_SH | LOCK_NB) == -1 && errno == EWOULDBLOCK;
	if (held && (n = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		*pid = strtol(buf, NULL, 10);
	}
	close(fd);
	return held;
}

int
pidfile_check(const char *path, char **cause)
{
	long pid;
	int held;

	if ((held = pidfile_held(path, &pid)) == -1) {
		xasprintf(cause, "--pidfile %s: %s", path, strerror(errno));
		return -1;
	}
	if (held) {
		xasprintf(cause, "--pidfile %s: held by a running qwen-serve "
		    "(pid %ld)", path, pid);
		return -1;
	}
	return 0;
}

int
pidfile_take(const char *path, char **cause)
{
	pid_t other = 0;
	int fd;

	*cause = NULL;
	if ((pid_fh = pidfile_open(path, 0644, &other)) == NULL) {
		if (errno == EEXIST)
			xasprintf(cause, "--pidfile %s: held by a running "
			    "qwen-serve (pid %ld)", path, (long)other);
		else
			xasprintf(cause, "--pidfile %s: %s", path,
			    strerror(errno));
		return -1;
	}
	fd = pidfile_fileno(pid_fh);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 ||
	    pidfile_write(pid_fh) == -1 || fsync(fd) == -1) {
		xasprintf(cause, "--pidfile %s: %s", path, strerror(errno));
		pidfile_remove(pid_fh);
		pid_fh = NULL;
		return -1;
	}
	pid_owner = getpid();
	return 0;
}

void
pidfile_release(void)
{
	if (pid_fh == NULL || getpid() != pid_owner)
		return;
	pidfile_remove(pid_fh);
	pid_fh = NULL;
}
