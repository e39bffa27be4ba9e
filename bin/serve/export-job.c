/* SPDX-License-Identifier: ISC */
/*
 * export-job.c: a rendered export (html, md, json) read from its
 * transcript a slice per loop turn, so a 32 MiB transcript never holds
 * the loop for long: each turn reads EXPORT_SLICE bytes and feeds their
 * whole lines to the document (export-doc.c); at the end the document is
 * rendered and handed to the route's callback.  Bounded: a transcript
 * over EXPORT_FILE_MAX is refused before any read.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "serve.h"
#include "xmalloc.h"

#define EXPORT_SLICE	(1024 * 1024)	/* bytes read per loop turn */

struct export_job {
	TAILQ_ENTRY(export_job)	 entry;
	struct event		*ev;
	struct export_doc	*doc;
	int			 fd, fmt;
	off_t			 off, size;	/* size: as fstat saw it */
	char			*buf;		/* a partial line, then a slice */
	size_t			 len;
	export_done_cb		 done;
	void			*arg;
};

static TAILQ_HEAD(, export_job) jobs = TAILQ_HEAD_INITIALIZER(jobs);

/* The job gone (its descriptor closed), whatever state it is in. */
static void
job_free(struct export_job *j)
{
	TAILQ_REMOVE(&jobs, j, entry);
	if (j->ev != NULL)
		event_free(j->ev);
	if (j->fd != -1)
		close(j->fd);
	export_doc_free(j->doc);
	free(j->buf);
	free(j);
}

/* Render, hand the result (or err) to the callback, end the job. */
static void
job_end(struct export_job *j, int err)
{
	struct evbuffer *out = NULL;

	if (err == 0) {
		if ((out = evbuffer_new()) == NULL)
			fatalx("out of memory (evbuffer)");
		export_doc_render(j->doc, j->fmt, out);
	}
	j->done(j->arg, out, err);
	if (out != NULL)
		evbuffer_free(out);
	job_free(j);
}

/* One loop turn: a slice read and fed, then the next turn or the end. */
static void
job_step(evutil_socket_t fd, short what, void *arg)
{
	struct export_job *j = arg;
	struct timeval zero = { 0, 0 };
	size_t want = (size_t)(j->size - j->off);
	ssize_t n;

	(void)fd;
	(void)what;
	if (want > EXPORT_SLICE)
		want = EXPORT_SLICE;
	if ((n = pread(j->fd, j->buf + j->len, want, j->off)) < 0 ||
	    (n == 0 && j->off < j->size)) {
		job_end(j, n < 0 ? errno : EIO);	/* shrunk under us */
		return;
	}
	j->off += n;
	j->len += (size_t)n;
	export_doc_lines(j->doc, j->buf, &j->len, j->off == j->size);
	if (j->off == j->size) {
		job_end(j, 0);
		return;
	}
	/* Room for the next slice after the carried partial line. */
	j->buf = xreallocarray(j->buf, 1, j->len + EXPORT_SLICE + 1);
	event_add(j->ev, &zero);
}

/*
 * Render fd's transcript (st its fstat; fd taken) as fmt for session id;
 * done(arg, out, 0) gets the rendered bytes, done(arg, NULL, errno) a
 * failure, later.  -1 with EFBIG (fd closed) over EXPORT_FILE_MAX.
 */
int
export_job_start(int fd, const struct stat *st, const char *id, int fmt,
    export_done_cb done, void *arg)
{
	struct timeval zero = { 0, 0 };
	struct export_job *j;

	if (st->st_size > EXPORT_FILE_MAX) {
		close(fd);
		errno = EFBIG;
		return -1;
	}
	j = xcalloc(1, sizeof(*j));
	TAILQ_INSERT_TAIL(&jobs, j, entry);
	j->fd = fd;
	j->fmt = fmt;
	j->size = st->st_size;
	j->done = done;
	j->arg = arg;
	j->doc = export_doc_new(id);
	j->buf = xmalloc(EXPORT_SLICE + 1);
	if ((j->ev = evtimer_new(serve_base, job_step, j)) == NULL)
		fatalx("out of memory (export timer)");
	event_add(j->ev, &zero);
	return 0;
}

/* At exit, after the HTTP server is gone: each job's callback gets
   ECANCELED (no reply to make), then the job is freed. */
void
export_job_free_all(void)
{
	struct export_job *j;

	while ((j = TAILQ_FIRST(&jobs)) != NULL) {
		j->done(j->arg, NULL, ECANCELED);
		job_free(j);
	}
}
