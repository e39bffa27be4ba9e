/* SPDX-License-Identifier: ISC */
/*
 * listing-keep-write.c: the listing's kept file written (listing-keep.c
 * says what it is and reads it): a second after the cache changed, the
 * cache is encoded on the loop (memory only) and a thread of its own
 * writes it to a staging file (0600), syncs it and renames it over the
 * kept file, so a crash leaves the old file or the new one.  One write at
 * a time; a change during a write makes another after it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cause.h"
#include "log.h"
#include "privdir.h"
#include "sum64.h"
#include "serve.h"
#include "listing-int.h"
#include "xmalloc.h"

#define KEEP_DELAY_MS	1000		/* after a change, before a write */
#define KEEP_UNSEEN_MAX	8		/* writes an entry outlives unseen */

/* A write on its thread: the encoded file, and how it went. */
struct keep_write {
	int		 dfd;
	char		*buf;
	size_t		 len;
	const char	*what;		/* the step that failed */
	int		 error;
};

static int		 keep_dirty;
static int		 keep_warned;
static struct event	*keep_ev;
static pthread_t	 keep_thread;
static struct keep_write *keep_job;	/* the write on keep_thread */
static atomic_int	 keep_busy;

struct keep_buf {
	char	*buf;
	size_t	 len, cap;
};

static void
keep_put(struct keep_buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		while (b->len + n > b->cap)
			b->cap = b->cap ? b->cap * 2 : 65536;
		b->buf = xreallocarray(b->buf, b->cap, 1);
	}
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

/* p as a record into b, unless a string is over its bound: 0 or -1. */
static int
keep_rec_put(struct keep_buf *b, const struct prompt_cache *p)
{
	static const size_t max[KEEP_NSTR] = KEEP_STR_MAX;
	const char *str[KEEP_NSTR] = { p->text, p->search, p->title,
	    p->src.type, p->src.id, p->src.parent };
	struct keep_rec r;
	size_t n, total = 0;
	int i;

	memset(&r, 0, sizeof r);
	for (i = 0; i < KEEP_NSTR; i++) {
		r.len[i] = KEEP_NONE;
		if (str[i] == NULL)
			continue;
		if ((n = strlen(str[i])) > max[i])
			return -1;
		r.len[i] = (uint32_t)n;
		total += n;
	}
	if (b->len + sizeof r + total > KEEP_MAX_BYTES)
		return -1;
	r.dev = (uint64_t)p->dev;
	r.ino = (uint64_t)p->ino;
	r.size = p->size;
	r.mtime_ns = p->mtime_ns;
	r.done = p->done;
	r.head = p->head;
	r.tail = p->tail;
	r.flags = p->search_full ? KEEP_HAS_SEARCH_FULL : 0;
	r.unseen = p->unseen;
	keep_put(b, &r, sizeof r);
	for (i = 0; i < KEEP_NSTR; i++)
		if (str[i] != NULL)
			keep_put(b, str[i], r.len[i]);
	return 0;
}

/*
 * The cache encoded as the kept file (caller frees), its length in *len.
 * An entry not looked at since the last write counts one more, and goes
 * after KEEP_UNSEEN_MAX of them (its file was removed, or is another
 * workspace's that nobody lists any more).
 */
static char *
keep_encode(size_t *len)
{
	struct keep_buf b = { NULL, 0, 0 };
	struct keep_head h;
	struct prompt_cache *p;

	memset(&h, 0, sizeof h);
	keep_put(&b, &h, sizeof h);
	for (p = listing_cache_first(); p != NULL; p = listing_cache_next(p)) {
		p->unseen = p->seen ? 0 : p->unseen + 1;
		p->seen = 0;
		if (p->unseen < KEEP_UNSEEN_MAX && keep_rec_put(&b, p) == 0)
			h.count++;
	}
	memcpy(h.magic, KEEP_MAGIC, sizeof h.magic);
	h.endian = KEEP_ENDIAN;
	h.version = KEEP_VERSION;
	h.body_len = b.len - sizeof h;
	memcpy(b.buf, &h, sizeof h);	/* its checksums: keep_seal() */
	*len = b.len;
	return b.buf;
}

/* Write all of buf to fd: 0, or -1 with errno. */
static int
keep_write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, buf, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The checksums of the encoded file into its header (on the thread:
   13 MiB at 10 000 sessions is no work for the loop). */
static void
keep_seal(char *buf, size_t len)
{
	struct keep_head h;

	memcpy(&h, buf, sizeof h);
	h.body_sum = sum64(h.count, buf + sizeof h, len - sizeof h);
	h.head_sum = sum64(KEEP_VERSION, &h,
	    offsetof(struct keep_head, head_sum));
	memcpy(buf, &h, sizeof h);
}

/* The write itself (on its thread: no allocation, no log): a staging
   file written, synced and renamed over the kept file. */
static void *
keep_write_run(void *arg)
{
	struct keep_write *w = arg;
	char tmp[32];
	int fd;

	keep_seal(w->buf, w->len);
	if ((fd = privdir_mktemp(w->dfd, KEEP_STAGE, tmp, sizeof tmp)) == -1) {
		w->what = "create";
		w->error = errno;
		goto out;
	}
	if (keep_write_all(fd, w->buf, w->len) == -1)
		w->what = "write";
	else if (fsync(fd) == -1)
		w->what = "fsync";
	if (w->what != NULL)
		w->error = errno;
	close(fd);
	if (w->what == NULL && renameat(w->dfd, tmp, w->dfd, KEEP_NAME) == -1) {
		w->what = "rename";
		w->error = errno;
	}
	if (w->what != NULL)
		(void)unlinkat(w->dfd, tmp, 0);
	else
		(void)fsync(w->dfd);	/* the rename survives a crash */
out:
	atomic_store(&keep_busy, 0);
	return NULL;
}

/* A write that ended: its outcome logged and counted, its memory freed. */
static void
keep_write_end(struct keep_write *w)
{
	if (w->what != NULL)
		log_warnx("listing: cannot write the kept file %s (%s): %s",
		    KEEP_NAME, w->what, strerror(w->error));
	metrics_listing_kept(w->what != NULL ? "failed" : "written");
	free(w->buf);
	free(w);
}

/* A write of the cache as it is now, on a thread (or here when none can
   be made; sync: here anyway). */
static void
keep_write_start(int sync)
{
	struct keep_write *w;
	char *cause = NULL;
	int dfd;

	keep_dirty = 0;
	if ((dfd = listing_keep_dir(1, &cause)) == -1) {
		if (!keep_warned++)	/* once: it is tried after every change */
			log_warnx("listing: no kept file: %s",
			    cause != NULL ? cause : "?");
		metrics_listing_kept("failed");
		free(cause);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->dfd = dfd;
	w->buf = keep_encode(&w->len);
	atomic_store(&keep_busy, 1);
	if (sync || pthread_create(&keep_thread, NULL, keep_write_run, w) != 0) {
		keep_write_run(w);
		keep_write_end(w);
		return;
	}
	keep_job = w;
}

/* The debounce timer: the last write ended, then a new one if needed. */
static void
keep_tick(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { KEEP_DELAY_MS / 1000, (KEEP_DELAY_MS % 1000) * 1000 };

	(void)fd;
	(void)what;
	(void)arg;
	if (keep_job != NULL) {
		if (atomic_load(&keep_busy)) {
			event_add(keep_ev, &tv);	/* still writing */
			return;
		}
		pthread_join(keep_thread, NULL);
		keep_write_end(keep_job);
		keep_job = NULL;
	}
	if (keep_dirty && !listing_keep_ready()) {
		event_add(keep_ev, &tv);	/* never over what is loading */
		return;
	}
	if (keep_dirty)
		keep_write_start(0);
	if (keep_job != NULL)
		event_add(keep_ev, &tv);	/* to see it end */
}

void
listing_keep_changed(void)
{
	struct timeval tv = { KEEP_DELAY_MS / 1000, (KEEP_DELAY_MS % 1000) * 1000 };

	keep_dirty = 1;
	if (keep_ev == NULL &&
	    (keep_ev = evtimer_new(serve_base, keep_tick, NULL)) == NULL)
		fatalx("out of memory (event)");
	if (!evtimer_pending(keep_ev, NULL))
		event_add(keep_ev, &tv);
}

void
listing_keep_free(void)
{
	listing_keep_load_wait();	/* it uses the directory */
	if (keep_job != NULL) {
		pthread_join(keep_thread, NULL);
		keep_write_end(keep_job);
		keep_job = NULL;
	}
	if (keep_dirty)
		keep_write_start(1);
	if (keep_ev != NULL)
		event_free(keep_ev);
	keep_ev = NULL;
	listing_keep_dir_close();
}
