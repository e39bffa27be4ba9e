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

#include <stdlib.h>
#include <string.h>

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
	int			 waited;	/* paused for its client once */
	struct export_doc	*doc;
};

static TAILQ_HEAD(, export_job) jobs = TAILQ_HEAD_INITIALIZER(jobs);

/* The job gone, whatever state it is in (the request is ended by the caller). */
static void
job_free(struct export_job *j)
{
	TAILQ_REMOVE(&jobs, j, entry);
	if (j->ev != NULL)
		event_free(j->ev);
	chain_clear(&j->chain);
	transcript_free(j->tx);
	export_doc_free(j->doc);
	free(j);
}

/* Record i of the chain, parsed (caller puts), or NULL (logged, no content). */
static json_object *
job_record(struct export_job *j, size_t i)
{
	char *cause = NULL;
	json_object *rec;

	if ((rec = transcript_load_record(j->tx, j->chain.rec[i], &cause)) == NULL) {
		log_debug("export: record %zu of the chain skipped", i);
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
 * Export the transcript at path of session id as fmt onto req: 0 once the reply started (the job ends it), or
 * -1 and *cause (caller frees) before anything was sent.
 */
int
export_job_start(struct evhttp_request *req, const char *path, const char *id,
    int fmt, char **cause)
{
	struct export_job *j = xcalloc(1, sizeof(*j));
	struct timeval zero = { 0, 0 };
	struct evbuffer *out;

	TAILQ_INSERT_TAIL(&jobs, j, entry);
	j->req = req;
	if (job_index(j, path, id, cause) == -1) {
		job_free(j);
		return -1;
	}
	j->doc = export_doc_new(id, fmt, job_meta(j, id));
	if ((out = evbuffer_new()) == NULL)
		fatalx("out of memory (evbuffer)");
	export_doc_head(j->doc, out);
	export_headers(req, fmt);
	http_stream_start(req, 200);
	http_stream_chunk(req, out);
	evbuffer_free(out);
	j->ev = evtimer_new(serve_base, job_step, j);
	event_add(j->ev, &zero);
	return 0;
}

/* At exit: the exports still being written, dropped. */
void
export_job_free_all(void)
{
	struct export_job *j;

	while ((j = TAILQ_FIRST(&jobs)) != NULL) {
		if (http_stream_backlog(j->req) == -1)
			http_stream_end(j->req);
		job_free(j);
	}
}
