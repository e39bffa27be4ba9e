/* SPDX-License-Identifier: ISC */
/*
 * attachments.c: a session's attachments, the files a client uploads for
 * its prompts, kept where upstream's daemon keeps them: one file each,
 * named by the attachment's id (attachments-name.c), in
 * <data>/tmp/<sha256 of the workspace>/attachments/session-<id>/
 * ($QWEN_SERVE_SESSION_ATTACHMENTS_ROOT/<sha256>/attachments/... when
 * set).  The attachments directory and each session's are private
 * (0700, ours, checked on their descriptors, used through them).  A file
 * is written under a temporary name, synced, and linked into place
 * without replacing anything (a name taken gets its next alternative),
 * then the directory is synced: a kill leaves it whole or absent.  They
 * stay with an archived session and go with a deleted one.  Bounded by
 * ATTACHMENT_ITEM_MAX a file, ATTACHMENT_SESSION_MAX files and
 * ATTACHMENT_SESSION_BYTES a session, ATTACHMENT_TOTAL_BYTES over the
 * daemon's workspaces (counted on first use, then kept).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/uio.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "paths.h"
#include "privdir.h"
#include "serve.h"
#include "xmalloc.h"

#define TMP_PREFIX	".part:"	/* ':' is in no attachment's name */
#define SCAN_MAX	4096		/* directory entries read at most */

/* The reference upstream answers for a stored attachment (caller frees). */
static json_object *
reference(const char *name, uint64_t size)
{
	json_object *o = xjson_object_new_object();
	const char *type = attachments_type(name);

	json_object_object_add(o, "type", xjson_object_new_string(
	    attachments_image_type(type) ? "image" : "resource"));
	json_object_object_add(o, "attachmentId", xjson_object_new_string(name));
	json_object_object_add(o, "mimeType", xjson_object_new_string(type));
	json_object_object_add(o, "size", xjson_object_new_int64((int64_t)size));
	return o;
}

/* Write the iovecs whole to fd, then sync it.  0 or -1 with errno. */
static int
write_synced(int fd, const struct iovec *iov, int iovcnt)
{
	for (int i = 0; i < iovcnt; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;
		ssize_t w;

		while (left > 0) {
			if ((w = write(fd, p, left)) == -1) {
				if (errno == EINTR)
					continue;
				return -1;
			}
			p += w;
			left -= (size_t)w;
		}
	}
	return fsync(fd);
}

/* Link tmp under name or its first free alternative: the name, or NULL. */
static char *
link_free_name(int dfd, const char *tmp, const char *name)
{
	char *cand;

	for (unsigned n = 0; n <= ATTACHMENT_SESSION_MAX + SCAN_MAX; n++) {
		cand = attachments_name_nth(name, n);
		if (!attachments_name_ok(cand)) {
			free(cand);
			errno = EINVAL;
			return NULL;
		}
		if (linkat(dfd, tmp, dfd, cand, 0) == 0)
			return cand;
		free(cand);
		if (errno != EEXIST)
			return NULL;
	}
	errno = EEXIST;
	return NULL;
}

/* Whether len more bytes fit the session's and the daemon's bounds. */
static int
fits(int dfd, size_t len, char **cause)
{
	uint64_t bytes;
	size_t count;

	attachments_dir_usage(dfd, &count, &bytes);
	if (count >= ATTACHMENT_SESSION_MAX) {
		xasprintf(cause, "Session attachments are full (max %u)",
		    ATTACHMENT_SESSION_MAX);
		return 0;
	}
	if (bytes + len > ATTACHMENT_SESSION_BYTES ||
	    attachments_total() + len > ATTACHMENT_TOTAL_BYTES) {
		xasprintf(cause, "Session attachments are full (max %u MiB a "
		    "session, %u MiB in all)", ATTACHMENT_SESSION_BYTES >> 20,
		    ATTACHMENT_TOTAL_BYTES >> 20);
		return 0;
	}
	return 1;
}

/*
 * Store len bytes (the iovecs) as the session's attachment named after
 * given, of the client's type: its reference (caller frees), or NULL with
 * *status (400 a bad name or type, 413 over a bound, 500) and *cause.
 */
json_object *
attachments_put(const char *ws, const char *sid, const char *given,
    const char *type, const struct iovec *iov, int iovcnt, size_t len,
    int *status, char **cause)
{
	char tmp[32], *name, *stored = NULL;
	json_object *ref;
	int image = attachments_image_type(type), dfd, fd;
	const char *ntype;

	*status = 400;
	if ((name = attachments_name(given)) == NULL) {
		xasprintf(cause, "Session attachment name is invalid");
		return NULL;
	}
	ntype = attachments_type(name);
	if ((image && strcmp(ntype, type) != 0) ||
	    (attachments_image_type(ntype) && !image)) {
		free(name);
		xasprintf(cause, "Attachment name and Content-Type do not match");
		return NULL;
	}
	*status = 413;
	if ((image && len == 0) || len > ATTACHMENT_ITEM_MAX) {
		free(name);
		xasprintf(cause, "Session attachment must be at most %u bytes "
		    "and images cannot be empty", ATTACHMENT_ITEM_MAX);
		return NULL;
	}
	*status = 500;
	if ((dfd = attachments_dir_open(ws, sid, 1, cause)) == -1) {
		free(name);
		return NULL;
	}
	if (!fits(dfd, len, cause))
		*status = 413;
	else if ((fd = privdir_mktemp(dfd, TMP_PREFIX, tmp, sizeof(tmp))) == -1)
		xasprintf(cause, "cannot store an attachment: %s", strerror(errno));
	else {
		if (write_synced(fd, iov, iovcnt) == -1 ||
		    (stored = link_free_name(dfd, tmp, name)) == NULL)
			xasprintf(cause, "cannot store an attachment: %s",
			    strerror(errno));
		close(fd);
		(void)unlinkat(dfd, tmp, 0);
		if (stored != NULL && fsync(dfd) == -1)
			log_warn("attachments of session %s: fsync", sid);
	}
	close(dfd);
	free(name);
	if (stored == NULL)
		return NULL;
	attachments_total_adjust((int64_t)len);
	ref = reference(stored, len);
	free(stored);
	return ref;
}

/* One listed attachment: its reference and its file's time. */
struct listed {
	json_object	*ref;
	struct timespec	 mtime;
};

/* Upstream's order: oldest first, then by id. */
static int
listed_cmp(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec / 1000000 != y->mtime.tv_nsec / 1000000)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(json_get_str(x->ref, "attachmentId"),
	    json_get_str(y->ref, "attachmentId"));
}

/*
 * The session's attachments, oldest first: an array (caller frees), or
 * NULL with *cause when the directory cannot be read (none yet: []).
 */
json_object *
attachments_list(const char *ws, const char *sid, char **cause)
{
	struct listed *v = NULL;
	json_object *a;
	struct dirent *de;
	struct stat st;
	size_t n = 0, cap = 0;
	DIR *d;
	int dfd, fd;

	if ((dfd = attachments_dir_open(ws, sid, 0, cause)) == -1) {
		if (errno != ENOENT)
			return NULL;
		free(*cause);
		*cause = NULL;
		return xjson_object_new_array();
	}
	if ((fd = dup(dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		xasprintf(cause, "attachments of session %s: %s", sid,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		close(dfd);
		return NULL;
	}
	while ((de = readdir(d)) != NULL && n < SCAN_MAX) {
		if (attachments_entry_stat(dfd, de->d_name, &st) == -1)
			continue;
		if (n == cap)
			v = xreallocarray(v, cap = cap * 2 + 16, sizeof(*v));
		v[n].ref = reference(de->d_name, (uint64_t)st.st_size);
		v[n++].mtime = st.st_mtim;
	}
	closedir(d);
	close(dfd);
	if (n > 0)
		qsort(v, n, sizeof(*v), listed_cmp);
	a = xjson_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, v[i].ref);
	free(v);
	return a;
}

/*
 * Open the session's attachment aid to read it: a descriptor (its size
 * in *size), or -1 with errno (ENOENT: no such attachment, a name that is
 * no attachment's included).
 */
int
attachments_open(const char *ws, const char *sid, const char *aid, off_t *size)
{
	char *cause = NULL;
	struct stat st;
	int dfd, fd;

	if (!attachments_name_ok(aid)) {
		errno = ENOENT;
		return -1;
	}
	if ((dfd = attachments_dir_open(ws, sid, 0, &cause)) == -1) {
		free(cause);
		return -1;
	}
	fd = openat(dfd, aid, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd != -1 && (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))) {
		close(fd);
		errno = ENOENT;
		return -1;
	}
	if (fd != -1)
		*size = st.st_size;
	else if (errno == ELOOP)
		errno = ENOENT;
	return fd;
}

/* Whether the session holds attachment aid. */
int
attachments_has(const char *ws, const char *sid, const char *aid)
{
	off_t size;
	int fd = attachments_open(ws, sid, aid, &size);

	if (fd == -1)
		return 0;
	close(fd);
	return 1;
}

/* Remove the session's attachment aid: 1 removed, 0 none such, -1 failed. */
int
attachments_remove(const char *ws, const char *sid, const char *aid)
{
	char *cause = NULL;
	struct stat st;
	int dfd, rc = 0;

	if (!attachments_name_ok(aid))
		return 0;
	if ((dfd = attachments_dir_open(ws, sid, 0, &cause)) == -1) {
		free(cause);
		return errno == ENOENT ? 0 : -1;
	}
	if (attachments_entry_stat(dfd, aid, &st) == 0) {
		if (unlinkat(dfd, aid, 0) == 0) {
			rc = 1;
			attachments_total_adjust(-(int64_t)st.st_size);
			(void)fsync(dfd);
		} else if (errno != ENOENT)
			rc = -1;
	}
	close(dfd);
	return rc;
}


/*
 * The session's attachment aid whole (at most ATTACHMENT_ITEM_MAX),
 * NUL-terminated, its length in *len: caller frees; NULL.
 */
char *
attachments_read(const char *ws, const char *sid, const char *id, size_t *len)
{
	off_t size;
	ssize_t r;
	size_t got = 0;
	char *d;
	int fd;

	if ((fd = attachments_open(ws, sid, id, &size)) == -1)
		return NULL;
	if (size < 0 || (uint64_t)size > ATTACHMENT_ITEM_MAX) {
		close(fd);
		return NULL;
	}
	d = xmalloc((size_t)size + 1);
	while (got < (size_t)size) {
		if ((r = read(fd, d + got, (size_t)size - got)) == -1 &&
		    errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (got != (size_t)size) {
		free(d);
		return NULL;
	}
	d[got] = '\0';
	*len = got;
	return d;
}

/*
 * Copy the session from's attachments to the new session to, as
 * upstream's branch copies them: the number copied, or -1 with *cause
 * (the ones before it copied).  Within the same bounds as an upload.
 */
int
attachments_copy(const char *ws, const char *from, const char *to,
    char **cause)
{
	json_object *list, *ref, *out;
	struct iovec iov;
	const char *id;
	size_t i, n, len;
	int status, copied = 0;
	char *d;

	if ((list = attachments_list(ws, from, cause)) == NULL)
		return -1;
	for (i = 0, n = json_object_array_length(list); i < n; i++) {
		ref = json_object_array_get_idx(list, i);
		id = json_get_str(ref, "attachmentId");
		if ((d = attachments_read(ws, from, id, &len)) == NULL)
			continue;	/* removed since it was listed */
		iov.iov_base = d;
		iov.iov_len = len;
		out = attachments_put(ws, to, id, json_get_str(ref, "mimeType"),
		    &iov, 1, len, &status, cause);
		free(d);
		if (out == NULL) {
			json_object_put(list);
			return -1;
		}
		json_object_put(out);
		copied++;
	}
	json_object_put(list);
	return copied;
}
