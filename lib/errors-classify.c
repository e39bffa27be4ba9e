/* SPDX-License-Identifier: ISC */
/*
 * errors-classify.c: the reverse of the error catalog.  An HTTP error
 * answer or a JSON-RPC error object, from our daemon, the upstream one or
 * a broken peer, becomes a struct qerr_class.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "json.h"

#define QERR_MAX_DEPTH	64
#define QERR_MAX_MATCH	1024

/* What the body or JSON-RPC data said, borrowed from the parsed JSON. */
struct qerr_said {
	const char	*code;		/* string code */
	const char	*message;
	const char	*kind;
	const char	*reason;
	int		 retryable;	/* -1 absent */
	int		 retry_after;	/* -1 absent */
	int		 status;	/* data.httpStatus, 0 absent */
	int64_t		 budget_ms;	/* timeoutMs, -1 absent */
};

/* Decimal seconds only; an HTTP date is not taken (-1). */
int
qerr_parse_retry_after(const char *value)
{
	const char *p;
	long v = 0;

	if (value == NULL || *value == '\0')
		return -1;
	for (p = value; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
		if (v > 86400 * 365)
			return -1;
	}
	return (int)v;
}

/* Does text match template t, where each {key} matches one or more bytes? */
static int
qerr_template_match(const char *t, const char *text)
{
	const char *close;

	for (; *t != '\0'; t++, text++) {
		if (*t == '{' && (close = strchr(t, '}')) != NULL) {
			if (*text == '\0')
				return 0;
			for (text++; ; text++) {
				if (qerr_template_match(close + 1, text))
					return 1;
				if (*text == '\0')
					return 0;
			}
		}
		if (*t != *text)
			return 0;
	}
	return *text == '\0';
}

/* Entry whose status (or JSON-RPC code) and message template fit. */
static const struct qerr_def *
qerr_match_message(int status, int rpc_code, const char *msg)
{
	const struct qerr_def *tab;
	size_t i, n;

	/* Templates match by backtracking: keep hostile messages short. */
	if (msg == NULL || strlen(msg) > QERR_MAX_MATCH)
		return NULL;
	tab = qerr_catalog(&n);
	for (i = 0; i < n; i++) {
		if (status != 0 && tab[i].status != status)
			continue;
		if (rpc_code != 0 && (tab[i].rpc_code != rpc_code ||
		    tab[i].rpc_shape != QERR_RPC_PARAMS))
			continue;
		if (qerr_template_match(tab[i].message, msg))
			return &tab[i];
	}
	return NULL;
}

/* A body with no code: the upstream code-less answers, then the status. */
static const struct qerr_def *
qerr_by_status(int status, const char *msg)
{
	static const struct {
		int		 status;
		const char	*code;
	} dflt[] = {
		{ 400, "bad_request" }, { 401, "unauthorized" },
		{ 404, "not_found" }, { 405, "method_not_allowed" },
		{ 406, "not_acceptable" }, { 413, "payload_too_large" },
		{ 415, "unsupported_media_type" }, { 500, "internal" },
		{ 501, "not_implemented" },
	};
	const struct qerr_def *d;
	size_t i;

	if ((d = qerr_match_message(status, 0, msg)) != NULL)
		return d;
	for (i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++)
		if (dflt[i].status == status)
			return qerr_lookup(dflt[i].code);
	return NULL;
}

/* The integer member key of obj within [lo, hi], or dflt. */
static int64_t
qerr_get_int(json_object *obj, const char *key, int64_t lo, int64_t hi,
    int64_t dflt)
{
	json_object *v;
	int64_t i;

	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return dflt;
	errno = 0;
	i = json_object_get_int64(v);
	if (errno != 0 || i < lo || i > hi)
		return dflt;
	return i;
}

/* Read the fields every error shape may carry from obj. */
static void
qerr_read_said(struct qerr_said *s, json_object *obj, const char *msg_key)
{
	json_object *v;

	memset(s, 0, sizeof(*s));
	s->retryable = -1;
	s->retry_after = -1;
	s->budget_ms = -1;
	if (!json_object_is_type(obj, json_type_object))
		return;
	s->code = json_get_str(obj, "code");
	if (msg_key != NULL)
		s->message = json_get_str(obj, msg_key);
	s->kind = json_get_str(obj, "errorKind");
	s->reason = json_get_str(obj, "reason");
	if (json_object_object_get_ex(obj, "retryable", &v) &&
	    json_object_is_type(v, json_type_boolean))
		s->retryable = json_object_get_boolean(v);
	s->retry_after = (int)qerr_get_int(obj, "retryAfterSeconds", 0,
	    86400 * 365, -1);
	s->status = (int)qerr_get_int(obj, "httpStatus", 100, 599, 0);
	s->budget_ms = qerr_get_int(obj, "timeoutMs", 0, INT64_MAX, -1);
}

/* strdup that tolerates NULL; -1 only on allocation failure. */
static int
qerr_dup(char **dst, const char *src)
{
	*dst = NULL;
	if (src == NULL)
		return 0;
	return (*dst = strdup(src)) == NULL ? -1 : 0;
}

/* Unknown codes: 429/502/503/504 or a Retry-After mean "try again". */
static int
qerr_status_retryable(int status, int retry_after)
{
	return retry_after >= 0 || status == 429 || status == 502 ||
	    status == 503 || status == 504;
}

/* Fill c from the def, what the peer said and the header's Retry-After. */
static int
qerr_finish(struct qerr_class *c, const struct qerr_def *def,
    const struct qerr_said *s, const char *msg, int header_ra)
{
	c->def = def;
	c->code = def != NULL ? def->code : "unknown";
	c->retry_after = header_ra >= 0 ? header_ra : s->retry_after;
	if (c->retry_after < 0 && def != NULL)
		c->retry_after = qerr_rule_seconds(def, s->reason,
		    s->budget_ms);
	if (s->retryable >= 0)
		c->retryable = s->retryable;
	else if (def != NULL)
		c->retryable = def->retryable;
	else
		c->retryable = qerr_status_retryable(c->status, c->retry_after);
	if (def != NULL && def->status == 0)
		c->exit_class = def->exit_class;
	else if (c->retryable && c->retry_after >= 0)
		c->exit_class = QERR_EXIT_TEMPFAIL;
	else if (def != NULL && def->exit_class != QERR_EXIT_TEMPFAIL)
		c->exit_class = def->exit_class;
	else
		c->exit_class = QERR_EXIT_FAILURE;
	if (qerr_dup(&c->kind, s->kind != NULL ? s->kind :
	    def != NULL ? def->kind : NULL) == -1 ||
	    qerr_dup(&c->reason, s->reason) == -1 ||
	    qerr_dup(&c->message, msg) == -1) {
		qerr_class_clear(c);
		return -1;
	}
	return 0;
}

/* Parse an HTTP body; NULL unless it is a whole JSON document. */
static json_object *
qerr_parse_body(const char *body, size_t len)
{
	json_tokener *tok;
	json_object *root;

	if (body == NULL || len == 0 || len > INT32_MAX)
		return NULL;
	if ((tok = json_tokener_new_ex(QERR_MAX_DEPTH)) == NULL)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, body, (int)len);
	if (root != NULL && json_tokener_get_parse_end(tok) != len) {
		json_object_put(root);
		root = NULL;
	}
	json_tokener_free(tok);
	return root;
}

/* The SDK's message rule for a JSON-RPC-shaped 5xx body. */
static const char *
qerr_internal_message(json_object *obj, const char *msg)
{
	json_object *data;
	const char *m;

	if (!json_object_object_get_ex(obj, "data", &data))
		return msg;
	if (json_object_is_type(data, json_type_string))
		return json_object_get_string(data);
	if ((m = json_get_str(data, "details")) != NULL ||
	    (m = json_get_str(data, "message")) != NULL)
		return m;
	return msg;
}

/* Keep a non-string code as text (upstream's JSON-RPC-shaped 500s). */
static int
qerr_raw_code(struct qerr_class *c, json_object *obj, const char *code)
{
	json_object *v;
	char buf[32];

	if (code != NULL)
		return qerr_dup(&c->raw_code, code);
	if (!json_object_object_get_ex(obj, "code", &v) ||
	    !json_object_is_type(v, json_type_int))
		return 0;
	snprintf(buf, sizeof(buf), "%" PRId64, json_object_get_int64(v));
	return qerr_dup(&c->raw_code, buf);
}

/* Classify by body code, else by upstream message, else by status. */
int
qerr_classify_http(struct qerr_class *c, int status, const char *body,
    size_t len, const char *retry_after)
{
	const struct qerr_def *def;
	struct qerr_said s;
	json_object *root;
	const char *msg;
	char fallback[32];
	int r;

	memset(c, 0, sizeof(*c));
	c->status = status;
	root = qerr_parse_body(body, len);
	qerr_read_said(&s, root, "error");
	s.status = 0;
	msg = s.message;
	if (status >= 500 && msg != NULL && s.code == NULL &&
	    strcmp(msg, "Internal error") == 0)
		msg = qerr_internal_message(root, msg);
	if (s.code != NULL)
		def = qerr_lookup(s.code);
	else
		def = qerr_by_status(status, msg);
	if (def != NULL && def->status == 0)
		def = NULL;	/* a server cannot send a client-side code */
	snprintf(fallback, sizeof(fallback), "HTTP %d", status);
	r = qerr_raw_code(c, root, s.code);
	if (r == 0)
		r = qerr_finish(c, def, &s, msg != NULL ? msg : fallback,
		    qerr_parse_retry_after(retry_after));
	json_object_put(root);
	return r;
}

/* The entry for a JSON-RPC error that named no catalog code or kind. */
static const struct qerr_def *
qerr_by_rpc_code(int rpc_code, const char *msg, const struct qerr_said *s)
{
	const struct qerr_def *def;

	if (s->code != NULL)
		return NULL;	/* a code we do not know stays unknown */
	switch (rpc_code) {
	case QERR_RPC_RESOURCE_NOT_FOUND:
		return qerr_lookup("session_not_found");
	case QERR_RPC_INVALID_PARAMS:
		if ((def = qerr_match_message(0, rpc_code, msg)) != NULL)
			return def;
		return qerr_lookup("bad_request");
	case QERR_RPC_INTERNAL_ERROR:
		return s->kind == NULL ? qerr_lookup("internal") : NULL;
	default:
		return qerr_lookup_rpc(rpc_code);
	}
}

/* HTTP status of a JSON-RPC error that did not say one. */
static int
qerr_rpc_status(int rpc_code)
{
	switch (rpc_code) {
	case -32700:
	case -32600:
	case QERR_RPC_INVALID_PARAMS:
		return 400;
	case -32601:
	case QERR_RPC_RESOURCE_NOT_FOUND:
		return 404;
	default:
		return 500;
	}
}

/* Classify by data.code, data.errorKind, then the JSON-RPC code. */
int
qerr_classify_rpc(struct qerr_class *c, json_object *error)
{
	const struct qerr_def *def = NULL;
	struct qerr_said s, top;
	json_object *data = NULL;
	const char *msg;

	memset(c, 0, sizeof(*c));
	qerr_read_said(&top, error, "message");
	if (!json_object_is_type(error, json_type_object) ||
	    !json_object_object_get_ex(error, "code", NULL) ||
	    (c->rpc_code = (int)qerr_get_int(error, "code", INT32_MIN,
	    INT32_MAX, 0)) == 0) {
		memset(&s, 0, sizeof(s));
		s.retryable = s.retry_after = -1;
		return qerr_finish(c, qerr_lookup("protocol_error"), &s,
		    "Malformed JSON-RPC error", -1);
	}
	json_object_object_get_ex(error, "data", &data);
	qerr_read_said(&s, data, NULL);
	msg = top.message != NULL ? top.message : "JSON-RPC error";
	if (s.code != NULL)
		def = qerr_lookup(s.code);
	else if (s.kind != NULL)
		def = qerr_lookup_kind(s.kind);
	if (def == NULL)
		def = qerr_by_rpc_code(c->rpc_code, msg, &s);
	if (def != NULL && def->status == 0)
		def = NULL;
	c->status = s.status != 0 ? s.status : def != NULL ? def->status :
	    qerr_rpc_status(c->rpc_code);
	if (qerr_dup(&c->raw_code, s.code) == -1)
		return -1;
	return qerr_finish(c, def, &s, msg, -1);
}

/* Free the strings of a classification. */
void
qerr_class_clear(struct qerr_class *c)
{
	free(c->raw_code);
	free(c->kind);
	free(c->reason);
	free(c->message);
	c->raw_code = c->kind = c->reason = c->message = NULL;
}

/* obj[key] = string or null. */
static int
qerr_add_str(json_object *obj, const char *key, const char *val)
{
	json_object *v = NULL;

	if (val != NULL && (v = json_object_new_string(val)) == NULL)
		return -1;
	if (json_object_object_add(obj, key, v) != 0) {
		json_object_put(v);
		return -1;
	}
	return 0;
}

/* obj[key] = int, or null when val < 0 and nullable. */
static int
qerr_add_int(json_object *obj, const char *key, int val, int nullable)
{
	json_object *v = NULL;

	if ((!nullable || val >= 0) && (v = json_object_new_int(val)) == NULL)
		return -1;
	if (json_object_object_add(obj, key, v) != 0) {
		json_object_put(v);
		return -1;
	}
	return 0;
}

/* The classification as one JSON object (the tool prints it). */
json_object *
qerr_class_json(const struct qerr_class *c)
{
	json_object *o, *b;
	int bad = 0;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	bad |= qerr_add_str(o, "code", c->code);
	bad |= qerr_add_str(o, "rawCode", c->raw_code);
	bad |= qerr_add_int(o, "status", c->status, 0);
	bad |= qerr_add_int(o, "rpcCode", c->rpc_code, 0);
	bad |= qerr_add_str(o, "errorKind", c->kind);
	if ((b = json_object_new_boolean(c->retryable)) == NULL ||
	    json_object_object_add(o, "retryable", b) != 0) {
		json_object_put(b);
		bad = 1;
	}
	bad |= qerr_add_int(o, "retryAfter", c->retry_after, 1);
	bad |= qerr_add_str(o, "reason", c->reason);
	bad |= qerr_add_str(o, "message", c->message);
	bad |= qerr_add_int(o, "exit", c->exit_class, 0);
	if (bad) {
		json_object_put(o);
		return NULL;
	}
	return o;
}
