/* SPDX-License-Identifier: ISC */
/*
 * load.c: session/new, session/load and session/resume.
 *
 * The main thread parses the request (settings_load), then a worker runs
 * the file work (existence_check, transcript_read, chain_reconstruct,
 * config_setup, auth = writer lease, file_system_setup, history_replay,
 * response_build: the whole answer, replay notifications included, is
 * encoded on the worker; the lease is asked for on a thread of its own as
 * the read starts, and auth only waits for it) and the main thread
 * registers the session
 * (session_register) and queues the bytes.  A session already loaded is
 * answered from its index cache, refreshed by the appended bytes only.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "append.h"
#include "chain.h"
#include "child.h"
#include "delegate.h"
#include "clock.h"
#include "jsonw.h"
#include "lagmon.h"
#include "lease.h"
#include "loadwork.h"
#include "log.h"
#include "paths.h"
#include "profiler.h"
#include "replay.h"
#include "load.h"
#include "trace.h"
#include "transcript.h"
#include "uuid.h"
#include "xmalloc.h"

/* Jobs reading less than this go to the fast lane (loadwork.h). */
#define LOAD_JOB_SMALL_BYTES	(16u * 1024 * 1024)

/* Fill the job's error (message copied); returns -1 for the caller. */
static int
load_job_fail(struct load_job *j, int code, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
load_job_fail(struct load_job *j, int code, const char *kind, const char *fmt, ...)
{
	va_list ap;

	profiler_end(&j->prof, 0);
	j->err_code = code;
	j->err_kind = kind;
	free(j->err_msg);
	va_start(ap, fmt);
	if (vasprintf(&j->err_msg, fmt, ap) == -1)
		j->err_msg = NULL;
	va_end(ap);
	return -1;
}

/* existence_check: does the transcript exist, and may it (new)? */
static int
load_job_exists(struct load_job *j)
{
	struct stat st;

	profiler_begin(&j->prof, PROFILER_EXISTENCE_CHECK);
	/* lstat: a symlink is refused here, as open() would refuse it. */
	if (lstat(j->path, &st) == -1) {
		if (errno != ENOENT)
			return load_job_fail(j, RPC_INTERNAL_ERROR, "transcript_unreadable",
			    "cannot stat transcript of session %s: %s", j->sid,
			    strerror(errno));
		if (j->kind != LOAD_JOB_NEW && !j->fresh)
			return load_job_fail(j, RPC_RESOURCE_NOT_FOUND, "session_not_found",
			    "Resource not found: session:%s", j->sid);
		j->exists = 0;
	} else if (j->kind == LOAD_JOB_NEW) {
		return load_job_fail(j, RPC_INVALID_PARAMS, "session_exists",
		    "session %s already has a transcript; use session/load", j->sid);
	} else if (!S_ISREG(st.st_mode)) {
		return load_job_fail(j, RPC_INTERNAL_ERROR, "transcript_unreadable",
		    "transcript of session %s is not a regular file", j->sid);
	} else
		j->exists = 1;
	profiler_end(&j->prof, 1);
	return 0;
}

/* A new index for the job: the kept one from the cache when valid. */
static int
load_job_open(struct load_job *j)
{
	char *cause = NULL;
	int e;

	j->read0 = 0;
	if ((j->tx = transcript_open_cached(j->path, j->sid, j->cache_dir,
	    &cause)) == NULL) {
		e = errno;
		load_job_fail(j, e == ENOENT ? RPC_RESOURCE_NOT_FOUND : RPC_INTERNAL_ERROR,
		    e == ENOENT ? "session_not_found" : "transcript_unreadable",
		    e == ENOENT ? "Resource not found: session:%s" :
		    "cannot read transcript of session %s", j->sid);
		log_warnx("session %s: %s", j->sid, cause != NULL ? cause : "open failed");
		free(cause);
		return -1;
	}
	j->prof.index = transcript_index_state_name(transcript_index_state(j->tx));
	if (transcript_index_reason(j->tx) != NULL)
		log_info("session %s: kept index not used (%s); reindexed", j->sid,
		    transcript_index_reason(j->tx));
	return 0;
}

static void load_job_counts(struct load_job *);

/* Test hook: with QWEN_ACP_FAULT_READ=N the Nth transcript read of the
   process fails, as one of a file that vanished would. */
static int
fault_read(void)
{
	static long reads;
	const char *env = getenv("QWEN_ACP_FAULT_READ");

	return env != NULL && __atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED) ==
	    strtol(env, NULL, 10);
}

/* transcript_read: index the file, or only what was appended since. */
static int
load_job_read(struct load_job *j)
{
	char *cause = NULL;

	profiler_begin(&j->prof, PROFILER_TRANSCRIPT_READ);
	if (fault_read())
		return load_job_fail(j, RPC_INTERNAL_ERROR, "transcript_unreadable",
		    "cannot read transcript of session %s", j->sid);
	j->prof.index = "kept";		/* the session's own, refreshed */
	j->read0 = j->tx != NULL ? transcript_bytes_read(j->tx) : 0;
	if (j->tx != NULL && transcript_refresh(j->tx, &cause) == -1) {
		log_info("session %s: transcript changed under us (%s); reindexing",
		    j->sid, cause != NULL ? cause : "?");
		free(cause);
		cause = NULL;
		transcript_free(j->tx);
		j->tx = NULL;
	}
	if (j->tx == NULL && load_job_open(j) == -1)
		return -1;
	load_job_counts(j);
	profiler_end(&j->prof, 1);
	return 0;
}

/* The index's counters in the job. */
static void
load_job_counts(struct load_job *j)
{
	const struct tx_stats *st;

	st = transcript_stats(j->tx);
	j->prof.transcript_bytes = transcript_size(j->tx);
	j->prof.malformed_lines = st->malformed_lines;
	j->records = transcript_count(j->tx);
}

/* chain_reconstruct and config_setup (model history from the checkpoint). */
static int
load_job_chain(struct load_job *j)
{
	char *cause = NULL, uuid[64];

	profiler_begin(&j->prof, PROFILER_CHAIN_RECONSTRUCT);
	if (chain_build(j->tx, &j->chain, &cause) == -1) {
		log_warnx("session %s: chain: %s", j->sid, cause != NULL ? cause : "?");
		free(cause);
		return load_job_fail(j, RPC_INTERNAL_ERROR, "transcript_corrupt",
		    "cannot reconstruct the history of session %s", j->sid);
	}
	j->have_chain = 1;
	j->prof.chain_records = j->chain.len;
	profiler_begin(&j->prof, PROFILER_CONFIG_SETUP);
	if ((j->model_history = chain_model_history(j->tx, &j->chain, &cause)) < 0) {
		log_warnx("session %s: model history: %s", j->sid,
		    cause != NULL ? cause : "?");
		free(cause);
		return load_job_fail(j, RPC_INTERNAL_ERROR, "transcript_corrupt",
		    "cannot restore the model context of session %s", j->sid);
	}
	if (j->chain.leaf >= 0) {
		transcript_uuid(j->tx, (uint32_t)j->chain.leaf, uuid);
		j->tail = xstrdup(uuid);
	}
	profiler_end(&j->prof, 1);
	return 0;
}

/* The lease asked for as the read started, waited for: into j->lease. */
static enum lease_result
load_job_lease_join(struct load_job *j, char **cause)
{
	enum lease_result r;

	r = lease_acquire_finish(j->lease_early, &j->lease, cause);
	j->lease_early = NULL;
	return r;
}

/* auth (the writer lease) and file_system_setup (the append descriptor). */
static int
load_job_writer(struct load_job *j)
{
	char *cause = NULL;
	enum lease_result r;

	profiler_begin(&j->prof, PROFILER_AUTH);
	if (j->lease_early != NULL)
		r = load_job_lease_join(j, &cause);
	else if (!j->have_lease && j->lease == NULL)
		r = lease_acquire(j->data_dir, j->sid, j->owner_id, &j->lease, &cause);
	else
		r = LEASE_OK;
	if (r != LEASE_OK) {
		load_job_fail(j, r == LEASE_CONFLICT ? RPC_WRITER_CONFLICT : -32023,
		    r == LEASE_CONFLICT ? "session_writer_conflict" :
		    "session_writer_unavailable", "%s",
		    cause != NULL ? cause : "writer lease unavailable");
		free(cause);
		return -1;
	}
	profiler_begin(&j->prof, PROFILER_FILE_SYSTEM_SETUP);
	if (!j->have_app && j->app == NULL) {
		j->app = appender_new(j->path, j->do_fsync, !j->exists);
		if (j->app == NULL)
			return load_job_fail(j, RPC_INTERNAL_ERROR, "internal", "out of memory");
		if (j->exists && appender_open(j->app, &cause) == -1) {
			load_job_fail(j, RPC_INTERNAL_ERROR, "transcript_unwritable",
			    "cannot open the transcript of session %s for appending: %s",
			    j->sid, strerror(errno));
			free(cause);
			return -1;
		}
	}
	profiler_end(&j->prof, 1);
	return 0;
}

/* history_replay and response_build. */
static int
load_job_answer(struct load_job *j)
{
	struct replay_opts ro = { j->replay_max_bytes, 10000,
	    j->hide_inherited ? PROJECT_HIDE_INHERITED : 0, j->page_size };
	struct replay_result rr;
	char *cause = NULL;
	int rc;

	memset(&rr, 0, sizeof(rr));
	rr.anchor = -1;
	profiler_begin(&j->prof, PROFILER_HISTORY_REPLAY);
	if (j->kind == LOAD_JOB_LOAD && j->tx != NULL &&
	    replay_build(j->tx, &j->chain, &ro, &rr, &cause) == -1) {
		log_warnx("session %s: replay: %s", j->sid, cause != NULL ? cause : "?");
		free(cause);
		return load_job_fail(j, RPC_INTERNAL_ERROR, "replay_failed",
		    "cannot replay the history of session %s", j->sid);
	}
	j->prof.replay_records = rr.records;
	j->prof.replay_bytes = rr.bytes;
	j->prof.truncated_records = rr.truncated_records;
	j->prof.partial_replay = rr.partial;
	if (j->tx != NULL)
		j->prof.bytes_read = transcript_bytes_read(j->tx) - j->read0;
	profiler_begin(&j->prof, PROFILER_RESPONSE_BUILD);
	rc = load_answer_build(j, &rr);
	replay_result_clear(&rr);
	if (rc == -1)
		return load_job_fail(j, RPC_INTERNAL_ERROR, "internal",
		    "cannot build the answer: out of memory");
	profiler_end(&j->prof, 1);
	return 0;
}

/* Drop what was derived from a damaged index cache and index the whole
   file instead.  0 or -1 (the job's error set). */
static int
load_job_reindex(struct load_job *j)
{
	char *cause = NULL;
	int i;

	log_info("session %s: kept index damaged; reindexed", j->sid);
	if (j->have_chain)
		chain_clear(&j->chain);
	j->have_chain = 0;
	free(j->tail);
	j->tail = NULL;
	for (i = 0; i < j->nout; i++)
		free(j->out[i].base);
	j->nout = 0;
	j->err_code = 0;
	j->err_kind = NULL;
	free(j->err_msg);
	j->err_msg = NULL;
	transcript_free(j->tx);
	j->read0 = 0;
	if ((j->tx = transcript_open_rescan(j->path, j->sid, "checksum",
	    &cause)) == NULL) {
		log_warnx("session %s: %s", j->sid, cause != NULL ? cause : "?");
		free(cause);
		return load_job_fail(j, RPC_INTERNAL_ERROR, "transcript_unreadable",
		    "cannot read transcript of session %s", j->sid);
	}
	j->prof.index = transcript_index_state_name(TX_INDEX_RESCAN);
	load_job_counts(j);
	return 0;
}

/* A lease taken early whose step never came (the read or the chain
   failed): the job gives it back when it is freed. */
static void
load_job_lease_drop(struct load_job *j)
{
	char *cause = NULL;

	if (j->lease_early == NULL)
		return;
	(void)load_job_lease_join(j, &cause);
	free(cause);
}

/* The work from the index on: chain, writer, answer. */
static void
load_job_derive(struct load_job *j)
{
	if (j->exists && j->kind != LOAD_JOB_NEW && load_job_chain(j) == -1)
		return;
	if (load_job_writer(j) == -1)
		return;
	load_job_answer(j);
}

/* The steps in order; the lease is taken while the transcript is read. */
static void
load_job_steps(struct load_job *j)
{
	if (load_job_exists(j) == -1)
		return;
	if (j->exists && j->kind != LOAD_JOB_NEW) {
		if (!j->have_lease && j->lease == NULL)
			j->lease_early = lease_acquire_start(j->data_dir, j->sid,
			    j->owner_id);
		if (load_job_read(j) == -1)
			return;
	}
	load_job_derive(j);
	/* An index cache is checked as it is used: a damaged block in use
	   means the answer (or error) came from it, so both are dropped. */
	if (j->tx != NULL && transcript_index_damaged(j->tx) && load_job_reindex(j) == 0)
		load_job_derive(j);
}

/* Worker thread: everything that touches files. */
static void
load_job_run(struct lw_job *lw)
{
	struct load_job *j = (struct load_job *)lw;

	load_job_steps(j);
	load_job_lease_drop(j);
}

static const char *
load_job_operation(const struct load_job *j)
{
	switch (j->kind) {
	case LOAD_JOB_NEW:
		return "acp_session_new";
	case LOAD_JOB_LOAD:
		return "acp_session_load";
	default:
		return "acp_session_resume";
	}
}

static void
load_job_free(struct load_job *j)
{
	int i;

	json_object_put(j->req_id);
	free(j->path);
	free(j->tail);
	for (i = 0; i < j->nout; i++)
		free(j->out[i].base);
	free(j->err_msg);
	if (j->have_chain)
		chain_clear(&j->chain);
	lease_release(j->lease);
	appender_free(j->app);
	transcript_free(j->tx);
	free(j);
}

/* session_register: hand the results to the session.  0 or -1. */
static int
load_job_register(struct child *c, struct load_job *j)
{
	struct session *s = j->s;

	(void)c;
	profiler_begin(&j->prof, PROFILER_SESSION_REGISTER);
	s->tx = j->tx;
	j->tx = NULL;
	if (j->lease != NULL) {
		s->lease = j->lease;
		j->lease = NULL;
	}
	if (j->app != NULL) {
		s->app = j->app;
		j->app = NULL;
	}
	if (j->kind == LOAD_JOB_NEW)
		s->fresh = 1;
	else if (j->exists) {
		free(s->tail);
		s->tail = j->tail;
		j->tail = NULL;
	}
	s->registered = 1;
	profiler_end(&j->prof, 1);
	return 0;
}

/* Loop thread: answer, register or drop the session, end the span. */
static void
load_job_done(struct lw_job *lw)
{
	struct load_job *j = (struct load_job *)lw;
	struct child *c = j->c;
	struct session *s = j->s;
	struct lag_snapshot lag;
	json_object *data;
	int i, ok;

	s->busy = 0;
	if (j->err_code == 0 && load_job_register(c, j) == 0) {
		for (i = 0; i < j->nout; i++)
			child_send_ref(c, j->out[i].base, j->out[i].off, j->out[i].len);
		j->nout = 0;
	} else {
		/* Give the index cache back; a failed first restore drops the session. */
		if (s->registered && s->tx == NULL) {
			s->tx = j->tx;
			j->tx = NULL;
		}
		data = xjson_object_new_object();
		json_object_object_add(data, "errorKind",
		    xjson_object_new_string(j->err_kind != NULL ? j->err_kind : "internal"));
		if (j->err_code == RPC_RESOURCE_NOT_FOUND) {
			char uri[64];
			snprintf(uri, sizeof(uri), "session:%s", j->sid);
			json_object_object_add(data, "uri", xjson_object_new_string(uri));
		}
		json_object_object_add(data, "sessionId", xjson_object_new_string(j->sid));
		child_send_error(c, j->req_id, j->err_code != 0 ? j->err_code :
		    RPC_INTERNAL_ERROR, j->err_msg != NULL ? j->err_msg :
		    "Internal error", data);
	}
	lagmon_snapshot(c->lag, &lag);
	profiler_span_finish(j->span, &j->prof, &lag, c->trace, load_job_operation(j),
	    j->refresh ? "refresh" : j->kind == LOAD_JOB_NEW ? "create" : "restore",
	    j->sid, j->err_code != 0 ? j->err_kind : NULL);
	j->span = NULL;
	ok = j->err_code == 0;
	load_job_free(j);
	if (ok)
		cache_write_start(c, s);
	child_session_idle(c, s);
	if (ok)
		delegate_session_ready(c, s);	/* after the answer, never before */
}

/*
 * Whether the job is quick: a new session, or a transcript whose unindexed
 * part is small (an open or index cache only reads what was appended).
 */
static int
load_job_small(struct load_job *j)
{
	struct stat st;
	uint64_t done = j->tx != NULL ? transcript_size(j->tx) :
	    transcript_cached_size(j->cache_dir, j->path);

	if (j->kind == LOAD_JOB_NEW || stat(j->path, &st) == -1)
		return 1;
	return (uint64_t)st.st_size < done + LOAD_JOB_SMALL_BYTES;
}

/* settings_load on the loop thread, then hand the job to a worker. */
/* The replay paging options of a load's _meta: 0, or -1 after answering
   -32602 (the page size is an integer 1..REPLAY_MAX_PAGE_SIZE). */
static int
load_job_page_opts(struct child *c, struct rpc_msg *m, json_object *meta,
    size_t *page, int *hide)
{
	json_object *v, *data;
	int64_t n;

	*page = 0;
	*hide = meta != NULL &&
	    json_object_object_get_ex(meta, "qwen.session.loadReplayHideInherited", &v) &&
	    json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
	if (meta == NULL ||
	    !json_object_object_get_ex(meta, "qwen.session.loadReplayPageSize", &v))
		return 0;
	if (json_object_is_type(v, json_type_int) &&
	    (n = json_object_get_int64(v)) >= 1 && n <= REPLAY_MAX_PAGE_SIZE) {
		*page = (size_t)n;
		return 0;
	}
	data = child_error_data("invalid_transcript_limit");
	json_object_object_add(data, "maxLimit", xjson_object_new_int(REPLAY_MAX_PAGE_SIZE));
	child_send_error(c, m->id, RPC_INVALID_PARAMS,
	    "Invalid load replay page size; expected 1..500", data);
	return -1;
}

/* Start a restore job; page and hide are a load's replay paging options. */
static void
load_job_submit(struct child *c, struct rpc_msg *m, struct session *s,
    enum load_job_kind kind, json_object *meta, size_t page, int hide)
{
	struct load_job *j;
	json_object *v;

	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    (j->path = strdup(s->path)) == NULL) {
		free(j);
		child_send_error(c, m->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
		child_session_idle(c, s);
		return;
	}
	profiler_init(&j->prof);
	profiler_begin(&j->prof, PROFILER_SETTINGS_LOAD);
	j->span = profiler_span_start(kind == LOAD_JOB_NEW ? "qwen-code.daemon.session_start" :
	    "qwen-code.daemon.session_restore", meta);
	j->lw.run = load_job_run;
	j->lw.done = load_job_done;
	j->c = c;
	/* With --agent-acp the models and modes are the agent's, not ours. */
	j->advertise = c->opts.agent_acp == NULL;
	j->s = s;
	j->kind = kind;
	json_object_deep_copy(m->id, &j->req_id, NULL);
	strlcpy(j->sid, s->id, sizeof(j->sid));
	j->data_dir = c->opts.data_dir;
	j->cache_dir = c->opts.cache_dir;
	j->owner_id = c->owner_id;
	j->do_fsync = c->opts.do_fsync;
	j->replay_max_bytes = c->opts.replay_max_bytes;
	j->page_size = page;
	j->hide_inherited = hide;
	j->bulk = meta != NULL &&
	    json_object_object_get_ex(meta, "qwen.session.loadReplayMode", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    strcmp(json_object_get_string(v), "bulk") == 0;
	j->refresh = s->registered;
	j->fresh = s->fresh;
	/* A session the --agent-acp agent writes: no lease, no appender of ours. */
	j->have_lease = s->lease != NULL || s->delegated;
	j->have_app = s->app != NULL || s->delegated;
	j->tx = s->tx;
	s->tx = NULL;
	s->busy = 1;
	j->lw.small = load_job_small(j);
	profiler_end(&j->prof, 1);
	loadwork_submit(c->work, &j->lw);
}

/* The cwd of the request when it gives an absolute one, else ours. */
static const char *
load_job_cwd(struct child *c, json_object *params)
{
	json_object *v;
	const char *cwd;

	if (params != NULL && json_object_object_get_ex(params, "cwd", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    (cwd = json_object_get_string(v))[0] == '/')
		return cwd;
	return c->opts.workspace;
}

static json_object *
load_job_meta(json_object *params)
{
	json_object *v;

	if (params != NULL && json_object_object_get_ex(params, "_meta", &v) &&
	    json_object_is_type(v, json_type_object))
		return v;
	return NULL;
}

/* A new table entry for sid; NULL after answering the error. */
static struct session *
load_job_session(struct child *c, struct rpc_msg *m, const char *sid)
{
	struct session *s;
	const char *cwd = load_job_cwd(c, m->params);
	char *path;

	if (c->opts.max_sessions > 0 && c->nsessions >= c->opts.max_sessions) {
		json_object *data = child_error_data("session_limit_exceeded");

		json_object_object_add(data, "limit",
		    xjson_object_new_int64((int64_t)c->opts.max_sessions));
		json_object_object_add(data, "scope",
		    xjson_object_new_string("workspace child"));
		child_send_error(c, m->id, RPC_INTERNAL_ERROR,
		    "too many sessions in this process", data);
		return NULL;
	}
	if ((path = paths_transcript(c->opts.data_dir, cwd, sid)) == NULL ||
	    (s = session_new(sid, cwd, path)) == NULL) {
		free(path);
		child_send_error(c, m->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
		return NULL;
	}
	free(path);
	RB_INSERT(session_tree, &c->sessions, s);
	c->nsessions++;
	return s;
}

void
load_start(struct child *c, struct rpc_msg *m, struct session *s,
    const char *sid, int resume)
{
	size_t page = 0;
	int hide = 0;

	if (!resume && load_job_page_opts(c, m, load_job_meta(m->params), &page, &hide) == -1)
		return;
	if (s == NULL && (s = load_job_session(c, m, sid)) == NULL)
		return;
	load_job_submit(c, m, s, resume ? LOAD_JOB_RESUME : LOAD_JOB_LOAD, load_job_meta(m->params), page, hide);
}

void
load_new(struct child *c, struct rpc_msg *m)
{
	json_object *meta = load_job_meta(m->params), *v;
	struct session *s;
	char sid[37];

	if (meta != NULL && json_object_object_get_ex(meta, "qwen-code/sessionId", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    !paths_valid_session_id(json_object_get_string(v))) {
			json_object *data = child_error_data("invalid_session_id");
			json_object_object_add(data, "httpStatus", xjson_object_new_int(400));
			child_send_error(c, m->id, RPC_INVALID_PARAMS,
			    "Invalid session id: expected 32-36 hex digits and dashes", data);
			return;
		}
		strlcpy(sid, json_object_get_string(v), sizeof(sid));
	} else
		uuid_new(sid);
	if (session_find(&c->sessions, sid) != NULL) {
		child_send_error(c, m->id, RPC_INVALID_PARAMS,
		    "session already exists in this process",
		    child_error_data("session_exists"));
		return;
	}
	if ((s = load_job_session(c, m, sid)) != NULL)
		load_job_submit(c, m, s, LOAD_JOB_NEW, meta, 0, 0);
}
