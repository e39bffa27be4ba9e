/* SPDX-License-Identifier: ISC */
/*
 * cachedir.c: the index cache's directory.  It is opened once, never
 * through a symbolic link, and checked on that descriptor (ours, writable
 * by nobody else); every read, write, rename and removal then goes
 * through the descriptor (openat, renameat, unlinkat, fstatat), so a
 * directory swapped in after the check is never used.  Pruning touches
 * only names it could have made: tx-<16 hex digits>.idx and the staging
 * .tx-<6 characters>; anything else in the directory is left alone.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cachedir.h"
#include "paths.h"
#include "privdir.h"
#include "sum64.h"
#include "transcript.h"
#include "transcript-int.h"

#define CACHEDIR_STAGE		".tx-"
#define CACHEDIR_STAGE_AGE	3600	/* a crashed save's file, seconds */

int
cachedir_open(const char *dir, int create, char **cause)
{
	char *why;
	int fd;

	if (create && paths_mkdir_p(dir, 0700) == -1) {
		transcript_cause(cause, "index cache %s: %s", dir, strerror(errno));
		return -1;
	}
	if ((fd = privdir_open("index cache", dir, 0, &why)) != -1)
		return fd;
	if (errno == ENOENT || errno == ENOTDIR)
		transcript_cause(cause, "index cache %s: %s", dir, strerror(errno));
	else {
		/* Another user could plant or read indexes: not used. */
		transcript_cause(cause, "%s: not private, not used",
		    why != NULL ? why : strerror(errno));
		errno = EPERM;
	}
	free(why);
	return -1;
}

void
cachedir_index_name(const char *path, char *name, size_t size)
{
	snprintf(name, size, "tx-%016llx.idx",
	    (unsigned long long)sum64(0, path, strlen(path)));
}

int
cachedir_open_index(const char *dir, const char *path)
{
	char name[CACHEDIR_NAME_MAX], *cause = NULL;
	int dfd, fd, saved;

	if ((dfd = cachedir_open(dir, 0, &cause)) == -1) {
		free(cause);
		return -1;
	}
	cachedir_index_name(path, name, sizeof(name));
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	saved = errno;
	close(dfd);
	errno = saved;
	if (fd == -1 && errno == EPERM)
		errno = EACCES;		/* EPERM means the directory */
	return fd;
}

int
cachedir_stage(int dfd, char *tmp, size_t size)
{
	return privdir_mktemp(dfd, CACHEDIR_STAGE, tmp, size);
}

int
cachedir_commit(int dfd, const char *tmp, const char *name)
{
	if (renameat(dfd, tmp, dfd, name) == -1) {
		cachedir_discard(dfd, tmp);
		return -1;
	}
	/* Neither the file nor the directory is synced: what is kept here is
	   checked on every use (checksums, the transcript's identity and
	   digests), so a crash costs a full pass, never a wrong answer; and
	   an fsync's journal commit stalled the next restore's file creation
	   (its writer lease) by milliseconds. */
	return 0;
}

void
cachedir_discard(int dfd, const char *tmp)
{
	int saved = errno;

	(void)unlinkat(dfd, tmp, 0);
	errno = saved;
}

/* Whether name is one we write: tx-<16 lowercase hex>.idx. */
static int
cachedir_is_index(const char *name)
{
	if (strlen(name) != 3 + 16 + 4 || strncmp(name, "tx-", 3) != 0 ||
	    strcmp(name + 19, ".idx") != 0)
		return 0;
	for (int i = 3; i < 19; i++)
		if (!isdigit((unsigned char)name[i]) &&
		    (name[i] < 'a' || name[i] > 'f'))
			return 0;
	return 1;
}

/* Whether name is a staging file privdir_mktemp made: .tx-<6 alnum>. */
static int
cachedir_is_stage(const char *name)
{
	size_t n = strlen(CACHEDIR_STAGE);

	if (strlen(name) != n + 6 || strncmp(name, CACHEDIR_STAGE, n) != 0)
		return 0;
	for (size_t i = n; i < n + 6; i++)
		if (!isalnum((unsigned char)name[i]))
			return 0;
	return 1;
}

/* The token sums kept beside the index name (tx-<hash>.sum) go with it. */
static void
cachedir_prune_sums(int dfd, const char *name)
{
	char sums[CACHEDIR_NAME_MAX];
	size_t n;

	if (!cachedir_is_index(name) ||
	    (n = strlcpy(sums, name, sizeof sums)) >= sizeof sums)
		return;
	memcpy(sums + n - 4, ".sum", 4);
	(void)unlinkat(dfd, sums, 0);
}

struct cachedir_ent {
	char		 name[CACHEDIR_NAME_MAX];
	uint64_t	 size;
	struct timespec	 used;
};

static int
ent_cmp(const void *a, const void *b)
{
	const struct cachedir_ent *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Collect our regular indexes (mtime = last use); drop stale staging files. */
static struct cachedir_ent *
cachedir_list(DIR *d, size_t *n)
{
	struct cachedir_ent *e = NULL, *ne;
	struct dirent *de;
	struct stat st;
	size_t cap = 0;
	time_t now = time(NULL);

	*n = 0;
	while ((de = readdir(d)) != NULL) {
		if (!cachedir_is_index(de->d_name) && !cachedir_is_stage(de->d_name))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (cachedir_is_stage(de->d_name)) {
			if (st.st_mtime + CACHEDIR_STAGE_AGE < now)
				(void)unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((ne = reallocarray(e, cap, sizeof *e)) == NULL)
				break;
			e = ne;
		}
		strlcpy(e[*n].name, de->d_name, sizeof e->name);
		e[*n].size = (uint64_t)st.st_size;
		e[(*n)++].used = st.st_mtim;
	}
	return e;
}

void
cachedir_prune(int dfd, const char *keep, uint64_t max_bytes, size_t max_files)
{
	struct cachedir_ent *e;
	uint64_t total = 0;
	size_t i, n, left;
	DIR *d;
	int fd;

	/* fdopendir takes the descriptor: a duplicate, read from the start. */
	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	e = cachedir_list(d, &n);
	for (i = 0; i < n; i++)
		total += e[i].size;
	qsort(e, n, sizeof *e, ent_cmp);
	for (i = 0, left = n; i < n && (total > max_bytes || left > max_files); i++) {
		if (strcmp(e[i].name, keep) == 0)
			continue;
		if (unlinkat(dirfd(d), e[i].name, 0) == 0) {
			total -= e[i].size;
			left--;
			cachedir_prune_sums(dirfd(d), e[i].name);
		}
	}
	free(e);
	closedir(d);
}
