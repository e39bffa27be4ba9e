/* SPDX-License-Identifier: ISC */
/*
 * append.h: appending records to a transcript without ever leaving a
 * partial line.
 *
 * Each record is one write() of its compact JSON and '\n' on an O_APPEND
 * descriptor, then fsync(2) when asked.  A short write, ENOSPC or a failed
 * fsync truncates the file back to its size before the write and fails
 * with a message, so a reader only ever sees whole records.  A file whose
 * last line was torn by a crash gets a '\n' before the next record (in the
 * same write), so the torn bytes stay a malformed line of their own
 * instead of being glued to ours.
 *
 * Fault hook for tests: QWEN_ACP_FAULT_SHORT_WRITE=N makes the Nth record
 * write of the process write only half of its bytes, as a full disk would.
 */
#ifndef QWEN_ACP_APPEND_H
#define QWEN_ACP_APPEND_H

#include <json-c/json.h>

struct appender;

/*
 * An appender for path, not yet opened.  create: the file must not exist
 * yet and is created (O_EXCL, 0600, parent directories 0700) on the first
 * append; otherwise it must exist.  NULL on allocation failure.
 */
struct appender	*appender_new(const char *path, int do_fsync, int create);
void		 appender_free(struct appender *);	/* NULL-safe; closes */

/* Open now (for load/resume: the file must exist).  0, or -1 + *cause. */
int	appender_open(struct appender *, char **cause);

/* Append rec (borrowed) as one line.  0, or -1 + *cause (caller frees). */
int	appender_append(struct appender *, json_object *rec, char **cause);

/* Append len bytes of whole lines (each ending in '\n') as they are, in one
   write.  0, or -1 + *cause (caller frees). */
int	appender_append_raw(struct appender *, const char *line, size_t len,
	    char **cause);

/*
 * A qwen-code record: uuid (written into uuid_out[37]), parentUuid
 * (NULL: null), sessionId, timestamp, type, provenance, cwd, version,
 * then model (assistant only, may be NULL) and message {role, parts:[{text}]}.
 * Caller puts.
 */
json_object	*append_record_new(const char *type, const char *parent,
		    const char *session_id, const char *cwd, const char *model,
		    const char *text, size_t text_len, char uuid_out[37]);

#endif
