/* SPDX-License-Identifier: ISC */
/*
 * txpage.c: _qwen/session/transcript, pages of a session's active history
 * (the daemon's GET /session/:id/transcript), live or not.
 *
 * A page is answered from an index cache of the transcript and its active
 * chain (a record id is looked up on it, newest first): the first request
 * for a file opens the persistent index a load kept in --cache-dir
 * (transcript.h; checked as it is used: a damaged part in use means a
 * full pass and the page again) or indexes the file on a worker, and
 * keeps that index, with the token sums its pages made (txsums.h), in
 * --cache-dir once nobody waits (cache-write.c), so that the next child's
 * first page reads only the page; later ones read only what was appended
 * since (and rebuild the chain only then), so a page costs what its
 * records cost, not what the file does.  The few most recent indexes are
 * kept in memory.
 * One job per index at a time; requests for a busy one wait in order.
 *
 * params: {sessionId, cwd?, limit, direction?: "backward", cursor?,
 * beforeRecordId?} (the daemon has checked their shapes); result:
 * {events: [{v:1, type:"session_update", data:<SessionUpdate>}...],
 * hasMore, nextCursor?, records}.  A cursor is "v1.f.N" (the next page
 * starts at chain position N) or "v1.b.N" (it ends before N).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "child.h"
#include "json.h"
#include "jsonw.h"
#include "loadwork.h"
#include "log.h"
#include "paths.h"
#include "project.h"
#include "transcript.h"
#include "xmalloc.h"
#include "txpage.h"
#include "txpage-int.h"
#include "txsums.h"

#define TXPAGE_KEEP		4	/* indexes kept */
#define TXPAGE_DEFAULT_LIMIT	100
#define TXPAGE_MAX_LIMIT		500

struct txpage_job {
	struct lw_job		 lw;
	struct child		*c;
	struct txpage_entry	*e;
	json_object		*id;
	size_t			 limit;
	int			 backward;
	int64_t			 at;		/* cursor position, -1: none */
	char			*before;	/* beforeRecordId */
	char			*idstr;		/* id as JSON */
	struct jbuf		 out;		/* the answer line */
	int			 err_code;
	const char		*err_kind;
	char			 err_msg[160];
};

static TAILQ_HEAD(txpage_cache, txpage_entry) cache = TAILQ_HEAD_INITIALIZER(cache);
static size_t ncache;

static void	txpage_start(struct child *, struct txpage_entry *, struct rpc_msg *);
static void	txpage_page(struct txpage_job *);
static void	txpage_dispatch(struct child *, struct txpage_entry *, struct rpc_msg *);

static void
txpage_entry_free(struct txpage_entry *e)
{
	struct txpage_wait *w;

	while ((w = TAILQ_FIRST(&e->waits)) != NULL) {
		TAILQ_REMOVE(&e->waits, w, entry);
		rpc_msg_clear(&w->msg);
		free(w);
	}
	transcript_free(e->tx);
	chain_clear(&e->chain);
	project_usage_clear(&e->usage);
	free(e->path);
	free(e);
}

/* The index cache of path (most recent first), or a new one. */
static struct txpage_entry *
txpage_entry_get(const char *path, const char *sid, const char *cache_dir)
{
	struct txpage_entry *e, *old;

	TAILQ_FOREACH(e, &cache, entry)
		if (strcmp(e->path, path) == 0) {
			TAILQ_REMOVE(&cache, e, entry);
			TAILQ_INSERT_HEAD(&cache, e, entry);
			return e;
		}
	if ((e = calloc(1, sizeof(*e))) == NULL || (e->path = strdup(path)) == NULL) {
		free(e);
		return NULL;
	}
	strlcpy(e->sid, sid, sizeof(e->sid));
	e->cache_dir = cache_dir;
	TAILQ_INIT(&e->waits);
	TAILQ_INSERT_HEAD(&cache, e, entry);
	ncache++;
	/* Forget the least recent idle one beyond the few kept. */
	while (ncache > TXPAGE_KEEP) {
		struct txpage_entry *x;

		old = NULL;
		TAILQ_FOREACH(x, &cache, entry)
			if (!x->busy && x != e)
				old = x;
		if (old == NULL)
			break;
		TAILQ_REMOVE(&cache, old, entry);
		ncache--;
		txpage_entry_free(old);
	}
	return e;
}

static int
txpage_fail(struct txpage_job *j, int code, const char *kind, const char *msg)
{
	return txpage_error(&j->err_code, &j->err_kind, j->err_msg, sizeof(j->err_msg),
	    code, kind, msg);
}

static int
txpage_index(struct txpage_job *j)
{
	if (txpage_entry_index(j->e, &j->err_code, &j->err_kind, j->err_msg,
	    sizeof(j->err_msg)) == -1)
		return -1;
	return 0;
}

int
txpage_error(int *code, const char **kind, char *msg, size_t size, int c,
    const char *k, const char *m)
{
	*code = c;
	*kind = k;
	strlcpy(msg, m, size);
	return -1;
}

/* Forget e's token sums: its chain changes. */
static void
txpage_usage_clear(struct txpage_entry *e)
{
	project_usage_clear(&e->usage);
	e->sums_kept = 0;
	e->sums_looked = 0;
}

/* Worker: the sums kept in --cache-dir for e's chain, once per chain,
   so that a fresh child's page does not read every record before it. */
static void
txpage_sums_load(struct txpage_entry *e)
{
	double (*sum)[3];
	size_t n;

	if (e->sums_looked || e->usage.n > 0 || e->cache_dir == NULL)
		return;
	e->sums_looked = 1;
	if ((n = txsums_load(e->tx, e->cache_dir, &e->chain,
	    PROJECT_USAGE_EVERY, &sum)) == 0)
		return;
	e->usage.sum = sum;
	e->usage.n = e->usage.cap = n;
	e->sums_kept = n;
}

/* e's index: the kept one when valid, else a full pass. */
static struct transcript *
txpage_entry_open(struct txpage_entry *e, char **cause)
{
	struct transcript *t;

	if (e->rescan)
		t = transcript_open_rescan(e->path, e->sid, "checksum", cause);
	else
		t = transcript_open_cached(e->path, e->sid, e->cache_dir, cause);
	if (t == NULL)
		return NULL;
	e->rescan = 0;
	/* Ids and counts only. */
	log_debug("session %s: transcript pages from the %s index, %llu bytes read",
	    e->sid, transcript_index_state_name(transcript_index_state(t)),
	    (unsigned long long)transcript_bytes_read(t));
	return t;
}

int
txpage_entry_index(struct txpage_entry *e, int *code, const char **kind, char *msg,
    size_t msgsize)
{
	char *cause = NULL;

	if (e->tx != NULL && transcript_refresh(e->tx, &cause) == -1) {
		free(cause);
		cause = NULL;
		transcript_free(e->tx);		/* replaced or truncated */
		e->tx = NULL;
		e->chained = UINT64_MAX;
	}
	if (e->tx == NULL && (e->tx = txpage_entry_open(e, &cause)) == NULL) {
		free(cause);
		if (errno == ENOENT)
			return txpage_error(code, kind, msg, msgsize, RPC_RESOURCE_NOT_FOUND, "session_not_found",
			    "Resource not found");
		return txpage_error(code, kind, msg, msgsize, RPC_INTERNAL_ERROR, "transcript_unreadable",
		    "cannot read the transcript");
	}
	if (e->chain.rec != NULL && e->chained == transcript_size(e->tx))
		return 0;
	chain_clear(&e->chain);
	txpage_usage_clear(e);
	if (chain_build(e->tx, &e->chain, &cause) == -1) {
		free(cause);
		return txpage_error(code, kind, msg, msgsize, RPC_INTERNAL_ERROR, "transcript_unreadable",
		    "cannot reconstruct the transcript's history");
	}
	e->chained = transcript_size(e->tx);
	if (transcript_index_damaged(e->tx)) {
		txpage_entry_reset(e);	/* once: a full pass is not checked */
		return txpage_entry_index(e, code, kind, msg, msgsize);
	}
	return 0;
}

size_t
txpage_entry_pos(const struct txpage_entry *e, int64_t rec)
{
	size_t i;

	if (rec < 0)
		return 0;
	for (i = e->chain.len; i > 0; i--)
		if (e->chain.rec[i - 1] == (uint64_t)rec)
			return i;
	return 0;
}

void
txpage_entry_reset(struct txpage_entry *e)
{
	transcript_free(e->tx);
	e->tx = NULL;
	chain_clear(&e->chain);
	txpage_usage_clear(e);
	e->chained = UINT64_MAX;
	e->rescan = 1;
}

/* Worker: the chain range [*start, *end) the request asks for. */
static int
txpage_range(struct txpage_job *j, size_t *start, size_t *end)
{
	struct txpage_entry *e = j->e;
	size_t n = e->chain.len, pos;

	if (j->before != NULL) {
		pos = txpage_entry_pos(e, transcript_find(e->tx, j->before));
		if (pos == 0)
			return txpage_fail(j, RPC_INVALID_PARAMS, "invalid_transcript_cursor",
			    "beforeRecordId is not a record of the session's active history");
		*end = pos - 1;
	} else if (j->at > (int64_t)n)
		return txpage_fail(j, RPC_INVALID_PARAMS, "invalid_transcript_cursor",
		    "the cursor is past the end of the session's history");
	else if (!j->backward) {
		*start = j->at >= 0 ? (size_t)j->at : 0;
		*end = n - *start > j->limit ? *start + j->limit : n;
		return 0;
	} else
		*end = j->at >= 0 ? (size_t)j->at : n;
	*start = *end > j->limit ? *end - j->limit : 0;
	return 0;
}

/* Worker: the page, from a full pass when the index cache turns out
   damaged in a part the page used. */
static void
txpage_run(struct lw_job *lw)
{
	struct txpage_job *j = (struct txpage_job *)lw;

	txpage_page(j);
	if (j->e->tx == NULL || !transcript_index_damaged(j->e->tx))
		return;
	jbuf_free(&j->out);
	memset(&j->out, 0, sizeof(j->out));
	j->err_code = 0;
	txpage_entry_reset(j->e);
	txpage_page(j);
}

/* Project the range and write the result object. */
static void
txpage_page(struct txpage_job *j)
{
	struct projection p;
	struct tx_chain part;
	size_t start = 0, end = 0, i;
	char *cause = NULL, buf[64];
	uint64_t read0;
	int more;

	memset(&p, 0, sizeof(p));
	if (txpage_index(j) == -1 || txpage_range(j, &start, &end) == -1)
		return;
	read0 = transcript_bytes_read(j->e->tx);
	txpage_sums_load(j->e);
	part = j->e->chain;
	part.len = end;
	if (start < end && project_window_usage(j->e->tx, &part, start,
	    PROJECT_OPEN_END | PROJECT_CHAIN_STATS, &j->e->usage,
	    &p, &cause) == -1) {
		free(cause);
		txpage_fail(j, RPC_INTERNAL_ERROR, "transcript_unreadable",
		    "cannot read the page's records");
		return;
	}
	/* The answer line built once, in place: a page can weigh megabytes. */
	(void)jbuf_grow(&j->out, p.enc.len + 64 * p.n + 256 + strlen(j->idstr));
	jbuf_puts(&j->out, "{\"jsonrpc\":\"2.0\",\"id\":");
	jbuf_puts(&j->out, j->idstr);
	jbuf_puts(&j->out, ",\"result\":{\"events\":[");
	for (i = 0; i < p.n; i++) {
		jbuf_puts(&j->out, i > 0 ? ",{\"v\":1,\"type\":\"session_update\",\"data\":" :
		    "{\"v\":1,\"type\":\"session_update\",\"data\":");
		jbuf_put(&j->out, p.enc.p + p.u[i].off, p.u[i].len);
		jbuf_put(&j->out, "}", 1);
	}
	more = j->backward || j->before != NULL ? start > 0 : end < j->e->chain.len;
	jbuf_puts(&j->out, more ? "],\"hasMore\":true" : "],\"hasMore\":false");
	if (more) {
		snprintf(buf, sizeof(buf), ",\"nextCursor\":\"v1.%c.%zu\"",
		    j->backward || j->before != NULL ? 'b' : 'f',
		    j->backward || j->before != NULL ? start : end);
		jbuf_puts(&j->out, buf);
	}
	snprintf(buf, sizeof(buf), ",\"records\":%zu}}\n", end - start);
	jbuf_puts(&j->out, buf);
	/* Numbers only: what the page cost beyond the index, and what was
	   read of the kept index so far. */
	log_debug("session %s: transcript page of %zu records, "
	    "%llu bytes read, %llu of the index cache", j->e->sid, end - start,
	    (unsigned long long)(transcript_bytes_read(j->e->tx) - read0),
	    (unsigned long long)transcript_index_read(j->e->tx));
	if (j->out.oom)
		txpage_fail(j, RPC_INTERNAL_ERROR, "internal", "out of memory");
	project_clear(&p);
}

static void
txpage_job_free(struct txpage_job *j)
{
	json_object_put(j->id);
	free(j->idstr);
	jbuf_free(&j->out);
	free(j->before);
	free(j);
}

/* Loop thread: answer, then start the next request waiting for the index. */
static void
txpage_done(struct lw_job *lw)
{
	struct txpage_job *j = (struct txpage_job *)lw;
	struct txpage_entry *e = j->e;
	struct child *c = j->c;
	json_object *data;

	if (j->err_code != 0) {
		data = child_error_data(j->err_kind);
		if (j->err_code == RPC_RESOURCE_NOT_FOUND)
			child_send_not_found(c, j->id, e->sid);
		else {
			json_object_object_add(data, "code", xjson_object_new_string(j->err_kind));
			child_send_error(c, j->id, j->err_code, j->err_msg, data);
			data = NULL;
		}
		json_object_put(data);
	} else {
		child_send_raw(c, j->out.p, j->out.len);	/* takes it */
		memset(&j->out, 0, sizeof(j->out));
	}
	txpage_job_free(j);
	txpage_entry_release(c, e);
}

void
txpage_entry_release(struct child *c, struct txpage_entry *e)
{
	struct txpage_wait *w;

	e->busy = 0;
	/* A request refused before it took e leaves it idle for the next. */
	while (!e->busy && (w = TAILQ_FIRST(&e->waits)) != NULL) {
		TAILQ_REMOVE(&e->waits, w, entry);
		txpage_dispatch(c, e, &w->msg);
		rpc_msg_clear(&w->msg);
		free(w);
	}
	/* Nobody waits: keep the index the pages built, as a restore does. */
	if (!e->busy)
		(void)cache_write_entry_start(c, e);
	child_check_done(c);
}

/* A cursor "v1.f.N" or "v1.b.N": 0, or -1 when it is not one. */
static int
txpage_cursor(const char *s, int *backward, int64_t *at)
{
	char *end;
	unsigned long long v;

	if (strncmp(s, "v1.", 3) != 0 || (s[3] != 'f' && s[3] != 'b') || s[4] != '.' ||
	    s[5] < '0' || s[5] > '9')
		return -1;
	errno = 0;
	v = strtoull(s + 5, &end, 10);
	if (errno != 0 || *end != '\0' || v > UINT32_MAX)
		return -1;
	*backward = s[3] == 'b';
	*at = (int64_t)v;
	return 0;
}

/* Parse the request into a job and hand it to a worker (e is idle). */
static void
txpage_start(struct child *c, struct txpage_entry *e, struct rpc_msg *m)
{
	struct txpage_job *j;
	const char *s;
	json_object *v;
	int64_t lim = TXPAGE_DEFAULT_LIMIT;

	if ((j = calloc(1, sizeof(*j))) == NULL) {
		child_send_error(c, m->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	j->c = c;
	j->e = e;
	j->id = json_object_get(m->id);
	j->idstr = xstrdup(json_object_to_json_string_ext(j->id,
	    PROJECT_JSON_FLAGS));
	j->at = -1;
	if (json_object_object_get_ex(m->params, "limit", &v) &&
	    json_object_is_type(v, json_type_int))
		lim = json_object_get_int64(v);
	j->limit = lim >= 1 && lim <= TXPAGE_MAX_LIMIT ? (size_t)lim : TXPAGE_DEFAULT_LIMIT;
	j->backward = (s = json_get_str(m->params, "direction")) != NULL &&
	    strcmp(s, "backward") == 0;
	if ((s = json_get_str(m->params, "beforeRecordId")) != NULL)
		j->before = strdup(s);
	if ((s = json_get_str(m->params, "cursor")) != NULL &&
	    txpage_cursor(s, &j->backward, &j->at) == -1) {
		v = child_error_data("invalid_transcript_cursor");
		json_object_object_add(v, "code",
		    xjson_object_new_string("invalid_transcript_cursor"));
		child_send_error(c, m->id, RPC_INVALID_PARAMS, "Invalid transcript cursor", v);
		txpage_job_free(j);
		return;
	}
	j->lw.run = txpage_run;
	j->lw.done = txpage_done;
	j->lw.small = e->tx != NULL;	/* an open index reads the appended bytes only */
	e->busy = 1;
	loadwork_submit(c->work, &j->lw);
}

/*
 * Upstream's daemon asks qwen/status/session/transcript and
 * qwen/control/session/branch; our older names are answered too.
 */
static int
txpage_is_branch(const char *method)
{
	return strcmp(method, "qwen/control/session/branch") == 0 ||
	    strcmp(method, "_qwen/session/branch") == 0;
}

int
txpage_is_method(const char *method)
{
	return txpage_is_branch(method) || txturns_is_method(method) ||
	    strcmp(method, "qwen/status/session/transcript") == 0 ||
	    strcmp(method, "_qwen/session/transcript") == 0;
}

/* A page or a branch, on the idle entry e. */
static void
txpage_dispatch(struct child *c, struct txpage_entry *e, struct rpc_msg *m)
{
	if (txpage_is_branch(m->method))
		txbranch_start(c, e, m);
	else if (txturns_is_method(m->method))
		txturns_start(c, e, m);
	else
		txpage_start(c, e, m);
}

void
txpage_request(struct child *c, struct rpc_msg *m)
{
	const char *sid = json_get_str(m->params, "sessionId"), *cwd;
	struct txpage_entry *e;
	struct txpage_wait *w;
	char *path;

	if (sid == NULL || !paths_valid_session_id(sid)) {
		child_send_error(c, m->id, RPC_INVALID_PARAMS, "sessionId is required",
		    child_error_data("invalid_session_id"));
		return;
	}
	if ((cwd = json_get_str(m->params, "cwd")) == NULL || cwd[0] != '/')
		cwd = c->opts.workspace;
	if ((path = paths_transcript(c->opts.data_dir, cwd, sid)) == NULL ||
	    (e = txpage_entry_get(path, sid, c->opts.cache_dir)) == NULL) {
		free(path);
		child_send_error(c, m->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	free(path);
	if (!e->busy) {
		txpage_dispatch(c, e, m);
		return;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		child_send_error(c, m->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	w->msg = *m;		/* moved: the caller's copy is left empty */
	memset(m, 0, sizeof(*m));
	TAILQ_INSERT_TAIL(&e->waits, w, entry);
}

void
txpage_free(void)
{
	struct txpage_entry *e;

	while ((e = TAILQ_FIRST(&cache)) != NULL) {
		TAILQ_REMOVE(&cache, e, entry);
		txpage_entry_free(e);
	}
	ncache = 0;
}
