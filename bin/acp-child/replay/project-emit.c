/* SPDX-License-Identifier: ISC */
/*
 * project-emit.c: how every update of the replay ends, on both paths: the
 * record's _meta (timestamp, qwenTranscript ids and segment, the
 * qwen.session.recordId the agent adds) and the top-level timestamp the
 * agent lifts out of it; the text segments of a record; appending an
 * update to the projection.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "project-int.h"
#include "xmalloc.h"

int
project_span(struct pctx *x, size_t off)
{
	struct projection *p = x->p;
	struct pupd *nu;

	if (p->n == p->cap) {
		if ((nu = reallocarray(p->u, p->cap * 2 + 64, sizeof *nu)) == NULL)
			return -1;
		p->u = nu;
		p->cap = p->cap * 2 + 64;
	}
	p->u[p->n].origin = x->pos;
	p->u[p->n].off = off;
	p->u[p->n].len = p->enc.len - off;
	p->n++;
	return p->enc.oom ? -1 : 0;
}

size_t
project_sep(struct pctx *x)
{
	if (x->p->n > 0)
		jbuf_put(&x->p->enc, ",", 1);
	return x->p->enc.len;
}

int
project_text_lane(const char *kind, int nonempty)
{
	if (!nonempty)
		return PROJECT_LANE_NONE;
	if (strcmp(kind, "user_message_chunk") == 0)
		return PROJECT_LANE_USER;
	if (strcmp(kind, "agent_thought_chunk") == 0)
		return PROJECT_LANE_THOUGHT;
	return PROJECT_LANE_AGENT;
}

void
project_segment(struct pctx *x, int lane, int boundary)
{
	int o = x->ord++;

	if (lane != PROJECT_LANE_NONE) {
		if (lane != x->lane || x->seg < 0) {
			x->lane = lane;
			x->seg = o;
		}
		x->useg = x->seg;
		return;
	}
	x->useg = -1;
	if (boundary) {
		x->lane = PROJECT_LANE_NONE;
		x->seg = -1;
	}
}

/* The lane of an update built with json-c, and whether it ends a run. */
static void
jsonc_segment(struct pctx *x, json_object *u)
{
	const char *kind = json_get_str(u, "sessionUpdate"), *type;
	json_object *content = json_get(u, "content", json_type_object), *text;

	if (strcmp(kind, "user_message_chunk") != 0 &&
	    strcmp(kind, "agent_message_chunk") != 0 &&
	    strcmp(kind, "agent_thought_chunk") != 0) {
		project_segment(x, PROJECT_LANE_NONE, 1);
		return;
	}
	type = json_get_str(content, "type");
	if (type != NULL && strcmp(type, "image") == 0) {
		project_segment(x, PROJECT_LANE_IMAGE, 0);
		return;
	}
	if (type != NULL && strcmp(type, "resource") == 0) {
		project_segment(x, PROJECT_LANE_RESOURCE, 0);
		return;
	}
	if (type != NULL && strcmp(type, "resource_link") == 0) {
		project_segment(x, PROJECT_LANE_LINK, 0);
		return;
	}
	text = json_get(content, "text", json_type_string);
	project_segment(x, project_text_lane(kind, text && json_object_get_string_len(text) > 0), 0);
}

/* Add _meta to u, encode it and append it to the projection (takes u):
   the record's timestamp, ids and segment, and the timestamp again at the
   top level, where the agent lifts it. */
int
project_emit(struct pctx *x, json_object *u, json_object *extra_meta)
{
	return project_emit_raw(x, u, extra_meta, 0, NULL);
}

/* project_emit, with rawOutput (raw borrowed, may be json-c's null) after
   _meta when has_raw. */
int
project_emit_raw(struct pctx *x, json_object *u, json_object *extra_meta, int has_raw,
    json_object *raw)
{
	json_object *meta, *qt, *ids, *v;
	size_t off = project_sep(x);
	char seg[160];

	jsonc_segment(x, u);
	meta = extra_meta ? extra_meta : xjson_object_new_object();
	if (x->ts >= 0)
		json_object_object_add(meta, "timestamp", xjson_object_new_int64(x->ts));
	qt = xjson_object_new_object();
	ids = xjson_object_new_array();
	json_object_array_add(ids, json_object_get(x->uuid));
	json_object_object_add(qt, "sourceRecordIds", ids);
	if (x->plan_call != NULL)
		json_object_object_add(qt, "planToolCallId",
		    xjson_object_new_string(x->plan_call));
	if (x->useg >= 0) {
		snprintf(seg, sizeof seg, "%.128s:%d", json_object_get_string(x->uuid), x->useg);
		json_object_object_add(qt, "segmentId", xjson_object_new_string(seg));
	}
	json_object_object_add(meta, "qwenTranscript", qt);
	if (x->bg_turn != NULL)
		json_object_object_add(meta, "backgroundTurn", json_object_get(x->bg_turn));
	json_object_object_add(meta, "qwen.session.recordId", json_object_get(x->uuid));
	if ((v = json_get(meta, "qwenDiscreteMessage", json_type_boolean)) != NULL &&
	    json_object_get_boolean(v)) {
		x->lane = PROJECT_LANE_NONE;
		x->seg = -1;
	}
	json_object_object_add(u, "_meta", meta);
	if (has_raw)
		json_object_object_add(u, "rawOutput", json_object_get(raw));
	if (x->ts >= 0)
		json_object_object_add(u, "timestamp", xjson_object_new_int64(x->ts));
	jsonw_value(&x->p->enc, u);
	json_object_put(u);
	return project_span(x, off);
}

void
project_tail(struct pctx *x)
{
	project_tail_meta(x);
	project_tail_top(x);
}

void
project_tail_top(struct pctx *x)
{
	jbuf_put(&x->p->enc, x->update_end.p, x->update_end.len);
}

void
project_tail_meta(struct pctx *x)
{
	char seg[160];

	jbuf_put(&x->p->enc, x->meta_ids.p, x->meta_ids.len);
	if (x->useg >= 0) {
		snprintf(seg, sizeof seg, "%.128s:%d", json_object_get_string(x->uuid), x->useg);
		jbuf_puts(&x->p->enc, ",\"segmentId\":");
		jsonw_string(&x->p->enc, seg, strlen(seg));
	}
	jbuf_put(&x->p->enc, x->meta_end.p, x->meta_end.len);
}

void
project_set_ts(struct pctx *x, int64_t ts)
{
	const char *s = json_object_get_string(x->uuid);
	size_t n = (size_t)json_object_get_string_len(x->uuid);
	char num[32];

	x->ts = ts;
	x->ord = 0;
	x->lane = PROJECT_LANE_NONE;
	x->seg = -1;
	x->meta_ids.len = 0;
	x->meta_end.len = 0;
	x->update_end.len = 0;
	if (x->ts >= 0) {
		snprintf(num, sizeof num, "%lld", (long long)x->ts);
		jbuf_puts(&x->meta_ids, "\"timestamp\":");
		jbuf_puts(&x->meta_ids, num);
		jbuf_put(&x->meta_ids, ",", 1);
	}
	jbuf_puts(&x->meta_ids, "\"qwenTranscript\":{\"sourceRecordIds\":[");
	jsonw_string(&x->meta_ids, s, n);
	jbuf_puts(&x->meta_ids, "]");
	jbuf_puts(&x->meta_end, "},\"qwen.session.recordId\":");
	jsonw_string(&x->meta_end, s, n);
	jbuf_put(&x->meta_end, "}", 1);
	if (x->ts >= 0) {
		jbuf_puts(&x->update_end, ",\"timestamp\":");
		jbuf_puts(&x->update_end, num);
	}
	jbuf_put(&x->update_end, "}", 1);
}
