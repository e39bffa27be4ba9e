/* SPDX-License-Identifier: ISC */
/* paths.c: qwen-code data locations and session id rules (daemon and child). */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"

/* Only hex digits and dashes, 32 to 36 of them, as upstream's file filter. */
int
paths_valid_session_id(const char *id)
{
	size_t n;

	if (id == NULL)
		return 0;
	n = strspn(id, "0123456789abcdefABCDEF-");
	return id[n] == '\0' && n >= 32 && n <= 36;
}

/*
 * $HOME, else the password entry's (borrowed); NULL (ENOENT) when there is
 * neither: never a shared directory such as /tmp, where another user could
 * plant or read sessions.
 */
static const char *
home_dir(void)
{
	const char *home;
	struct passwd *pw;

	if ((home = getenv("HOME")) == NULL || *home == '\0') {
		pw = getpwuid(getuid());
		home = pw != NULL && pw->pw_dir != NULL && pw->pw_dir[0] == '/' ?
		    pw->pw_dir : NULL;
	}
	if (home == NULL)
		errno = ENOENT;
	return home;
}

/* The first of --data-dir, $QWEN_HOME, ~/.qwen. */
char *
paths_data_dir(const char *dir)
{
	const char *home;
	char *out;

	if (dir != NULL && *dir != '\0')
		return strdup(dir);
	if ((home = getenv("QWEN_HOME")) != NULL && *home != '\0')
		return strdup(home);
	if ((home = home_dir()) == NULL)
		return NULL;
	if (asprintf(&out, "%s/.qwen", home) == -1)
		return NULL;
	return out;
}

/* The first of --cache-dir, $CACHE_DIRECTORY (systemd's CacheDirectory=, a
   colon-separated list: ours first), $XDG_CACHE_HOME/qwen-serve,
   ~/.cache/qwen-serve. */
char *
paths_cache_dir(const char *dir)
{
	const char *v;
	char *out;

	if (dir != NULL && *dir != '\0')
		return strdup(dir);
	if ((v = getenv("CACHE_DIRECTORY")) != NULL && *v == '/') {
		if ((out = strdup(v)) != NULL)
			out[strcspn(out, ":")] = '\0';
		return out;
	}
	if ((v = getenv("XDG_CACHE_HOME")) != NULL && *v == '/') {
		if (asprintf(&out, "%s/qwen-serve", v) == -1)
			return NULL;
		return out;
	}
	if ((v = home_dir()) == NULL)
		return NULL;
	if (asprintf(&out, "%s/.cache/qwen-serve", v) == -1)
		return NULL;
	return out;
}

/* Every byte outside [A-Za-z0-9] becomes '-'. */
char *
paths_chats_dir(const char *data_dir, const char *cwd)
{
	char *san, *out, *p;

	if ((san = strdup(cwd)) == NULL)
		return NULL;
	for (p = san; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9')))
			*p = '-';
	}
	if (asprintf(&out, "%s/projects/%s/chats", data_dir, san) == -1)
		out = NULL;
	free(san);
	return out;
}

/* The transcript path; NULL (EINVAL) for an id that may not name a file. */
char *
paths_transcript(const char *data_dir, const char *cwd, const char *id)
{
	char *dir, *out;

	if (!paths_valid_session_id(id)) {
		errno = EINVAL;
		return NULL;
	}
	if ((dir = paths_chats_dir(data_dir, cwd)) == NULL)
		return NULL;
	if (asprintf(&out, "%s/%s.jsonl", dir, id) == -1)
		out = NULL;
	free(dir);
	return out;
}

/* Where writer leases live, as upstream. */
char *
paths_lock_dir(const char *data_dir)
{
	char *out;

	if (asprintf(&out, "%s/tmp/session-writer-locks", data_dir) == -1)
		return NULL;
	return out;
}

/* Create each missing component; an existing directory is fine. */
int
paths_mkdir_p(const char *path, unsigned mode)
{
	char *buf, *p;
	int rc = 0;

	if ((buf = strdup(path)) == NULL)
		return -1;
	for (p = buf + 1; rc == 0; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST)
			rc = -1;
		*p = saved;
		if (saved == '\0')
			break;
	}
	free(buf);
	return rc;
}
