/* SPDX-License-Identifier: ISC */
/* test-errors.c: the error catalog, its builders and the classifier. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "tap.h"

#define JSON_OUT	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/*
 * The error catalog's table, written out independently of lib/errors.c: code,
 * status, errorKind, retryable, rule, seconds, exit class.
 */
static const struct want {
	const char		*code;
	int			 status;
	const char		*kind;
	int			 retryable;
	enum qerr_retry_rule	 rule;
	int			 secs;
	int			 exit_class;
} wants[] = {
	{ "session_restore_timeout", 504, "restore_timeout", 1,
	  QERR_RETRY_BUDGET, 0, 75 },
	{ "restore_in_progress", 409, "restore_in_progress", 1,
	  QERR_RETRY_REASON, 5, 75 },
	{ "acp_channel_unavailable", 503, "acp_channel_unavailable", 1,
	  QERR_RETRY_BUDGET, 0, 75 },
	{ "invalid_client_id", 400, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "invalid_session_id", 400, "invalid_session_id", 0, QERR_RETRY_NONE,
	  0, 2 },
	{ "session_not_found", 404, NULL, 0, QERR_RETRY_NONE, 0, 3 },
	{ "session_closing", 404, NULL, 0, QERR_RETRY_NONE, 0, 3 },
	{ "workspace_mismatch", 400, NULL, 0, QERR_RETRY_NONE, 0, 2 },
	{ "session_limit_exceeded", 503, "session_limit_exceeded", 1,
	  QERR_RETRY_FIXED, 5, 75 },
	{ "prompt_queue_full", 503, "prompt_queue_full", 1, QERR_RETRY_FIXED,
	  5, 75 },
	{ "init_timeout", 504, "init_timeout", 1, QERR_RETRY_BUDGET, 0, 75 },
	{ "subscriber_limit_exceeded", 429, NULL, 1, QERR_RETRY_FIXED, 5, 75 },
	{ "token_required", 401, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "unauthorized", 401, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "payload_too_large", 413, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "internal", 500, "internal", 0, QERR_RETRY_NONE, 0, 1 },
	{ "invalid_json", 400, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "bad_request", 400, NULL, 0, QERR_RETRY_NONE, 0, 2 },
	{ "forbidden_host", 403, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "origin_forbidden", 403, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "method_not_allowed", 405, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "not_found", 404, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "unsupported_media_type", 415, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "not_implemented", 501, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "session_id_conflict", 409, NULL, 0, QERR_RETRY_NONE, 0, 1 },
	{ "session_writer_conflict", 409, "session_writer_conflict", 0,
	  QERR_RETRY_NONE, 0, 1 },
	{ "invalid_max_queued", 400, NULL, 0, QERR_RETRY_NONE, 0, 2 },
	{ "invalid_transcript_limit", 400, NULL, 0, QERR_RETRY_NONE, 0, 2 },
	{ "invalid_live_replay_mode", 400, NULL, 0, QERR_RETRY_NONE, 0, 2 },
	{ "invalid_compacted_replay_mode", 400, NULL, 0, QERR_RETRY_NONE, 0,
	  2 },
	{ "daemon_unreachable", 0, NULL, 0, QERR_RETRY_NONE, 0, 69 },
	{ "session_archiving", 409, NULL, 1, QERR_RETRY_FIXED, 5, 75 },
	{ "workspace_runtime_unavailable", 503, NULL, 1, QERR_RETRY_FIXED, 1,
	  75 },
	{ "acp_child_capacity_exhausted", 503, "acp_child_capacity_exhausted",
	  0, QERR_RETRY_NONE, 0, 1 },
	{ "connection_limit_exceeded", 503, NULL, 1, QERR_RETRY_FIXED, 1, 75 },
	{ "acp_connection_limit_exceeded", 503, NULL, 1, QERR_RETRY_FIXED, 5,
	  75 },
};

/* A label that is never NULL (keeps gcc's format checker quiet). */
static const char *
nn(const char *s)
{
	return s != NULL ? s : "(null)";
}

/* A fresh error for def with the extras its template and shape use. */
static struct qerr *
sample(const struct qerr_def *d)
{
	struct qerr *e = qerr_new(d->code, NULL);

	if (e == NULL)
		return NULL;
	qerr_set_str(e, "sessionId", "0b6c1c9e-8f5e-4a7b-9c1d-2e3f4a5b6c7d");
	qerr_set_str(e, "action", "load");
	qerr_set_str(e, "clientId", "client_7");
	qerr_set_str(e, "requestedWorkspace", "/w/b");
	qerr_set_int(e, "limit", 32);
	if (d->rule == QERR_RETRY_BUDGET)
		qerr_set_budget(e, 90000);
	if (d->rule == QERR_RETRY_CALLER)
		qerr_set_retry_after(e, 17);
	return e;
}

/* Serialise and drop o. */
static char *
take_string(json_object *o)
{
	char *s = strdup(json_object_to_json_string_ext(o, JSON_OUT));

	json_object_put(o);
	return s;
}

/* Does o have member key? */
static int
has(json_object *o, const char *key)
{
	return json_object_object_get_ex(o, key, NULL);
}

/* String member key of o, or NULL. */
static const char *
str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Integer member key of o, or -999. */
static int64_t
num(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return -999;
	return json_object_get_int64(v);
}

/* The catalog's rows, and the invariants of the whole table. */
static void
test_table(void)
{
	const struct qerr_def *d, *tab;
	size_t i, j, n;

	for (i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		const struct want *w = &wants[i];

		if (!ok((d = qerr_lookup(w->code)) != NULL, "%s catalogued",
		    w->code))
			continue;
		is_int(d->status, w->status, "%s status", w->code);
		is_str(d->kind, w->kind, "%s errorKind", w->code);
		is_int(d->retryable, w->retryable, "%s retryable", w->code);
		is_int(d->rule, w->rule, "%s retry rule", w->code);
		if (w->rule == QERR_RETRY_FIXED || w->rule == QERR_RETRY_REASON)
			is_int(d->retry_s, w->secs, "%s retry seconds", w->code);
		is_int(d->exit_class, w->exit_class, "%s exit class", w->code);
	}
	tab = qerr_catalog(&n);
	ok(n >= 50, "catalog has %zu entries", n);
	for (i = 0; i < n; i++) {
		d = &tab[i];
		for (j = i + 1; j < n; j++) {
			if (strcmp(d->code, tab[j].code) == 0)
				ok(0, "code %s twice", nn(d->code));
			if (d->kind != NULL && tab[j].kind != NULL &&
			    strcmp(d->kind, tab[j].kind) == 0)
				ok(0, "errorKind %s twice", d->kind);
		}
		ok(d->message != NULL && d->message[0] != '\0' &&
		    d->message[0] != '{', "%s has a message with a literal "
		    "start", nn(d->code));
		if (d->status == 0)
			continue;
		ok((d->retryable && d->rule != QERR_RETRY_NONE) ==
		    (d->exit_class == QERR_EXIT_TEMPFAIL),
		    "%s: exit 75 iff retryable with a Retry-After rule",
		    nn(d->code));
		ok(d->status >= 400 && d->status <= 599, "%s status %d is an "
		    "error status", d->code, d->status);
	}
	ok(qerr_lookup("nope") == NULL && qerr_lookup(NULL) == NULL,
	    "unknown codes are not found");
	is_str(qerr_lookup_kind("restore_timeout")->code,
	    "session_restore_timeout", "kind restore_timeout");
	is_str(qerr_lookup_rpc(-32020)->code, "session_writer_conflict",
	    "-32020 is the writer conflict");
	ok(qerr_lookup_rpc(-32603) == NULL, "-32603 names no single entry");
}

/* Every reason row names a catalogued code. */
static void
test_reasons(void)
{
	const struct qerr_reason *r;
	size_t i, n;

	r = qerr_reasons(&n);
	for (i = 0; i < n; i++)
		ok(qerr_lookup(r[i].code) != NULL, "reason %s/%s has an entry",
		    r[i].code, r[i].reason);
}

/* Retry-After of code with reason and budget (-2: no budget set). */
static int
ra_of(const char *code, const char *reason, int64_t budget)
{
	struct qerr *e = qerr_new(code, NULL);
	int ra;

	if (reason != NULL)
		qerr_set_reason(e, reason);
	if (budget != -2)
		qerr_set_budget(e, budget);
	ra = qerr_retry_after(e);
	qerr_free(e);
	return ra;
}

/* Retry-After rules, the clamp edges and the overrides. */
static void
test_retry_after(void)
{
	static const struct {
		int64_t ms;
		int want;
	} edges[] = {
		{ 0, 5 }, { 4999, 5 }, { 5000, 5 }, { 5001, 6 }, { 60000, 60 },
		{ 120000, 120 }, { 121000, 120 },
	};
	static const struct {
		const char *code, *reason;
	} budgeted[] = {
		{ "session_restore_timeout", NULL },
		{ "restore_in_progress", "awaiting_abandoned_cleanup" },
		{ "acp_channel_unavailable", "restore_cleanup_failed" },
		{ "acp_channel_unavailable", "restore_settlement_overdue" },
		{ "init_timeout", NULL },
	};
	struct qerr *e;
	size_t i, j;

	for (j = 0; j < sizeof(budgeted) / sizeof(budgeted[0]); j++)
		for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
			is_int(ra_of(budgeted[j].code, budgeted[j].reason,
			    edges[i].ms), edges[i].want,
			    "%s %s budget %lld -> Retry-After", budgeted[j].code,
			    budgeted[j].reason ? budgeted[j].reason : "",
			    (long long)edges[i].ms);
	is_int(ra_of("restore_in_progress", "restore_in_progress", 121000), 5,
	    "restore_in_progress reason: fixed 5 whatever the budget");
	is_int(ra_of("restore_in_progress", NULL, 121000), 5,
	    "restore_in_progress without a reason: 5");
	is_int(ra_of("restore_in_progress", "other", 90000), 5,
	    "restore_in_progress unknown reason: 5");
	is_int(ra_of("session_restore_timeout", NULL, -2), 5,
	    "no budget known: 5");
	is_int(ra_of("session_limit_exceeded", NULL, 121000), 5,
	    "session_limit_exceeded: fixed 5");
	is_int(ra_of("session_not_found", NULL, 121000), -1,
	    "session_not_found: no Retry-After");
	is_int(ra_of("rate_limit_exceeded", NULL, -2), -1,
	    "caller rule without a value: none");
	e = qerr_new("session_restore_timeout", NULL);
	qerr_set_int(e, "timeoutMs", 30500);
	is_int(qerr_retry_after(e), 31, "timeoutMs extra drives the budget");
	qerr_set_budget(e, 60000);
	is_int(qerr_retry_after(e), 60, "an explicit budget wins");
	qerr_set_retry_after(e, -1);
	is_int(qerr_retry_after(e), -1, "override: no Retry-After");
	qerr_set_retryable(e, 0);
	is_int(qerr_exit_class(e), 1, "not retryable, no Retry-After: exit 1");
	qerr_free(e);
}

/* The REST body of every code. */
static void
test_rest_bodies(void)
{
	const struct qerr_def *tab, *d;
	json_object *b;
	struct qerr *e;
	size_t i, n;

	tab = qerr_catalog(&n);
	for (i = 0; i < n; i++) {
		d = &tab[i];
		e = sample(d);
		b = qerr_rest_body(e);
		is_str(str(b, "error"), qerr_message(e), "%s: error is the "
		    "message", nn(d->code));
		is_str(str(b, "code"), d->code, "%s: code", nn(d->code));
		ok(!has(b, "httpStatus") && !has(b, "message") && !has(b,
		    "data"), "%s: no httpStatus, message or data in REST",
		    nn(d->code));
		is_str(str(b, "errorKind"), d->kind, "%s: errorKind", nn(d->code));
		ok(d->retryable ? json_object_get_boolean(
		    json_object_object_get(b, "retryable")) : !has(b,
		    "retryable"), "%s: retryable", nn(d->code));
		is_str(str(b, "sessionId"),
		    "0b6c1c9e-8f5e-4a7b-9c1d-2e3f4a5b6c7d", "%s: extras kept",
		    nn(d->code));
		is_int(has(b, "retryAfterSeconds"), d->body_retry_after &&
		    qerr_retry_after(e) >= 0, "%s: retryAfterSeconds in body "
		    "only where upstream has it", nn(d->code));
		json_object_put(b);
		qerr_free(e);
	}
}

/* Byte-exact REST bodies of the restore-critical shapes. */
static void
test_rest_exact(void)
{
	struct qerr *e;
	char *s;

	e = qerr_new("session_restore_timeout", NULL);
	qerr_set_str(e, "sessionId", "s1");
	qerr_set_str(e, "action", "resume");
	qerr_set_int(e, "timeoutMs", 60000);
	s = take_string(qerr_rest_body(e));
	is_str(s, "{\"error\":\"AcpSessionBridge session/resume timed out "
	    "after 60000ms\",\"code\":\"session_restore_timeout\","
	    "\"errorKind\":\"restore_timeout\",\"retryable\":true,"
	    "\"sessionId\":\"s1\",\"action\":\"resume\",\"timeoutMs\":60000}",
	    "504 restore timeout body, exactly");
	is_int(qerr_retry_after(e), 60, "and Retry-After 60");
	is_int(qerr_status(e), 504, "status 504");
	free(s);
	qerr_free(e);

	e = qerr_new("acp_channel_unavailable", NULL);
	qerr_set_reason(e, "restore_settlement_overdue");
	qerr_set_budget(e, 60000);
	s = take_string(qerr_rest_body(e));
	is_str(s, "{\"error\":\"ACP channel is not accepting new sessions: "
	    "restore_settlement_overdue\",\"code\":\"acp_channel_unavailable\","
	    "\"errorKind\":\"acp_channel_unavailable\",\"retryable\":true,"
	    "\"reason\":\"restore_settlement_overdue\",\"retryAfterSeconds\":60}",
	    "503 channel unavailable body, exactly");
	free(s);
	qerr_free(e);

	e = qerr_new("unauthorized", NULL);
	s = take_string(qerr_rest_body(e));
	is_str(s, "{\"error\":\"Unauthorized\",\"code\":\"unauthorized\"}",
	    "401 keeps upstream's message and adds the code");
	free(s);
	qerr_free(e);
}

/* The JSON-RPC error of every code, by shape. */
static void
test_rpc_shapes(void)
{
	const struct qerr_def *tab, *d;
	json_object *r, *data;
	struct qerr *e;
	size_t i, n;

	tab = qerr_catalog(&n);
	for (i = 0; i < n; i++) {
		d = &tab[i];
		e = sample(d);
		r = qerr_jsonrpc_error(e);
		is_int(num(r, "code"), d->rpc_code, "%s: rpc code", nn(d->code));
		is_str(str(r, "message"), qerr_message(e), "%s: message",
		    nn(d->code));
		data = json_object_object_get(r, "data");
		switch (d->rpc_shape) {
		case QERR_RPC_FULL:
			is_int(d->rpc_code, -32603, "%s: -32603", nn(d->code));
			is_str(str(data, "code"), d->code, "%s: data.code",
			    nn(d->code));
			is_str(str(data, "errorKind"), d->kind ? d->kind :
			    d->code, "%s: data.errorKind", nn(d->code));
			is_int(num(data, "httpStatus"), d->status ? d->status :
			    -999, "%s: data.httpStatus", nn(d->code));
			ok(json_object_is_type(json_object_object_get(data,
			    "retryable"), json_type_boolean),
			    "%s: data.retryable", nn(d->code));
			is_int(num(data, "retryAfterSeconds"),
			    qerr_retry_after(e) >= 0 ? qerr_retry_after(e) :
			    -999, "%s: data.retryAfterSeconds", nn(d->code));
			is_str(str(data, "sessionId"),
			    "0b6c1c9e-8f5e-4a7b-9c1d-2e3f4a5b6c7d",
			    "%s: data extras", nn(d->code));
			break;
		case QERR_RPC_PARAMS:
		case QERR_RPC_PLAIN:
			ok(data == NULL && !has(r, "data"), "%s: no data",
			    nn(d->code));
			break;
		case QERR_RPC_PARAMS_KIND:
			is_int(json_object_object_length(data), 2,
			    "%s: data has two members", nn(d->code));
			is_int(num(data, "httpStatus"), d->status,
			    "%s: data.httpStatus", nn(d->code));
			is_str(str(data, "errorKind"), d->kind,
			    "%s: data.errorKind", nn(d->code));
			break;
		case QERR_RPC_KIND:
			is_int(json_object_object_length(data), 1,
			    "%s: data has one member", nn(d->code));
			is_str(str(data, "errorKind"), d->kind,
			    "%s: data.errorKind", nn(d->code));
			break;
		}
		json_object_put(r);
		qerr_free(e);
	}
}

/* §5.2's literal mappings. */
static void
test_rpc_exact(void)
{
	static const struct {
		const char *code;
		int rpc;
	} m[] = {
		{ "session_not_found", -32602 }, { "workspace_mismatch", -32602 },
		{ "invalid_client_id", -32602 }, { "invalid_session_id", -32602 },
		{ "session_writer_conflict", -32020 },
		{ "session_writer_lost", -32021 },
		{ "session_transcript_changed", -32022 },
		{ "session_writer_unavailable", -32023 },
		{ "session_restore_timeout", -32603 },
		{ "restore_in_progress", -32603 },
	};
	struct qerr *e;
	size_t i;
	char *s;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		is_int(qerr_lookup(m[i].code)->rpc_code, m[i].rpc,
		    "%s maps to %d", m[i].code, m[i].rpc);
	e = qerr_new("invalid_session_id", NULL);
	qerr_set_str(e, "sessionId", "nope");
	s = take_string(qerr_jsonrpc_error(e));
	is_str(s, "{\"code\":-32602,\"message\":\"Invalid session id \\\"nope"
	    "\\\": expected a UUID (v1-v5)\",\"data\":{\"httpStatus\":400,"
	    "\"errorKind\":\"invalid_session_id\"}}", "invalid session id, "
	    "exactly");
	free(s);
	qerr_free(e);
	e = qerr_new("restore_in_progress", NULL);
	qerr_set_reason(e, "awaiting_abandoned_cleanup");
	qerr_set_budget(e, 4999);
	qerr_set_str(e, "sessionId", "s");
	s = take_string(qerr_jsonrpc_error(e));
	is_str(s, "{\"code\":-32603,\"message\":\"A restore of session s is "
	    "already in progress\",\"data\":{\"code\":\"restore_in_progress\","
	    "\"errorKind\":\"restore_in_progress\",\"httpStatus\":409,"
	    "\"retryable\":true,\"retryAfterSeconds\":5,\"reason\":"
	    "\"awaiting_abandoned_cleanup\",\"sessionId\":\"s\"}}",
	    "restore in progress, exactly");
	free(s);
	qerr_free(e);
}

/*
 * REST and JSON-RPC of one error agree: the JSON-RPC data (when the shape
 * has it) carries the REST code, status, retryable, Retry-After and every
 * extra; a shape without data still names the same message, and its
 * JSON-RPC code is the catalog's.
 */
static void
agree(struct qerr *e, const char *label)
{
	const struct qerr_def *d = qerr_get_def(e);
	json_object *body = qerr_rest_body(e), *r = qerr_jsonrpc_error(e);
	json_object *data = json_object_object_get(r, "data"), *v;
	int ra = qerr_retry_after(e), same = 1;

	is_str(str(r, "message"), str(body, "error"), "%s: one message", label);
	is_int(num(r, "code"), d->rpc_code, "%s: JSON-RPC code", label);
	if (d->rpc_shape != QERR_RPC_FULL) {
		ok(d->rpc_shape == QERR_RPC_FULL || d->status < 500 ||
		    d->rpc_shape == QERR_RPC_KIND, "%s: a data-less shape is "
		    "a client error", label);
		if (data != NULL && has(data, "httpStatus"))
			is_int(num(data, "httpStatus"), qerr_status(e),
			    "%s: httpStatus is the REST status", label);
		json_object_put(body);
		json_object_put(r);
		return;
	}
	is_str(str(data, "code"), str(body, "code"), "%s: same code", label);
	is_int(num(data, "httpStatus"), qerr_status(e), "%s: httpStatus is "
	    "the REST status", label);
	v = json_object_object_get(body, "retryable");
	is_int(json_object_get_boolean(json_object_object_get(data,
	    "retryable")), v != NULL && json_object_get_boolean(v),
	    "%s: same retryable", label);
	is_int(num(data, "retryAfterSeconds"), ra >= 0 ? ra : -999,
	    "%s: retryAfterSeconds is the Retry-After header", label);
	if (has(body, "retryAfterSeconds"))
		is_int(num(body, "retryAfterSeconds"), ra, "%s: REST body's "
		    "retryAfterSeconds too", label);
	if (has(body, "errorKind"))
		is_str(str(data, "errorKind"), str(body, "errorKind"),
		    "%s: same errorKind", label);
	json_object_object_foreach(body, key, val) {
		if (strcmp(key, "error") == 0 || strcmp(key, "code") == 0 ||
		    strcmp(key, "retryable") == 0 || strcmp(key, "errorKind") == 0)
			continue;
		if (!json_object_equal(val, json_object_object_get(data, key)))
			same = 0;
	}
	ok(same, "%s: every REST extra is in the JSON-RPC data", label);
	json_object_put(body);
	json_object_put(r);
}

/* Every catalogued error and every reason row, REST against JSON-RPC. */
static void
test_rest_rpc_agree(void)
{
	const struct qerr_def *tab;
	const struct qerr_reason *rs;
	struct qerr *e;
	char label[128];
	size_t i, n;

	tab = qerr_catalog(&n);
	for (i = 0; i < n; i++) {
		if (tab[i].status == 0)
			continue;
		e = sample(&tab[i]);
		agree(e, tab[i].code);
		qerr_free(e);
	}
	rs = qerr_reasons(&n);
	for (i = 0; i < n; i++) {
		e = qerr_new(rs[i].code, NULL);
		qerr_set_reason(e, rs[i].reason);
		qerr_set_budget(e, 100500);
		snprintf(label, sizeof(label), "%s/%s", rs[i].code, rs[i].reason);
		agree(e, label);
		qerr_free(e);
	}
}

/* Seed 000: the restore errors' JSON-RPC objects, exactly. */
static void
test_rpc_seed000(void)
{
	struct qerr *e;
	char *s;

	e = qerr_new("session_restore_timeout", NULL);
	qerr_set_str(e, "sessionId", "s1");
	qerr_set_str(e, "action", "load");
	qerr_set_int(e, "timeoutMs", 60000);
	s = take_string(qerr_jsonrpc_error(e));
	is_str(s, "{\"code\":-32603,\"message\":\"AcpSessionBridge session/load "
	    "timed out after 60000ms\",\"data\":{\"code\":"
	    "\"session_restore_timeout\",\"errorKind\":\"restore_timeout\","
	    "\"httpStatus\":504,\"retryable\":true,\"retryAfterSeconds\":60,"
	    "\"sessionId\":\"s1\",\"action\":\"load\",\"timeoutMs\":60000}}",
	    "restore timeout as JSON-RPC, exactly");
	free(s);
	qerr_free(e);
	e = qerr_new("acp_channel_unavailable", NULL);
	qerr_set_reason(e, "restore_cleanup_failed");
	qerr_set_budget(e, 1000);
	s = take_string(qerr_jsonrpc_error(e));
	is_str(s, "{\"code\":-32603,\"message\":\"ACP channel is not accepting "
	    "new sessions: restore_cleanup_failed\",\"data\":{\"code\":"
	    "\"acp_channel_unavailable\",\"errorKind\":\"acp_channel_unavailable\","
	    "\"httpStatus\":503,\"retryable\":true,\"retryAfterSeconds\":5,"
	    "\"reason\":\"restore_cleanup_failed\"}}",
	    "channel unavailable as JSON-RPC, exactly");
	free(s);
	qerr_free(e);
	e = qerr_new("session_limit_exceeded", NULL);
	qerr_set_int(e, "limit", 2);
	qerr_set_str(e, "scope", "workspace");
	s = take_string(qerr_jsonrpc_error(e));
	is_str(s, "{\"code\":-32603,\"message\":\"Session limit reached (2 per "
	    "workspace)\",\"data\":{\"code\":\"session_limit_exceeded\","
	    "\"errorKind\":\"session_limit_exceeded\",\"httpStatus\":503,"
	    "\"retryable\":true,\"retryAfterSeconds\":5,\"limit\":2,"
	    "\"scope\":\"workspace\"}}", "session limit as JSON-RPC, exactly");
	free(s);
	qerr_free(e);
	e = qerr_new("session_not_found", NULL);
	qerr_set_str(e, "sessionId", "x");
	s = take_string(qerr_jsonrpc_error(e));
	is_str(s, "{\"code\":-32602,\"message\":\"No session with id \\\"x\\\"\"}",
	    "session not found is -32602 without data");
	free(s);
	qerr_free(e);
}

/* Every served code through REST and back, and through JSON-RPC and back. */
static void
test_round_trips(void)
{
	const struct qerr_def *tab, *d;
	struct qerr_class c;
	json_object *r;
	struct qerr *e;
	char ra[16], *body;
	size_t i, n;

	tab = qerr_catalog(&n);
	for (i = 0; i < n; i++) {
		d = &tab[i];
		if (d->status == 0)
			continue;
		e = sample(d);
		body = take_string(qerr_rest_body(e));
		snprintf(ra, sizeof(ra), "%d", qerr_retry_after(e));
		is_int(qerr_classify_http(&c, d->status, body, strlen(body),
		    qerr_retry_after(e) >= 0 ? ra : NULL), 0, "%s: classify",
		    nn(d->code));
		is_str(c.code, d->code, "%s: REST round trip code", nn(d->code));
		ok(c.def == d, "%s: REST round trip entry", nn(d->code));
		is_int(c.status, d->status, "%s: REST status", nn(d->code));
		is_int(c.retryable, qerr_retryable(e), "%s: REST retryable",
		    nn(d->code));
		is_int(c.retry_after, qerr_retry_after(e),
		    "%s: REST retry-after", nn(d->code));
		is_int(c.exit_class, qerr_exit_class(e), "%s: REST exit",
		    nn(d->code));
		is_str(c.message, qerr_message(e), "%s: REST message", nn(d->code));
		qerr_class_clear(&c);
		free(body);

		r = qerr_jsonrpc_error(e);
		is_int(qerr_classify_rpc(&c, r), 0, "%s: classify rpc",
		    nn(d->code));
		is_str(c.code, d->code, "%s: JSON-RPC round trip code",
		    nn(d->code));
		is_int(c.status, d->status, "%s: JSON-RPC status", nn(d->code));
		is_int(c.rpc_code, d->rpc_code, "%s: JSON-RPC code", nn(d->code));
		is_int(c.retryable, qerr_retryable(e), "%s: JSON-RPC "
		    "retryable", nn(d->code));
		is_int(c.retry_after, qerr_retry_after(e),
		    "%s: JSON-RPC retry-after", nn(d->code));
		is_int(c.exit_class, qerr_exit_class(e), "%s: JSON-RPC exit",
		    nn(d->code));
		qerr_class_clear(&c);
		json_object_put(r);
		qerr_free(e);
	}
}

/* Each reason through both directions keeps its reason and Retry-After. */
static void
test_reason_round_trips(void)
{
	const struct qerr_reason *rs;
	struct qerr_class c;
	json_object *r;
	struct qerr *e;
	char ra[16], *body;
	size_t i, n;

	rs = qerr_reasons(&n);
	for (i = 0; i < n; i++) {
		e = qerr_new(rs[i].code, NULL);
		qerr_set_reason(e, nn(rs[i].reason));
		qerr_set_budget(e, 100500);
		is_int(qerr_retry_after(e), rs[i].rule == QERR_RETRY_BUDGET ?
		    101 : rs[i].retry_s, "%s/%s Retry-After", rs[i].code,
		    nn(rs[i].reason));
		body = take_string(qerr_rest_body(e));
		snprintf(ra, sizeof(ra), "%d", qerr_retry_after(e));
		qerr_classify_http(&c, qerr_status(e), body, strlen(body), ra);
		is_str(c.reason, rs[i].reason, "%s/%s REST reason", rs[i].code,
		    nn(rs[i].reason));
		is_int(c.retry_after, qerr_retry_after(e), "%s/%s REST "
		    "retry-after", rs[i].code, nn(rs[i].reason));
		is_int(c.exit_class, 75, "%s/%s exit 75", rs[i].code,
		    nn(rs[i].reason));
		qerr_class_clear(&c);
		free(body);
		r = qerr_jsonrpc_error(e);
		qerr_classify_rpc(&c, r);
		is_str(c.reason, rs[i].reason, "%s/%s JSON-RPC reason",
		    rs[i].code, nn(rs[i].reason));
		is_int(c.retry_after, qerr_retry_after(e), "%s/%s JSON-RPC "
		    "retry-after", rs[i].code, nn(rs[i].reason));
		qerr_class_clear(&c);
		json_object_put(r);
		qerr_free(e);
	}
}

/* Classify an HTTP answer and check code, retryable, retry-after, exit. */
static void
check_http(int status, const char *body, const char *ra, const char *code,
    int retryable, int retry_after, int exit_class, const char *what)
{
	struct qerr_class c;

	qerr_classify_http(&c, status, body, body ? strlen(body) : 0, ra);
	is_str(c.code, code, "%s: code", what);
	is_int(c.status, status, "%s: status", what);
	is_int(c.retryable, retryable, "%s: retryable", what);
	is_int(c.retry_after, retry_after, "%s: retry-after", what);
	is_int(c.exit_class, exit_class, "%s: exit", what);
	ok(c.message != NULL, "%s: has a message", what);
	qerr_class_clear(&c);
}

/* Garbage and upstream code-less HTTP answers. */
static void
test_garbage_http(void)
{
	char *deep, *big;
	size_t i;

	check_http(404, NULL, NULL, "not_found", 0, -1, 1, "404 no body");
	check_http(404, "", NULL, "not_found", 0, -1, 1, "404 empty body");
	check_http(500, "not json", NULL, "internal", 0, -1, 1, "500 text");
	check_http(500, "[1,2]", NULL, "internal", 0, -1, 1, "500 array");
	check_http(500, "\"s\"", NULL, "internal", 0, -1, 1, "500 string");
	check_http(500, "{\"error\":5,\"code\":{}}", NULL, "internal", 0, -1,
	    1, "500 wrong member types");
	check_http(404, "{\"code\":\"session_not_found\"", NULL, "not_found",
	    0, -1, 1, "truncated JSON is garbage");
	check_http(404, "{\"code\":\"session_not_found\"} x", NULL,
	    "not_found", 0, -1, 1, "trailing bytes are garbage");
	check_http(503, "<html>", NULL, "unknown", 1, -1, 1,
	    "503 garbage: unknown, retryable, no hint");
	check_http(503, "<html>", "7", "unknown", 1, 7, 75,
	    "503 garbage with Retry-After: temporary");
	check_http(503, "<html>", "soon", "unknown", 1, -1, 1,
	    "bad Retry-After ignored");
	check_http(502, NULL, NULL, "unknown", 1, -1, 1, "502 bare");
	check_http(418, "{}", NULL, "unknown", 0, -1, 1, "418 empty object");
	check_http(409, "{\"error\":\"x\",\"code\":\"brand_new\"}", NULL,
	    "unknown", 0, -1, 1, "unknown string code");
	check_http(401, "{\"error\":\"Unauthorized\"}", NULL, "unauthorized",
	    0, -1, 1, "upstream code-less 401");
	check_http(400, "{\"error\":\"Invalid JSON in request body\"}", NULL,
	    "invalid_json", 0, -1, 1, "upstream code-less invalid JSON");
	check_http(400, "{\"error\":\"prompt must be an array\"}", NULL,
	    "bad_request", 0, -1, 2, "upstream code-less 400");
	check_http(413, "{\"error\":\"Request body too large (max 10 MB)\"}",
	    NULL, "payload_too_large", 0, -1, 1, "upstream 413");
	check_http(403, "{\"error\":\"Invalid Host header\"}", NULL,
	    "forbidden_host", 0, -1, 1, "upstream 403 host");
	check_http(404, "{\"error\":\"No session with id \\\"a\\\"\"}", NULL,
	    "session_not_found", 0, -1, 3, "code-less 404 by message");
	check_http(503, "{\"error\":\"x\",\"code\":\"session_limit_exceeded\","
	    "\"limit\":32,\"scope\":\"workspace\"}", "5",
	    "session_limit_exceeded", 1, 5, 75, "upstream session limit");
	check_http(504, "{\"error\":\"t\",\"code\":\"session_restore_timeout\","
	    "\"errorKind\":\"restore_timeout\",\"retryable\":true,"
	    "\"timeoutMs\":30000}", NULL, "session_restore_timeout", 1, 30, 75,
	    "no header: budget from timeoutMs");
	check_http(503, "{\"error\":\"x\",\"code\":\"acp_channel_unavailable\","
	    "\"retryAfterSeconds\":44}", NULL, "acp_channel_unavailable", 1,
	    44, 75, "no header: body retryAfterSeconds");
	check_http(500, "{\"error\":\"x\",\"code\":\"daemon_unreachable\"}",
	    NULL, "unknown", 0, -1, 1, "a server cannot send a client code");
	check_http(409, "{\"error\":\"x\",\"code\":\"session_writer_conflict\","
	    "\"retryable\":true}", "3", "session_writer_conflict", 1, 3, 75,
	    "the answer's retryable wins");

	deep = malloc(200001);
	for (i = 0; i < 100000; i++) {
		deep[i] = '[';
		deep[100000 + i] = ']';
	}
	deep[200000] = '\0';
	check_http(500, deep, NULL, "internal", 0, -1, 1, "deep nesting");
	free(deep);
	big = malloc(100001);
	memset(big, 'a', 100000);
	big[100000] = '\0';
	memcpy(big, "{\"error\":\"No session with id \\\"", 32);
	memcpy(big + 100000 - 3, "\"}", 3);
	check_http(404, big, NULL, "not_found", 0, -1, 1,
	    "huge message is not template-matched");
	free(big);
}

/* Classify a JSON-RPC error given as text. */
static void
check_rpc(const char *text, const char *code, int status, int retryable,
    int retry_after, const char *what)
{
	json_object *o = text ? json_tokener_parse(text) : NULL;
	struct qerr_class c;

	qerr_classify_rpc(&c, o);
	is_str(c.code, code, "%s: code", what);
	is_int(c.status, status, "%s: status", what);
	is_int(c.retryable, retryable, "%s: retryable", what);
	is_int(c.retry_after, retry_after, "%s: retry-after", what);
	qerr_class_clear(&c);
	json_object_put(o);
}

/* Garbage and upstream JSON-RPC errors. */
static void
test_garbage_rpc(void)
{
	check_rpc(NULL, "protocol_error", 0, 0, -1, "NULL");
	check_rpc("[1]", "protocol_error", 0, 0, -1, "array");
	check_rpc("{\"code\":\"x\"}", "protocol_error", 0, 0, -1,
	    "string code");
	check_rpc("{\"message\":\"m\"}", "protocol_error", 0, 0, -1,
	    "no code");
	check_rpc("{\"code\":-32603}", "internal", 500, 0, -1, "bare -32603");
	check_rpc("{\"code\":-32603,\"message\":\"Internal error\",\"data\":"
	    "{\"errorKind\":\"internal\"}}", "internal", 500, 0, -1,
	    "upstream other timeout");
	check_rpc("{\"code\":-32602,\"message\":\"weird\"}", "bad_request",
	    400, 0, -1, "unmatched -32602");
	check_rpc("{\"code\":-32002,\"message\":\"Resource not found: "
	    "session:x\",\"data\":{\"uri\":\"session:x\"}}",
	    "session_not_found", 404, 0, -1, "child -32002");
	check_rpc("{\"code\":-32020,\"message\":\"held\"}",
	    "session_writer_conflict", 409, 0, -1, "-32020 without data");
	check_rpc("{\"code\":-32603,\"data\":{\"code\":\"brand_new\","
	    "\"httpStatus\":418}}", "unknown", 418, 0, -1,
	    "unknown data.code");
	check_rpc("{\"code\":-32603,\"data\":{\"errorKind\":"
	    "\"session_limit_exceeded\",\"limit\":32,\"scope\":\"total\","
	    "\"retryable\":true}}", "session_limit_exceeded", 503, 1, 5,
	    "upstream session limit data (kind only)");
	check_rpc("{\"code\":-32603,\"data\":{\"code\":\"init_timeout\","
	    "\"httpStatus\":99999,\"timeoutMs\":10000}}", "init_timeout", 504,
	    1, 10, "bad httpStatus ignored, timeoutMs budget");
	check_rpc("{\"code\":-32601,\"message\":\"Method not found\"}",
	    "unknown", 404, 0, -1, "method not found");
	check_rpc("{\"code\":-32603,\"data\":\"text\"}", "internal", 500, 0,
	    -1, "data not an object");
}

/* The error value: templates, extras, reserved keys, exit classes. */
static void
test_value(void)
{
	struct qerr *e;
	char *s;

	e = qerr_new("session_not_found", NULL);
	is_str(qerr_message(e), "No session with id \"<sessionId>\"",
	    "a missing placeholder renders as <key>");
	qerr_set_int(e, "sessionId", 12);
	is_str(qerr_message(e), "No session with id \"12\"", "int extras fill");
	qerr_set_str(e, "sessionId", "abc");
	is_str(qerr_message(e), "No session with id \"abc\"",
	    "a key set again is replaced");
	qerr_set_str(e, "extra", "v");
	qerr_set_bool(e, "flag", 1);
	qerr_set_json(e, "nothing", NULL);
	qerr_set_str(e, "sessionId", "z");
	s = take_string(qerr_rest_body(e));
	is_str(s, "{\"error\":\"No session with id \\\"z\\\"\",\"code\":"
	    "\"session_not_found\",\"sessionId\":\"z\",\"extra\":\"v\","
	    "\"flag\":true,\"nothing\":null}", "extras keep their order");
	free(s);
	is_int(qerr_exit_class(e), 3, "session_not_found exits 3");
	qerr_free(e);

	e = qerr_new("bad_request", "prompt must have %d+ blocks", 1);
	is_str(qerr_message(e), "prompt must have 1+ blocks", "printf message");
	errno = 0;
	is_int(qerr_set_str(e, "code", "x"), -1, "code is reserved");
	is_int(errno, EINVAL, "reserved key: EINVAL");
	is_int(qerr_set_int(e, "httpStatus", 1), -1, "httpStatus reserved");
	is_int(qerr_set_bool(e, "retryable", 1), -1, "retryable reserved");
	is_int(qerr_set_json(e, "retryAfterSeconds", json_object_new_int(3)),
	    -1, "retryAfterSeconds reserved (and freed)");
	is_int(qerr_set_str(e, "errorKind", "x"), -1, "errorKind reserved");
	is_int(qerr_set_str(e, "error", "x"), -1, "error reserved");
	is_int(qerr_set_str(NULL, "a", "b"), -1, "NULL error refused");
	qerr_free(e);
	qerr_free(NULL);

	e = qerr_new("no_such_code", NULL);
	is_str(qerr_code(e), "internal", "unknown code becomes internal");
	s = take_string(qerr_rest_body(e));
	ok(strstr(s, "\"unknownCode\":\"no_such_code\"") != NULL,
	    "and says which code");
	free(s);
	qerr_free(e);

	e = qerr_new("daemon_unreachable", NULL);
	is_int(qerr_exit_class(e), 69, "daemon unreachable exits 69");
	qerr_free(e);
	e = qerr_new("rate_limit_exceeded", NULL);
	is_int(qerr_exit_class(e), 1, "rate limit without a hint exits 1");
	qerr_set_retry_after(e, 9);
	is_int(qerr_exit_class(e), 75, "rate limit with a hint exits 75");
	qerr_free(e);
	e = qerr_new("session_restore_timeout", NULL);
	is_int(qerr_exit_class(e), 75, "restore timeout exits 75");
	qerr_free(e);
}

/* The Retry-After header parser. */
static void
test_parse_retry_after(void)
{
	is_int(qerr_parse_retry_after("5"), 5, "Retry-After 5");
	is_int(qerr_parse_retry_after("120"), 120, "Retry-After 120");
	is_int(qerr_parse_retry_after("0"), 0, "Retry-After 0");
	is_int(qerr_parse_retry_after(""), -1, "empty");
	is_int(qerr_parse_retry_after(NULL), -1, "absent");
	is_int(qerr_parse_retry_after("-1"), -1, "negative");
	is_int(qerr_parse_retry_after(" 5"), -1, "blank");
	is_int(qerr_parse_retry_after("5s"), -1, "suffix");
	is_int(qerr_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), -1,
	    "HTTP date not taken");
	is_int(qerr_parse_retry_after("99999999999999999999"), -1, "overflow");
}

/* The classification's JSON form. */
static void
test_class_json(void)
{
	static const char body[] = "{\"error\":\"e\",\"code\":"
	    "\"restore_in_progress\",\"reason\":\"restore_in_progress\"}";
	struct qerr_class c;
	char *s;

	qerr_classify_http(&c, 503, body, sizeof(body) - 1, "5");
	s = take_string(qerr_class_json(&c));
	is_str(s, "{\"code\":\"restore_in_progress\",\"rawCode\":"
	    "\"restore_in_progress\",\"status\":503,\"rpcCode\":0,\"errorKind\":"
	    "\"restore_in_progress\",\"retryable\":true,\"retryAfter\":5,"
	    "\"reason\":\"restore_in_progress\",\"message\":\"e\",\"exit\":75}",
	    "classification as JSON");
	free(s);
	qerr_class_clear(&c);
}

/* Run every group; the exit status says whether all passed. */
/* A deterministic xorshift, so a failure can be replayed. */
static uint32_t
rnd(uint32_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 17;
	*st ^= *st << 5;
	return *st;
}

/* Is x one of the exit classes? */
static int
valid_exit(int x)
{
	return x == 1 || x == 2 || x == 3 || x == 69 || x == 75;
}

/*
 * Random bytes and randomly cut real answers: every classification has a
 * code, a message and a valid exit class (and ASan sees no fault).
 */
static void
test_random(void)
{
	static const char *pieces[] = {
		"{", "}", "[", "]", ",", ":", "\"code\"", "\"error\"",
		"\"session_not_found\"", "\"restore_in_progress\"", "-32603",
		"\"data\"", "\"retryAfterSeconds\"", "99999999999999999999",
		"\"reason\"", "null", "true", "\"httpStatus\"", "\"timeoutMs\"",
		"-1", "1e999", "\"\\u0000\"", "\"errorKind\"", "\"x\"",
	};
	struct qerr_class c;
	json_object *o;
	uint32_t st = 0x9e3779b9;
	char buf[512];
	size_t len, k;
	int i, bad = 0;

	for (i = 0; i < 4000; i++) {
		len = 0;
		if (i % 2 == 0) {
			for (k = rnd(&st) % 64; k > 0; k--)
				buf[len++] = (char)(rnd(&st) & 0xff);
		} else {
			for (k = rnd(&st) % 24; k > 0; k--) {
				const char *p = pieces[rnd(&st) %
				    (sizeof(pieces) / sizeof(pieces[0]))];
				if (len + strlen(p) >= sizeof(buf))
					break;
				memcpy(buf + len, p, strlen(p));
				len += strlen(p);
			}
		}
		buf[len] = '\0';
		qerr_classify_http(&c, 100 + (int)(rnd(&st) % 500), buf, len,
		    i % 3 == 0 ? buf : NULL);
		bad |= c.code == NULL || c.message == NULL ||
		    !valid_exit(c.exit_class);
		qerr_class_clear(&c);
		o = json_tokener_parse(buf);
		qerr_classify_rpc(&c, o);
		bad |= c.code == NULL || c.message == NULL ||
		    !valid_exit(c.exit_class);
		qerr_class_clear(&c);
		json_object_put(o);
	}
	ok(!bad, "4000 random answers classify cleanly");
}

int
main(void)
{
	test_table();
	test_reasons();
	test_retry_after();
	test_rest_bodies();
	test_rest_exact();
	test_rpc_shapes();
	test_rpc_exact();
	test_round_trips();
	test_reason_round_trips();
	test_rest_rpc_agree();
	test_rpc_seed000();
	test_garbage_http();
	test_garbage_rpc();
	test_value();
	test_parse_retry_after();
	test_class_json();
	test_random();
	return done_testing();
}
