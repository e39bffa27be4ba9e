/* SPDX-License-Identifier: ISC */
/*
 * export-job.c: an export streamed from the session's active chain.  The
 * transcript is indexed by the child's loader (from the kept index in
 * the cache directory when it matches, so only appended bytes are read),
 * its active chain built, and the chain's records are read one at a time
 * and written as the document's messages (export-doc.c), a slice per loop
 * turn: the file is never held in memory, only its index and one record.
 * A client that reads slowly holds the job: no slice is made while more
 * than EXPORT_BACKLOG bytes wait for it.
 */
#include "config.h"

#include <sys/queue.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "chain.h"
#include "clock.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "serve.h"
#include "transcript.h"
#include "xmalloc.h"

#define EXPORT_SLICE	(256 * 1024)	/* bytes written per loop turn */
#define EXPORT_BACKLOG	(1024 * 1024)	/* unsent bytes that pause the job */
#define EXPORT_WAIT_MS	5		/* then: look again after this */
#define EXPORT_MODEL_LOOK	64	/* assistant records asked for a model */

struct export_job {
	TAILQ_ENTRY(export_job)	 entry;
	struct evhttp_request	*req;
	struct event		*ev;
	struct transcript	*tx;
	struct tx_chain		 chain;
	size_t			 next;		/* in chain.rec */
	size_t			 skipped;	/* records that could not be read */
	int			 waited;	/* paused for its client once */
	struct export_doc	*doc;
	/* The index, made on the job's thread; the loop waits on pipe[0]. */
	char			*path, *id;
	int			 fmt, rc;
	char			*cause;
	json_object		*meta;
	pthread_t		 thread;
	int			 indexing;
	int			 pipe[2];
	struct event		*indexed;
};

static TAILQ_HEAD(, export_job) jobs = TAILQ_HEAD_INITIALIZER(jobs);
static atomic_int stopping;	/* at exit: held threads go on */

/* The job gone, whatever state it is in (the request is ended by the caller). */
static void
job_free(struct export_job *j)
{
	TAILQ_REMOVE(&jobs, j, entry);
	if (j->indexing)
		pthread_join(j->thread, NULL);
	if (j->indexed != NULL)
		event_free(j->indexed);
	for (int i = 0; i < 2; i++)
		if (j->pipe[i] != -1)
			close(j->pipe[i]);
	free(j->path);
	free(j->id);
	free(j->cause);
	json_object_put(j->meta);
	if (j->ev != NULL)
		event_free(j->ev);
	chain_clear(&j->chain);
	transcript_free(j->tx);
	export_doc_free(j->doc);
	free(j);
}

/* Record i of the chain, parsed (caller puts), or NULL (counted). */
static json_object *
job_record(struct export_job *j, size_t i)
{
	char *cause = NULL;
	json_object *rec;

	if ((rec = transcript_load_record(j->tx, j->chain.rec[i], &cause)) == NULL) {
		j->skipped++;
		free(cause);
	}
	return rec;
}

/* Copy rec's string member key into meta as name, when it has one. */
static void
meta_copy(json_object *meta, const char *name, json_object *rec, const char *key)
{
	const char *s = json_get_str(rec, key);

	if (s != NULL)
		json_object_object_add(meta, name, xjson_object_new_string(s));
}

/* The model of the chain's first assistant records that name one. */
static void
meta_model(struct export_job *j, json_object *meta)
{
	json_object *rec;
	size_t looked = 0;

	for (size_t i = 0; i < j->chain.len && looked < EXPORT_MODEL_LOOK; i++) {
		if (transcript_type(j->tx, j->chain.rec[i]) != TX_ASSISTANT)
			continue;
		looked++;
		if ((rec = job_record(j, i)) == NULL)
			continue;
		meta_copy(meta, "model", rec, "model");
		json_object_put(rec);
		if (json_object_object_get_ex(meta, "model", NULL))
			return;
	}
}

/*
 * upstream's metadata, in its order: sessionId, startTime, exportTime,
 * cwd and gitBranch (the first record's), model, channel, promptCount
 * (the user records of the chain, counted from the index).
 */
static json_object *
job_meta(struct export_job *j, const char *id)
{
	json_object *meta = xjson_object_new_object(), *first;
	char now[CLOCK_ISO_LEN];
	int64_t prompts = 0;

	first = j->chain.len > 0 ? job_record(j, 0) : NULL;
	clock_iso_now(now);
	json_object_object_add(meta, "sessionId", xjson_object_new_string(id));
	meta_copy(meta, "startTime", first, "timestamp");
	if (!json_object_object_get_ex(meta, "startTime", NULL))
		json_object_object_add(meta, "startTime", xjson_object_new_string(""));
	json_object_object_add(meta, "exportTime", xjson_object_new_string(now));
	meta_copy(meta, "cwd", first, "cwd");
	meta_copy(meta, "gitBranch", first, "gitBranch");
	json_object_put(first);
	meta_model(j, meta);
	json_object_object_add(meta, "channel", xjson_object_new_string("daemon"));
	for (size_t i = 0; i < j->chain.len; i++)
		prompts += transcript_type(j->tx, j->chain.rec[i]) == TX_USER;
	json_object_object_add(meta, "promptCount", xjson_object_new_int64(prompts));
	return meta;
}

/*
 * upstream's statistics (export-stats.c) into meta: the chain's assistant
 * and tool result records read one at a time, on the job's thread (an
 * exit stops it).
 */
static void
job_stats(struct export_job *j, json_object *meta)
{
	struct export_stats *st = export_stats_new();
	json_object *rec;
	int type;

	for (size_t i = 0; i < j->chain.len && !atomic_load(&stopping); i++) {
		type = transcript_type(j->tx, j->chain.rec[i]);
		if ((type != TX_ASSISTANT && type != TX_TOOL_RESULT) ||
		    (rec = job_record(j, i)) == NULL)
			continue;
		export_stats_record(st, rec);
		json_object_put(rec);
	}
	export_stats_meta(st, meta);
	export_stats_free(st);
}

/* Records from j->next into out until a slice is full; 1 at the end. */
static int
job_fill(struct export_job *j, struct evbuffer *out)
{
	json_object *rec;

	while (evbuffer_get_length(out) < EXPORT_SLICE) {
		if (j->next == j->chain.len) {
			if (export_doc_tail(j->doc, out) == 0)
				return 1;
			j->next = 0;	/* another pass (html's data block) */
			export_doc_head(j->doc, out);
			continue;
		}
		if ((rec = job_record(j, j->next++)) == NULL)
			continue;
		export_doc_record(j->doc, rec, out);
		json_object_put(rec);
	}
	return 0;
}

/* One loop turn: a slice, a wait for a slow client, or the end. */
static void
job_step(evutil_socket_t fd, short what, void *arg)
{
	struct export_job *j = arg;
	struct timeval zero = { 0, 0 }, wait = { 0, EXPORT_WAIT_MS * 1000 };
	struct evbuffer *out;
	ssize_t backlog;
	int done;

	(void)fd;
	(void)what;
	if ((backlog = http_stream_backlog(j->req)) == -1) {
		log_debug("export: the client left at record %zu of %zu",
		    j->next, j->chain.len);
		http_stream_end(j->req);
		job_free(j);
		return;
	}
	if (backlog > EXPORT_BACKLOG) {
		if (!j->waited++)
			log_debug("export: waiting for a slow client at record "
			    "%zu of %zu", j->next, j->chain.len);
		event_add(j->ev, &wait);
		return;
	}
	if ((out = evbuffer_new()) == NULL)
		fatalx("out of memory (evbuffer)");
	done = job_fill(j, out);
	http_stream_chunk(j->req, out);
	evbuffer_free(out);
	if (!done) {
		event_add(j->ev, &zero);
		return;
	}
	if (j->skipped > 0)
		log_debug("export: %zu records of the chain could not be read",
		    j->skipped);
	http_stream_end(j->req);
	job_free(j);
}

/* The index of path and its active chain into j: 0, or -1 and *cause. */
static int
job_index(struct export_job *j, const char *path, const char *id, char **cause)
{
	char *cache = paths_cache_dir(conf.cache_dir);

	j->tx = transcript_open_cached(path, id, cache, cause);
	free(cache);
	if (j->tx == NULL)
		return -1;
	return chain_build(j->tx, &j->chain, cause);
}

/* upstream's headers: its type, an attachment named for the time. */
static void
export_headers(struct evhttp_request *req, int fmt)
{
	char now[CLOCK_ISO_LEN], *disp;

	clock_iso_now(now);
	for (char *c = now; *c != '\0'; c++)
		if (*c == ':' || *c == '.')
			*c = '-';
	xasprintf(&disp, "attachment; filename=\"qwen-code-export-%s.%s\"",
	    now, export_format_name(fmt));
	gate_cors_headers(req);
	http_set_header(req, "Content-Type", export_mime(fmt));
	http_set_header(req, "Content-Disposition", disp);
	http_set_header(req, "Cache-Control", "no-store");
	http_set_header(req, "X-Content-Type-Options", "nosniff");
	free(disp);
}

/*
 * Test hook: with QWEN_SERVE_TEST_EXPORT_GATE=FIFO the thread reads one
 * byte from FIFO before it indexes, so a test holds an export's index
 * pass as long as it wants.  The wait polls, so an exit does not hang.
 */
static void
job_gate(void)
{
	const char *path = getenv("QWEN_SERVE_TEST_EXPORT_GATE");
	struct pollfd pfd;
	char b;

	if (path == NULL || *path == '\0' ||
	    (pfd.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return;
	pfd.events = POLLIN;
	while (!atomic_load(&stopping))
		if (poll(&pfd, 1, 100) > 0 && (read(pfd.fd, &b, 1) == 1 ||
		    (pfd.revents & POLLHUP)))
			break;
	close(pfd.fd);
}

/*
 * The job's thread: the index, the chain and the metadata; then its end
 * of the pipe closed, which wakes the loop (job_indexed).
 */
static void *
job_thread(void *arg)
{
	struct export_job *j = arg;

	job_gate();
	if ((j->rc = job_index(j, j->path, j->id, &j->cause)) == 0) {
		j->meta = job_meta(j, j->id);
		job_stats(j, j->meta);
	}
	close(j->pipe[1]);
	j->pipe[1] = -1;
	return NULL;
}

/* The index is made: the reply starts, a slice per loop turn from now. */
static void
job_indexed(evutil_socket_t fd, short what, void *arg)
{
	struct export_job *j = arg;
	struct timeval zero = { 0, 0 };
	struct evbuffer *out;

	(void)fd;
	(void)what;
	pthread_join(j->thread, NULL);
	j->indexing = 0;
	if (j->rc == -1) {
		log_warnx("export of %s: %s", j->id, j->cause);
		http_error(j->req, "internal", j->id);
		job_free(j);
		return;
	}
	j->doc = export_doc_new(j->id, j->fmt, j->meta);
	j->meta = NULL;
	if ((out = evbuffer_new()) == NULL)
		fatalx("out of memory (evbuffer)");
	export_doc_head(j->doc, out);
	export_headers(j->req, j->fmt);
	http_stream_start(j->req, 200);
	http_stream_chunk(j->req, out);
	evbuffer_free(out);
	j->ev = evtimer_new(serve_base, job_step, j);
	event_add(j->ev, &zero);
}

/*
 * Export the transcript at path of session id as fmt onto req: the
 * reply comes once the index is made (500 internal when the transcript
 * cannot be indexed), and the job ends it.
 */
void
export_job_start(struct evhttp_request *req, const char *path, const char *id,
    int fmt)
{
	struct export_job *j = xcalloc(1, sizeof(*j));

	TAILQ_INSERT_TAIL(&jobs, j, entry);
	j->req = req;
	j->path = xstrdup(path);
	j->id = xstrdup(id);
	j->fmt = fmt;
	j->pipe[0] = j->pipe[1] = -1;
	if (pipe2(j->pipe, O_CLOEXEC | O_NONBLOCK) == -1)
		fatal("pipe2");
	j->indexed = event_new(serve_base, j->pipe[0], EV_READ, job_indexed, j);
	if (j->indexed == NULL)
		fatalx("out of memory (event)");
	event_add(j->indexed, NULL);
	if ((errno = pthread_create(&j->thread, NULL, job_thread, j)) != 0)
		fatal("pthread_create");
	j->indexing = 1;
}

/* At exit: the exports still being indexed or written, dropped. */
void
export_job_free_all(void)
{
	struct export_job *j;

	atomic_store(&stopping, 1);
	while ((j = TAILQ_FIRST(&jobs)) != NULL) {
		if (j->doc != NULL && http_stream_backlog(j->req) == -1)
			http_stream_end(j->req);
		job_free(j);
	}
}
