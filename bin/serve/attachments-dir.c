/* SPDX-License-Identifier: ISC */
/*
 * attachments-dir.c: the private directories of a workspace's session
 * state beside upstream's: <data>/tmp/<sha256 of the workspace>/<leaf>
 * ($QWEN_SERVE_SESSION_ATTACHMENTS_ROOT/<sha256>/<leaf> when set), the
 * attachments' ("attachments", a session-<id> directory each) and the
 * artifacts' ("artifacts"); each opened once, never through a link,
 * checked on its descriptor (0700, ours).  Also what they hold (files,
 * bytes; the daemon's total counted on first use, then kept) and a
 * deleted session's directory removed through a tombstone name.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sha2.h>

#include "log.h"
#include "paths.h"
#include "privdir.h"
#include "serve.h"
#include "xmalloc.h"

#define ROOT_ENV	"QWEN_SERVE_SESSION_ATTACHMENTS_ROOT"
#define SCAN_MAX	4096		/* directory entries read at most */

static uint64_t	total_bytes;	/* over every workspace's attachments */
static int	total_known;

/* <base>/<sha256 of ws>/<leaf>.  Caller frees. */
static char *
root_path(const char *ws, const char *leaf)
{
	char hash[SHA256_DIGEST_STRING_LENGTH], *base, *out;
	const char *env = getenv(ROOT_ENV);

	SHA256Data((const uint8_t *)ws, strlen(ws), hash);
	if (env != NULL && env[0] == '/')
		base = xstrdup(env);
	else {
		char *data = paths_data_dir(conf.data_dir);

		xasprintf(&base, "%s/tmp", data);
		free(data);
	}
	xasprintf(&out, "%s/%s/%s", base, hash, leaf);
	free(base);
	return out;
}

/*
 * A private directory of the session state kept for ws beside upstream's
 * (leaf "attachments", "artifacts"), made when create: a descriptor, or
 * -1 with errno and *cause.
 */
int
attachments_state_open(const char *ws, const char *leaf, int create,
    char **cause)
{
	char *root = root_path(ws, leaf), *parent;
	int fd;

	if (create) {
		parent = privdir_of(root);
		(void)paths_mkdir_p(parent, 0700);
		free(parent);
	}
	fd = privdir_open(strcmp(leaf, "attachments") == 0 ?
	    "attachments directory" : "artifacts directory", root,
	    PRIVDIR_PRIVATE | (create ? PRIVDIR_CREATE : 0), cause);
	free(root);
	return fd;
}

/* The attachments directory of ws. */
static int
root_open(const char *ws, int create, char **cause)
{
	return attachments_state_open(ws, "attachments", create, cause);
}

/* "session-<id>", the id as upstream's encodeURIComponent leaves it. */
static void
session_name(const char *sid, char *buf, size_t size)
{
	snprintf(buf, size, "session-%s", sid);
	for (char *p = buf; *p != '\0'; p++)
		if (*p == ':')
			*p = '_';
}

/* The session's directory below rfd (made when create): a descriptor or -1. */
static int
session_open(int rfd, const char *sid, int create)
{
	char name[SERVE_SESSION_ID_MAX + 16];
	struct stat st;
	int fd;

	session_name(sid, name, sizeof(name));
	if (create && mkdirat(rfd, name, 0700) == -1 && errno != EEXIST)
		return -1;
	if ((fd = openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* The session's directory in ws: a descriptor, or -1 (ENOENT: none yet). */
int
attachments_dir_open(const char *ws, const char *sid, int create, char **cause)
{
	int rfd, fd;

	if ((rfd = root_open(ws, create, cause)) == -1)
		return -1;
	if ((fd = session_open(rfd, sid, create)) == -1 && create)
		xasprintf(cause, "attachments of session %s: %s", sid,
		    strerror(errno));
	close(rfd);
	return fd;
}

/* An attachment file's size (its entry a regular file with a valid name). */
int
attachments_entry_stat(int dfd, const char *name, struct stat *st)
{
	if (!attachments_name_ok(name) ||
	    fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISREG(st->st_mode))
		return -1;
	return 0;
}

/* Files and bytes in a session's directory (the first SCAN_MAX entries). */
void
attachments_dir_usage(int dfd, size_t *count, uint64_t *bytes)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, n = 0;

	*count = 0;
	*bytes = 0;
	if ((fd = dup(dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL && n++ < SCAN_MAX)
		if (attachments_entry_stat(dfd, de->d_name, &st) == 0) {
			(*count)++;
			*bytes += (uint64_t)st.st_size;
		}
	closedir(d);
}

/* The bytes under one workspace's attachments directory. */
static uint64_t
root_usage(const char *ws)
{
	struct dirent *de;
	uint64_t sum = 0, b;
	size_t c;
	char *cause = NULL;
	DIR *d;
	int rfd, sfd, n = 0;

	if ((rfd = root_open(ws, 0, &cause)) == -1) {
		free(cause);
		return 0;
	}
	if ((d = fdopendir(dup(rfd))) != NULL) {
		while ((de = readdir(d)) != NULL && n++ < SCAN_MAX) {
			if (strncmp(de->d_name, "session-", 8) != 0 ||
			    (sfd = openat(rfd, de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
				continue;
			attachments_dir_usage(sfd, &c, &b);
			sum += b;
			close(sfd);
		}
		closedir(d);
	}
	close(rfd);
	return sum;
}

/* The daemon's attachment bytes, counted the first time they are needed. */
uint64_t
attachments_total(void)
{
	if (!total_known) {
		total_bytes = 0;
		for (size_t i = 0; i < conf.n_workspaces; i++)
			total_bytes += root_usage(conf.workspaces[i]);
		total_known = 1;
	}
	return total_bytes;
}

/* Empty the directory dfd (its regular files) and close it. */
static void
dir_empty(int dfd)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if ((fd = dup(dfd)) != -1 && (d = fdopendir(fd)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0)
				(void)unlinkat(dfd, de->d_name, 0);
		closedir(d);
	} else if (fd != -1)
		close(fd);
	close(dfd);
}

/*
 * The session's data was deleted: its attachments go too, through a
 * fixed tombstone name (".session-<id>.deleting"), so a kill halfway
 * leaves either the directory or a tombstone the next delete removes.
 */
void
attachments_delete(const char *ws, const char *sid)
{
	char name[SERVE_SESSION_ID_MAX + 16], tomb[SERVE_SESSION_ID_MAX + 32];
	char *cause = NULL;
	int rfd, tfd;

	if ((rfd = root_open(ws, 0, &cause)) == -1) {
		free(cause);
		return;
	}
	session_name(sid, name, sizeof(name));
	snprintf(tomb, sizeof(tomb), ".%s.deleting", name);
	if (renameat(rfd, name, rfd, tomb) == -1 && errno != ENOENT)
		log_warn("attachments of session %s", sid);
	if ((tfd = openat(rfd, tomb, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		dir_empty(tfd);
		(void)unlinkat(rfd, tomb, AT_REMOVEDIR);
		(void)fsync(rfd);
		total_known = 0;	/* counted again when next needed */
	}
	close(rfd);
}

/* The daemon's attachment bytes changed by delta (when they are counted). */
void
attachments_total_adjust(int64_t delta)
{
	if (!total_known)
		return;
	if (delta < 0 && (uint64_t)-delta > total_bytes)
		total_bytes = 0;
	else
		total_bytes += (uint64_t)delta;
}
