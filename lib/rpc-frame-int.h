/* SPDX-License-Identifier: ISC */
/*
 * rpc-frame-int.h: shared between rpc-frame.c (the reader and parser),
 * rpc-splice.c (an array kept as bytes) and rpc-splice-canon.c (its
 * scanner).  Not for other modules.
 */
#ifndef QWEN_RPC_FRAME_INT_H
#define QWEN_RPC_FRAME_INT_H

#include <stddef.h>

#include <json-c/json.h>

#include "rpc-frame.h"

/* Whether part [buf, buf+len) of a line that json-c parsed into root holds
   what the reader rejects on top of json-c (single quotes, NaN, Infinity). */
int	rpc_frame_suspect(const char *buf, size_t len, json_object *root);

/* Where the scan of the current line stands (rpc-splice.c).  Offsets are
   from the line's first byte; all zero (SPLICE_FIND) for a new line. */
enum splice_state {
	SPLICE_FIND,		/* looking for the marker */
	SPLICE_FIRST,		/* after the '[' */
	SPLICE_VALUE,		/* an element next */
	SPLICE_SEP,		/* ',' or ']' next */
	SPLICE_WHOLE,		/* the array is whole: pos is after its ']' */
	SPLICE_OFF		/* it does not apply: parse the line whole */
};

struct rpc_splice {
	enum splice_state	 state;
	struct rpc_raw		*raw;		/* elements and bytes so far */
	size_t			 cap;		/* raw->el allocated */
	size_t			 mscan;		/* no marker starts before it */
	size_t			 arr;		/* the array's '[' */
	size_t			 pos;		/* next byte to scan */
	size_t			 retry;		/* scan a cut element again at this length */
	int			 depth;		/* containers allowed in an element */
	size_t			 which;		/* spec found */
};

/* One value at p as json-c writes it, ending before e, with at most depth
   containers open in it: 0 with *end after it, -1 (also when e cuts it). */
int	rpc_splice_canon(const char *p, const char *e, int depth,
	    const char **end);

/* Scan what came of an incomplete line, line[0, len). */
void	rpc_splice_advance(struct rpc_splice *,
	    const struct rpc_splice_spec *, size_t nspec, const char *line,
	    size_t len);

/* Forget the line's scan (and its bytes). */
void	rpc_splice_reset(struct rpc_splice *);

/* Bytes of the array checked and kept so far. */
size_t	rpc_splice_checked(const struct rpc_splice *);

/*
 * Parse the complete line with the array after marker kept as bytes,
 * finishing the scan sp began.  0 with *st (and *msg or *bad) set; -1 when
 * it does not apply (no marker, bytes the scanner does not take, nothing
 * empty at path): parse the whole line instead.  Reset sp afterwards.
 */
int	rpc_splice_parse(struct rpc_splice *, struct json_tokener *,
	    const struct rpc_splice_spec *, size_t nspec, const char *line,
	    size_t len, struct rpc_msg *msg, struct rpc_bad *bad,
	    enum rpc_read_status *st, struct rpc_raw **lent);

#endif
