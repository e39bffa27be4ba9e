/* SPDX-License-Identifier: ISC */
/*
 * metadata.c: a persisted session's title, set the way qwen-code records
 * it: a system record of subtype custom_title {customTitle, titleSource:
 * "manual"} appended as one write (O_APPEND) whose parentUuid is the last
 * record's uuid, so the active chain runs through it.  The daemon writes
 * only a session that is not live, under the session's writer lease;
 * a live session's transcript belongs to its child.  Also here: the last
 * title in a buffer, for the listing.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "clock.h"
#include "json.h"
#include "serve.h"
#include "uuid.h"
#include "xmalloc.h"

#define META_TAIL_BYTES	65536

/*
 * The uuid of the last record in buf[0..len) that has one (caller frees),
 * or NULL.  buf is modified (lines are cut at their newline).
 */
static char *
last_uuid(char *buf, size_t len)
{
	char *end = buf + len, *line, *out = NULL;
	json_object *rec;
	const char *u;

	while (end > buf && out == NULL) {
		while (end > buf && end[-1] == '\n')
			*--end = '\0';
		for (line = end; line > buf && line[-1] != '\n'; line--)
			;
		/* A first line cut by the window is not a record. */
		if (line == buf && len == META_TAIL_BYTES)
			break;
		if ((rec = json_tokener_parse(line)) != NULL) {
			if ((u = json_get_str(rec, "uuid")) != NULL)
				out = xstrdup(u);
			json_object_put(rec);
		}
		end = line;
	}
	return out;
}

/* The parent of a record appended to fd's transcript now. */
static char *
tail_uuid(int fd)
{
	char *buf = xmalloc(META_TAIL_BYTES + 1), *u = NULL;
	struct stat st;
	off_t off;
	ssize_t n;

	if (fstat(fd, &st) == 0) {
		off = st.st_size > META_TAIL_BYTES ? st.st_size - META_TAIL_BYTES : 0;
		if ((n = pread(fd, buf, META_TAIL_BYTES, off)) > 0) {
			buf[n] = '\0';
			u = last_uuid(buf, (size_t)n);
		}
	}
	free(buf);
	return u;
}

/* The custom_title record (caller puts). */
static json_object *
title_record(const char *id, const char *ws, const char *parent,
    const char *title)
{
	json_object *o = xjson_object_new_object(), *p = xjson_object_new_object();
	char uuid[UUID_LEN + 1], when[CLOCK_ISO_LEN];

	uuid_new(uuid);
	clock_iso_now(when);
	json_object_object_add(o, "uuid", xjson_object_new_string(uuid));
	json_object_object_add(o, "parentUuid",
	    parent != NULL ? xjson_object_new_string(parent) : NULL);
	json_object_object_add(o, "sessionId", xjson_object_new_string(id));
	json_object_object_add(o, "timestamp", xjson_object_new_string(when));
	json_object_object_add(o, "type", xjson_object_new_string("system"));
	json_object_object_add(o, "subtype", xjson_object_new_string("custom_title"));
	json_object_object_add(o, "cwd", xjson_object_new_string(ws));
	json_object_object_add(o, "version", xjson_object_new_string(PACKAGE_VERSION));
	json_object_object_add(p, "customTitle", xjson_object_new_string(title));
	json_object_object_add(p, "titleSource", xjson_object_new_string("manual"));
	json_object_object_add(o, "systemPayload", p);
	return o;
}

/* Append the record as one line to fd; 0 or -1 (errno). */
static int
append_line(int fd, json_object *rec)
{
	const char *s = json_object_to_json_string_ext(rec,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(s);
	char *line = xmalloc(len + 1);
	ssize_t n;

	memcpy(line, s, len);
	line[len] = '\n';
	n = write(fd, line, len + 1);
	free(line);
	if (n == (ssize_t)(len + 1))
		return 0;
	if (n >= 0)
		errno = EIO;
	return -1;
}

/*
 * Set the title of persisted session id (in workspace ws, not live; its
 * archived copy when archived).  0, or -1 with *code (and *cause, caller
 * frees).
 */
int
metadata_set_title(const char *ws, const char *id, int archived,
    const char *title, const char **code, char **cause)
{
	struct lease *l;
	json_object *rec;
	char *dir, *path, *parent;
	struct stat st;
	int fd, rc;

	if ((l = catalog_lease_take(id, code, cause)) == NULL)
		return -1;
	dir = names_transcript_dir_ws(ws);
	xasprintf(&path, "%s/%s%s.jsonl", dir != NULL ? dir : "",
	    archived ? "archive/" : "", id);
	free(dir);
	fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	free(path);
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		*code = "session_not_found";
		if (fd != -1)
			close(fd);
		catalog_lease_drop(l);
		return -1;
	}
	parent = tail_uuid(fd);
	rec = title_record(id, ws, parent, title);
	if ((rc = append_line(fd, rec)) == -1) {
		*code = "internal";
		xasprintf(cause, "cannot append to session %s: %s", id, strerror(errno));
	}
	json_object_put(rec);
	free(parent);
	close(fd);
	catalog_lease_drop(l);
	return rc;
}

/*
 * The last custom title in buf (NUL-terminated lines; caller frees), or
 * NULL.  Only lines naming custom_title are parsed.
 */
char *
metadata_title_in(const char *buf)
{
	const char *line = buf, *nl, *t;
	json_object *rec;
	char *out = NULL, *copy;
	size_t len;

	for (; *line != '\0'; line = nl + 1) {
		nl = strchr(line, '\n');
		len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		if (memmem(line, len, "\"custom_title\"", 14) != NULL) {
			copy = xstrndup(line, len);
			if ((rec = json_tokener_parse(copy)) != NULL &&
			    (t = json_get_str(json_get_obj(rec, "systemPayload"),
			    "customTitle")) != NULL) {
				free(out);
				out = xstrdup(t);
			}
			json_object_put(rec);
			free(copy);
		}
		if (nl == NULL)
			break;
	}
	return out;
}
