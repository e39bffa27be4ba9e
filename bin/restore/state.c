/* SPDX-License-Identifier: ISC */
/*
 * state.c: qwen-restore's state directory.
 *
 * Layout (directories 0700, files 0600):
 *   DIR/daemons/<address key>/capabilities.json   the restore budget cache
 *   DIR/daemons/<address key>/sessions/<id>.json   {"clientId": ...}
 *   DIR/daemons/<address key>/sessions/<id>.lock   flock(2) for reattaches
 * DIR is --state-dir, else $XDG_STATE_HOME/qwen-restore, else
 * ~/.local/state/qwen-restore.  The address key is the daemon address made
 * file-name safe plus a hash of it, so two addresses never share a file.
 * Files are replaced atomically (temporary file, fsync, rename).
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "restore.h"
#include "xmalloc.h"

struct state {
	char	*daemon_dir;	/* DIR/daemons/<key> */
	char	*sessions_dir;
};

/* Whether id can name a file: [A-Za-z0-9._:-]{1,128}, no leading '.'. */
int
state_id_valid(const char *id)
{
	size_t	len = strlen(id);

	if (len == 0 || len > RESTORE_ID_MAX || id[0] == '.')
		return 0;
	return strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._:-") == len;
}

/* mkdir -p path with mode 0700 for the parts it creates. */
static int
mkdir_p(const char *path)
{
	char	 buf[PATH_MAX], *p;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0700) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

/* The default state directory; caller frees.  NULL without a home. */
static char *
state_default_dir(void)
{
	const char	*xdg = getenv("XDG_STATE_HOME"), *home;
	struct passwd	*pw;
	char		*dir;

	if (xdg != NULL && xdg[0] == '/') {
		if (asprintf(&dir, "%s/qwen-restore", xdg) == -1)
			return NULL;
		return dir;
	}
	home = getenv("HOME");
	if ((home == NULL || home[0] != '/') && (pw = getpwuid(getuid())))
		home = pw->pw_dir;
	if (home == NULL || home[0] != '/')
		return NULL;
	if (asprintf(&dir, "%s/.local/state/qwen-restore", home) == -1)
		return NULL;
	return dir;
}

/* The file-name key of a daemon address; caller frees. */
static char *
state_key(const char *addr)
{
	char	 hash[SHA256_DIGEST_STRING_LENGTH], safe[65], *key;
	size_t	 i;

	SHA256Data((const uint8_t *)addr, strlen(addr), hash);
	for (i = 0; addr[i] != '\0' && i < sizeof(safe) - 1; i++)
		safe[i] = strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", addr[i]) ?
		    addr[i] : '_';
	safe[i] = '\0';
	if (asprintf(&key, "%s-%.16s", safe, hash) == -1)
		return NULL;
	return key;
}

/* Open the state of addr_key under dir (NULL: the default). */
struct state *
state_open(const char *dir, const char *addr_key, char **cause)
{
	struct state	*st;
	char		*root = NULL, *key = NULL;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		goto nomem;
	root = dir != NULL ? strdup(dir) : state_default_dir();
	if (root == NULL) {
		xasprintf(cause, "no state directory: set --state-dir, "
		    "XDG_STATE_HOME or HOME");
		goto fail;
	}
	if ((key = state_key(addr_key)) == NULL ||
	    asprintf(&st->daemon_dir, "%s/daemons/%s", root, key) == -1 ||
	    asprintf(&st->sessions_dir, "%s/sessions", st->daemon_dir) == -1)
		goto nomem;
	if (mkdir_p(st->sessions_dir) == -1) {
		xasprintf(cause, "state directory %s: %s", root,
		    strerror(errno));
		goto fail;
	}
	free(root);
	free(key);
	return st;
nomem:
	xasprintf(cause, "out of memory");
fail:
	free(root);
	free(key);
	state_free(st);
	return NULL;
}

/* NULL-safe. */
void
state_free(struct state *st)
{
	if (st == NULL)
		return;
	free(st->daemon_dir);
	free(st->sessions_dir);
	free(st);
}

/* Replace path with text atomically, mode 0600. */
static int
write_atomic(const char *path, const char *text)
{
	char	 tmp[PATH_MAX];
	size_t	 len = strlen(text), off = 0;
	ssize_t	 n;
	int	 fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return -1;
	if ((fd = mkstemp(tmp)) == -1)
		return -1;
	if (fchmod(fd, 0600) == -1)
		goto fail;
	while (off < len) {
		if ((n = write(fd, text + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		off += (size_t)n;
	}
	if (fsync(fd) == -1 || close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	if (rename(tmp, path) == -1) {
		unlink(tmp);
		return -1;
	}
	return 0;
fail:
	if (fd != -1)
		close(fd);
	unlink(tmp);
	return -1;
}

/* Read a small JSON object file; NULL when absent or not an object. */
static json_object *
read_json(const char *path)
{
	json_object	*obj;

	if (access(path, F_OK) == -1)
		return NULL;
	obj = json_object_from_file(path);
	if (obj != NULL && !json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		obj = NULL;
	}
	return obj;
}

/* The cached restore budget, or -1. */
int64_t
state_cap_restore_ms(struct state *st)
{
	json_object	*obj, *v;
	char		*path;
	int64_t		 ms = -1;

	if (asprintf(&path, "%s/capabilities.json", st->daemon_dir) == -1)
		return -1;
	if ((obj = read_json(path)) != NULL &&
	    json_object_object_get_ex(obj, "sessionRestoreTimeoutMs", &v) &&
	    json_object_is_type(v, json_type_int)) {
		ms = json_object_get_int64(v);
		if (ms < 1 || ms > BUDGET_MAX_MS)
			ms = -1;
	}
	json_object_put(obj);
	free(path);
	return ms;
}

/* Cache the budget of a capability answer; no valid budget clears it. */
int
state_cap_store(struct state *st, json_object *caps)
{
	json_object	*limits, *v, *out;
	char		*path;
	int64_t		 ms = -1;
	int		 rc;

	if (json_object_object_get_ex(caps, "limits", &limits) &&
	    json_object_object_get_ex(limits, "sessionRestoreTimeoutMs", &v) &&
	    json_object_is_type(v, json_type_int)) {
		ms = json_object_get_int64(v);
		if (ms < 1 || ms > BUDGET_MAX_MS)
			ms = -1;
	}
	if (asprintf(&path, "%s/capabilities.json", st->daemon_dir) == -1)
		return -1;
	if (ms == -1) {
		rc = unlink(path) == -1 && errno != ENOENT ? -1 : 0;
		free(path);
		return rc;
	}
	out = xjson_object_new_object();
	json_object_object_add(out, "sessionRestoreTimeoutMs",
	    xjson_object_new_int64(ms));
	rc = write_atomic(path, json_object_to_json_string_ext(out,
	    JSON_C_TO_STRING_PLAIN));
	json_object_put(out);
	free(path);
	return rc;
}

/* The path of sid's file with suffix; caller frees. */
static char *
session_path(struct state *st, const char *sid, const char *suffix)
{
	char	*path;

	if (!state_id_valid(sid)) {
		errno = EINVAL;
		return NULL;
	}
	if (asprintf(&path, "%s/%s%s", st->sessions_dir, sid, suffix) == -1)
		return NULL;
	return path;
}

/* The stored clientId of sid ("" when none). */
int
state_client_get(struct state *st, const char *sid, char *buf, size_t len)
{
	json_object	*obj, *v;
	char		*path;

	buf[0] = '\0';
	if ((path = session_path(st, sid, ".json")) == NULL)
		return -1;
	if ((obj = read_json(path)) != NULL &&
	    json_object_object_get_ex(obj, "clientId", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    state_id_valid(json_object_get_string(v)))
		strlcpy(buf, json_object_get_string(v), len);
	json_object_put(obj);
	free(path);
	return 0;
}

/* Store (or with "" / NULL remove) the clientId of sid. */
int
state_client_put(struct state *st, const char *sid, const char *id)
{
	json_object	*out;
	char		*path;
	int		 rc;

	if ((path = session_path(st, sid, ".json")) == NULL)
		return -1;
	if (id == NULL || id[0] == '\0') {
		rc = unlink(path) == -1 && errno != ENOENT ? -1 : 0;
		free(path);
		return rc;
	}
	out = xjson_object_new_object();
	json_object_object_add(out, "clientId", xjson_object_new_string(id));
	rc = write_atomic(path, json_object_to_json_string_ext(out,
	    JSON_C_TO_STRING_PLAIN));
	json_object_put(out);
	free(path);
	return rc;
}

/* Take sid's lock, waiting for another process that holds it. */
int
state_lock(struct state *st, const char *sid)
{
	char	*path;
	int	 fd;

	if ((path = session_path(st, sid, ".lock")) == NULL)
		return -1;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(path);
	if (fd == -1)
		return -1;
	while (flock(fd, LOCK_EX) == -1) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* Release state_lock() (fd -1: nothing). */
void
state_unlock(int fd)
{
	if (fd == -1)
		return;
	flock(fd, LOCK_UN);
	close(fd);
}
