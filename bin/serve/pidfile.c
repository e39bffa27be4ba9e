/*
 * pidfile.c: --pidfile for supervisors other than systemd.
 *
 * The file is written whole under a temporary name, locked (flock) and
 * then linked into place, so a reader never sees a partial pid and the lock
 * says whether its writer is alive: a locked pidfile belongs to a running
 * daemon and is refused; an unlocked one is stale (its daemon died) and is
 * replaced.  The lock lives as long as we do; on exit the file is removed
 * if it is still ours.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve.h"
#include "xmalloc.h"

static char *pid_path;
static int pid_fd = -1;
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

/* Whether fd is the file now at path. */
static int
pidfile_is_ours(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && lstat(path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A temporary file beside path holding our pid, locked; its fd or -1. */
static int
pidfile_temp(const char *path, char **tmp, char **cause)
{
	char line[32];
	int fd, len;

	xasprintf(tmp, "%s.XXXXXX", path);
	if ((fd = mkostemp(*tmp, O_CLOEXEC)) == -1) {
		xasprintf(cause, "--pidfile %s: %s", path, strerror(errno));
		free(*tmp);
		*tmp = NULL;
		return -1;
	}
	len = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	if (flock(fd, LOCK_EX | LOCK_NB) == -1 || fchmod(fd, 0644) == -1 ||
	    write(fd, line, (size_t)len) != len || fsync(fd) == -1) {
		xasprintf(cause, "--pidfile %s: %s", path, strerror(errno));
		unlink(*tmp);
		close(fd);
		return -1;
	}
	return fd;
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
	char *tmp;
	int fd;

	*cause = NULL;
	if (pidfile_check(path, cause) == -1)
		return -1;
	if ((fd = pidfile_temp(path, &tmp, cause)) == -1)
		return -1;
	/* link() never replaces; a stale file left by a dead daemon is. */
	if (link(tmp, path) == -1 &&
	    (errno != EEXIST || pidfile_check(path, cause) == -1 ||
	    rename(tmp, path) == -1)) {
		if (errno != 0 && *cause == NULL)
			xasprintf(cause, "--pidfile %s: %s", path,
			    strerror(errno));
		goto fail;
	}
	unlink(tmp);
	if (!pidfile_is_ours(fd, path)) {
		xasprintf(cause, "--pidfile %s: another qwen-serve took it "
		    "meanwhile", path);
		goto fail;
	}
	free(tmp);
	pid_path = xstrdup(path);
	pid_fd = fd;
	pid_owner = getpid();
	return 0;
fail:
	unlink(tmp);
	free(tmp);
	close(fd);
	return -1;
}

void
pidfile_release(void)
{
	if (pid_fd == -1 || getpid() != pid_owner)
		return;
	if (pidfile_is_ours(pid_fd, pid_path))
		unlink(pid_path);
	close(pid_fd);
	pid_fd = -1;
	free(pid_path);
	pid_path = NULL;
}
