/* SPDX-License-Identifier: ISC */
/*
 * load-answer.c: the bytes a restore answers with, built on the worker.
 *
 * session/new answers {sessionId}.  load and resume answer with
 * result._meta["qwen.session.restore"] (counters and ids only); a load in
 * bulk mode carries the replay in result._meta["qwen.session.loadReplay"]
 * = {v:1, updates, partial?, truncatedRecords?, hasMore?}, otherwise each
 * update goes first as a session/update notification and the answer says
 * how many in "qwen.session.replayInfo".
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "jsonw.h"
#include "replay.h"
#include "load.h"
#include "rpc-frame.h"
#include "transcript.h"
#include "xmalloc.h"

/* Summary counters a client may show or test; ids and numbers only. */
static json_object *
load_job_stats(struct load_job *j)
{
	json_object *o = xjson_object_new_object();
	const struct tx_stats *st = j->tx != NULL ? transcript_stats(j->tx) : NULL;

	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(o, "transcriptBytes",
	    xjson_object_new_int64((int64_t)j->prof.transcript_bytes));
	json_object_object_add(o, "records", xjson_object_new_int64((int64_t)j->records));
	json_object_object_add(o, "chainRecords",
	    xjson_object_new_int64((int64_t)j->prof.chain_records));
	json_object_object_add(o, "modelHistoryEntries",
	    xjson_object_new_int64(j->model_history));
	json_object_object_add(o, "malformedLines",
	    xjson_object_new_int64((int64_t)j->prof.malformed_lines));
	json_object_object_add(o, "recoveredRecords",
	    xjson_object_new_int64(st != NULL ? (int64_t)st->recovered_records : 0));
	json_object_object_add(o, "gaps", xjson_object_new_int64(
	    j->have_chain ? (int64_t)j->chain.gaps : 0));
	json_object_object_add(o, "cycles", xjson_object_new_int64(
	    j->have_chain ? (int64_t)j->chain.cycles : 0));
	json_object_object_add(o, "leafUuid",
	    j->tail != NULL ? xjson_object_new_string(j->tail) : NULL);
	json_object_object_add(o, "refreshed", xjson_object_new_boolean(j->refresh));
	/* What the restore cost: the index's origin and the bytes it read. */
	json_object_object_add(o, "index",
	    xjson_object_new_string(j->prof.index != NULL ? j->prof.index : "none"));
	json_object_object_add(o, "bytesRead",
	    xjson_object_new_int64((int64_t)j->prof.bytes_read));
	/* An index cache is checked as it is used: how much of it was. */
	json_object_object_add(o, "indexBytesChecked", xjson_object_new_int64(
	    j->tx != NULL ? (int64_t)transcript_index_checked(j->tx) : 0));
	return o;
}

/* Append one message (taken) as a line. */
static void
load_job_emit(struct jbuf *b, json_object *msg)
{
	jsonw_value(b, msg);
	jbuf_put(b, "\n", 1);
	json_object_put(msg);
}

/* The replay summary members after "v" and the updates or their count. */
static void
load_job_replay_tail(struct load_job *j, const struct replay_result *rr,
    struct jbuf *b)
{
	char num[32], uuid[64];

	if (rr->partial)
		jbuf_puts(b, ",\"partial\":true");
	if (rr->truncated_records > 0) {
		snprintf(num, sizeof num, "%zu", rr->truncated_records);
		jbuf_puts(b, ",\"truncatedRecords\":");
		jbuf_puts(b, num);
	}
	if (rr->has_more)
		jbuf_puts(b, ",\"hasMore\":true");
	if (rr->anchor >= 0 && j->tx != NULL && (size_t)rr->anchor < j->chain.len) {
		transcript_uuid(j->tx, j->chain.rec[rr->anchor], uuid);
		jbuf_puts(b, ",\"anchorRecordId\":");
		jsonw_string(b, uuid, strlen(uuid));
	}
	if (j->kind == LOAD_JOB_LOAD && rr->records <= j->chain.len)
		terminals_write(j->tx, &j->chain, rr->anchor >= 0 ? (size_t)rr->anchor :
		    j->chain.len - rr->records, b);
	jbuf_put(b, "}", 1);
}

/* Hand b over as the next chunk of the answer; -1 (b freed) on OOM. */
static int
load_job_out(struct load_job *j, struct jbuf *b)
{
	if (b->oom) {
		jbuf_free(b);
		return -1;
	}
	j->out[j->nout].base = b->p;
	j->out[j->nout].off = 0;
	j->out[j->nout].len = b->len;
	j->nout++;
	memset(b, 0, sizeof *b);
	return 0;
}

/* A bulk replay's updates after b's "updates": and the rest of the answer:
   the updates stay in rr's buffer, sent from there, when they lie there in
   one run; else they are copied. */
static int
load_job_bulk(struct load_job *j, struct replay_result *rr, struct jbuf *b)
{
	struct jbuf t = { NULL, 0, 0, 0 };
	const char *body;
	size_t len;

	if ((body = replay_result_body(rr, &len)) == NULL) {
		replay_result_write(rr, b);
	} else {
		jbuf_put(b, "[", 1);
		if (load_job_out(j, b) == -1)
			return -1;
		j->out[j->nout].base = rr->p.enc.p;
		j->out[j->nout].off = (size_t)(body - rr->p.enc.p);
		j->out[j->nout].len = len;
		j->nout++;
		memset(&rr->p.enc, 0, sizeof rr->p.enc);
		b = &t;
		jbuf_put(b, "]", 1);
	}
	load_job_replay_tail(j, rr, b);
	jbuf_puts(b, "}}}\n");
	return load_job_out(j, b);
}

/* Notifications (legacy mode) then the answer, in j->out[].  The answer is
   {"jsonrpc":"2.0","id":ID,"result":{"_meta":{"qwen.session.restore":{...},
   "qwen.session.loadReplay"|"qwen.session.replayInfo":{"v":1,...}}}}. */
int
load_answer_build(struct load_job *j, struct replay_result *rr)
{
	struct jbuf b = { NULL, 0, 0, 0 };
	json_object *result, *stats, *state;
	const struct projection *p = &rr->p;
	char num[32];
	size_t i;

	if (j->kind == LOAD_JOB_NEW) {
		result = j->advertise ? modes_state() : xjson_object_new_object();
		json_object_object_add(result, "sessionId", xjson_object_new_string(j->sid));
		load_job_emit(&b, rpc_new_result(json_object_get(j->req_id), result));
		return load_job_out(j, &b);
	}
	for (i = 0; !j->bulk && i < p->n && !b.oom; i++) {
		jbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\","
		    "\"params\":{\"sessionId\":");
		jsonw_string(&b, j->sid, strlen(j->sid));
		jbuf_puts(&b, ",\"update\":");
		jbuf_put(&b, p->enc.p + p->u[i].off, p->u[i].len);
		jbuf_puts(&b, "}}\n");
	}
	jbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
	jsonw_value(&b, j->req_id);
	jbuf_puts(&b, ",\"result\":{");
	state = j->advertise ? modes_state() : xjson_object_new_object();
	json_object_object_foreach(state, key, val) {
		jsonw_string(&b, key, strlen(key));
		jbuf_puts(&b, ":");
		jsonw_value(&b, val);
		jbuf_puts(&b, ",");
	}
	json_object_put(state);
	jbuf_puts(&b, "\"_meta\":{\"qwen.session.restore\":");
	stats = load_job_stats(j);
	jsonw_value(&b, stats);
	json_object_put(stats);
	if (j->kind == LOAD_JOB_LOAD && j->bulk) {
		jbuf_puts(&b, ",\"qwen.session.loadReplay\":{\"v\":1,\"updates\":");
		return load_job_bulk(j, rr, &b);
	}
	if (j->kind == LOAD_JOB_LOAD) {
		snprintf(num, sizeof num, "%zu", p->n);
		jbuf_puts(&b, ",\"qwen.session.replayInfo\":{\"v\":1,\"count\":");
		jbuf_puts(&b, num);
		load_job_replay_tail(j, rr, &b);
	}
	jbuf_puts(&b, "}}}\n");
	return load_job_out(j, &b);
}
