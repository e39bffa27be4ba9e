/*
 * answer.c: the bytes a restore answers with, built on the worker.
 *
 * session/new answers {sessionId}.  load and resume answer with
 * result._meta["qwen.session.restore"] (counters and ids only); a load in
 * bulk mode carries the replay in result._meta["qwen.session.loadReplay"]
 * = {v:1, updates, partial?, truncatedRecords?, hasMore?}, otherwise each
 * update goes first as a session/update notification and the answer says
 * how many in "qwen.session.replayInfo".
 */
#include "config.h"

#include <string.h>

#include "jsonw.h"
#include "replay.h"
#include "restore.h"
#include "rpc-frame.h"
#include "transcript.h"

/* Summary counters a client may show or test; ids and numbers only. */
static json_object *
rj_stats(struct restore_job *j)
{
	json_object *o = json_object_new_object();
	const struct tx_stats *st = j->tx != NULL ? transcript_stats(j->tx) : NULL;

	json_object_object_add(o, "v", json_object_new_int(1));
	json_object_object_add(o, "transcriptBytes",
	    json_object_new_int64((int64_t)j->prof.transcript_bytes));
	json_object_object_add(o, "records", json_object_new_int64((int64_t)j->records));
	json_object_object_add(o, "chainRecords",
	    json_object_new_int64((int64_t)j->prof.chain_records));
	json_object_object_add(o, "modelHistoryEntries",
	    json_object_new_int64(j->model_history));
	json_object_object_add(o, "malformedLines",
	    json_object_new_int64((int64_t)j->prof.malformed_lines));
	json_object_object_add(o, "recoveredRecords",
	    json_object_new_int64(st != NULL ? (int64_t)st->recovered_records : 0));
	json_object_object_add(o, "gaps", json_object_new_int64(
	    j->have_chain ? (int64_t)j->chain.gaps : 0));
	json_object_object_add(o, "cycles", json_object_new_int64(
	    j->have_chain ? (int64_t)j->chain.cycles : 0));
	json_object_object_add(o, "leafUuid",
	    j->tail != NULL ? json_object_new_string(j->tail) : NULL);
	json_object_object_add(o, "refreshed", json_object_new_boolean(j->refresh));
	return o;
}

/* The replay summary; with updates (taken) in bulk mode. */
static json_object *
rj_replay_meta(const struct replay_result *rr, json_object *updates)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "v", json_object_new_int(1));
	if (updates != NULL)
		json_object_object_add(o, "updates", updates);
	else
		json_object_object_add(o, "count", json_object_new_int64(
		    rr->updates != NULL ? (int64_t)json_object_array_length(rr->updates) : 0));
	if (rr->partial)
		json_object_object_add(o, "partial", json_object_new_boolean(1));
	if (rr->truncated_records > 0)
		json_object_object_add(o, "truncatedRecords",
		    json_object_new_int64((int64_t)rr->truncated_records));
	if (rr->has_more)
		json_object_object_add(o, "hasMore", json_object_new_boolean(1));
	return o;
}

/* Append one message (taken) as a line. */
static void
rj_emit(struct jbuf *b, json_object *msg)
{
	jsonw_value(b, msg);
	jbuf_put(b, "\n", 1);
	json_object_put(msg);
}

/* Notifications (legacy mode) then the answer, all into b. */
void
answer_build(struct restore_job *j, struct replay_result *rr, struct jbuf *b)
{
	json_object *result, *meta, *updates = NULL;
	size_t i, n;

	if (j->kind == RJ_NEW) {
		result = json_object_new_object();
		json_object_object_add(result, "sessionId", json_object_new_string(j->sid));
		rj_emit(b, rpc_new_result(json_object_get(j->req_id), result));
		return;
	}
	n = rr->updates != NULL ? json_object_array_length(rr->updates) : 0;
	for (i = 0; !j->bulk && i < n && !b->oom; i++) {
		jbuf_puts(b, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\","
		    "\"params\":{\"sessionId\":");
		jsonw_string(b, j->sid, strlen(j->sid));
		jbuf_puts(b, ",\"update\":");
		jsonw_value(b, json_object_array_get_idx(rr->updates, i));
		jbuf_puts(b, "}}\n");
	}
	result = json_object_new_object();
	meta = json_object_new_object();
	json_object_object_add(meta, "qwen.session.restore", rj_stats(j));
	if (j->kind == RJ_LOAD) {
		if (j->bulk) {
			updates = rr->updates != NULL ? rr->updates : json_object_new_array();
			rr->updates = NULL;
		}
		json_object_object_add(meta, j->bulk ? "qwen.session.loadReplay" :
		    "qwen.session.replayInfo", rj_replay_meta(rr, updates));
	}
	json_object_object_add(result, "_meta", meta);
	rj_emit(b, rpc_new_result(json_object_get(j->req_id), result));
}

