/* SPDX-License-Identifier: ISC */
/*
 * listing-keep.c: the listing's per-file cache kept on disk, so that the
 * first listing or search after a restart reads only the transcripts that
 * changed.  One file, <cache>/listing/sessions.kept, in a directory of
 * our own (0700) under the index cache's: written whole (a staging file,
 * fsync, rename) a second after the cache changed, by a thread of its
 * own, and read once, before the first listing.  It holds prompt text: it
 * is made 0600, and read only when it is a regular file (never through a
 * symlink) of ours that nobody else may read, within its bounds, and with
 * its checksums right; else it is ignored with one classified log line
 * and rebuilt from the transcripts.  This file reads it, on a thread
 * (the listings wait for it, other requests do not);
 * listing-keep-write.c writes it.  Its entries are trusted no further
 * than the cache trusts its own: while the file keeps its (dev, inode,
 * size, mtime), or extended when it only grew.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cause.h"
#include "clock.h"
#include "log.h"
#include "paths.h"
#include "privdir.h"
#include "sum64.h"
#include "serve.h"
#include "listing-int.h"
#include "xmalloc.h"

/* The load, on a thread of its own. */
struct keep_load {
	pthread_t		 tid;
	int			 inline_run;	/* no thread: run here */
	atomic_int		 done;
	int			 found;		/* a file was there */
	const char		*why;		/* refused: why */
	char			*cause;		/* its directory refused: why */
	struct prompt_cache	**ents;
	size_t			 n, len;
	uint64_t		 ns;
};

#define KEEP_LOAD_NONE		0
#define KEEP_LOAD_RUNNING	1
#define KEEP_LOAD_DONE		2

static int		 keep_dfd = -1;
static int		 keep_load_state;
static struct keep_load	 keep_loader;


/* The kept file's directory, <cache>/listing: under the index cache
   (ours, writable by nobody else), itself ours and 0700. */
int
listing_keep_dir(int create, char **cause)
{
	char *cache;
	struct stat st;
	int pfd, fd;

	if (keep_dfd != -1)
		return keep_dfd;
	if ((cache = paths_cache_dir(conf.cache_dir)) == NULL) {
		cause_set(cause, "no cache directory");
		return -1;
	}
	if (create && paths_mkdir_p(cache, 0700) == -1) {
		cause_errno(cause, errno, "%s", cache);
		free(cache);
		return -1;
	}
	pfd = privdir_open("index cache", cache, 0, cause);
	free(cache);
	if (pfd == -1)
		return -1;
	if (create && mkdirat(pfd, KEEP_DIR, 0700) == -1 && errno != EEXIST) {
		cause_errno(cause, errno, "%s", KEEP_DIR);
		close(pfd);
		return -1;
	}
	fd = openat(pfd, KEEP_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(pfd);
	if (fd == -1) {
		cause_errno(cause, errno, "%s", KEEP_DIR);
		return -1;
	}
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		cause_set(cause, "%s: not ours or not private (0700)", KEEP_DIR);
		close(fd);
		return -1;
	}
	return keep_dfd = fd;
}

void
listing_keep_dir_close(void)
{
	if (keep_dfd != -1)
		close(keep_dfd);
	keep_dfd = -1;
}

/* ---- reading ------------------------------------------------------------ */

/* A string of a record (NULL for none) copied to *out (then past its
   NUL) into *dst; 0, or -1 when it is longer than max, holds a NUL or
   runs past the body. */
static int
keep_str(const char **pp, const char *end, uint32_t len, size_t max,
    char **out, char **dst)
{
	*dst = NULL;
	if (len == KEEP_NONE)
		return 0;
	if (len > max || (size_t)(end - *pp) < len || memchr(*pp, '\0', len) != NULL)
		return -1;
	memcpy(*out, *pp, len);
	(*out)[len] = '\0';
	*dst = *out;
	*out += len + 1;
	*pp += len;
	return 0;
}

/* One record at *pp into a new entry (caller frees), its strings in one
   block, or NULL and *why. */
static struct prompt_cache *
keep_rec_read(const char **pp, const char *end, const char **why)
{
	static const size_t max[KEEP_NSTR] = KEEP_STR_MAX;
	struct prompt_cache *p;
	struct keep_rec r;
	char **str[KEEP_NSTR], *out;
	size_t total = 0;
	int i;

	if ((size_t)(end - *pp) < sizeof r) {
		*why = "truncated record";
		return NULL;
	}
	memcpy(&r, *pp, sizeof r);
	*pp += sizeof r;
	for (i = 0; i < KEEP_NSTR; i++)
		if (r.len[i] != KEEP_NONE)
			total += (size_t)(r.len[i] > max[i] ? 0 : r.len[i]) + 1;
	p = xcalloc(1, sizeof *p);
	out = p->block = xmalloc(total + 1);
	str[0] = &p->text, str[1] = &p->search, str[2] = &p->title;
	str[3] = &p->src.type, str[4] = &p->src.id, str[5] = &p->src.parent;
	for (i = 0; i < KEEP_NSTR; i++)
		if (keep_str(pp, end, r.len[i], max[i], &out, str[i]) == -1) {
			*why = "bad string";
			listing_cache_entry_free(p);
			return NULL;
		}
	if (r.size < 0 || r.done < 0 || r.done > r.size) {
		*why = "bad offsets";
		listing_cache_entry_free(p);
		return NULL;
	}
	p->dev = (dev_t)r.dev;
	p->ino = (ino_t)r.ino;
	p->size = r.size;
	p->mtime_ns = r.mtime_ns;
	p->done = r.done;
	p->head = r.head;
	p->tail = r.tail;
	p->search_full = p->search != NULL && (r.flags & KEEP_HAS_SEARCH_FULL);
	p->unseen = r.unseen;
	return p;
}

/* The header of buf[0..len) checked: NULL, or why it is refused. */
static const char *
keep_head_check(const char *buf, size_t len, struct keep_head *h)
{
	if (len < sizeof *h)
		return "truncated header";
	memcpy(h, buf, sizeof *h);
	if (memcmp(h->magic, KEEP_MAGIC, sizeof h->magic) != 0)
		return "not a kept listing";
	if (h->endian != KEEP_ENDIAN || h->version != KEEP_VERSION)
		return "another version";
	if (sum64(KEEP_VERSION, h, offsetof(struct keep_head,
	    head_sum)) != h->head_sum)
		return "header checksum";
	if (h->body_len != len - sizeof *h)
		return "truncated";
	if (h->count > LIST_CACHE_MAX)
		return "too many entries";
	if (sum64(h->count, buf + sizeof *h, (size_t)h->body_len) !=
	    h->body_sum)
		return "checksum";
	return NULL;
}

/* buf[0..len) as entries (all or nothing) into ld: NULL, or why it is
   refused. */
static const char *
keep_parse(struct keep_load *ld, const char *buf, size_t len)
{
	const char *p = buf + sizeof(struct keep_head), *end = buf + len, *why;
	struct keep_head h;
	size_t i;

	if ((why = keep_head_check(buf, len, &h)) != NULL)
		return why;
	ld->ents = xreallocarray(NULL, h.count + 1, sizeof *ld->ents);
	for (i = 0; i < h.count; i++)
		if ((ld->ents[i] = keep_rec_read(&p, end, &why)) == NULL)
			break;
	if (why == NULL && p != end)
		why = "trailing bytes";
	ld->n = i;
	return why;
}

/* The kept file opened and checked (ours, private, regular, bounded):
   its descriptor and size, or -1 and *why. */
static int
keep_open(int dfd, size_t *len, const char **why)
{
	struct stat st;
	int fd;

	fd = openat(dfd, KEEP_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		*why = errno == ELOOP ? "a symbolic link" : errno == ENOENT ?
		    NULL : "cannot be opened";
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		*why = "not a regular file";
	else if (st.st_uid != geteuid() || (st.st_mode & 077) != 0)
		*why = "not ours or not private (0600)";
	else if (st.st_size > KEEP_MAX_BYTES)
		*why = "too large";
	else {
		*len = (size_t)st.st_size;
		return fd;
	}
	close(fd);
	return -1;
}

/* Read len bytes of fd: the buffer (caller frees), or NULL. */
static char *
keep_slurp(int fd, size_t len)
{
	char *buf = xmalloc(len + 1);
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		if ((n = pread(fd, buf + got, len - got, (off_t)got)) == -1 &&
		    errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	return buf;
}

/* The load on its thread: the file opened, checked, read and parsed
   (no log, no cache: the loop takes the entries in listing_keep_ready). */
static void *
keep_load_run(void *arg)
{
	struct keep_load *ld = arg;
	uint64_t t0 = clock_mono_ns();
	char *cause = NULL, *buf;
	int dfd, fd;

	if ((dfd = listing_keep_dir(0, &cause)) == -1 && errno != ENOENT &&
	    errno != ENOTDIR) {
		ld->cause = cause;	/* there, but refused */
		cause = NULL;
	} else if (dfd != -1 && (fd = keep_open(dfd, &ld->len, &ld->why)) != -1) {
		if ((buf = keep_slurp(fd, ld->len)) == NULL)
			ld->why = "cannot be read";
		else
			ld->why = keep_parse(ld, buf, ld->len);
		ld->found = 1;
		close(fd);
		free(buf);
	}
	free(cause);
	ld->ns = clock_mono_ns() - t0;
	atomic_store(&ld->done, 1);
	return NULL;
}

void
listing_keep_load(void)
{
	if (keep_load_state != KEEP_LOAD_NONE)
		return;
	keep_load_state = KEEP_LOAD_RUNNING;
	if (pthread_create(&keep_loader.tid, NULL, keep_load_run, &keep_loader) != 0) {
		keep_load_run(&keep_loader);
		keep_loader.inline_run = 1;
	}
}

/* The loaded entries into the cache (or all freed when refused). */
static void
keep_load_take(struct keep_load *ld)
{
	size_t i, n = 0;

	for (i = 0; i < ld->n; i++)
		if (ld->why != NULL)
			listing_cache_entry_free(ld->ents[i]);
		else if (listing_cache_insert(ld->ents[i]) == 0)
			n++;
	free(ld->ents);
	ld->ents = NULL;
	ld->n = 0;
	if (ld->cause != NULL) {
		log_warnx("listing: no kept file: %s", ld->cause);
		metrics_listing_kept("rejected");
		free(ld->cause);
		ld->cause = NULL;
	} else if (ld->why != NULL) {
		log_warnx("listing: kept file %s ignored (%s); rebuilt from the "
		    "transcripts", KEEP_NAME, ld->why);
		metrics_listing_kept("rejected");
	} else if (!ld->found)
		metrics_listing_kept("missing");
	else {
		log_info("listing: %zu entries (%zu bytes) from the kept file "
		    "in %.1f ms", n, ld->len, (double)ld->ns / 1e6);
		metrics_listing_kept("loaded");
	}
}

int
listing_keep_ready(void)
{
	if (keep_load_state == KEEP_LOAD_DONE)
		return 1;
	if (keep_load_state == KEEP_LOAD_NONE || !atomic_load(&keep_loader.done))
		return 0;
	if (!keep_loader.inline_run)
		pthread_join(keep_loader.tid, NULL);
	keep_load_state = KEEP_LOAD_DONE;
	keep_load_take(&keep_loader);
	return 1;
}

void
listing_keep_load_wait(void)
{
	if (keep_load_state != KEEP_LOAD_RUNNING)
		return;
	if (!keep_loader.inline_run)
		pthread_join(keep_loader.tid, NULL);
	keep_loader.inline_run = 1;	/* joined */
	atomic_store(&keep_loader.done, 1);
	(void)listing_keep_ready();
}
