/* SPDX-License-Identifier: ISC */
/*
 * txturns.c: qwen/status/session/turn_index (also _qwen/session/
 * turn_index), a page of a session's turns: the user prompts of its active
 * history, in order (the daemon's GET /session/:id/turn-index).
 *
 * Answered from the same index cache and chain as transcript pages
 * (txpage-int.h): the turns are counted from the records' types without
 * reading them, and only the page's own records are read for their label.
 * A turn's turnId is its record's uuid, the atRecordId a transcript page or
 * a branch takes.  The snapshot names the indexed state ("v1.<bytes>").
 *
 * params: {sessionId, cwd?, start, limit}; result: {snapshot, totalTurns,
 * start, turns: [{ordinal, turnId, kind, timestamp?, label}]}.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "json.h"
#include "loadwork.h"
#include "transcript.h"
#include "xmalloc.h"
#include "txpage-int.h"

#define TXT_LABEL_BYTES	200

struct txt_job {
	struct lw_job		 lw;
	struct child		*c;
	struct txpage_entry	*e;
	json_object		*id;
	size_t			 start, limit, total;
	json_object		*turns;
	uint64_t		 snapshot;
	int			 err_code;
	const char		*err_kind;
	char			 err_msg[160];
};

/* A turn's kind, or NULL when the user record is not a turn. */
static const char *
txt_kind(struct transcript *t, uint32_t rec)
{
	const char *sub;

	if (transcript_type(t, rec) != TX_USER)
		return NULL;
	sub = transcript_subtype(t, rec);
	if (sub[0] == '\0')
		return "prompt";
	if (strcmp(sub, "cron") == 0)
		return "scheduled";
	if (strcmp(sub, "realtime_message") == 0)
		return "realtime";
	return NULL;
}

/* Drop a UTF-8 sequence the cut left unfinished at the end of buf. */
static void
txt_utf8_cut(char *buf, size_t *len)
{
	size_t p = *len, need;
	unsigned char lead;

	while (p > 0 && *len - p < 4 && ((unsigned char)buf[p - 1] & 0xc0) == 0x80)
		p--;
	if (p == 0)
		return;
	lead = (unsigned char)buf[p - 1];
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
	if ((p - 1) + need > *len) {
		*len = p - 1;
		buf[*len] = '\0';
	}
}

/* The text parts of a user record, joined and cut to a label. */
static json_object *
txt_label(json_object *rec)
{
	json_object *parts = json_get(json_get_obj(rec, "message"), "parts",
	    json_type_array);
	char buf[TXT_LABEL_BYTES + 1] = "";
	const char *s;
	size_t len = 0, n;

	for (size_t i = 0; parts != NULL && i < json_object_array_length(parts) &&
	    len < TXT_LABEL_BYTES; i++) {
		if ((s = json_get_str(json_object_array_get_idx(parts, i), "text")) == NULL)
			continue;
		n = strlen(s);
		if (len > 0 && len < TXT_LABEL_BYTES)
			buf[len++] = ' ';
		if (n > TXT_LABEL_BYTES - len)
			n = TXT_LABEL_BYTES - len;
		memcpy(buf + len, s, n);
		len += n;
	}
	buf[len] = '\0';
	txt_utf8_cut(buf, &len);
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')
			buf[i] = ' ';
	return xjson_object_new_string(buf);
}

/* One turn of the page. */
static int
txt_turn(struct txt_job *j, uint32_t rec, size_t ordinal, const char *kind)
{
	char *cause = NULL;
	json_object *o, *turn, *v;

	if ((o = transcript_load_record(j->e->tx, rec, &cause)) == NULL) {
		free(cause);
		return txpage_error(&j->err_code, &j->err_kind, j->err_msg,
		    sizeof(j->err_msg), RPC_INTERNAL_ERROR, "transcript_unreadable",
		    "cannot read a record of the transcript");
	}
	turn = xjson_object_new_object();
	json_object_object_add(turn, "ordinal", xjson_object_new_int64((int64_t)ordinal));
	json_object_object_add(turn, "turnId", json_object_object_get_ex(o, "uuid", &v) ?
	    json_object_get(v) : xjson_object_new_string(""));
	json_object_object_add(turn, "kind", xjson_object_new_string(kind));
	if (json_object_object_get_ex(o, "timestamp", &v) &&
	    json_object_is_type(v, json_type_string))
		json_object_object_add(turn, "timestamp", json_object_get(v));
	json_object_object_add(turn, "label", txt_label(o));
	json_object_array_add(j->turns, turn);
	json_object_put(o);
	return 0;
}

/* Worker: count the chain's turns, read the page's. */
static void
txt_run(struct lw_job *lw)
{
	struct txt_job *j = (struct txt_job *)lw;
	struct txpage_entry *e = j->e;
	const char *kind;
	size_t i, n = 0;

	if (txpage_entry_index(e, &j->err_code, &j->err_kind, j->err_msg,
	    sizeof(j->err_msg)) == -1)
		return;
	j->turns = xjson_object_new_array();
	j->snapshot = e->chained;
	for (i = 0; i < e->chain.len; i++) {
		if ((kind = txt_kind(e->tx, e->chain.rec[i])) == NULL)
			continue;
		if (n >= j->start && n < j->start + j->limit &&
		    txt_turn(j, e->chain.rec[i], n, kind) == -1)
			return;
		n++;
	}
	j->total = n;
}

static void
txt_done(struct lw_job *lw)
{
	struct txt_job *j = (struct txt_job *)lw;
	struct txpage_entry *e = j->e;
	struct child *c = j->c;
	json_object *res, *data;
	char snap[32];

	if (j->err_code == RPC_RESOURCE_NOT_FOUND)
		child_send_not_found(c, j->id, e->sid);
	else if (j->err_code != 0) {
		data = child_error_data(j->err_kind);
		json_object_object_add(data, "code", xjson_object_new_string(j->err_kind));
		child_send_error(c, j->id, j->err_code, j->err_msg, data);
	} else {
		snprintf(snap, sizeof(snap), "v1.%llu", (unsigned long long)j->snapshot);
		res = xjson_object_new_object();
		json_object_object_add(res, "snapshot", xjson_object_new_string(snap));
		json_object_object_add(res, "totalTurns", xjson_object_new_int64((int64_t)j->total));
		json_object_object_add(res, "start", xjson_object_new_int64((int64_t)j->start));
		json_object_object_add(res, "turns", json_object_get(j->turns));
		child_send_result(c, j->id, res);
	}
	json_object_put(j->turns);
	json_object_put(j->id);
	free(j);
	txpage_entry_release(c, e);
}

int
txturns_is_method(const char *method)
{
	return strcmp(method, "qwen/status/session/turn_index") == 0 ||
	    strcmp(method, "_qwen/session/turn_index") == 0;
}

/* A turn-index page on the idle entry e. */
void
txturns_start(struct child *c, struct txpage_entry *e, struct rpc_msg *m)
{
	json_object *v;
	struct txt_job *j = xcalloc(1, sizeof(*j));

	j->limit = 100;
	if ((v = json_get(m->params, "start", json_type_int)) != NULL &&
	    json_object_get_int64(v) > 0)
		j->start = (size_t)json_object_get_int64(v);
	if ((v = json_get(m->params, "limit", json_type_int)) != NULL &&
	    json_object_get_int64(v) > 0 && json_object_get_int64(v) <= 500)
		j->limit = (size_t)json_object_get_int64(v);
	j->c = c;
	j->e = e;
	j->id = json_object_get(m->id);
	j->lw.run = txt_run;
	j->lw.done = txt_done;
	e->busy = 1;
	loadwork_submit(c->work, &j->lw);
}
