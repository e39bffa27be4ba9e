/* SPDX-License-Identifier: ISC */
/* append.c: whole-record appends with truncate-back on failure. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "append.h"
#include "clock.h"
#include "paths.h"
#include "rpc-frame.h"
#include "uuid.h"
#include "xmalloc.h"

struct appender {
	char	*path;
	int	 fd;
	int	 do_fsync;
	int	 create;
};

static atomic_long append_writes;

struct appender *
appender_new(const char *path, int do_fsync, int create)
{
	struct appender *a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	if ((a->path = strdup(path)) == NULL) {
		free(a);
		return NULL;
	}
	a->fd = -1;
	a->do_fsync = do_fsync;
	a->create = create;
	return a;
}

void
appender_free(struct appender *a)
{
	if (a == NULL)
		return;
	if (a->fd != -1)
		close(a->fd);
	free(a->path);
	free(a);
}

static int
appender_fail(char **cause, const char *what, const char *path, int e)
{
	if (asprintf(cause, "%s %s: %s", what, path, strerror(e)) == -1)
		*cause = NULL;
	errno = e;
	return -1;
}

/* Create the chats directory (0700) and the file itself exclusively. */
static int
appender_create(struct appender *a, char **cause)
{
	char *dir;

	if ((dir = strdup(a->path)) == NULL)
		return appender_fail(cause, "cannot create", a->path, ENOMEM);
	if (paths_mkdir_p(dirname(dir), 0700) == -1) {
		int e = errno;
		free(dir);
		return appender_fail(cause, "cannot create directory for", a->path, e);
	}
	free(dir);
	a->fd = open(a->path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (a->fd == -1)
		return appender_fail(cause, "cannot create transcript", a->path, errno);
	a->create = 0;
	return 0;
}

int
appender_open(struct appender *a, char **cause)
{
	struct stat st;

	if (a->fd != -1)
		return 0;
	if (a->create)
		return appender_create(a, cause);
	/* Never through a symlink nor into a FIFO: the truncate-back after a
	   failed write must only ever cut the transcript itself. */
	a->fd = open(a->path, O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (a->fd == -1)
		return appender_fail(cause, "cannot open transcript", a->path, errno);
	if (fstat(a->fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(a->fd);
		a->fd = -1;
		return appender_fail(cause, "refusing a transcript that is not a regular file,",
		    a->path, EINVAL);
	}
	return 0;
}

/* Whether the file is non-empty and its last byte is not '\n'. */
static int
appender_torn(int fd, off_t size)
{
	char c;

	if (size == 0)
		return 0;
	if (pread(fd, &c, 1, size - 1) != 1)
		return 0;
	return c != '\n';
}

/* write() once; the fault hook cuts the Nth record write in half. */
static ssize_t
appender_write(int fd, const char *buf, size_t len)
{
	static long fault = -1;
	long n = atomic_fetch_add(&append_writes, 1) + 1;
	const char *env;

	if (fault == -1) {
		env = getenv("QWEN_ACP_FAULT_SHORT_WRITE");
		fault = env != NULL ? strtol(env, NULL, 10) : 0;
	}
	if (fault > 0 && n == fault)
		len /= 2;
	return write(fd, buf, len);
}

int
appender_append(struct appender *a, json_object *rec, char **cause)
{
	char *line;
	size_t len;
	int rc;

	*cause = NULL;
	if ((line = rpc_encode(rec, &len)) == NULL)
		return appender_fail(cause, "cannot encode record for", a->path, ENOMEM);
	rc = appender_append_raw(a, line, len, cause);
	free(line);
	return rc;
}

int
appender_append_raw(struct appender *a, const char *line, size_t len, char **cause)
{
	struct stat st;
	char *buf;
	size_t off;
	ssize_t n;
	int e;

	*cause = NULL;
	if (a->fd == -1 && appender_open(a, cause) == -1)
		return -1;
	if (fstat(a->fd, &st) == -1)
		return appender_fail(cause, "cannot stat transcript", a->path, errno);
	off = appender_torn(a->fd, st.st_size) ? 1 : 0;
	if ((buf = malloc(len + off)) == NULL)
		return appender_fail(cause, "cannot append to", a->path, ENOMEM);
	buf[0] = '\n';
	memcpy(buf + off, line, len);
	len += off;
	n = appender_write(a->fd, buf, len);
	free(buf);
	e = n == -1 ? errno : (size_t)n != len ? ENOSPC : 0;
	if (e == 0 && a->do_fsync && fsync(a->fd) == -1)
		e = errno;
	if (e == 0)
		return 0;
	/* Back to the last whole record: the file never keeps a partial line. */
	if (ftruncate(a->fd, st.st_size) == -1)
		return appender_fail(cause, "write failed and cannot truncate back",
		    a->path, errno);
	if (n >= 0 && (size_t)n != len)
		return appender_fail(cause, "short write (truncated back) to",
		    a->path, e);
	return appender_fail(cause, "cannot append to", a->path, e);
}

json_object *
append_record_new(const char *type, const char *parent, const char *session_id,
    const char *cwd, const char *model, const char *text, size_t text_len,
    char uuid_out[37])
{
	json_object *rec, *msg, *parts, *part;
	int user = strcmp(type, "user") == 0;
	char when[32];

	uuid_new(uuid_out);
	clock_iso_now(when);
	rec = xjson_object_new_object();
	json_object_object_add(rec, "uuid", xjson_object_new_string(uuid_out));
	json_object_object_add(rec, "parentUuid",
	    parent != NULL ? xjson_object_new_string(parent) : NULL);
	json_object_object_add(rec, "sessionId", xjson_object_new_string(session_id));
	json_object_object_add(rec, "timestamp", xjson_object_new_string(when));
	json_object_object_add(rec, "type", xjson_object_new_string(type));
	json_object_object_add(rec, "provenance",
	    xjson_object_new_string(user ? "real_user" : "assistant_output"));
	json_object_object_add(rec, "cwd", xjson_object_new_string(cwd));
	json_object_object_add(rec, "version", xjson_object_new_string(PACKAGE_VERSION));
	if (!user && model != NULL)
		json_object_object_add(rec, "model", xjson_object_new_string(model));
	msg = xjson_object_new_object();
	json_object_object_add(msg, "role", xjson_object_new_string(user ? "user" : "model"));
	parts = xjson_object_new_array();
	part = xjson_object_new_object();
	json_object_object_add(part, "text", xjson_object_new_string_len(text, (int)text_len));
	json_object_array_add(parts, part);
	json_object_object_add(msg, "parts", parts);
	json_object_object_add(rec, "message", msg);
	return rec;
}
