/* SPDX-License-Identifier: ISC */
/*
 * mirror.c: what the --agent-acp agent appends to its compact
 * transcript, copied into the real one as it lands.
 *
 * The agent's chats directory is watched with inotify; each change
 * reads the compact file from where the last copy ended and appends
 * every whole line (through the session's appender, under our writer
 * lease) byte for byte.  Bytes after the last '\n' wait: a torn line
 * (the agent killed mid-write) is never copied, and every complete
 * record is, as soon as its newline is on disk.  A compact file that
 * shrinks or is replaced stops the copy (logged).
 */
#include "config.h"

#include <sys/inotify.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "append.h"
#include "compact.h"
#include "log.h"
#include "xmalloc.h"

/* Read this much at a time, more (doubling) for a longer line; a line
   longer than the agent's own cap on a transcript stops the copy. */
#define MIRROR_CHUNK	(1u << 20)
#define MIRROR_MAX_LINE	(256u << 20)

struct mirror {
	char		*path;		/* the compact transcript */
	char		 sid[37];
	struct appender	*app;		/* borrowed: the session's */
	int		 ifd;		/* inotify */
	int		 fd;		/* the compact file, once it exists */
	ino_t		 ino;
	uint64_t	 off;		/* copied (or ours) up to here */
	uint64_t	 copied;	/* bytes copied into the real transcript */
	int		 dead;
	struct event	*ev;
};

static void
mirror_on_change(evutil_socket_t fd, short what, void *arg)
{
	struct mirror *m = arg;
	char buf[4096];

	(void)what;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	mirror_drain(m);
}

struct mirror *
mirror_start(struct event_base *base, const char *path, const char *sid,
    struct appender *app, uint64_t from, char **cause)
{
	struct mirror *m = xcalloc(1, sizeof(*m));
	char *dir = xstrdup(path);

	*cause = NULL;
	m->path = xstrdup(path);
	strlcpy(m->sid, sid, sizeof(m->sid));
	m->app = app;
	m->off = from;
	m->fd = -1;
	if ((m->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1 ||
	    inotify_add_watch(m->ifd, dirname(dir), IN_MODIFY | IN_CREATE |
	    IN_MOVED_TO | IN_CLOSE_WRITE) == -1 ||
	    (m->ev = event_new(base, m->ifd, EV_READ | EV_PERSIST,
	    mirror_on_change, m)) == NULL || event_add(m->ev, NULL) == -1) {
		xasprintf(cause, "cannot watch the agent's chats directory: %s",
		    strerror(errno));
		free(dir);
		mirror_stop(m);
		return NULL;
	}
	free(dir);
	mirror_drain(m);
	return m;
}

/* Open the compact file once it is there; 0, or -1 while it is not. */
static int
mirror_open(struct mirror *m)
{
	struct stat st;

	if (m->fd != -1)
		return 0;
	if ((m->fd = open(m->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(m->fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(m->fd);
		m->fd = -1;
		return -1;
	}
	m->ino = st.st_ino;
	return 0;
}

/* Copy buf's whole lines; how many bytes were copied (-1: failed). */
static ssize_t
mirror_copy(struct mirror *m, const char *buf, size_t len)
{
	const char *nl = memrchr(buf, '\n', len);
	size_t n;
	char *cause = NULL;

	if (nl == NULL)
		return 0;
	n = (size_t)(nl - buf) + 1;
	if (appender_append_raw(m->app, buf, n, &cause) == -1) {
		log_warnx("session %s: cannot copy the agent's records: %s",
		    m->sid, cause != NULL ? cause : "?");
		free(cause);
		return -1;
	}
	m->copied += n;
	return (ssize_t)n;
}

/* Copy the whole lines of [m->off, size), a chunk at a time.  0, or -1
   to stop (a line over the cap). */
static int
mirror_chunks(struct mirror *m, uint64_t size)
{
	size_t want = MIRROR_CHUNK, len;
	ssize_t n, done;
	char *buf;

	while (m->off < size) {
		len = size - m->off < want ? (size_t)(size - m->off) : want;
		buf = xmalloc(len);
		n = pread(m->fd, buf, len, (off_t)m->off);
		done = n > 0 ? mirror_copy(m, buf, (size_t)n) : -1;
		free(buf);
		if (done == -1)
			return 0;	/* a read or write error: the next change retries */
		if (done > 0) {
			m->off += (uint64_t)done;
			want = MIRROR_CHUNK;
			continue;
		}
		if ((size_t)n < want)
			return 0;	/* a line still being written (or torn) */
		if (want >= MIRROR_MAX_LINE) {
			log_warnx("session %s: a line of over %u MiB from the agent; "
			    "copying stops", m->sid, MIRROR_MAX_LINE >> 20);
			return -1;
		}
		want *= 2;
	}
	return 0;
}

void
mirror_drain(struct mirror *m)
{
	struct stat st, ps;

	if (m == NULL || m->dead || mirror_open(m) == -1)
		return;
	if (fstat(m->fd, &st) == -1)
		return;
	/* Replaced (a rename over it) or cut: that is no longer our copy. */
	if ((stat(m->path, &ps) == 0 && ps.st_ino != m->ino) ||
	    (uint64_t)st.st_size < m->off) {
		log_warnx("session %s: the agent's compact transcript was replaced "
		    "or truncated; copying stops", m->sid);
		m->dead = 1;
		return;
	}
	if (mirror_chunks(m, (uint64_t)st.st_size) == -1)
		m->dead = 1;
}

uint64_t
mirror_copied(const struct mirror *m)
{
	return m != NULL ? m->copied : 0;
}

void
mirror_stop(struct mirror *m)
{
	if (m == NULL)
		return;
	mirror_drain(m);
	if (m->ev != NULL)
		event_free(m->ev);
	if (m->ifd != -1)
		close(m->ifd);
	if (m->fd != -1)
		close(m->fd);
	free(m->path);
	free(m);
}
