/*
 * replay-raw.h: load's compactedReplay from the child's update bytes
 * (replay-raw.c), without parsing and encoding each update again.
 */
#ifndef SERVE_REPLAY_RAW_H
#define SERVE_REPLAY_RAW_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

struct rpc_raw;
struct rpc_reader;

/* Have rd keep a bulk replay's updates as bytes (unless the environment
   says QWEN_SERVE_REPLAY_REENCODE=1). */
void		 replay_raw_setup(struct rpc_reader *rd);
/* The bus envelope of update i of raw with bus id id: an object that
   encodes as {"id","v","type":"session_update","data":{sessionId,update},
   "_meta":{serverTimestamp}} around the update's bytes.  Caller puts;
   it holds a reference to raw.  NULL on allocation failure. */
json_object	*replay_raw_envelope(struct rpc_raw *raw, size_t i, uint64_t id,
		    const char *session_id, uint64_t wall_ms);

/* An element of a compactedReplay as a json-c tree: env itself (a new
   reference) or, for an envelope made here, its bytes parsed (caller puts;
   NULL on allocation failure). */
json_object	*replay_raw_expand(json_object *env);

#endif
