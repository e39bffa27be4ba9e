/* SPDX-License-Identifier: ISC */
/*
 * listing-cache.c: what the listing, the search and the titles read of
 * each transcript (its first prompt, its last custom title, its source
 * and parent session, its searchable text), cached by (dev, inode) and valid while the file keeps its size
 * and mtime, so a listing or a search of an unchanged directory reads no
 * transcript at all.  Files are opened without following a symlink nor
 * waiting for a FIFO's writer, and only if still the regular file the
 * scan saw.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/tree.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "json.h"
#include "serve.h"
#include "listing-int.h"
#include "xmalloc.h"

#define LIST_HEAD_BYTES		65536	/* where a first prompt is looked for */
#define LIST_PROMPT_BYTES	200
#define LIST_CACHE_MAX		65536	/* cached files */

/* A cached first prompt: valid while the file keeps its size and mtime. */
struct prompt_cache {
	RB_ENTRY(prompt_cache)	 entry;
	dev_t			 dev;
	ino_t			 ino;
	int64_t			 size, mtime_ns;
	char			*text;		/* NULL: the file has none */
	char			*search;	/* its searchable text (search.c) */
	char			*title;		/* its last custom title, or NULL */
	struct list_source	 src;		/* its source and parent */
};
RB_HEAD(prompt_tree, prompt_cache);
int	listing_cache_cmp(const struct prompt_cache *, const struct prompt_cache *);
RB_PROTOTYPE(prompt_tree, prompt_cache, entry, listing_cache_cmp)

static struct prompt_tree prompts = RB_INITIALIZER(&prompts);
static size_t nprompts;

int
listing_cache_cmp(const struct prompt_cache *a, const struct prompt_cache *b)
{
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}
RB_GENERATE(prompt_tree, prompt_cache, entry, listing_cache_cmp)

/* What p holds of its file, dropped. */
static void
cache_drop(struct prompt_cache *p)
{
	free(p->text);
	free(p->search);
	free(p->title);
	free(p->src.type);
	free(p->src.id);
	free(p->src.parent);
	p->text = p->search = p->title = NULL;
	memset(&p->src, 0, sizeof(p->src));
}

/* Forget every cached prompt (when the cache is full, and at exit). */
void
listing_cache_clear(void)
{
	struct prompt_cache *p;

	while ((p = RB_MIN(prompt_tree, &prompts)) != NULL) {
		RB_REMOVE(prompt_tree, &prompts, p);
		cache_drop(p);
		free(p);
	}
	nprompts = 0;
}

/* The text of the first user record in buf (NUL-terminated), or NULL. */
static char *
prompt_in(char *buf)
{
	json_object *rec, *v, *parts, *part;
	char *line, *save = NULL, *text = NULL;
	const char *t;
	size_t i, len;

	for (line = strtok_r(buf, "\n", &save); line != NULL && text == NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((rec = json_tokener_parse(line)) == NULL)
			continue;
		if (json_object_object_get_ex(rec, "type", &v) &&
		    strcmp(json_object_get_string(v), "user") == 0 &&
		    json_object_object_get_ex(rec, "message", &v) &&
		    json_object_object_get_ex(v, "parts", &parts) &&
		    json_object_is_type(parts, json_type_array))
			for (i = 0; i < json_object_array_length(parts) && !text; i++) {
				part = json_object_array_get_idx(parts, i);
				if (!json_object_object_get_ex(part, "text", &v) ||
				    !json_object_is_type(v, json_type_string))
					continue;
				t = json_object_get_string(v);
				/* At most 200 bytes, cut on a character boundary. */
				if ((len = strlen(t)) > LIST_PROMPT_BYTES)
					for (len = LIST_PROMPT_BYTES; len > 0 &&
					    ((unsigned char)t[len] & 0xc0) == 0x80; len--)
						;
				text = xstrndup(t, len);
			}
		json_object_put(rec);
	}
	return text;
}

/* *dst = rec's payload member key (a string), replacing what it was. */
static void
source_set(char **dst, json_object *rec, const char *key)
{
	const char *v = json_get_str(json_get_obj(rec, "systemPayload"), key);

	free(*dst);
	*dst = v != NULL ? xstrdup(v) : NULL;
}

/*
 * The session_source and parent_session records of buf (NUL-terminated
 * lines) into src, the last of each winning.  Only lines naming them are
 * parsed.
 */
static void
source_in(const char *buf, struct list_source *src)
{
	const char *line = buf, *nl, *sub;
	json_object *rec;
	char *copy;
	size_t len;

	for (; *line != '\0'; line = nl + 1) {
		nl = strchr(line, '\n');
		len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		if (memmem(line, len, "\"session_source\"", 16) != NULL ||
		    memmem(line, len, "\"parent_session\"", 16) != NULL) {
			copy = xstrndup(line, len);
			rec = json_tokener_parse(copy);
			if ((sub = json_get_str(rec, "subtype")) != NULL &&
			    strcmp(sub, "session_source") == 0) {
				source_set(&src->type, rec, "sourceType");
				source_set(&src->id, rec, "sourceId");
			} else if (sub != NULL && strcmp(sub, "parent_session") == 0)
				source_set(&src->parent, rec, "parentSessionId");
			json_object_put(rec);
			free(copy);
		}
		if (nl == NULL)
			break;
	}
}

/*
 * Read the head of e's transcript: opened without following a symlink nor
 * waiting for a FIFO's writer, and only if it is still the regular file
 * the scan saw.  The text (caller frees) or NULL.
 */
static int
ent_open(int dfd, const struct list_ent *e)
{
	char name[SERVE_SESSION_ID_MAX + 8];
	struct stat st;
	int fd;

	snprintf(name, sizeof name, "%s.jsonl", e->id);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd != -1 && (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_ino != e->ino || st.st_dev != e->dev)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * The first prompt of e's transcript head, its source and parent and its
 * last custom title (of the head, or of the last 64 KiB of a longer file,
 * which also win for the source) into p.
 */
static void
prompt_read(int dfd, const struct list_ent *e, struct prompt_cache *p)
{
	char *buf;
	ssize_t n;
	int fd;

	if ((fd = ent_open(dfd, e)) == -1)
		return;
	buf = xmalloc(LIST_HEAD_BYTES);
	if ((n = pread(fd, buf, LIST_HEAD_BYTES - 1, 0)) > 0) {
		buf[n] = '\0';
		if (e->size < LIST_HEAD_BYTES)
			p->title = metadata_title_in(buf);
		source_in(buf, &p->src);
		p->text = prompt_in(buf);	/* cuts buf's lines */
	}
	if (e->size >= LIST_HEAD_BYTES &&
	    (n = pread(fd, buf, LIST_HEAD_BYTES - 1, e->size - (LIST_HEAD_BYTES - 1))) > 0) {
		buf[n] = '\0';
		p->title = metadata_title_in(buf);
		source_in(buf, &p->src);
	}
	free(buf);
	close(fd);
}

/* e's cache entry, current (its texts reread when the file changed). */
static struct prompt_cache *
cache_of(int dfd, const struct list_ent *e)
{
	struct prompt_cache key, *p;

	key.dev = e->dev;
	key.ino = e->ino;
	if ((p = RB_FIND(prompt_tree, &prompts, &key)) != NULL &&
	    p->size == e->size && p->mtime_ns == e->mtime_ns)
		return p;
	if (p == NULL) {
		if (nprompts >= LIST_CACHE_MAX)
			listing_cache_clear();
		p = xcalloc(1, sizeof *p);
		p->dev = e->dev;
		p->ino = e->ino;
		RB_INSERT(prompt_tree, &prompts, p);
		nprompts++;
	}
	cache_drop(p);
	prompt_read(dfd, e, p);
	p->size = e->size;
	p->mtime_ns = e->mtime_ns;
	return p;
}

/* e's first prompt, from the cache or the file (borrowed, may be NULL). */
const char *
listing_cache_prompt(int dfd, const struct list_ent *e)
{
	return cache_of(dfd, e)->text;
}

/* e's custom title, likewise. */
const char *
listing_cache_title(int dfd, const struct list_ent *e)
{
	return cache_of(dfd, e)->title;
}

/* e's source and parent session, likewise. */
const struct list_source *
listing_cache_source(int dfd, const struct list_ent *e)
{
	return &cache_of(dfd, e)->src;
}

/* e's searchable text, from the cache or the file (borrowed). */
const char *
listing_cache_search(int dfd, const struct list_ent *e)
{
	struct prompt_cache *p = cache_of(dfd, e);
	int fd;

	if (p->search == NULL) {
		fd = ent_open(dfd, e);
		p->search = fd != -1 ? search_text_read(fd) : xstrdup("");
		if (fd != -1)
			close(fd);
	}
	return p->search;
}
