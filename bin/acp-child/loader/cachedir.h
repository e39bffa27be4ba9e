/* SPDX-License-Identifier: ISC */
/*
 * cachedir.h: the index cache's directory, opened once and checked on its
 * descriptor; every file operation goes through that descriptor.
 */
#ifndef QWEN_ACP_CACHEDIR_H
#define QWEN_ACP_CACHEDIR_H

#include <stddef.h>
#include <stdint.h>

#define CACHEDIR_NAME_MAX	32	/* "tx-<16 hex>.idx", ".tx-XXXXXX" */

/*
 * Open the cache directory dir (with create, made 0700 with its parents
 * when missing) and check it: a real directory, ours, writable by nobody
 * else.  Its descriptor, or -1 with errno (ENOENT or ENOTDIR when missing, EPERM
 * when refused) and a message in *cause (replaced; caller frees; cause
 * may be NULL).
 */
int	cachedir_open(const char *dir, int create, char **cause);

/* The index file name of the transcript at path, tx-<hash>.idx. */
void	cachedir_index_name(const char *path, char *name, size_t size);

/*
 * Open the index of the transcript at path in dir for reading (never
 * through a link).  -1 with errno: ENOENT or ENOTDIR (no directory, no
 * index), EPERM
 * (a directory others could write), else why the file could not be opened.
 */
int	cachedir_open_index(const char *dir, const char *path);

/* A new staging file in dfd (mode 0600, name into tmp): its descriptor or -1. */
int	cachedir_stage(int dfd, char *tmp, size_t size);

/* The written, synced staging file tmp becomes name (discarded on failure). */
int	cachedir_commit(int dfd, const char *tmp, const char *name);

/* Remove the staging file tmp (errno kept). */
void	cachedir_discard(int dfd, const char *tmp);

/*
 * Remove the least recently used indexes (never keep) until the bounds
 * hold, and staging files over an hour old; other names are never touched.
 */
void	cachedir_prune(int dfd, const char *keep, uint64_t max_bytes,
	    size_t max_files);

#endif
