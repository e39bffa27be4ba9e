/* SPDX-License-Identifier: ISC */
/*
 * artifacts.c: a session's artifacts, the things its clients point at
 * (a workspace file, a managed resource, a URL), kept by the daemon as
 * upstream's session artifact store keeps a client's: at most
 * ARTIFACT_MAX a session, each with a stable id (the first 16 hex digits
 * of sha256("<session>:<identity>"), the identity its locator), owned by
 * the client that added it (another client's change is 403
 * session_artifact_forbidden).  Upstream persists them through its
 * agent's transcript; ours persists them itself, in
 * <state>/artifacts/session-<id>.json beside the attachments (a private
 * directory), rewritten whole through a synced temporary file and a
 * rename.  A restorable artifact outlives a daemon restart, an ephemeral
 * one only lives as long as the daemon that took it; all go with a
 * deleted session and stay with an archived one.  The store is read from
 * its file at each request: nothing of it lives in memory between them.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sha2.h>

#include "clock.h"
#include "json.h"
#include "privdir.h"
#include "serve.h"
#include "xmalloc.h"

static char	boot[17];	/* this daemon's run: its ephemeral artifacts */

/* The run's mark, made once. */
static const char *
boot_mark(void)
{
	if (boot[0] == '\0')
		snprintf(boot, sizeof(boot), "%08x%08x", arc4random(), arc4random());
	return boot;
}

/* "session-<id>.json". */
static void
file_name(const char *sid, char *buf, size_t size)
{
	snprintf(buf, size, "session-%s.json", sid);
}

/* The records of a parsed file, those of another run's ephemeral dropped. */
static json_object *
records_of(json_object *doc)
{
	json_object *in = NULL, *out, *r, *a;
	const char *ret, *run;

	json_object_object_get_ex(doc, "artifacts", &in);
	out = xjson_object_new_array();
	if (in == NULL || !json_object_is_type(in, json_type_array))
		return out;
	for (size_t i = 0; i < json_object_array_length(in) &&
	    json_object_array_length(out) < ARTIFACT_MAX; i++) {
		r = json_object_array_get_idx(in, i);
		if ((a = json_get_obj(r, "artifact")) == NULL ||
		    json_get_str(a, "id") == NULL)
			continue;
		ret = json_get_str(a, "retention");
		run = json_get_str(r, "boot");
		if (ret != NULL && strcmp(ret, "ephemeral") == 0 &&
		    (run == NULL || strcmp(run, boot_mark()) != 0))
			continue;
		json_object_array_add(out, json_object_get(r));
	}
	return out;
}

/* The session's records (caller frees): [] when it has none; NULL, *cause. */
static json_object *
load(int rfd, const char *sid, char **cause)
{
	char name[SERVE_SESSION_ID_MAX + 16], *buf;
	json_object *doc, *out;
	struct stat st;
	ssize_t n;
	int fd;

	file_name(sid, name, sizeof(name));
	if ((fd = openat(rfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return xjson_object_new_array();
		xasprintf(cause, "artifacts of session %s: %s", sid, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > ARTIFACT_FILE_MAX) {
		close(fd);
		xasprintf(cause, "artifacts of session %s: not a readable store", sid);
		return NULL;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	doc = n == st.st_size ? json_tokener_parse(buf) : NULL;
	free(buf);
	if (doc == NULL) {
		xasprintf(cause, "artifacts of session %s: unreadable", sid);
		return NULL;
	}
	out = records_of(doc);
	json_object_put(doc);
	return out;
}

/* Write the records as the session's file (none: no file).  0 or -1. */
static int
save(int rfd, const char *sid, json_object *recs, char **cause)
{
	char name[SERVE_SESSION_ID_MAX + 16], tmp[32];
	json_object *doc;
	const char *text;
	size_t len, off = 0;
	ssize_t w;
	int fd, rc = -1;

	file_name(sid, name, sizeof(name));
	if (json_object_array_length(recs) == 0) {
		if (unlinkat(rfd, name, 0) == -1 && errno != ENOENT)
			goto fail;
		return fsync(rfd) == -1 ? -1 : 0;
	}
	if ((fd = privdir_mktemp(rfd, ".tmp-", tmp, sizeof(tmp))) == -1)
		goto fail;
	doc = xjson_object_new_object();
	json_object_object_add(doc, "v", xjson_object_new_int(1));
	json_object_object_add(doc, "artifacts", json_object_get(recs));
	text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(text);
	while (off < len && (w = write(fd, text + off, len - off)) > 0)
		off += (size_t)w;
	json_object_put(doc);
	if (off == len && fsync(fd) == 0 && renameat(rfd, tmp, rfd, name) == 0)
		rc = fsync(rfd);
	close(fd);
	(void)unlinkat(rfd, tmp, 0);
	if (rc == 0)
		return 0;
fail:
	xasprintf(cause, "cannot store the artifacts of session %s: %s", sid,
	    strerror(errno));
	return -1;
}

/* The stable id of an identity in session sid (17 bytes). */
static void
artifact_id(const char *sid, const char *key, char id[17])
{
	char hex[SHA256_DIGEST_STRING_LENGTH], *in;

	xasprintf(&in, "%s:%s", sid, key);
	SHA256Data((const uint8_t *)in, strlen(in), hex);
	free(in);
	memcpy(id, hex, 16);
	id[16] = '\0';
}

/* The record holding artifact id, or -1. */
static int
find(json_object *recs, const char *id)
{
	for (size_t i = 0; i < json_object_array_length(recs); i++) {
		json_object *a = json_get_obj(json_object_array_get_idx(recs, i),
		    "artifact");

		if (strcmp(json_get_str(a, "id"), id) == 0)
			return (int)i;
	}
	return -1;
}

/* A workspace artifact's status now: available or missing. */
static void
refresh(const char *ws, json_object *a)
{
	const char *wp = json_get_str(a, "workspacePath");
	struct stat st;
	char *path;

	if (wp == NULL)
		return;
	xasprintf(&path, "%s/%s", ws, wp);
	json_object_object_add(a, "status", xjson_object_new_string(
	    stat(path, &st) == 0 ? "available" : "missing"));
	free(path);
}

/*
 * The session's artifacts as upstream lists them {v, sessionId,
 * artifacts, generatedAt, limits} (caller frees), or NULL with *cause.
 */
json_object *
artifacts_list(const char *ws, const char *sid, char **cause)
{
	json_object *recs, *o, *arr, *lim;
	char now[CLOCK_ISO_LEN];
	int rfd;

	if ((rfd = attachments_state_open(ws, "artifacts", 0, cause)) == -1) {
		if (errno != ENOENT)
			return NULL;
		free(*cause);
		*cause = NULL;
		recs = xjson_object_new_array();
	} else {
		recs = load(rfd, sid, cause);
		close(rfd);
		if (recs == NULL)
			return NULL;
	}
	arr = xjson_object_new_array();
	for (size_t i = 0; i < json_object_array_length(recs); i++) {
		json_object *a = json_get_obj(json_object_array_get_idx(recs, i),
		    "artifact");

		refresh(ws, a);
		json_object_array_add(arr, json_object_get(a));
	}
	json_object_put(recs);
	clock_iso_now(now);
	o = xjson_object_new_object();
	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(o, "sessionId", xjson_object_new_string(sid));
	json_object_object_add(o, "artifacts", arr);
	json_object_object_add(o, "generatedAt", xjson_object_new_string(now));
	json_object_object_add(o, "limits", lim = xjson_object_new_object());
	json_object_object_add(lim, "maxArtifacts", xjson_object_new_int(ARTIFACT_MAX));
	return o;
}

/* The answer {v, sessionId, changes, warnings?} (changes taken). */
static json_object *
result(const char *sid, json_object *changes, const char *warning)
{
	json_object *o = xjson_object_new_object(), *w;

	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(o, "sessionId", xjson_object_new_string(sid));
	json_object_object_add(o, "changes", changes);
	if (warning != NULL) {
		json_object_object_add(o, "warnings", w = xjson_object_new_array());
		json_object_array_add(w, xjson_object_new_string(warning));
	}
	return o;
}

/* One change {action, artifactId, artifact, reason?} (a borrowed). */
static json_object *
change(const char *action, json_object *a, const char *reason)
{
	json_object *c = xjson_object_new_object();

	json_object_object_add(c, "action", xjson_object_new_string(action));
	json_object_object_add(c, "artifactId",
	    xjson_object_new_string(json_get_str(a, "id")));
	json_object_object_add(c, "artifact", json_object_get(a));
	if (reason != NULL)
		json_object_object_add(c, "reason", xjson_object_new_string(reason));
	return c;
}

/* Whether the record is another client's (an unowned one is anyone's). */
static int
not_owner(json_object *rec, const char *client)
{
	const char *owner = json_get_str(rec, "clientId");

	return owner != NULL && (client == NULL || strcmp(owner, client) != 0);
}

/* The incoming members over the existing artifact: 1 when one changed. */
static int
merge(json_object *a, json_object *in)
{
	static const char *const drop[] = { "description", "mimeType",
	    "sizeBytes", "metadata", NULL };
	const char *before = xstrdup(json_object_to_json_string(a));
	int changed;

	for (size_t i = 0; drop[i] != NULL; i++)
		if (!json_object_object_get_ex(in, drop[i], NULL))
			json_object_object_del(a, drop[i]);
	json_object_object_foreach(in, k, v)
		json_object_object_add(a, k, json_object_get(v));
	changed = strcmp(before, json_object_to_json_string(a)) != 0;
	free((char *)before);
	return changed;
}

/* A new record of the incoming artifact with its id, times and owner. */
static json_object *
record_new(json_object *in, const char *id, const char *client)
{
	json_object *r = xjson_object_new_object(), *a = json_object_get(in);
	char now[CLOCK_ISO_LEN];

	clock_iso_now(now);
	json_object_object_add(a, "id", xjson_object_new_string(id));
	json_object_object_add(a, "restoreState", xjson_object_new_string("live"));
	json_object_object_add(a, "createdAt", xjson_object_new_string(now));
	json_object_object_add(a, "updatedAt", xjson_object_new_string(now));
	json_object_object_add(r, "artifact", a);
	if (client != NULL)
		json_object_object_add(r, "clientId", xjson_object_new_string(client));
	json_object_object_add(r, "boot", xjson_object_new_string(boot_mark()));
	return r;
}

/* The session's records from ws's store (made when create): NULL, *cause. */
static json_object *
open_load(const char *ws, const char *sid, int *rfd, char **cause)
{
	json_object *recs;

	if ((*rfd = attachments_state_open(ws, "artifacts", 1, cause)) == -1)
		return NULL;
	if ((recs = load(*rfd, sid, cause)) == NULL)
		close(*rfd);
	return recs;
}

/*
 * Add (or update) the client's checked artifact in (borrowed) of
 * identity key: upstream's answer (caller frees), or NULL with *status
 * (403 another client's, 500) and *cause.
 */
json_object *
artifacts_add(const char *ws, const char *sid, const char *client,
    json_object *in, const char *key, int *status, char **cause)
{
	json_object *recs, *changes = xjson_object_new_array(), *a;
	const char *warning = NULL;
	char id[17], now[CLOCK_ISO_LEN];
	int rfd, i, dirty = 0;

	*status = 500;
	artifact_id(sid, key, id);
	if ((recs = open_load(ws, sid, &rfd, cause)) == NULL) {
		json_object_put(changes);
		return NULL;
	}
	if ((i = find(recs, id)) != -1 &&
	    not_owner(json_object_array_get_idx(recs, (size_t)i), client)) {
		*status = 403;
		xasprintf(cause, "artifact %s is owned by a different client", id);
	} else if (i != -1) {
		a = json_get_obj(json_object_array_get_idx(recs, (size_t)i), "artifact");
		if ((dirty = merge(a, in))) {
			clock_iso_now(now);
			json_object_object_add(a, "updatedAt", xjson_object_new_string(now));
			json_object_array_add(changes, change("updated", a, NULL));
		}
	} else if (json_object_array_length(recs) >= ARTIFACT_MAX)
		warning = "dropped 1 newly created artifacts because the store is full";
	else {
		json_object_array_add(recs, record_new(in, id, client));
		a = json_get_obj(json_object_array_get_idx(recs,
		    json_object_array_length(recs) - 1), "artifact");
		json_object_array_add(changes, change("created", a, NULL));
		dirty = 1;
	}
	if (*cause == NULL && dirty)
		(void)save(rfd, sid, recs, cause);
	close(rfd);
	json_object_put(recs);
	if (*cause != NULL) {
		json_object_put(changes);
		return NULL;
	}
	return result(sid, changes, warning);
}

/*
 * Remove the session's artifact aid for client: upstream's answer (no
 * change when there is none such), or NULL with *status (403, 500) and
 * *cause.
 */
json_object *
artifacts_remove(const char *ws, const char *sid, const char *client,
    const char *aid, int *status, char **cause)
{
	json_object *recs, *changes = xjson_object_new_array(), *a;
	char now[CLOCK_ISO_LEN];
	int rfd, i;

	*status = 500;
	if ((recs = open_load(ws, sid, &rfd, cause)) == NULL) {
		json_object_put(changes);
		return NULL;
	}
	if ((i = find(recs, aid)) != -1 &&
	    not_owner(json_object_array_get_idx(recs, (size_t)i), client)) {
		*status = 403;
		xasprintf(cause, "artifact %s is owned by a different client", aid);
	} else if (i != -1) {
		a = json_object_get(json_get_obj(json_object_array_get_idx(recs,
		    (size_t)i), "artifact"));
		json_object_array_del_idx(recs, (size_t)i, 1);
		if (save(rfd, sid, recs, cause) == 0) {
			clock_iso_now(now);
			json_object_object_add(a, "updatedAt",
			    xjson_object_new_string(now));
			json_object_array_add(changes, change("removed", a,
			    "explicit"));
		}
		json_object_put(a);
	}
	close(rfd);
	json_object_put(recs);
	if (*cause != NULL) {
		json_object_put(changes);
		return NULL;
	}
	return result(sid, changes, NULL);
}

/* The session's data was deleted: its artifacts go too. */
void
artifacts_delete(const char *ws, const char *sid)
{
	char name[SERVE_SESSION_ID_MAX + 16], *cause = NULL;
	int rfd;

	if ((rfd = attachments_state_open(ws, "artifacts", 0, &cause)) == -1) {
		free(cause);
		return;
	}
	file_name(sid, name, sizeof(name));
	if (unlinkat(rfd, name, 0) == 0)
		(void)fsync(rfd);
	close(rfd);
}
