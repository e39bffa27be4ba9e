/* SPDX-License-Identifier: ISC */
/*
 * address.c: where qwen-restore finds the daemon, and why it could not.
 *
 * Without --socket, --url or their variables the socket is looked up in
 * the places the daemon listens by default, first match wins:
 *   $XDG_RUNTIME_DIR/qwen-serve/qwen-serve.sock   (a login session)
 *   /run/user/$UID/qwen-serve/qwen-serve.sock     (cron, units without it)
 *   /tmp/qwen-serve-$UID/qwen-serve.sock          (the daemon's fallback)
 *   /run/qwen-serve/qwen-serve.sock               (the system unit)
 * When none is a socket the first place is used and the error lists them
 * all.  A failed connection is explained by looking at the path ourselves:
 * libcurl only says "Failed to connect to localhost port 80".
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "restore.h"
#include "xmalloc.h"

#define SYSTEM_SOCKET	"/run/qwen-serve/qwen-serve.sock"

/* Append one candidate path to the list (skipping duplicates). */
static void
cand_add(char **cand, size_t *n, char *path)
{
	size_t	i;

	for (i = 0; i < *n; i++)
		if (strcmp(cand[i], path) == 0) {
			free(path);
			return;
		}
	cand[(*n)++] = path;
}

/* The default places, in lookup order; returns how many. */
static size_t
cand_fill(char **cand)
{
	const char	*rt = getenv("XDG_RUNTIME_DIR");
	unsigned	 uid = (unsigned)getuid();
	char		*p;
	size_t		 n = 0;

	if (rt != NULL && rt[0] == '/') {
		xasprintf(&p, "%s/qwen-serve/qwen-serve.sock", rt);
		cand_add(cand, &n, p);
	}
	xasprintf(&p, "/run/user/%u/qwen-serve/qwen-serve.sock", uid);
	cand_add(cand, &n, p);
	xasprintf(&p, "/tmp/qwen-serve-%u/qwen-serve.sock", uid);
	cand_add(cand, &n, p);
	cand_add(cand, &n, xstrdup(SYSTEM_SOCKET));
	return n;
}

/*
 * The default socket into ctx->socket_path; every place looked at goes
 * into ctx->socket_tried ("a, b, c") for the error message.
 */
void
address_default_socket(struct rctx *ctx)
{
	struct stat	 st;
	char		*cand[4], *pick = NULL, *tried = NULL, *t;
	size_t		 n, i;

	n = cand_fill(cand);
	for (i = 0; i < n; i++) {
		if (pick == NULL && stat(cand[i], &st) == 0 &&
		    S_ISSOCK(st.st_mode))
			pick = cand[i];
		xasprintf(&t, "%s%s%s", tried ? tried : "", tried ? ", " : "",
		    cand[i]);
		free(tried);
		tried = t;
	}
	if (pick == NULL)
		pick = cand[0];	/* never empty: the system socket is last */
	ctx->socket_path = xstrdup(pick);
	ctx->socket_tried = tried;
	for (i = 0; i < n; i++)
		free(cand[i]);
}

/*
 * The token file the local daemon writes beside its socket, in the first
 * default place that has one (the socket lookup order); caller frees,
 * NULL when there is none.
 */
char *
address_default_token(void)
{
	char	*cand[4], *path = NULL, *p, *slash;
	size_t	 n, i;

	n = cand_fill(cand);
	for (i = 0; i < n; i++) {
		if (path == NULL && (slash = strrchr(cand[i], '/')) != NULL) {
			xasprintf(&p, "%.*s/token", (int)(slash - cand[i]), cand[i]);
			if (access(p, F_OK) == 0)
				path = p;
			else
				free(p);
		}
		free(cand[i]);
	}
	return path;
}

/* Try connecting to path ourselves; 0, or -1 with errno. */
static int
try_connect(const char *path)
{
	struct sockaddr_un	 sun;
	int			 fd, rc, saved;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/* The hint that goes with a refused socket. */
static const char *
hint_for(const char *path, int err)
{
	if (err == EACCES && strcmp(path, SYSTEM_SOCKET) == 0)
		return "; the system daemon's socket is for its own user: "
		    "use --url http://127.0.0.1:4170 with --token";
	if (err == EACCES)
		return "; the socket belongs to another user";
	if (err == ECONNREFUSED)
		return "; a stale socket: is qwen-serve running?";
	if (err == ENOENT)
		return "; is qwen-serve running?";
	return "";
}

/*
 * Why the socket at path cannot be reached, as "no such file",
 * "not a socket", "connection refused", "permission denied"...
 */
void
address_explain(const char *path, const char *tried, char *buf, size_t len)
{
	struct stat	 st;
	const char	*why;
	int		 err = 0;

	if (stat(path, &st) == -1) {
		err = errno;
		why = err == ENOENT ? "no such file" : err == EACCES ?
		    "permission denied" : strerror(err);
	} else if (S_ISDIR(st.st_mode))
		why = "a directory, not a socket";
	else if (!S_ISSOCK(st.st_mode))
		why = "not a socket";
	else if (try_connect(path) == -1) {
		err = errno;
		why = err == ECONNREFUSED ? "connection refused" :
		    err == EACCES ? "permission denied" : strerror(err);
	} else
		why = "the connection failed";
	if (err == ENOENT && tried != NULL && strchr(tried, ',') != NULL)
		snprintf(buf, len, "cannot reach the daemon: no such file: %s; "
		    "is qwen-serve running?", tried);
	else
		snprintf(buf, len, "cannot reach the daemon at %s: %s%s", path,
		    why, hint_for(path, err));
}

/* Why the URL cannot be reached, from the connect errno libcurl saw. */
void
address_explain_url(const char *url, int os_errno, const char *curlmsg,
    char *buf, size_t len)
{
	const char	*why;

	switch (os_errno) {
	case ECONNREFUSED:
		why = "connection refused; is qwen-serve listening there?";
		break;
	case 0:
		why = curlmsg;
		break;
	default:
		why = strerror(os_errno);
	}
	snprintf(buf, len, "cannot reach the daemon at %s: %s", url, why);
}
