/* SPDX-License-Identifier: ISC */
/*
 * txbranch.c: qwen/control/session/branch (also _qwen/session/branch), a new session forked from a session's
 * active history (the daemon's POST /session/:id/branch).
 *
 * As upstream's fork: a new transcript whose records are the source's
 * active chain up to the branch point (atRecordId, else its newest
 * record), uuids kept, re-parented linearly, sessionId and cwd rewritten,
 * forkedFrom {sessionId, messageUuid} added, and the session_source,
 * parent_session and turn_result records dropped.  It is written whole
 * into chats/.<newId>.<nonce>.tmp on a worker, fsynced and hard-linked
 * into place (never over an existing transcript), so a reader sees no
 * file or the whole one, and it can be loaded at once.
 *
 * params: {sessionId, cwd?, newSessionId, atRecordId?}; result:
 * {sessionId: newSessionId, records}.  An atRecordId not on the active
 * history is -32602 with data.code branch_point_invalid.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "json.h"
#include "jsonw.h"
#include "loadwork.h"
#include "paths.h"
#include "project.h"
#include "transcript.h"
#include "xmalloc.h"
#include "txpage-int.h"

struct txbranch_job {
	struct lw_job		 lw;
	struct child		*c;
	struct txpage_entry	*e;
	json_object		*id;
	char			 new_id[37];
	char			*cwd;
	char			*at;		/* atRecordId, or NULL */
	char			*dest;		/* the new transcript */
	size_t			 records;
	int			 err_code;
	const char		*err_kind;
	char			 err_msg[160];
};

static int
txbranch_fail(struct txbranch_job *j, int code, const char *kind, const char *msg)
{
	return txpage_error(&j->err_code, &j->err_kind, j->err_msg, sizeof(j->err_msg),
	    code, kind, msg);
}

/* Records a fork leaves behind (upstream-transcript.md 3.6). */
static int
txbranch_dropped(struct transcript *t, uint32_t rec)
{
	const char *sub;

	if (transcript_type(t, rec) != TX_SYSTEM)
		return 0;
	sub = transcript_subtype(t, rec);
	return strcmp(sub, "session_source") == 0 || strcmp(sub, "parent_session") == 0 ||
	    strcmp(sub, "turn_result") == 0;
}

/* One record, rewritten for the branch, as a line into b. */
static int
txbranch_record(struct txbranch_job *j, uint32_t rec, json_object **parent, struct jbuf *b)
{
	struct transcript *t = j->e->tx;
	json_object *o, *ff, *uuid;
	char *cause = NULL;

	if ((o = transcript_load_record(t, rec, &cause)) == NULL) {
		free(cause);
		return txbranch_fail(j, RPC_INTERNAL_ERROR, "transcript_unreadable",
		    "cannot read a record of the source transcript");
	}
	if (!json_object_object_get_ex(o, "uuid", &uuid)) {
		json_object_put(o);
		return 0;	/* the index only keeps records with one */
	}
	ff = xjson_object_new_object();
	json_object_object_add(ff, "sessionId", xjson_object_new_string(j->e->sid));
	json_object_object_add(ff, "messageUuid", json_object_get(uuid));
	json_object_object_add(o, "forkedFrom", ff);
	json_object_object_add(o, "sessionId", xjson_object_new_string(j->new_id));
	json_object_object_add(o, "cwd", xjson_object_new_string(j->cwd));
	json_object_object_add(o, "parentUuid", json_object_get(*parent));
	json_object_put(*parent);
	*parent = json_object_get(uuid);
	jsonw_value(b, o);
	jbuf_put(b, "\n", 1);
	json_object_put(o);
	j->records++;
	return 0;
}

static int
txbranch_write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The chain records [0, end) into fd, a megabyte at a time. */
static int
txbranch_copy(struct txbranch_job *j, size_t end, int fd)
{
	struct jbuf b = { NULL, 0, 0, 0 };
	json_object *parent = NULL;
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && i < end; i++) {
		if (txbranch_dropped(j->e->tx, j->e->chain.rec[i]))
			continue;
		rc = txbranch_record(j, j->e->chain.rec[i], &parent, &b);
		if (rc == 0 && (b.oom || (b.len >= (1u << 20) &&
		    txbranch_write_all(fd, b.p, b.len) == -1)))
			rc = txbranch_fail(j, RPC_INTERNAL_ERROR, "internal",
			    b.oom ? "out of memory" : "cannot write the branch");
		else if (b.len >= (1u << 20))
			b.len = 0;
	}
	if (rc == 0 && b.len > 0 && txbranch_write_all(fd, b.p, b.len) == -1)
		rc = txbranch_fail(j, RPC_INTERNAL_ERROR, "internal", "cannot write the branch");
	json_object_put(parent);
	jbuf_free(&b);
	return rc;
}

/* Worker: where the branch ends, then the staging file linked into place. */
static void
txbranch_run(struct lw_job *lw)
{
	struct txbranch_job *j = (struct txbranch_job *)lw;
	struct txpage_entry *e = j->e;
	char *tmp = NULL, *slash;
	size_t end;
	int fd = -1;

	if (txpage_entry_index(e, &j->err_code, &j->err_kind, j->err_msg,
	    sizeof(j->err_msg)) == -1)
		return;
	/* A branch copies the chain into a new file: all of an index cache is
	   checked first, not as the copy goes. */
	if (transcript_index_check_all(e->tx) == -1) {
		txpage_entry_reset(e);
		if (txpage_entry_index(e, &j->err_code, &j->err_kind, j->err_msg,
		    sizeof(j->err_msg)) == -1)
			return;
	}
	end = e->chain.len;
	if (j->at != NULL) {
		end = txpage_entry_pos(e, transcript_find(e->tx, j->at));
		if (end == 0) {
			txbranch_fail(j, RPC_INVALID_PARAMS, "branch_point_invalid",
			    "atRecordId is not a record of the session's active history");
			return;
		}
	}
	if ((slash = strrchr(j->dest, '/')) == NULL ||
	    asprintf(&tmp, "%.*s/.%s.%08x.tmp", (int)(slash - j->dest), j->dest,
	    j->new_id, arc4random()) == -1) {
		txbranch_fail(j, RPC_INTERNAL_ERROR, "internal", "out of memory");
		return;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) == -1)
		txbranch_fail(j, RPC_INTERNAL_ERROR, "internal", "cannot create the branch");
	else if (txbranch_copy(j, end, fd) == 0 && fsync(fd) == -1)
		txbranch_fail(j, RPC_INTERNAL_ERROR, "internal", "cannot sync the branch");
	if (fd != -1 && close(fd) == -1 && j->err_code == 0)
		txbranch_fail(j, RPC_INTERNAL_ERROR, "internal", "cannot write the branch");
	/* link() never replaces: a transcript already there stays. */
	if (fd != -1 && j->err_code == 0 && link(tmp, j->dest) == -1)
		txbranch_fail(j, RPC_INVALID_PARAMS, errno == EEXIST ? "session_id_conflict" :
		    "internal", errno == EEXIST ? "a transcript with the new id exists" :
		    "cannot put the branch in place");
	if (fd != -1)
		unlink(tmp);
	free(tmp);
}

static void
txbranch_done(struct lw_job *lw)
{
	struct txbranch_job *j = (struct txbranch_job *)lw;
	struct txpage_entry *e = j->e;
	struct child *c = j->c;
	json_object *data, *res;

	if (j->err_code == RPC_RESOURCE_NOT_FOUND)
		child_send_not_found(c, j->id, e->sid);
	else if (j->err_code != 0) {
		data = child_error_data(j->err_kind);
		json_object_object_add(data, "code", xjson_object_new_string(j->err_kind));
		child_send_error(c, j->id, j->err_code, j->err_msg, data);
	} else {
		res = xjson_object_new_object();
		json_object_object_add(res, "sessionId", xjson_object_new_string(j->new_id));
		json_object_object_add(res, "records", xjson_object_new_int64((int64_t)j->records));
		child_send_result(c, j->id, res);
	}
	json_object_put(j->id);
	free(j->cwd);
	free(j->at);
	free(j->dest);
	free(j);
	txpage_entry_release(c, e);
}

void
txbranch_start(struct child *c, struct txpage_entry *e, struct rpc_msg *m)
{
	const char *nid = json_get_str(m->params, "newSessionId"), *cwd, *at;
	struct txbranch_job *j;

	if (nid == NULL || !paths_valid_session_id(nid) || strlen(nid) > 36) {
		child_send_error(c, m->id, RPC_INVALID_PARAMS, "newSessionId is required",
		    child_error_data("invalid_session_id"));
		return;
	}
	if ((cwd = json_get_str(m->params, "cwd")) == NULL || cwd[0] != '/')
		cwd = c->opts.workspace;
	at = json_get_str(m->params, "atRecordId");
	if ((j = calloc(1, sizeof(*j))) == NULL || (j->cwd = strdup(cwd)) == NULL ||
	    (at != NULL && (j->at = strdup(at)) == NULL) ||
	    (j->dest = paths_transcript(c->opts.data_dir, cwd, nid)) == NULL) {
		if (j != NULL) {
			free(j->cwd);
			free(j->at);
		}
		free(j);
		child_send_error(c, m->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	j->c = c;
	j->e = e;
	j->id = json_object_get(m->id);
	strlcpy(j->new_id, nid, sizeof(j->new_id));
	j->lw.run = txbranch_run;
	j->lw.done = txbranch_done;
	e->busy = 1;
	loadwork_submit(c->work, &j->lw);
}
