/*
 * project-int.h: internals shared by project.c and project-tool.c.
 */
#ifndef QWEN_ACP_PROJECT_INT_H
#define QWEN_ACP_PROJECT_INT_H

#include <stdint.h>

#include "json.h"
#include "jtape.h"
#include "project.h"
#include "transcript-int.h"

struct pctx {
	struct transcript *t;
	const struct tx_chain *c;
	struct projection *p;
	size_t pos;			/* chain index of the current record */
	json_object *uuid;		/* current record's uuid string */
	int64_t ts;			/* -1: none */
	json_object *pending;		/* [{id, name, pos, uuid}] */
	struct jtape tape;		/* the fast path's parse of the record */
	struct jbuf sfx;		/* the record's _meta tail, encoded */
	size_t uoff;			/* start of the update being written */
	int oom;
};

/* A new update {"sessionUpdate": kind} (caller owns). */
json_object *pj_update(const char *kind);
/* Add _meta (extra_meta taken, may be NULL) to u and append it (takes u). */
int pj_emit(struct pctx *, json_object *u, json_object *extra_meta);
/* A functionCall part of an assistant record: a tool_call, tracked as pending. */
int pj_tool_call(struct pctx *, json_object *fc, size_t part_index);
/* A tool_result record: tool_call_update, or plan for todo_write. */
int pj_tool_result(struct pctx *, json_object *r);
/* Every call still pending at the end of the window failed. */
int pj_fail_pending(struct pctx *);
/* Track a tool call until its result (strings copied). */
void pj_pending_add(struct pctx *, const char *id, const char *name);
/* Remove and return (caller puts) the pending call matching id, else the
   only pending call named name; NULL when none. */
json_object *pj_take_pending(struct pctx *, const char *id, const char *name);
/* Start an update: a ',' after the previous one; its offset. */
size_t pj_sep(struct pctx *);
/* Record one encoded update [off, p->enc.len) of the current record. */
int pj_span(struct pctx *, size_t off);
/* ISO-8601 UTC "YYYY-MM-DDTHH:MM:SS[.mmm]Z" to epoch ms, -1 when invalid. */
int64_t pj_parse_ts(const char *s);
/* Argument keys giving a tool call's location and its title, in order. */
extern const char *const pj_path_keys[];
extern const char *const pj_title_keys[];
/* The id of a tool call: id itself, or qwen-replay-tool:<uuid>:<idx> in buf
   when it is NULL or empty. */
const char *pj_call_id(struct pctx *, const char *id, size_t idx, char buf[128]);
/* ACP tool kind of a qwen-code tool name. */
const char *pj_tool_kind(const char *name);
/* Project the record in x->tape (parsed by the caller); -1 on OOM. */
int pf_record(struct pctx *);

#endif
