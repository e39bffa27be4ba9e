/* SPDX-License-Identifier: ISC */
/*
 * privdir.c: open a directory nobody else may write into, and check the
 * directory opened rather than a path that may change under us.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cause.h"
#include "privdir.h"

/* Whether the directory fd may be trusted under flags; -1 + *cause if not. */
static int
privdir_check(int fd, const char *what, const char *dir, int flags,
    char **cause)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return cause_errno(cause, errno, "%s %s: %s", what, dir,
		    strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cause_errno(cause, ENOTDIR, "%s %s is not a directory",
		    what, dir);
	if (st.st_uid != geteuid() &&
	    !(st.st_uid == 0 && (flags & PRIVDIR_ROOT_OK)))
		return cause_errno(cause, EPERM, "%s %s is owned by uid %u, "
		    "not %u", what, dir, (unsigned)st.st_uid,
		    (unsigned)geteuid());
	if ((flags & PRIVDIR_PRIVATE) && (st.st_mode & 077) != 0)
		return cause_errno(cause, EPERM, "%s %s has mode %04o, want "
		    "0700", what, dir, (unsigned)(st.st_mode & 07777));
	/* Sticky does not help: others could still plant names in it. */
	if ((st.st_mode & 022) != 0)
		return cause_errno(cause, EPERM, "%s %s is writable by others "
		    "(mode %04o); use a directory only its owner can write, "
		    "such as a 0700 one", what, dir,
		    (unsigned)(st.st_mode & 07777));
	return 0;
}

int
privdir_open(const char *what, const char *dir, int flags, char **cause)
{
	struct stat st;
	int fd, saved;

	*cause = NULL;
	if ((flags & PRIVDIR_CREATE) && mkdir(dir, 0700) == -1 &&
	    errno != EEXIST)
		return cause_errno(cause, errno, "%s %s: %s", what, dir,
		    strerror(errno));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* O_NOFOLLOW with O_DIRECTORY says ENOTDIR for a link. */
	if (fd == -1 && (errno == ELOOP || errno == ENOTDIR) &&
	    lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
		return cause_errno(cause, ELOOP, "%s %s is not a directory "
		    "(symlinks are refused)", what, dir);
	if (fd == -1)
		return cause_errno(cause, errno, "%s %s: %s", what, dir,
		    errno == ENOTDIR ? "not a directory" : strerror(errno));
	if (privdir_check(fd, what, dir, flags, cause) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

char *
privdir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/*
 * A new file in the directory dfd, mode 0600, named prefix plus six
 * random characters (into name, size bytes): the O_EXCL create never
 * follows a planted link.  Returns its descriptor (CLOEXEC), or -1 with
 * errno.
 */
int
privdir_mktemp(int dfd, const char *prefix, char *name, size_t size)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t n = strlen(prefix);
	int fd;

	if (n + 7 > size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (int tries = 0; tries < 100; tries++) {
		memcpy(name, prefix, n);
		for (size_t i = 0; i < 6; i++)
			name[n + i] = set[arc4random_uniform(sizeof(set) - 1)];
		name[n + 6] = '\0';
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd != -1 || errno != EEXIST)
			return fd;
	}
	return -1;
}
