/* SPDX-License-Identifier: ISC */
/*
 * rpc-frame.h: NDJSON JSON-RPC 2.0 framing.
 *
 * A reader takes a byte stream in pieces of any size and yields one message
 * per '\n'-terminated line (a '\r' before the '\n' is dropped; blank lines
 * are skipped).  Any split of the input, one byte at a time included, yields
 * the same messages.  A line longer than the frame cap, one that is not JSON,
 * or one that is not a JSON-RPC 2.0 message yields a "bad frame" carrying the
 * JSON-RPC error to answer with (-32700 parse error, -32600 invalid request);
 * the reader then resynchronises at the next newline and loses nothing after
 * it.  The writer side builds messages and encodes each as one compact line.
 *
 * JSON is what json-c accepts with JSON_TOKENER_STRICT and
 * JSON_TOKENER_VALIDATE_UTF8, nested at most RPC_MAX_DEPTH deep, minus
 * single-quoted strings and the NaN/Infinity literals (rejected here as
 * -32700).  Still accepted: raw control characters inside strings, and
 * integers beyond 64 bits, which json-c clamps.  Batches (top-level arrays)
 * are -32600.
 */
#ifndef QWEN_RPC_FRAME_H
#define QWEN_RPC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define RPC_PARSE_ERROR		(-32700)
#define RPC_INVALID_REQUEST	(-32600)
#define RPC_METHOD_NOT_FOUND	(-32601)
#define RPC_INVALID_PARAMS	(-32602)
#define RPC_INTERNAL_ERROR	(-32603)
#define RPC_RESOURCE_NOT_FOUND	(-32002)
#define RPC_WRITER_CONFLICT	(-32020)

#define RPC_DEFAULT_MAX_FRAME	(64u * 1024 * 1024)
#define RPC_MAX_DEPTH		64

enum rpc_kind {
	RPC_REQUEST,		/* method and id */
	RPC_NOTIFICATION,	/* method, no id */
	RPC_RESULT,		/* id and result */
	RPC_ERROR,		/* id (maybe null) and error */
};

/*
 * One parsed message.  root is owned by the message (rpc_msg_clear() puts it);
 * every other pointer is borrowed from root.
 */
struct rpc_msg {
	enum rpc_kind	 kind;
	json_object	*root;
	json_object	*id;		/* NULL for notifications; json null allowed for errors */
	const char	*method;	/* requests and notifications */
	json_object	*params;	/* may be NULL */
	json_object	*result;	/* RPC_RESULT */
	json_object	*error;		/* RPC_ERROR: {code, message, data?} */
	int		 error_code;	/* RPC_ERROR: error.code */
	size_t		 line_no;	/* 1-based line number in the stream */
};

/*
 * A line that could not be taken as a message.  id is a new reference to the
 * offending request's id when it could be recovered, else NULL (answer with
 * id null).  A malformed response also carries its id, but responses are
 * never answered.  message is a static string starting with "Parse error" or
 * "Invalid Request".  A line that is not JSON (or over the cap) also gets
 * frame_id, the id its bytes name when they name one (an integer or a
 * plain string), so that the sender of the request it answers can fail it
 * at once.  rpc_bad_clear() puts id and frame_id.
 */
struct rpc_bad {
	int		 code;		/* RPC_PARSE_ERROR or RPC_INVALID_REQUEST */
	const char	*message;
	json_object	*id;
	json_object	*frame_id;	/* see rpc_frame_scan_id(); never answered */
	size_t		 line_no;
};

enum rpc_read_status {
	RPC_READ_MORE,		/* need more bytes */
	RPC_READ_MSG,		/* *msg filled */
	RPC_READ_BAD,		/* *bad filled */
};

struct rpc_reader;

/*
 * max_frame 0 means RPC_DEFAULT_MAX_FRAME; it counts the bytes before the
 * '\n' (a '\r' included) and is clamped to INT_MAX.  The reader owns one
 * json-c tokener and a buffer that holds at most the bytes fed since the
 * last RPC_READ_MORE plus one partial line.  NULL on allocation failure.
 */
struct rpc_reader	*rpc_reader_new(size_t max_frame);
void			 rpc_reader_free(struct rpc_reader *);	/* NULL-safe */

/* Refuse a line of more than max_values JSON values (-32600, before it is
   parsed; json-limit.h); 0, the default, refuses none. */
void	rpc_reader_limit(struct rpc_reader *, size_t max_values);

/* Append bytes.  Returns 0, or -1 (ENOMEM) with the reader unchanged. */
int	rpc_reader_feed(struct rpc_reader *, const void *buf, size_t len);

/* Room for len bytes after those buffered, to read into and then pass to
   rpc_reader_feed, which copies nothing then (a child's few MiB answer is
   not copied twice); NULL (ENOMEM).  Valid until the next reader call. */
void	*rpc_reader_space(struct rpc_reader *, size_t len);

/*
 * Take the next message or bad frame.  Call it until it answers
 * RPC_READ_MORE after each feed.  An oversize line is reported as soon as
 * it crosses the cap (before its newline arrives); its remaining bytes are
 * discarded up to the newline.  Both *msg and *bad are zeroed first (so
 * clearing both is always safe); the caller clears the one filled.
 */
enum rpc_read_status rpc_reader_next(struct rpc_reader *, struct rpc_msg *msg,
	    struct rpc_bad *bad);

/*
 * At end of stream: returns the complete lines still buffered, then an
 * unterminated last line taken as a whole line; call it until it answers
 * RPC_READ_MORE.
 */
enum rpc_read_status rpc_reader_finish(struct rpc_reader *, struct rpc_msg *msg,
	    struct rpc_bad *bad);

/*
 * Keep one array as bytes (rpc-splice.c): in a line holding marker (a
 * static string ending with '['), the array it opens is checked to be what
 * json-c would write and kept as bytes, and the message gets an empty
 * array at path (keys from the root, NULL-terminated, static) with the
 * bytes attached (rpc_raw_of).  Any line where that does not apply is
 * parsed whole, as without it.  marker NULL turns it off.
 */
void	rpc_reader_splice(struct rpc_reader *, const char *marker,
	    const char *const *path);
/* One array kept as bytes: its marker and path, as rpc_reader_splice's. */
struct rpc_splice_spec {
	const char		*marker;
	const char *const	*path;
};
#define RPC_SPLICE_MAX	2
/* Keep a second array as bytes, in the lines that hold its marker (the
   one that comes first in a line is taken); after rpc_reader_splice. */
void	rpc_reader_splice_also(struct rpc_reader *, const char *marker,
	    const char *const *path);

/* The bytes of a spliced array: its elements at bytes[el[i].off], each
   el[i].len long, inside mem (the reader's buffer they were read into).
   Reference counted: the message holds one. */
struct rpc_raw {
	char		*mem;
	char		*bytes;
	size_t		 len;
	size_t		 n;
	struct rpc_raw_el {
		size_t	 off, len;
	}		*el;
	unsigned	 refs;
};
/* The bytes attached to arr by a splice (borrowed), or NULL. */
struct rpc_raw	*rpc_raw_of(json_object *arr);
struct rpc_raw	*rpc_raw_ref(struct rpc_raw *);
void		 rpc_raw_unref(struct rpc_raw *);		/* NULL-safe */

/* Bytes of the incomplete line's spliced array already checked and kept
   (the scan follows the bytes as they come); 0 when none. */
size_t	rpc_reader_spliced(const struct rpc_reader *);

/* Bytes buffered and not yet returned (for back-pressure accounting). */
size_t	rpc_reader_pending(const struct rpc_reader *);

/*
 * Parse and classify one complete message held in buf (no newline needed,
 * no NUL needed), as for an HTTP body or a WebSocket frame.  Uses a tokener
 * of its own per call.  No size cap: the caller bounds len.
 */
enum rpc_read_status rpc_parse(const char *buf, size_t len, struct rpc_msg *msg,
	    struct rpc_bad *bad);
/* rpc_parse refusing (-32600, unparsed) a message of more than max_values
   JSON values or nested deeper than RPC_MAX_DEPTH (json-limit.h). */
enum rpc_read_status rpc_parse_limited(const char *buf, size_t len,
	    size_t max_values, struct rpc_msg *msg, struct rpc_bad *bad);

/* Classify an already parsed object; takes ownership of root either way. */
enum rpc_read_status rpc_classify(json_object *root, struct rpc_msg *msg,
	    struct rpc_bad *bad);

/*
 * The top-level "id" member of what starts like a JSON object in buf, read
 * from the bytes alone (they need not be valid JSON nor complete): a new
 * integer or string object, or NULL.
 */
json_object	*rpc_frame_scan_id(const char *buf, size_t len);

void	rpc_msg_clear(struct rpc_msg *);	/* NULL-safe, idempotent */
void	rpc_bad_clear(struct rpc_bad *);	/* NULL-safe, idempotent */

/*
 * Builders.  Each takes ownership of the json arguments it is given (id,
 * params, result, data may be NULL) and returns a new message object.
 */
json_object	*rpc_new_request(json_object *id, const char *method, json_object *params);
json_object	*rpc_new_notification(const char *method, json_object *params);
json_object	*rpc_new_result(json_object *id, json_object *result);
json_object	*rpc_new_error(json_object *id, int code, const char *message,
		    json_object *data);

/* A response with an error object as received (err borrowed); takes id. */
json_object	*rpc_new_error_obj(json_object *id, json_object *err);

/*
 * ACP initialize params as a parent sends them: protocol 1, clientInfo
 * {name, version}, no fs capabilities (we mediate no files), and the
 * private-parent secret in _meta["qwen-code/private-parent-capability"].
 */
json_object	*rpc_acp_initialize_params(const char *name, const char *version,
		    const char *secret);

/* The JSON-RPC error for a bad frame; takes bad->id. */
json_object	*rpc_new_bad_error(struct rpc_bad *bad);

/*
 * Encode msg as one compact line ending in '\n' (PLAIN, no slash escapes;
 * json-c escapes newlines inside strings).  Returns a malloc'd,
 * NUL-terminated buffer the caller frees and sets *lenp (without the NUL),
 * or NULL.  json-c also keeps a copy of the text in msg until msg is freed.
 */
char	*rpc_encode(json_object *msg, size_t *lenp);

/*
 * Write the whole encoded line to a blocking fd (writev, no copy), retrying
 * on EINTR and short writes.  0 or -1 with errno.
 */
int	 rpc_write_fd(int fd, json_object *msg);

#endif
