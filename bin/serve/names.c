/* SPDX-License-Identifier: ISC */
/*
 * names.c: the names a session goes by in the daemon: the ids clients may
 * give, the workspaces (--workspace, repeatable) and the directory its
 * transcript lives in.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paths.h"
#include "serve.h"

/*
 * A session id from a client: 1..128 of [A-Za-z0-9._:-], not starting
 * with '.', so that it can never name another file.
 */
int
names_session_id_ok(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > SERVE_SESSION_ID_MAX || id[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)id[i]) && strchr("._:-", id[i]) == NULL)
			return 0;
	return 1;
}

/*
 * <data-dir>/projects/<sanitized workspace>/chats, or NULL: resolved by the
 * same libqwen code the child uses, so both always look in one place.
 */
char *
names_transcript_dir(void)
{
	return names_transcript_dir_ws(conf.workspace);
}

char *
names_transcript_dir_ws(const char *workspace)
{
	char *base, *out;

	if ((base = paths_data_dir(conf.data_dir)) == NULL)
		return NULL;
	out = paths_chats_dir(base, workspace);
	free(base);
	return out;
}

/* --workspace, repeatable: the one dir names, if any. */
const char *
names_workspace(const char *dir)
{
	const char *best = NULL;
	size_t i, n;

	for (i = 0; i < conf.n_workspaces; i++) {
		n = strlen(conf.workspaces[i]);
		if (strcmp(conf.workspaces[i], dir) == 0)
			return conf.workspaces[i];
		/* A directory inside a workspace is in it (git's walk upwards). */
		if (dir[0] == '/' && strncmp(conf.workspaces[i], dir, n) == 0 &&
		    (dir[n] == '/' || strcmp(conf.workspaces[i], "/") == 0) &&
		    (best == NULL || n > strlen(best)))
			best = conf.workspaces[i];
	}
	return best;
}

void
names_workspace_id(size_t i, char *buf, size_t size)
{
	if (i == 0)
		strlcpy(buf, "primary", size);
	else
		snprintf(buf, size, "ws%zu", i);
}
