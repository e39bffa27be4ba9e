/* SPDX-License-Identifier: ISC */
/*
 * project-int.h: internals shared by project.c and project-tool.c.
 */
#ifndef QWEN_ACP_PROJECT_INT_H
#define QWEN_ACP_PROJECT_INT_H

#include <stdint.h>

#include "json.h"
#include "jtape.h"
#include "project.h"
#include "transcript.h"

struct pctx {
	struct transcript *t;
	const struct tx_chain *c;
	struct projection *p;
	size_t pos;			/* chain index of the current record */
	json_object *uuid;		/* current record's uuid string */
	int64_t ts;			/* -1: none */
	json_object *pending;		/* [{id, name, pos, uuid}] */
	json_object *used;		/* the call ids given out: {id: id} */
	struct jtape tape;		/* the fast path's parse of the record */
	struct jbuf meta_ids;		/* the record's _meta tail up to sourceRecordIds */
	struct jbuf meta_end;		/* and after them: recordId, _meta's end */
	struct jbuf update_end;		/* the top-level timestamp, the update's end */
	size_t uoff;			/* start of the update being written */
	int ord;			/* updates of the current record so far */
	int lane;			/* enum project_lane of the open text segment */
	int seg;			/* the ordinal that opened it, -1: none */
	int useg;			/* segment of the update being written, -1 */
	const char *cwd;		/* the record's cwd, NULL: none */
	size_t start;			/* chain index of the window's first record */
	int counted;			/* cum holds the records before start */
	double cum[3];			/* tokens so far: prompt, cached, candidates */
	const char *plan_call;		/* planToolCallId of the update written */
	json_object *bg_turn;		/* the record's backgroundTurn, NULL: none */
	int oom;
};

#define PROJECT_TITLE_MAX 8192

/* The runs of text chunks of one kind within a record share a segmentId
   "<uuid>:<ordinal of the run's first update>" (the agent's own replay
   does the same); any other kind of update ends a run. */
enum project_lane { PROJECT_LANE_NONE, PROJECT_LANE_USER, PROJECT_LANE_IMAGE, PROJECT_LANE_AGENT,
    PROJECT_LANE_THOUGHT, PROJECT_LANE_RESOURCE, PROJECT_LANE_LINK };

/* A user record's updates (project-user.c). */
int project_user(struct pctx *, json_object *r);
/* A text chunk sharing a parsed string (takes a reference to text; meta
   taken, may be NULL). */
int project_chunk_obj(struct pctx *, const char *kind, json_object *text,
    json_object *meta);
/* The _meta a user record's updates start with (new, NULL when empty);
   with own set, only what the notification and cron kinds carry. */
json_object *project_user_meta(json_object *r, const char *sub, int own);

/* Count the next update of the record and set x->useg: lane is its text
   lane (PROJECT_LANE_NONE for an empty chunk), boundary whether it ends a run. */
void project_segment(struct pctx *, int lane, int boundary);
/* The lane of a text chunk of the given kind, text non-empty or not. */
int project_text_lane(const char *kind, int nonempty);
/* Write the end of an update: the record's ids (and the segment), the
   _meta close and the top-level timestamp (project_tail_meta, then project_tail_top,
   when something comes between them). */
void project_tail_meta(struct pctx *);
void project_tail_top(struct pctx *);
void project_tail(struct pctx *);
/* provenance of a tool name: "builtin", or "mcp" with *server (len *n)
   for mcp__SERVER__tool. */
const char *project_provenance(const char *name, const char **server, size_t *n);

/* The arguments of a tool call, read through json-c or the tape. */
struct project_args {
	const char *(*str)(void *, const char *key);	/* NULL: absent */
	int (*num)(void *, const char *key, double *);	/* 0: a number */
	int (*istrue)(void *, const char *key);
	void *arg;
};
/* The agent's presentation of a built-in tool call: title (into title),
   kind, and one location path (NULL: none) with line (*line < 0: null). */
const char *project_tool_present(const char *name, const struct project_args *,
    const char *cwd, char *title, size_t tsize, const char **path,
    double *line);

/* The start of a tool_call both paths share: its id (generated into buf
   when the call has none, made unique with project_alloc_id), title, kind and location (project_tool_present),
   and the call tracked as pending until its result. */
const char *project_tool_start(struct pctx *, const char *name, const char *id,
    size_t idx, const struct project_args *, char buf[128], char title[PROJECT_TITLE_MAX],
    const char **kind, const char **path, double *line);
/* A text chunk of kind with text (copied), meta taken (may be NULL). */
int project_chunk(struct pctx *, const char *kind, const char *text, json_object *meta);
/* A new update {"sessionUpdate": kind} (caller owns). */
json_object *project_update(const char *kind);
/* Add _meta (extra_meta taken, may be NULL) to u and append it (takes u). */
int project_emit(struct pctx *, json_object *u, json_object *extra_meta);
/* project_emit with rawOutput (borrowed; json-c's null too) when has_raw. */
int project_emit_raw(struct pctx *, json_object *u, json_object *extra_meta,
    int has_raw, json_object *raw);
/* A functionCall part of an assistant record: a tool_call, tracked as pending. */
int project_tool_call(struct pctx *, json_object *fc, size_t part_index);
/* _meta's toolName, provenance and serverId of a tool (new object). */
json_object *project_tool_meta(const char *name);
/* The id of a result no pending call claims: qwen-replay-tool:<uuid>:result. */
const char *project_result_id(struct pctx *, char buf[128]);
/* A tool_result record: tool_call_update, or plan for todo_write. */
int project_tool_result(struct pctx *, json_object *r);
/* Every call still pending at the end of the window failed. */
int project_fail_pending(struct pctx *);
/* Track a tool call until its result (strings copied; ts of its record). */
void project_pending_add(struct pctx *, const char *id, const char *name);
/* A call id given out once in the replay (the agent's allocateToolCallId):
   cand, or when the replay has given it out already "cand:N" with the
   least N from 2 not given out; with reuse, cand again while a call is
   pending under it.  The string lives as long as the replay. */
const char *project_alloc_id(struct pctx *, const char *cand, int reuse);
/* The call id of a tool result with id (NULL: none) and tool name (NULL:
   none), and in *pe the pending call it ends (caller puts; NULL: none):
   id given out again, else the only pending call named name, else a new
   qwen-replay-tool:<uuid>:result. */
const char *project_result_call(struct pctx *, const char *id, const char *name,
    json_object **pe);
/* Remove and return (caller puts) the pending call matching id, else the
   only pending call named name; NULL when none. */
json_object *project_take_pending(struct pctx *, const char *id, const char *name);
/* Start an update: a ',' after the previous one; its offset. */
size_t project_sep(struct pctx *);
/* Record one encoded update [off, p->enc.len) of the current record. */
int project_span(struct pctx *, size_t off);
/* ISO-8601 UTC "YYYY-MM-DDTHH:MM:SS[.mmm]Z" to epoch ms, -1 when invalid. */
int64_t project_parse_ts(const char *s);
/* The id of a tool call: id itself, or qwen-replay-tool:<uuid>:<idx> in buf
   when it is NULL or empty. */
const char *project_call_id(struct pctx *, const char *id, size_t idx, char buf[128]);
/* The record's timestamp (-1: none) and the _meta tails built from it
   and x->uuid; starts the record's segment count. */
void project_set_ts(struct pctx *, int64_t ts);
/* usageMetadata keys and their ACP names; the first three default to 0. */
extern const char *const project_usage_keys[][2];
/* The empty agent chunk carrying usage (usageMetadata's keys, borrowed),
   with _meta.parentToolCallId when parent is set; adds it to x->cum. */
int project_usage(struct pctx *, json_object *usage, const char *parent);
/* The fast path hands the current record (its context set) to the json-c
   projection: the kinds only that path projects. */
int project_record_jsonc(struct pctx *);
/* Project the record in x->tape (parsed by the caller); -1 on OOM. */
int project_fast_record(struct pctx *);
/* The fast path's writers (project-fast.c): start an update that is no
   text chunk; close it with the record's _meta tail (project_fast_end: opening
   _meta first); ,"key":s; the string member key of obj, or dflt. */
void project_fast_begin(struct pctx *, const char *kind);
int project_fast_close(struct pctx *);
int project_fast_end(struct pctx *);
void project_fast_str(struct pctx *, const char *key, const char *s);
void project_fast_member_or(struct pctx *, int obj, const char *key, const char *dflt);
/* project-fast-tool.c: a functionCall part (a tool_call, tracked as
   pending); a tool_result record (tool_call_update, or a plan). */
int project_fast_tool_call(struct pctx *, int fc, size_t idx);
int project_fast_tool_result(struct pctx *);
/* project-system.c: a system record's updates; a record's backgroundTurn
   as the agent keeps it (new), NULL when it is not one (ids, a known
   kind, a start time, optional strings). */
int project_system(struct pctx *, json_object *r);
json_object *project_background_turn(json_object *r);
/* s with each newline after two spaces (a Markdown line break), as the
   agent replays a slash command's output (caller frees); the members of
   a slash command's output item kept in _meta, with "o" (object) or "a"
   (array) for their type. */
char *project_markdown_breaks(const char *s);
extern const char *const project_slash_meta[][2];
/* project-plan.c: add a record's token counts to x->cum (the plan's
   _meta.stats); a todo_write result (display borrowed: the todo_list
   object or its JSON text) as a plan update for call_id, nothing when the
   display holds no plan; a number as JavaScript prints it. */
void project_add_usage(struct pctx *, double prompt, double cached, double cand);
/* A number member of a tape or json-c object, 0 when absent or no number. */
double project_tape_count(const struct jtape *, int obj, const char *key);
double project_jsonc_count(json_object *, const char *key);
int project_plan(struct pctx *, json_object *display, const char *call_id);
void project_num(char *buf, size_t n, double v);

#endif
