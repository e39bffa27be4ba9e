/* SPDX-License-Identifier: ISC */
/*
 * privdir.h: a directory that nobody else may write into: the socket's,
 * the generated token's, the index cache.  It is opened once (never
 * through a symbolic link) and checked on its descriptor, so the checked
 * directory is the one used: callers work with openat() and friends on
 * the descriptor, never with the path again.
 */
#ifndef QWEN_PRIVDIR_H
#define QWEN_PRIVDIR_H

#include <stddef.h>

#define PRIVDIR_CREATE	0x1	/* make a missing last component, mode 0700 */
#define PRIVDIR_PRIVATE	0x2	/* no group or other access at all (0700) */
#define PRIVDIR_ROOT_OK	0x4	/* owned by root will also do */

/*
 * Open dir (O_DIRECTORY | O_NOFOLLOW) and check it: a real directory,
 * owned by us (or root with PRIVDIR_ROOT_OK), writable by no group or
 * other user, sticky or not (a shared directory such as /tmp is
 * refused), and with PRIVDIR_PRIVATE without any group or other access.
 * Returns the descriptor (CLOEXEC), or -1 with errno and a message
 * naming what (e.g. "socket directory") in *cause (caller frees).
 */
int	privdir_open(const char *what, const char *dir, int flags, char **cause);

/*
 * A new file in the directory dfd, mode 0600, named prefix plus six
 * random characters (written to name, size bytes).  Returns its
 * descriptor (CLOEXEC), or -1 with errno.
 */
int	privdir_mktemp(int dfd, const char *prefix, char *name, size_t size);

/* The directory part of path ("." for none, "/" for the root).  Caller frees. */
char	*privdir_of(const char *path);

#endif
