/* SPDX-License-Identifier: ISC */
/*
 * listing-cache.c: what the listing, the search and the titles read of
 * each transcript (its first prompt, its last custom title, its source
 * and parent session, its searchable text), cached by (dev, inode) and
 * valid while the file keeps its size and mtime, so a listing or a search
 * of an unchanged directory reads no transcript at all.  A file that only
 * grew (its first and last 4 KiB before the lines read unchanged, as the
 * child's index checks its prefix) is read from there on only.  Files are
 * opened without following a symlink nor waiting for a FIFO's writer, and
 * only if still the regular file the scan saw.  listing-keep.c keeps the
 * cache on disk across restarts.
 */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "json.h"
#include "sum64.h"
#include "serve.h"
#include "listing-int.h"
#include "xmalloc.h"

#define LIST_HEAD_BYTES		65536	/* where a first prompt is looked for */
#define LIST_DIGEST		4096	/* bytes digested at each end */
#define LIST_GROW_MAX		(4 * 1024 * 1024)	/* appended bytes read */

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
	if (p->block == NULL) {
		free(p->text);
		free(p->search);
		free(p->title);
		free(p->src.type);
		free(p->src.id);
		free(p->src.parent);
	}
	free(p->block);		/* a loaded entry's strings */
	p->block = NULL;
	p->text = p->search = p->title = NULL;
	p->search_full = 0;
	memset(&p->src, 0, sizeof(p->src));
}

/* A loaded entry's strings made its own, before they change. */
static void
cache_own(struct prompt_cache *p)
{
	char **str[] = { &p->text, &p->search, &p->title, &p->src.type,
	    &p->src.id, &p->src.parent };

	if (p->block == NULL)
		return;
	for (size_t i = 0; i < sizeof str / sizeof str[0]; i++)
		if (*str[i] != NULL)
			*str[i] = xstrdup(*str[i]);
	free(p->block);
	p->block = NULL;
}

void
listing_cache_entry_free(struct prompt_cache *p)
{
	if (p == NULL)
		return;
	cache_drop(p);
	free(p);
}

struct prompt_cache *
listing_cache_first(void)
{
	return RB_MIN(prompt_tree, &prompts);
}

struct prompt_cache *
listing_cache_next(struct prompt_cache *p)
{
	return RB_NEXT(prompt_tree, &prompts, p);
}

int
listing_cache_insert(struct prompt_cache *p)
{
	if (nprompts >= LIST_CACHE_MAX ||
	    RB_INSERT(prompt_tree, &prompts, p) != NULL) {
		listing_cache_entry_free(p);
		return -1;
	}
	nprompts++;
	return 0;
}

/* Forget every cached prompt (when the cache is full, and at exit). */
void
listing_cache_clear(void)
{
	struct prompt_cache *p;

	while ((p = RB_MIN(prompt_tree, &prompts)) != NULL) {
		RB_REMOVE(prompt_tree, &prompts, p);
		listing_cache_entry_free(p);
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

/* pread(2) of up to n bytes at off, counted. */
static ssize_t
cache_pread(int fd, char *buf, size_t n, int64_t off)
{
	ssize_t r = pread(fd, buf, n, (off_t)off);

	if (r > 0)
		metrics_listing_read((uint64_t)r);
	return r;
}

/* The digest of fd's last 4 KiB before done: 0, or -1. */
static int
cache_tail(int fd, int64_t done, uint64_t *tail)
{
	char buf[LIST_DIGEST] = "";
	size_t n = done < LIST_DIGEST ? (size_t)done : LIST_DIGEST;

	if (n > 0 && cache_pread(fd, buf, n, done - (int64_t)n) != (ssize_t)n)
		return -1;
	*tail = sum64((uint64_t)done, buf, n);
	return 0;
}

int
listing_cache_digest(int fd, int64_t done, uint64_t *head, uint64_t *tail)
{
	char buf[LIST_DIGEST] = "";
	size_t n = done < LIST_DIGEST ? (size_t)done : LIST_DIGEST;

	if (n > 0 && cache_pread(fd, buf, n, 0) != (ssize_t)n)
		return -1;
	*head = sum64(n, buf, n);	/* the same once done is past it */
	return cache_tail(fd, done, tail);
}

/* The end of buf[0..n)'s last whole line (0: none) from its offset off. */
static int64_t
lines_end(const char *buf, size_t n, int64_t off)
{
	const char *nl = memrchr(buf, '\n', n);

	return nl != NULL ? off + (nl - buf) + 1 : 0;
}

/*
 * The first prompt of e's transcript head, its source and parent and its
 * last custom title (of the head, or of the last 64 KiB of a longer file,
 * which also win for the source) into p; the whole lines read, and their
 * digests.
 */
static void
prompt_read(int dfd, const struct list_ent *e, struct prompt_cache *p)
{
	int64_t size = e->size;
	char *buf;
	ssize_t n;
	int fd;

	p->done = 0;
	if ((fd = ent_open(dfd, e)) == -1)
		return;
	buf = xmalloc(LIST_HEAD_BYTES);
	if ((n = cache_pread(fd, buf, size < LIST_HEAD_BYTES ? (size_t)size :
	    LIST_HEAD_BYTES - 1, 0)) > 0) {
		buf[n] = '\0';
		p->done = lines_end(buf, (size_t)n, 0);
		if (size < LIST_HEAD_BYTES)
			p->title = metadata_title_in(buf);
		source_in(buf, &p->src);
		p->text = prompt_in(buf);	/* cuts buf's lines */
	}
	if (size >= LIST_HEAD_BYTES && (n = cache_pread(fd, buf,
	    LIST_HEAD_BYTES - 1, size - (LIST_HEAD_BYTES - 1))) > 0) {
		buf[n] = '\0';
		if (lines_end(buf, (size_t)n, size - n) > 0)
			p->done = lines_end(buf, (size_t)n, size - n);
		p->title = metadata_title_in(buf);
		source_in(buf, &p->src);
	}
	free(buf);
	if (listing_cache_digest(fd, p->done, &p->head, &p->tail) == -1)
		p->done = 0;
	close(fd);
}

/* The digests once buf[0..end) (appended at p->done) is read: the head
   stays once past it, the tail is buf's when it is long enough. */
static int
grow_digests(int fd, const struct prompt_cache *p, const char *buf,
    int64_t end, uint64_t *head, uint64_t *tail)
{
	if (p->done >= LIST_DIGEST)
		*head = p->head;
	else if (listing_cache_digest(fd, p->done + end, head, tail) == -1)
		return -1;
	if (end >= LIST_DIGEST)
		*tail = sum64((uint64_t)(p->done + end),
		    buf + end - LIST_DIGEST, LIST_DIGEST);
	else if (p->done >= LIST_DIGEST &&
	    cache_tail(fd, p->done + end, tail) == -1)
		return -1;
	return 0;
}

/*
 * What was appended to p's file, from p->done to e's size, added to p:
 * a later title or source wins, a first prompt is looked for while in the
 * head, the search text (when made) grows.  0, or -1 when the file did
 * not only grow (its digested bytes changed) or grew too much: read it
 * all again.
 */
static int
prompt_grow(int dfd, const struct list_ent *e, struct prompt_cache *p)
{
	int64_t n = e->size - p->done, end;
	uint64_t head, tail;
	char *buf, *t;
	int fd, rc = -1;

	if (p->done <= 0 || n <= 0 || n > LIST_GROW_MAX ||
	    (fd = ent_open(dfd, e)) == -1)
		return -1;
	cache_own(p);
	buf = xmalloc((size_t)n + 1);
	if (listing_cache_digest(fd, p->done, &head, &tail) == -1 ||
	    head != p->head || tail != p->tail ||
	    cache_pread(fd, buf, (size_t)n, p->done) != (ssize_t)n)
		goto out;
	if ((end = lines_end(buf, (size_t)n, 0)) == 0) {
		rc = 0;		/* no whole line yet */
		goto out;
	}
	buf[end] = '\0';
	if (grow_digests(fd, p, buf, end, &head, &tail) == -1)
		goto out;
	if ((t = metadata_title_in(buf)) != NULL) {
		free(p->title);
		p->title = t;
	}
	source_in(buf, &p->src);
	if (p->text == NULL && p->done < LIST_HEAD_BYTES) {
		t = xstrndup(buf, (size_t)(LIST_HEAD_BYTES - p->done));
		p->text = prompt_in(t);
		free(t);
	}
	if (p->search != NULL && !p->search_full)
		p->search = search_text_extend(p->search, buf, (size_t)end,
		    &p->search_full);	/* cuts buf's lines */
	p->done += end;
	p->head = head;
	p->tail = tail;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

/* e's cache entry, current (read again, or its growth, when the file
   changed). */
static struct prompt_cache *
cache_of(int dfd, const struct list_ent *e)
{
	struct prompt_cache key, *p;

	key.dev = e->dev;
	key.ino = e->ino;
	if ((p = RB_FIND(prompt_tree, &prompts, &key)) != NULL &&
	    p->size == e->size && p->mtime_ns == e->mtime_ns) {
		p->seen = 1;
		return p;
	}
	if (p == NULL) {
		if (nprompts >= LIST_CACHE_MAX)
			listing_cache_clear();
		p = xcalloc(1, sizeof *p);
		p->dev = e->dev;
		p->ino = e->ino;
		RB_INSERT(prompt_tree, &prompts, p);
		nprompts++;
	} else if (e->size > p->size && prompt_grow(dfd, e, p) == 0)
		goto kept;
	cache_drop(p);
	prompt_read(dfd, e, p);
kept:
	p->size = e->size;
	p->mtime_ns = e->mtime_ns;
	p->seen = 1;
	listing_keep_changed();
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
		cache_own(p);
		fd = ent_open(dfd, e);
		p->search = fd != -1 ? search_text_read(fd, p->size,
		    &p->search_full) : xstrdup("");
		if (fd != -1)
			close(fd);
		listing_keep_changed();
	}
	return p->search;
}
