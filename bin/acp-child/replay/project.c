/* SPDX-License-Identifier: ISC */
/*
 * project.c: chain records to ACP SessionUpdate objects, per
 * upstream-transcript.md 3.8.  Every update carries _meta.timestamp (epoch
 * ms, when the record has a valid one) and
 * _meta.qwenTranscript.sourceRecordIds = [uuid].
 */
#include "config.h"

#include <sys/mman.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "project.h"
#include "project-int.h"
#include "transcript.h"
#include "xmalloc.h"

#define GAP_NOTICE "Earlier history could not be restored: a parent record is " \
	"missing from the saved transcript."

/* A new update of the given kind. */
json_object *
project_update(const char *kind)
{
	json_object *u = xjson_object_new_object();

	json_object_object_add(u, "sessionUpdate", xjson_object_new_string(kind));
	return u;
}

/* A text chunk update (text borrowed; copied). */
int
project_chunk(struct pctx *x, const char *kind, const char *text, json_object *meta)
{
	json_object *u = project_update(kind), *content = xjson_object_new_object();

	json_object_object_add(content, "type", xjson_object_new_string("text"));
	json_object_object_add(content, "text", xjson_object_new_string(text));
	json_object_object_add(u, "content", content);
	return project_emit(x, u, meta);
}

int
project_chunk_obj(struct pctx *x, const char *kind, json_object *text, json_object *meta)
{
	json_object *u = project_update(kind), *content = xjson_object_new_object();

	json_object_object_add(content, "type", xjson_object_new_string("text"));
	json_object_object_add(content, "text", json_object_get(text));
	json_object_object_add(u, "content", content);
	return project_emit(x, u, meta);
}

/* usageMetadata under ACP's names (the agent's mapping): input, output
   and total default to 0, thought and cached-read only when present. */
const char *const project_usage_keys[][2] = {
	{ "promptTokenCount", "inputTokens" },
	{ "candidatesTokenCount", "outputTokens" },
	{ "totalTokenCount", "totalTokens" },
	{ "thoughtsTokenCount", "thoughtTokens" },
	{ "cachedContentTokenCount", "cachedReadTokens" },
	{ NULL, NULL }
};

int
project_usage(struct pctx *x, json_object *usage, const char *parent)
{
	json_object *meta = xjson_object_new_object(), *acp = xjson_object_new_object(), *v;
	int i;

	project_add_usage(x, project_jsonc_count(usage, "promptTokenCount"),
	    project_jsonc_count(usage, "cachedContentTokenCount"),
	    project_jsonc_count(usage, "candidatesTokenCount"));
	for (i = 0; project_usage_keys[i][0] != NULL; i++) {
		v = NULL;
		json_object_object_get_ex(usage, project_usage_keys[i][0], &v);
		if (json_object_is_type(v, json_type_int) ||
		    json_object_is_type(v, json_type_double))
			json_object_object_add(acp, project_usage_keys[i][1], json_object_get(v));
		else if (i < 3)
			json_object_object_add(acp, project_usage_keys[i][1], xjson_object_new_int(0));
	}
	json_object_object_add(meta, "usage", acp);
	if (parent != NULL)
		json_object_object_add(meta, "parentToolCallId", xjson_object_new_string(parent));
	return project_chunk(x, "agent_message_chunk", "", meta);
}

/* assistant records: thoughts, text, tool calls, usage. */
static int
project_assistant(struct pctx *x, json_object *r)
{
	json_object *msg = json_get(r, "message", json_type_object);
	json_object *parts = json_get(msg, "parts", json_type_array), *part, *fc, *v;
	json_object *usage = json_get(r, "usageMetadata", json_type_object), *text;
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && parts && i < json_object_array_length(parts); i++) {
		part = json_object_array_get_idx(parts, i);
		if ((fc = json_get(part, "functionCall", json_type_object)) != NULL) {
			if ((v = json_get(fc, "name", json_type_string)) == NULL ||
			    json_object_get_string_len(v) == 0)
				continue;	/* the agent skips a nameless call */
			if (usage != NULL) {
				rc = project_usage(x, usage, NULL);
				usage = NULL;
			}
			if (rc == 0)
				rc = project_tool_call(x, fc, i);
		} else if ((text = json_get(part, "text", json_type_string)) != NULL &&
		    json_object_get_string_len(text) > 0) {
			v = json_get(part, "thought", json_type_boolean);
			rc = project_chunk_obj(x, v && json_object_get_boolean(v) ?
			    "agent_thought_chunk" : "agent_message_chunk", text, NULL);
		}
	}
	if (rc == 0 && usage != NULL)
		rc = project_usage(x, usage, NULL);
	return rc;
}

/* Project one record's updates. */
static int
project_kind(struct pctx *x, json_object *r)
{
	switch (transcript_type(x->t, x->c->rec[x->pos])) {
	case TX_USER:
		return project_user(x, r);
	case TX_ASSISTANT:
		return project_assistant(x, r);
	case TX_TOOL_RESULT:
		return project_tool_result(x, r);
	case TX_SYSTEM:
		return project_system(x, r);
	}
	return 0;
}

/* Project one record; the updates of a background notification's turn
   carry its backgroundTurn (a finished task's own notice does not). */
static int
project_record(struct pctx *x, json_object *r)
{
	const char *sub = json_get_str(r, "subtype");
	int rc;

	if (sub == NULL || strcmp(sub, "background_task_completed") != 0)
		x->bg_turn = project_background_turn(r);
	rc = project_kind(x, r);
	json_object_put(x->bg_turn);
	x->bg_turn = NULL;
	return rc;
}

int
project_record_jsonc(struct pctx *x)
{
	json_object *r;
	char *cause = NULL;
	int rc;

	if ((r = transcript_load_record(x->t, x->c->rec[x->pos], &cause)) == NULL) {
		free(cause);
		return errno == EBADMSG ? 0 : -1;
	}
	x->cwd = json_get_str(r, "cwd");	/* the tape's bytes may be reread */
	rc = project_record(x, r);
	x->cwd = NULL;
	json_object_put(r);
	return rc;
}

/* Set the per-record context: uuid, timestamp (ts_str, may be NULL) and
   the encoded _meta tail the fast path ends its updates with. */
static void
record_context(struct pctx *x, const char *ts_str)
{
	char buf[37];
	const char *s;
	size_t n;

	json_object_put(x->uuid);
	s = transcript_uuid_ref(x->t, x->c->rec[x->pos], buf, &n);
	x->uuid = xjson_object_new_string_len(s, (int)n);
	project_set_ts(x, ts_str != NULL ? project_parse_ts(ts_str) : -1);
}

/* A json-c record's forkedFrom is set (not null). */
static int
jsonc_inherited(json_object *r)
{
	json_object *v;

	return json_object_object_get_ex(r, "forkedFrom", &v) && v != NULL;
}

/* The tape's record has forkedFrom set (not null). */
static int
tape_inherited(const struct jtape *tape)
{
	int v = jt_get(tape, 0, "forkedFrom");

	return v >= 0 && tape->n[v].type != JT_NULL;
}

/* The current record through json-c; 0 also when json-c refuses it. */
static int
record_jsonc(struct pctx *x, int flags, char **cause)
{
	json_object *r;
	int rc;

	x->p->jsonc_records++;
	if ((r = transcript_load_record(x->t, x->c->rec[x->pos], cause)) == NULL) {
		if (errno != EBADMSG)
			return -1;
		if (cause != NULL) {	/* indexed but refused: skipped, no error */
			free(*cause);
			*cause = NULL;
		}
		return 0;
	}
	if ((flags & PROJECT_HIDE_INHERITED) && jsonc_inherited(r)) {
		json_object_put(r);
		return 0;
	}
	record_context(x, json_get_str(r, "timestamp"));
	x->cwd = json_get_str(r, "cwd");
	rc = project_record(x, r);
	x->cwd = NULL;
	json_object_put(r);
	if (rc == -1)
		transcript_cause(cause, "replay: out of memory");
	return rc;
}

/* The current record from its raw bytes when the fast path can read
   them, else through json-c. */
static int
record_one(struct pctx *x, int flags, char **cause)
{
	const char *bytes;
	size_t n;
	int rc;

	if (flags & PROJECT_JSONC)
		return record_jsonc(x, flags, cause);
	rc = transcript_record_bytes(x->t, x->c->rec[x->pos], &bytes, &n, cause);
	if (rc == -1)
		return -1;
	if (rc == 0)
		rc = JT_BAIL;			/* several fragments: merged by json-c */
	else if ((rc = jt_parse(&x->tape, bytes, n)) == JT_OOM) {
		transcript_cause(cause, "replay: out of memory");
		return -1;
	}
	if (rc == JT_BAIL || x->tape.n[0].type != JT_OBJ)
		return record_jsonc(x, flags, cause);
	x->p->fast_records++;
	if ((flags & PROJECT_HIDE_INHERITED) && tape_inherited(&x->tape))
		return 0;
	record_context(x, jt_get_str(&x->tape, 0, "timestamp", &x->oom));
	x->cwd = jt_get_str(&x->tape, 0, "cwd", &x->oom);
	if (x->oom || project_fast_record(x) == -1) {
		transcript_cause(cause, "replay: out of memory");
		return -1;
	}
	return 0;
}

/* Fault the first n bytes of a fresh buffer of cap bytes in with one call
   rather than one trap per page (traps are dear in a VM), on huge pages
   where they fit whole: a page walk per 2 MiB, not per 4 KiB.  Advisory,
   errors ignored. */
static void
prefault(void *p, size_t n, size_t cap)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t h = (2u << 20) - 1, h0, h1;

	h0 = ((uintptr_t)p + h) & ~h;
	h1 = ((uintptr_t)p + cap) & ~h;
	if (h1 > h0)
		(void)madvise((void *)h0, h1 - h0, MADV_HUGEPAGE);
	if (n > 65536 && a < (uintptr_t)p + n)
		(void)madvise((void *)a, ((uintptr_t)p + n - a) & ~(uintptr_t)4095,
		    MADV_POPULATE_WRITE);
#else
	(void)p;
	(void)n;
	(void)cap;
#endif
}

int
project_window(struct transcript *t, const struct tx_chain *c, size_t start,
    int flags, struct projection *p, char **cause)
{
	struct pctx x;
	json_object *meta;
	uint64_t est = 0;
	size_t i;
	int rc = 0;

	memset(&x, 0, sizeof x);
	x.t = t;
	x.c = c;
	x.p = p;
	x.pos = start;
	x.start = start;
	x.counted = start == 0 || !(flags & PROJECT_CHAIN_STATS);
	x.ts = -1;
	x.seg = -1;
	project_clear(p);
	for (i = start; i < c->len; i++)	/* room for the window: no regrowth */
		est += transcript_raw_len(t, c->rec[i]);
	est += est / 8 + 65536;
	if (jbuf_grow(&p->enc, est) == -1) {
		transcript_cause(cause, "replay: out of memory");
		return -1;
	}
	/* The estimate, not the capacity (the next power of two: up to twice
	   as many pages, most of them never written). */
	prefault(p->enc.p, est < p->enc.cap ? est : p->enc.cap, p->enc.cap);
	x.pending = xjson_object_new_array();
	x.used = xjson_object_new_object();
	if (start == 0 && c->gaps && c->len > 0) {
		record_context(&x, NULL);
		meta = xjson_object_new_object();
		json_object_object_add(meta, "qwenDiscreteMessage", xjson_object_new_boolean(1));
		rc = project_chunk(&x, "agent_message_chunk", GAP_NOTICE, meta);
	}
	/* The window's records are read in runs, not one pread each. */
	if (!(flags & PROJECT_JSONC) && start < c->len)
		transcript_read_ahead(t, c->rec + start, c->len - start);
	for (x.pos = start; rc == 0 && x.pos < c->len; x.pos++)
		rc = record_one(&x, flags, cause);
	transcript_read_ahead(t, NULL, 0);
	if (rc == 0 && !(flags & PROJECT_OPEN_END) && (rc = project_fail_pending(&x)) == -1)
		transcript_cause(cause, "replay: out of memory");
	json_object_put(x.uuid);
	json_object_put(x.pending);
	json_object_put(x.used);
	jt_free(&x.tape);
	jbuf_free(&x.meta_ids);
	jbuf_free(&x.meta_end);
	jbuf_free(&x.update_end);
	if (rc == -1)
		project_clear(p);
	return rc;
}

int
project_inherited(struct transcript *t, uint32_t rec, char **cause)
{
	struct jtape tape;
	const char *bytes;
	json_object *r;
	size_t n;
	int rc;

	memset(&tape, 0, sizeof tape);
	if ((rc = transcript_record_bytes(t, rec, &bytes, &n, cause)) == -1)
		return -1;
	if (rc == 1 && (rc = jt_parse(&tape, bytes, n)) == JT_OK &&
	    tape.n[0].type == JT_OBJ) {
		rc = tape_inherited(&tape);
		jt_free(&tape);
		return rc;
	}
	jt_free(&tape);
	if (rc == JT_OOM) {
		transcript_cause(cause, "replay: out of memory");
		return -1;
	}
	if ((r = transcript_load_record(t, rec, cause)) == NULL)
		return errno == EBADMSG ? 0 : -1;
	rc = jsonc_inherited(r);
	json_object_put(r);
	return rc;
}

void
project_clear(struct projection *p)
{
	jbuf_free(&p->enc);
	free(p->u);
	memset(p, 0, sizeof *p);
}
