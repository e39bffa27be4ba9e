/*
 * rpc-frame-int.h: shared between rpc-frame.c (the reader and parser) and
 * rpc-splice.c (an array kept as bytes).  Not for other modules.
 */
#ifndef QWEN_RPC_FRAME_INT_H
#define QWEN_RPC_FRAME_INT_H

#include <stddef.h>

#include <json-c/json.h>

#include "rpc-frame.h"

/* Whether part [buf, buf+len) of a line that json-c parsed into root holds
   what the reader rejects on top of json-c (single quotes, NaN, Infinity). */
int	rpc_frame_suspect(const char *buf, size_t len, json_object *root);

/*
 * Parse line with the array after marker kept as bytes (rpc-splice.c).
 * 0 with *st (and *msg or *bad) set; -1 when it does not apply (no marker,
 * bytes the scanner does not take, nothing empty at path): parse the
 * whole line instead.
 */
int	rpc_splice_parse(struct json_tokener *, const char *marker,
	    const char *const *path, const char *line, size_t len,
	    struct rpc_msg *msg, struct rpc_bad *bad, enum rpc_read_status *st);

#endif
