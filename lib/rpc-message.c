/* SPDX-License-Identifier: ISC */
/*
 * rpc-message.c: the JSON-RPC 2.0 message shapes: classification of a parsed
 * object, the builders, and the one-line encoder and writer.
 *
 * Classification is strict about what a reply depends on and lenient about
 * the rest: unknown members are ignored, "params": null counts as absent, and
 * batches (top-level arrays) are refused as invalid requests.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/uio.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc-frame.h"

#define ENCODE_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static const char msg_not_object[] = "Invalid Request: not a JSON object";
static const char msg_version[] = "Invalid Request: jsonrpc must be \"2.0\"";
static const char msg_id[] =
    "Invalid Request: id must be a string, an integer or null";
static const char msg_method[] =
    "Invalid Request: method must be a non-empty string without NUL";
static const char msg_mixed[] =
    "Invalid Request: a request cannot carry result or error";
static const char msg_params[] =
    "Invalid Request: params must be an object or an array";
static const char msg_one_of[] =
    "Invalid Request: a response needs exactly one of result and error";
static const char msg_resp_id[] =
    "Invalid Request: a response needs an id (non-null with a result)";
static const char msg_error_shape[] =
    "Invalid Request: error needs an integer code and a string message";

/* Whether id is a valid JSON-RPC id: string, integer or null (NULL). */
static int
id_valid(json_object *id)
{
	return id == NULL || json_object_is_type(id, json_type_string) ||
	    json_object_is_type(id, json_type_int);
}

/* Reject root with code -32600, keeping its id when it is a valid one. */
static enum rpc_read_status
classify_bad(json_object *root, const char *why, struct rpc_bad *bad)
{
	json_object *id = NULL;

	if (json_object_is_type(root, json_type_object) &&
	    json_object_object_get_ex(root, "id", &id) && id_valid(id))
		json_object_get(id);
	else
		id = NULL;
	json_object_put(root);
	bad->code = RPC_INVALID_REQUEST;
	bad->message = why;
	bad->id = id;
	return RPC_READ_BAD;
}

/* Classify a request or notification (root has a method member). */
static enum rpc_read_status
classify_call(json_object *root, json_object *method, struct rpc_msg *msg,
    struct rpc_bad *bad)
{
	json_object *params = NULL, *id = NULL;
	int has_id;

	/* A NUL inside would let "m\u0000x" pass for "m". */
	if (!json_object_is_type(method, json_type_string) ||
	    json_object_get_string_len(method) == 0 ||
	    strlen(json_object_get_string(method)) !=
	    (size_t)json_object_get_string_len(method))
		return classify_bad(root, msg_method, bad);
	if (json_object_object_get_ex(root, "result", NULL) ||
	    json_object_object_get_ex(root, "error", NULL))
		return classify_bad(root, msg_mixed, bad);
	if (json_object_object_get_ex(root, "params", &params) &&
	    params != NULL && !json_object_is_type(params, json_type_object) &&
	    !json_object_is_type(params, json_type_array))
		return classify_bad(root, msg_params, bad);
	has_id = json_object_object_get_ex(root, "id", &id);
	msg->kind = has_id ? RPC_REQUEST : RPC_NOTIFICATION;
	msg->root = root;
	msg->id = id;
	msg->method = json_object_get_string(method);
	msg->params = params;
	return RPC_READ_MSG;
}

/* Classify a response (root has no method member). */
static enum rpc_read_status
classify_response(json_object *root, struct rpc_msg *msg, struct rpc_bad *bad)
{
	json_object *id = NULL, *result = NULL, *error = NULL, *code, *text;
	int has_result, has_error;
	int64_t c;

	has_result = json_object_object_get_ex(root, "result", &result);
	has_error = json_object_object_get_ex(root, "error", &error);
	if (has_result == has_error)
		return classify_bad(root, msg_one_of, bad);
	if (!json_object_object_get_ex(root, "id", &id) ||
	    (has_result && id == NULL))
		return classify_bad(root, msg_resp_id, bad);
	msg->root = root;
	msg->id = id;
	if (has_result) {
		msg->kind = RPC_RESULT;
		msg->result = result;
		return RPC_READ_MSG;
	}
	if (!json_object_is_type(error, json_type_object) ||
	    !json_object_object_get_ex(error, "code", &code) ||
	    !json_object_is_type(code, json_type_int) ||
	    !json_object_object_get_ex(error, "message", &text) ||
	    !json_object_is_type(text, json_type_string) ||
	    (c = json_object_get_int64(code)) < INT_MIN || c > INT_MAX) {
		memset(msg, 0, sizeof(*msg));
		return classify_bad(root, msg_error_shape, bad);
	}
	msg->kind = RPC_ERROR;
	msg->error = error;
	msg->error_code = (int)c;
	return RPC_READ_MSG;
}

/* Check the JSON-RPC 2.0 shape of root and fill msg or bad; takes root. */
enum rpc_read_status
rpc_classify(json_object *root, struct rpc_msg *msg, struct rpc_bad *bad)
{
	json_object *v, *id;

	memset(msg, 0, sizeof(*msg));
	memset(bad, 0, sizeof(*bad));
	if (!json_object_is_type(root, json_type_object))
		return classify_bad(root, msg_not_object, bad);
	if (!json_object_object_get_ex(root, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) != 3 ||
	    memcmp(json_object_get_string(v), "2.0", 3) != 0)
		return classify_bad(root, msg_version, bad);
	if (json_object_object_get_ex(root, "id", &id) && !id_valid(id))
		return classify_bad(root, msg_id, bad);
	if (json_object_object_get_ex(root, "method", &v))
		return classify_call(root, v, msg, bad);
	return classify_response(root, msg, bad);
}

/* Drop the message's tree and zero it. */
void
rpc_msg_clear(struct rpc_msg *msg)
{
	if (msg == NULL)
		return;
	json_object_put(msg->root);
	memset(msg, 0, sizeof(*msg));
}

/* Drop the bad frame's id and zero it. */
void
rpc_bad_clear(struct rpc_bad *bad)
{
	if (bad == NULL)
		return;
	json_object_put(bad->id);
	json_object_put(bad->frame_id);
	memset(bad, 0, sizeof(*bad));
}

/* Add a constant key to o, taking val either way (o may be NULL). */
static int
obj_add(json_object *o, const char *key, json_object *val)
{
	if (o == NULL || json_object_object_add_ex(o, key, val,
	    JSON_C_OBJECT_ADD_KEY_IS_NEW | JSON_C_OBJECT_KEY_IS_CONSTANT) != 0) {
		json_object_put(val);
		return -1;
	}
	return 0;
}

/* Add key with a new string value; a NULL string is a failure. */
static int
obj_add_str(json_object *o, const char *key, const char *s)
{
	if (s == NULL)
		return -1;
	return obj_add(o, key, json_object_new_string(s));
}

/* Return o, or put it and return NULL when any add failed. */
static json_object *
obj_done(json_object *o, int rc)
{
	if (rc != 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* A new {"jsonrpc":"2.0"} object, or NULL. */
static json_object *
envelope_new(void)
{
	json_object *o = json_object_new_object();

	return obj_done(o, obj_add_str(o, "jsonrpc", "2.0"));
}

/* Build a request; takes id (NULL: json null) and params. */
json_object *
rpc_new_request(json_object *id, const char *method, json_object *params)
{
	json_object *o = envelope_new();
	int rc = 0;

	rc |= obj_add(o, "id", id);
	rc |= obj_add_str(o, "method", method);
	if (params != NULL)
		rc |= obj_add(o, "params", params);
	return obj_done(o, rc);
}

/* Build a notification; takes params. */
json_object *
rpc_new_notification(const char *method, json_object *params)
{
	json_object *o = envelope_new();
	int rc = 0;

	rc |= obj_add_str(o, "method", method);
	if (params != NULL)
		rc |= obj_add(o, "params", params);
	return obj_done(o, rc);
}

json_object *
rpc_new_error_obj(json_object *id, json_object *err)
{
	json_object *o = envelope_new();
	int rc = 0;

	rc |= obj_add(o, "id", id);
	rc |= obj_add(o, "error", json_object_get(err));
	return obj_done(o, rc);
}

json_object *
rpc_acp_initialize_params(const char *name, const char *version, const char *secret)
{
	json_object *p = json_object_new_object(), *ci = json_object_new_object();
	json_object *caps = json_object_new_object(), *fs = json_object_new_object();
	json_object *meta = json_object_new_object();

	json_object_object_add(p, "protocolVersion", json_object_new_int(1));
	json_object_object_add(ci, "name", json_object_new_string(name));
	json_object_object_add(ci, "version", json_object_new_string(version));
	json_object_object_add(p, "clientInfo", ci);
	json_object_object_add(fs, "readTextFile", json_object_new_boolean(0));
	json_object_object_add(fs, "writeTextFile", json_object_new_boolean(0));
	json_object_object_add(caps, "fs", fs);
	json_object_object_add(p, "clientCapabilities", caps);
	json_object_object_add(meta, "qwen-code/private-parent-capability",
	    json_object_new_string(secret));
	json_object_object_add(p, "_meta", meta);
	return p;
}

/* Build a result response; takes id and result (NULL: json null). */
json_object *
rpc_new_result(json_object *id, json_object *result)
{
	json_object *o = envelope_new();
	int rc = 0;

	rc |= obj_add(o, "id", id);
	rc |= obj_add(o, "result", result);
	return obj_done(o, rc);
}

/* Build an error response; takes id and data. */
json_object *
rpc_new_error(json_object *id, int code, const char *message,
    json_object *data)
{
	json_object *o = envelope_new(), *e = json_object_new_object();
	int rc = 0;

	rc |= obj_add(o, "id", id);
	rc |= obj_add(e, "code", json_object_new_int(code));
	rc |= obj_add_str(e, "message", message != NULL ? message : "");
	if (data != NULL)
		rc |= obj_add(e, "data", data);
	if (rc != 0) {
		json_object_put(e);
		json_object_put(o);
		return NULL;
	}
	return obj_done(o, obj_add(o, "error", e));
}

/* The error answer to a bad frame; takes bad->id. */
json_object *
rpc_new_bad_error(struct rpc_bad *bad)
{
	json_object *id = bad->id;

	bad->id = NULL;
	return rpc_new_error(id, bad->code, bad->message, NULL);
}

/* Encode msg as one line ending in '\n'; the caller frees the result. */
char *
rpc_encode(json_object *msg, size_t *lenp)
{
	const char *s;
	size_t n;
	char *out;

	if (msg == NULL ||
	    (s = json_object_to_json_string_length(msg, ENCODE_FLAGS, &n)) == NULL) {
		errno = msg == NULL ? EINVAL : ENOMEM;
		return NULL;
	}
	if ((out = malloc(n + 2)) == NULL)
		return NULL;
	memcpy(out, s, n);
	out[n] = '\n';
	out[n + 1] = '\0';
	*lenp = n + 1;
	return out;
}

/*
 * Write msg and its '\n' to a blocking fd with writev, through EINTR and
 * short writes, without copying the encoded text.
 */
int
rpc_write_fd(int fd, json_object *msg)
{
	struct iovec iov[2];
	const char *s;
	size_t len, n;
	ssize_t w;
	int i = 0;

	if (msg == NULL) {
		errno = EINVAL;
		return -1;
	}
	if ((s = json_object_to_json_string_length(msg, ENCODE_FLAGS, &len)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	iov[0].iov_base = (void *)(uintptr_t)s;
	iov[0].iov_len = len;
	iov[1].iov_base = (void *)(uintptr_t)"\n";
	iov[1].iov_len = 1;
	while (i < 2) {
		if ((w = writev(fd, iov + i, 2 - i)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		for (n = (size_t)w; i < 2 && n >= iov[i].iov_len; i++)
			n -= iov[i].iov_len;
		if (i < 2) {
			iov[i].iov_base = (char *)iov[i].iov_base + n;
			iov[i].iov_len -= n;
		}
	}
	return 0;
}
