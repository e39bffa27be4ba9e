/* SPDX-License-Identifier: ISC */
/*
 * standalone.c: the private working directories of standalone
 * (projectless) sessions: <data-dir>/standalone/<id>, mode 0700, ours,
 * made when the session is created and remade when it has gone.  Such a
 * directory is the session's workspace: a child serves it like any
 * other, and its transcript lives where that workspace's do.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>
#include <json-c/json.h>

#include "cause.h"
#include "paths.h"
#include "privdir.h"
#include "serve.h"
#include "uuid.h"
#include "xmalloc.h"

#define STANDALONE_NAME	"standalone"

/* The directories named so far (their strings stay for the process). */
struct standalone_ent {
	char	 id[UUID_LEN + 1];
	char	*dir;
	int	 recreated;	/* remade by a restore, not yet reported */
};
static struct standalone_ent	*ents;
static size_t			 n_ents;

/* <data-dir>/standalone, or NULL.  Caller frees. */
static char *
standalone_root(void)
{
	char *base, *out;

	if ((base = paths_data_dir(conf.data_dir)) == NULL)
		return NULL;
	xasprintf(&out, "%s/%s", base, STANDALONE_NAME);
	free(base);
	return out;
}

static struct standalone_ent *
standalone_find(const char *id)
{
	for (size_t i = 0; i < n_ents; i++)
		if (strcmp(ents[i].id, id) == 0)
			return &ents[i];
	return NULL;
}

/* 1 when id is a lower-case UUID (the only names under the root). */
static int
standalone_id_ok(const char *id)
{
	if (!uuid_valid(id) || strlen(id) != UUID_LEN)
		return 0;
	for (const char *c = id; *c != '\0'; c++)
		if (*c >= 'A' && *c <= 'F')
			return 0;
	return 1;
}

/* <root>/<id>, or NULL.  Caller frees. */
static char *
standalone_path(const char *id)
{
	char *root, *out;

	if (!standalone_id_ok(id) || (root = standalone_root()) == NULL)
		return NULL;
	xasprintf(&out, "%s/%s", root, id);
	free(root);
	return out;
}

/* id's entry, made when new; NULL: bad id or the table full. */
static struct standalone_ent *
standalone_ent_of(const char *id)
{
	struct standalone_ent *e;
	char *dir;

	if ((e = standalone_find(id)) != NULL)
		return e;
	if (n_ents >= STANDALONE_NAMES_MAX || (dir = standalone_path(id)) == NULL)
		return NULL;
	ents = xreallocarray(ents, n_ents + 1, sizeof(*ents));
	e = &ents[n_ents++];
	strlcpy(e->id, id, sizeof(e->id));
	e->dir = dir;
	e->recreated = 0;
	return e;
}

/* Whether id has its directory or a transcript there (path: its dir). */
static int
standalone_exists(const char *id, const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 || catalog_where(path, id) != 0;
}

/*
 * id's working directory (a string kept for the process), or NULL when
 * id is no standalone session (known: it need not be one, for a create).
 */
const char *
standalone_dir(const char *id, int known)
{
	struct standalone_ent *e;
	char *path;
	int ok;

	if ((e = standalone_find(id)) != NULL)
		return e->dir;
	if ((path = standalone_path(id)) == NULL)
		return NULL;
	ok = !known || standalone_exists(id, path);
	free(path);
	if (!ok || (e = standalone_ent_of(id)) == NULL)
		return NULL;
	return e->dir;
}

/* 1 when id is a standalone session: its directory or its transcript. */
int
standalone_known(const char *id)
{
	const char *dir = standalone_dir(id, 1);

	return dir != NULL && standalone_exists(id, dir);
}

/* The standalone directory holding id's transcript, or NULL. */
const char *
standalone_workspace_of(const char *id)
{
	const char *dir = standalone_dir(id, 1);

	return dir != NULL && catalog_where(dir, id) != 0 ? dir : NULL;
}

/*
 * Make id's directory when missing (create: a new session; else a
 * restore or a repair, which remakes it).  *state: 0 it was there, 1
 * remade.  -1 with *code when it cannot be made or is not ours.
 */
int
standalone_prepare(const char *id, int create, int *state, const char **code)
{
	struct standalone_ent *e = standalone_ent_of(id);
	char *root, *cause = NULL;
	int rfd, fd, made = 0;

	*code = "working_directory_recovery_failed";
	if (e == NULL || (root = standalone_root()) == NULL)
		return -1;
	rfd = privdir_open("standalone root", root, PRIVDIR_CREATE |
	    PRIVDIR_PRIVATE, &cause);
	free(root);
	free(cause);
	cause = NULL;
	if (rfd == -1)
		return -1;
	if (mkdirat(rfd, id, 0700) == 0)
		made = 1;
	else if (errno != EEXIST) {
		close(rfd);
		return -1;
	}
	close(rfd);
	if ((fd = privdir_open("standalone directory", e->dir,
	    PRIVDIR_PRIVATE, &cause)) == -1) {
		free(cause);
		*code = "working_directory_compromised";
		return -1;
	}
	close(fd);
	*state = made && !create;
	return 0;
}

/* A restore remade the directory: its answer says so (once). */
void
standalone_mark_recreated(const char *id)
{
	struct standalone_ent *e = standalone_find(id);

	if (e != NULL)
		e->recreated = 1;
}

/* The workingDirectory member: {state} and upstream's warning. */
json_object *
standalone_state_json(int recreated)
{
	json_object *o = xjson_object_new_object(), *w;

	json_object_object_add(o, "state",
	    xjson_object_new_string(recreated ? "recreated" : "ready"));
	if (recreated) {
		w = xjson_object_new_array();
		json_object_array_add(w, xjson_object_new_string("The previous "
		    "standalone working directory was missing and was "
		    "recreated; its files could not be recovered."));
		json_object_object_add(o, "warnings", w);
	}
	return o;
}

/* The kind members every standalone answer has (o borrowed). */
void
standalone_kind_add(json_object *o)
{
	json_object *c = xjson_object_new_object();

	json_object_object_add(o, "sourceType",
	    xjson_object_new_string("standalone"));
	json_object_object_add(c, "kind", xjson_object_new_string("standalone"));
	json_object_object_add(o, "context", c);
}

/* A session answer of a standalone workspace gets its members (borrowed). */
void
standalone_decorate(json_object *o, const char *workspace)
{
	struct standalone_ent *e = NULL;

	for (size_t i = 0; e == NULL && i < n_ents; i++)
		if (strcmp(ents[i].dir, workspace) == 0)
			e = &ents[i];
	if (e == NULL)
		return;
	standalone_kind_add(o);
	json_object_object_add(o, "projectlessOutputDirectory",
	    xjson_object_new_string(e->dir));
	json_object_object_add(o, "workingDirectory",
	    standalone_state_json(e->recreated));
	e->recreated = 0;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) == -1 &&
	    errno != ENOENT ? -1 : 0;
}

/* A create that failed (its agent refused, its child died) left id's
   directory empty and no transcript: the directory is taken back, so the
   id can be created again.  rmdir removes only an empty one. */
void
standalone_vacate(const char *id)
{
	const char *dir = standalone_dir(id, 1);

	if (dir != NULL && catalog_where(dir, id) == 0)
		(void)rmdir(dir);
}

/* Remove id's directory and all in it (never following links): 0, -1. */
int
standalone_remove(const char *id)
{
	const char *dir = standalone_dir(id, 1);
	struct stat st;

	if (dir == NULL)
		return 0;
	if (lstat(dir, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Whether ids[0..n) holds id. */
static int
scan_has(char **ids, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(ids[i], id) == 0)
			return 1;
	return 0;
}

/*
 * The projects directory and the name prefix of a standalone session's
 * transcript directory (caller frees both), from one made for a sample
 * id: <base>/projects/<root sanitized>-<id>/chats.
 */
static int
scan_prefix(char **pdir, char **prefix)
{
	static const char sample[] = "00000000-0000-4000-8000-000000000000";
	char *root = standalone_root(), *base, *wd, *chats, *slash;
	size_t n;

	*pdir = *prefix = NULL;
	if (root == NULL || (base = paths_data_dir(conf.data_dir)) == NULL) {
		free(root);
		return -1;
	}
	xasprintf(&wd, "%s/%s", root, sample);
	chats = paths_chats_dir(base, wd);
	free(root);
	free(base);
	free(wd);
	n = chats != NULL ? strlen(chats) : 0;
	if (n < sizeof(sample) + 6 || strcmp(chats + n - 6, "/chats") != 0 ||
	    strncmp(chats + n - 6 - UUID_LEN, sample, UUID_LEN) != 0) {
		free(chats);
		return -1;
	}
	chats[n - 6 - UUID_LEN] = '\0';
	if ((slash = strrchr(chats, '/')) == NULL) {
		free(chats);
		return -1;
	}
	*prefix = xstrdup(slash + 1);
	*slash = '\0';
	*pdir = chats;
	return 0;
}

/* Ids whose directory has gone but whose transcript is still there. */
static void
scan_projects(char ***ids, size_t *n, size_t max)
{
	char *pdir, *prefix;
	struct dirent *d;
	size_t plen;
	DIR *dir;

	if (scan_prefix(&pdir, &prefix) == -1)
		return;
	plen = strlen(prefix);
	if ((dir = opendir(pdir)) != NULL) {
		while (*n < max && (d = readdir(dir)) != NULL) {
			if (strncmp(d->d_name, prefix, plen) != 0 ||
			    !standalone_id_ok(d->d_name + plen) ||
			    scan_has(*ids, *n, d->d_name + plen) ||
			    !standalone_known(d->d_name + plen))
				continue;
			*ids = xreallocarray(*ids, *n + 1, sizeof(**ids));
			(*ids)[(*n)++] = xstrdup(d->d_name + plen);
		}
		closedir(dir);
	}
	free(pdir);
	free(prefix);
}

/*
 * The standalone ids, at most max (caller frees): those with a directory,
 * then those whose directory is gone but whose transcript is not.
 */
size_t
standalone_scan(char ***out, size_t max)
{
	char *root = standalone_root(), **ids = NULL;
	struct dirent *d;
	size_t n = 0;
	DIR *dir;

	*out = NULL;
	if (root != NULL && (dir = opendir(root)) != NULL) {
		while (n < max && (d = readdir(dir)) != NULL) {
			if (!standalone_id_ok(d->d_name))
				continue;
			ids = xreallocarray(ids, n + 1, sizeof(*ids));
			ids[n++] = xstrdup(d->d_name);
		}
		closedir(dir);
	}
	free(root);
	scan_projects(&ids, &n, max);
	*out = ids;
	return n;
}
