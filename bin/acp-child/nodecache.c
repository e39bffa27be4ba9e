/* SPDX-License-Identifier: ISC */
/*
 * nodecache.c: Node's compile cache for the --agent-acp agent.
 *
 * A Node agent compiles its whole bundle again at every start unless
 * NODE_COMPILE_CACHE names a directory where V8 keeps the code it made
 * (Node 22); upstream's daemon turns it on for its agents too.  Ours is
 * <cache-dir>/node-compile-cache, made 0700 and checked on its
 * descriptor (ours, private, not through a link): compiled code read
 * from a directory another user can write would run as us.  The user's
 * own NODE_COMPILE_CACHE (or NODE_DISABLE_COMPILE_CACHE=1) wins; a
 * directory that fails the check is not used, with a log line.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cause.h"
#include "child.h"
#include "delegate-int.h"
#include "log.h"
#include "paths.h"
#include "privdir.h"
#include "spawn.h"
#include "xmalloc.h"

#define NODECACHE_NAME	"node-compile-cache"

/* The checked directory's path, NULL + *cause (caller frees both). */
static char *
nodecache_dir(const char *cache_dir, char **cause)
{
	char *dir;
	int fd;

	if (paths_mkdir_p(cache_dir, 0700) == -1) {
		cause_errno(cause, errno, "compile cache %s: %s", cache_dir,
		    strerror(errno));
		return NULL;
	}
	/* The parent too: one another user may write is a swap away. */
	if ((fd = privdir_open("compile cache's parent", cache_dir, 0,
	    cause)) == -1)
		return NULL;
	close(fd);
	xasprintf(&dir, "%s/%s", cache_dir, NODECACHE_NAME);
	if ((fd = privdir_open("compile cache", dir, PRIVDIR_CREATE |
	    PRIVDIR_PRIVATE, cause)) == -1) {
		free(dir);
		return NULL;
	}
	close(fd);
	return dir;
}

void
nodecache_env(struct child *c, struct spawn_cmd *cmd)
{
	const char *v;
	char *dir, *cause = NULL;

	if (((v = getenv("NODE_COMPILE_CACHE")) != NULL && *v != '\0') ||
	    ((v = getenv("NODE_DISABLE_COMPILE_CACHE")) != NULL &&
	    strcmp(v, "1") == 0))
		return;		/* the user's choice, inherited */
	if (c->opts.cache_dir == NULL ||
	    (dir = nodecache_dir(c->opts.cache_dir, &cause)) == NULL) {
		log_warnx("agent: no compile cache: %s",
		    cause != NULL ? cause : "no cache directory");
		free(cause);
		return;
	}
	spawn_cmd_setenv(cmd, "NODE_COMPILE_CACHE", dir);
	free(dir);
}
