/* errors.c: the error catalog and the structured error value. */
#include "config.h"	/* _GNU_SOURCE, for vasprintf and open_memstream */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "errors.h"

#define N	QERR_RETRY_NONE
#define F	QERR_RETRY_FIXED
#define B	QERR_RETRY_BUDGET
#define R	QERR_RETRY_REASON
#define C	QERR_RETRY_CALLER

#define FULL	QERR_RPC_INTERNAL_ERROR, QERR_RPC_FULL
#define PARAMS	QERR_RPC_INVALID_PARAMS, QERR_RPC_PARAMS
#define PKIND	QERR_RPC_INVALID_PARAMS, QERR_RPC_PARAMS_KIND

#define X_FAIL	QERR_EXIT_FAILURE
#define X_USE	QERR_EXIT_USAGE
#define X_NF	QERR_EXIT_NOT_FOUND
#define X_TMP	QERR_EXIT_TEMPFAIL

/*
 * THE table.  Columns: code, HTTP status, errorKind, retryable, Retry-After
 * rule and seconds, JSON-RPC code and shape, exit class, retryAfterSeconds
 * in the REST body, default message.
 */
static const struct qerr_def qerr_table[] = {
	/* Restore (seed 000, protocol §3 and §6). */
	{ "session_restore_timeout", 504, "restore_timeout", 1, B, 0, FULL,
	  X_TMP, 0, "AcpSessionBridge session/{action} timed out after "
	  "{timeoutMs}ms" },
	{ "restore_in_progress", 409, "restore_in_progress", 1, R, 5, FULL,
	  X_TMP, 0, "A restore of session {sessionId} is already in progress" },
	{ "acp_channel_unavailable", 503, "acp_channel_unavailable", 1, B, 0,
	  FULL, X_TMP, 1, "ACP channel is not accepting new sessions: "
	  "{reason}" },
	{ "init_timeout", 504, "init_timeout", 1, B, 0, FULL, X_TMP, 0,
	  "AcpSessionBridge initialize timed out after {timeoutMs}ms" },

	/* Sessions. */
	{ "session_not_found", 404, NULL, 0, N, 0, PARAMS, X_NF, 0,
	  "No session with id \"{sessionId}\"" },
	{ "session_closing", 404, NULL, 0, N, 0, FULL, X_NF, 0,
	  "Session {sessionId} is closing" },
	{ "invalid_client_id", 400, NULL, 0, N, 0, PARAMS, X_FAIL, 0,
	  "Client id \"{clientId}\" is not registered for session "
	  "{sessionId}" },
	{ "invalid_session_id", 400, "invalid_session_id", 0, N, 0, PKIND,
	  X_USE, 0, "Invalid session id \"{sessionId}\": expected a UUID "
	  "(v1-v5)" },
	{ "invalid_session_scope", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "Invalid sessionScope: expected \"single\" or \"thread\"" },
	{ "workspace_mismatch", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "Workspace mismatch: {requestedWorkspace} is not a workspace of "
	  "this daemon" },
	{ "invalid_approval_mode", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "Invalid approvalMode" },
	{ "invalid_session_source", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "Invalid session source" },
	{ "reserved_session_source", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "Session source type is reserved" },
	{ "invalid_transcript_limit", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "historyPageSize must be an integer from 1 to {maxLimit}" },
	{ "invalid_live_replay_mode", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "liveReplayMode must be \"full\" or \"summary\"" },
	{ "invalid_compacted_replay_mode", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "compactedReplayMode must be \"full\" or \"summary\"" },
	{ "invalid_max_queued", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "maxQueued must be an integer from 16 to 2048" },
	{ "invalid_deadline_ms", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "deadlineMs must be a positive integer" },
	{ "invalid_event_detail_mode", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "eventDetailMode must be \"full\" or \"summary\"" },
	{ "invalid_metadata", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "Invalid metadata field {field}" },
	{ "untrusted_workspace", 403, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Workspace is not trusted" },
	{ "session_id_conflict", 409, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Session id {sessionId} is already in use ({conflict})" },
	{ "session_workspace_conflict", 409, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Session {sessionId} is live in another workspace" },
	{ "session_archived", 409, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Session {sessionId} is archived" },
	{ "session_conflict", 409, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Session {sessionId} is both active and archived" },
	{ "session_archiving", 409, NULL, 1, F, 5, FULL, X_TMP, 0,
	  "Session {sessionId} is being archived" },
	{ "session_busy", 409, "session_busy", 1, F, 5, FULL, X_TMP, 0,
	  "Session {sessionId} is busy" },
	{ "branch_while_prompt_active", 409, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Cannot branch session {sessionId} while a prompt is active" },
	{ "session_writer_conflict", 409, "session_writer_conflict", 0, N, 0,
	  QERR_RPC_WRITER_CONFLICT, QERR_RPC_KIND, X_FAIL, 0,
	  "Session {sessionId} transcript is held by another writer" },
	{ "session_writer_lost", 409, "session_writer_lost", 0, N, 0,
	  QERR_RPC_WRITER_LOST, QERR_RPC_KIND, X_FAIL, 0,
	  "Writer lease of session {sessionId} was lost" },
	{ "session_transcript_changed", 409, "session_transcript_changed", 0, N,
	  0, QERR_RPC_TRANSCRIPT_CHANGED, QERR_RPC_KIND, X_FAIL, 0,
	  "Transcript of session {sessionId} changed on disk" },
	{ "session_writer_unavailable", 503, "session_writer_unavailable", 0, N,
	  0, QERR_RPC_WRITER_UNAVAILABLE, QERR_RPC_KIND, X_FAIL, 0,
	  "Writer lease unavailable for session {sessionId}" },
	{ "session_id_not_honored", 500, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "ACP child did not honour session id {sessionId}" },
	{ "ambiguous_session_owner", 500, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Session {sessionId} is owned by more than one workspace" },

	/* Capacity. */
	{ "session_limit_exceeded", 503, "session_limit_exceeded", 1, F, 5,
	  FULL, X_TMP, 0, "Session limit reached ({limit} per {scope})" },
	{ "prompt_queue_full", 503, "prompt_queue_full", 1, F, 5, FULL, X_TMP,
	  0, "Prompt queue of session {sessionId} is full ({pendingCount} "
	  "pending, limit {limit})" },
	{ "subscriber_limit_exceeded", 429, NULL, 1, F, 5, FULL, X_TMP, 0,
	  "Too many event subscribers for session {sessionId} (limit "
	  "{limit})" },
	{ "rate_limit_exceeded", 429, NULL, 1, C, 0, FULL, X_TMP, 0,
	  "Rate limit exceeded" },
	{ "acp_child_capacity_exhausted", 503, "acp_child_capacity_exhausted",
	  0, N, 0, FULL, X_FAIL, 0, "No capacity for another ACP child" },
	{ "session_id_admission_unavailable", 503, NULL, 1, N, 0, FULL, X_FAIL,
	  0, "Session id admission check is unavailable" },
	{ "workspace_runtime_unavailable", 503, NULL, 1, F, 1, FULL, X_TMP, 0,
	  "Workspace runtime is unavailable" },
	{ "runtime_still_starting", 503, NULL, 1, F, 5, FULL, X_TMP, 0,
	  "Workspace runtime is still starting" },
	{ "workspace_draining", 503, NULL, 1, F, 5, FULL, X_TMP, 0,
	  "Workspace is draining" },
	{ "daemon_runtime_starting", 503, NULL, 1, F, 1, FULL, X_TMP, 0,
	  "Daemon runtime is still starting" },
	{ "daemon_runtime_failed", 503, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Daemon runtime failed to start" },

	/* HTTP and ACP transport. */
	{ "invalid_json", 400, NULL, 0, N, 0, QERR_RPC_PARSE_ERROR,
	  QERR_RPC_PLAIN, X_FAIL, 0, "Invalid JSON in request body" },
	{ "bad_request", 400, NULL, 0, N, 0, PARAMS, X_USE, 0, "Bad request" },
	{ "token_required", 401, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Operator token required" },
	{ "unauthorized", 401, NULL, 0, N, 0, FULL, X_FAIL, 0, "Unauthorized" },
	{ "forbidden_host", 403, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Invalid Host header" },
	{ "origin_forbidden", 403, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Origin not allowed" },
	{ "acp_stream_forbidden", 403, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Session stream belongs to another ACP connection" },
	{ "not_found", 404, NULL, 0, N, 0, FULL, X_FAIL, 0, "Not found" },
	{ "method_not_allowed", 405, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Method not allowed" },
	{ "not_acceptable", 406, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Accept must include text/event-stream" },
	{ "payload_too_large", 413, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Request body too large (max 10 MB)" },
	{ "unsupported_media_type", 415, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Content-Type must be application/json" },
	{ "not_implemented", 501, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Not implemented" },
	{ "acp_connection_required", 400, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Acp-Connection-Id header required" },
	{ "acp_connection_not_found", 404, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Unknown ACP connection" },
	{ "acp_connection_limit_exceeded", 503, NULL, 1, F, 5, FULL, X_TMP, 0,
	  "Too many ACP connections" },
	{ "internal", 500, "internal", 0, N, 0, FULL, X_FAIL, 0,
	  "Internal error" },

	/* Client side only: no server sends these. */
	{ "daemon_unreachable", 0, NULL, 0, N, 0, FULL, QERR_EXIT_UNAVAILABLE,
	  0, "Cannot reach the daemon" },
	{ "client_timeout", 0, NULL, 1, N, 0, FULL, X_FAIL, 0,
	  "Timed out waiting for the daemon" },
	{ "protocol_error", 0, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Unexpected answer from the daemon" },
};

/* Reasons with their own Retry-After rule, and the known reasons. */
static const struct qerr_reason qerr_reason_table[] = {
	{ "restore_in_progress", "restore_in_progress", F, 5 },
	{ "restore_in_progress", "awaiting_abandoned_cleanup", B, 0 },
	{ "acp_channel_unavailable", "restore_cleanup_failed", B, 0 },
	{ "acp_channel_unavailable", "restore_settlement_overdue", B, 0 },
	{ "acp_channel_unavailable", "new_session_cleanup_failed", B, 0 },
	{ "acp_channel_unavailable", "new_session_settlement_overdue", B, 0 },
};

#define NITEMS(a)	(sizeof(a) / sizeof((a)[0]))

static const char *qerr_reserved[] = {
	"error", "code", "errorKind", "retryable", "retryAfterSeconds",
	"httpStatus",
};

struct qerr {
	const struct qerr_def	*def;
	char			*fixed_msg;	/* from qerr_new's fmt */
	char			*rendered;	/* the template, filled */
	json_object		*extras;
	int64_t			 budget_ms;	/* -1: not set */
	int			 retryable;	/* -1: the catalog's */
	int			 ra_set;
	int			 ra;
};

const struct qerr_def *
qerr_catalog(size_t *n)
{
	if (n != NULL)
		*n = NITEMS(qerr_table);
	return qerr_table;
}

const struct qerr_reason *
qerr_reasons(size_t *n)
{
	if (n != NULL)
		*n = NITEMS(qerr_reason_table);
	return qerr_reason_table;
}

const struct qerr_def *
qerr_lookup(const char *code)
{
	size_t i;

	if (code == NULL)
		return NULL;
	for (i = 0; i < NITEMS(qerr_table); i++)
		if (strcmp(qerr_table[i].code, code) == 0)
			return &qerr_table[i];
	return NULL;
}

const struct qerr_def *
qerr_lookup_kind(const char *kind)
{
	size_t i;

	if (kind == NULL)
		return NULL;
	for (i = 0; i < NITEMS(qerr_table); i++)
		if (qerr_table[i].kind != NULL &&
		    strcmp(qerr_table[i].kind, kind) == 0)
			return &qerr_table[i];
	return NULL;
}

/* Only codes that identify one entry (writer lease, parse error). */
const struct qerr_def *
qerr_lookup_rpc(int rpc_code)
{
	size_t i;

	for (i = 0; i < NITEMS(qerr_table); i++)
		if (qerr_table[i].rpc_code == rpc_code &&
		    (qerr_table[i].rpc_shape == QERR_RPC_KIND ||
		    qerr_table[i].rpc_shape == QERR_RPC_PLAIN))
			return &qerr_table[i];
	return NULL;
}

/* The reason row for def, or NULL. */
static const struct qerr_reason *
qerr_reason_find(const struct qerr_def *def, const char *reason)
{
	size_t i;

	if (reason == NULL)
		return NULL;
	for (i = 0; i < NITEMS(qerr_reason_table); i++)
		if (strcmp(qerr_reason_table[i].code, def->code) == 0 &&
		    strcmp(qerr_reason_table[i].reason, reason) == 0)
			return &qerr_reason_table[i];
	return NULL;
}

int
qerr_rule_seconds(const struct qerr_def *def, const char *reason,
    int64_t budget_ms)
{
	const struct qerr_reason *r;

	if (def == NULL)
		return -1;
	switch (def->rule) {
	case QERR_RETRY_FIXED:
		return def->retry_s;
	case QERR_RETRY_BUDGET:
		return budget_retry_after_s(budget_ms);
	case QERR_RETRY_REASON:
		if ((r = qerr_reason_find(def, reason)) == NULL)
			return def->retry_s;
		if (r->rule == QERR_RETRY_BUDGET)
			return budget_retry_after_s(budget_ms);
		return r->retry_s;
	case QERR_RETRY_NONE:
	case QERR_RETRY_CALLER:
		break;
	}
	return -1;
}

const char *
qerr_rule_name(const struct qerr_def *def, char *buf, size_t len)
{
	switch (def->rule) {
	case QERR_RETRY_FIXED:
		snprintf(buf, len, "fixed:%d", def->retry_s);
		return buf;
	case QERR_RETRY_BUDGET:
		return "budget";
	case QERR_RETRY_REASON:
		return "reason";
	case QERR_RETRY_CALLER:
		return "caller";
	case QERR_RETRY_NONE:
		break;
	}
	return "none";
}

struct qerr *
qerr_new(const char *code, const char *fmt, ...)
{
	struct qerr *e;
	va_list ap;
	int r = 0;

	if ((e = calloc(1, sizeof(*e))) == NULL)
		return NULL;
	e->budget_ms = -1;
	e->retryable = -1;
	if ((e->extras = json_object_new_object()) == NULL)
		goto fail;
	if ((e->def = qerr_lookup(code)) == NULL) {
		e->def = qerr_lookup("internal");
		if (qerr_set_str(e, "unknownCode", code != NULL ? code :
		    "(null)") == -1)
			goto fail;
	}
	if (fmt != NULL) {
		va_start(ap, fmt);
		r = vasprintf(&e->fixed_msg, fmt, ap);
		va_end(ap);
		if (r == -1) {
			e->fixed_msg = NULL;
			goto fail;
		}
	}
	return e;
fail:
	qerr_free(e);
	return NULL;
}

void
qerr_free(struct qerr *e)
{
	if (e == NULL)
		return;
	json_object_put(e->extras);
	free(e->fixed_msg);
	free(e->rendered);
	free(e);
}

/*
 * Put val under key unless the key is reserved; takes ownership of val.
 * A NULL val is JSON null when is_null, else an allocation failure.
 */
static int
qerr_put(struct qerr *e, const char *key, json_object *val, int is_null)
{
	size_t i;

	if (e == NULL || key == NULL) {
		json_object_put(val);
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < NITEMS(qerr_reserved); i++) {
		if (strcmp(key, qerr_reserved[i]) == 0) {
			json_object_put(val);
			errno = EINVAL;
			return -1;
		}
	}
	if ((val == NULL && !is_null) ||
	    json_object_object_add(e->extras, key, val) != 0) {
		json_object_put(val);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int
qerr_set_str(struct qerr *e, const char *key, const char *val)
{
	if (val == NULL)
		return qerr_put(e, key, NULL, 1);
	return qerr_put(e, key, json_object_new_string(val), 0);
}

int
qerr_set_int(struct qerr *e, const char *key, int64_t val)
{
	return qerr_put(e, key, json_object_new_int64(val), 0);
}

int
qerr_set_bool(struct qerr *e, const char *key, int val)
{
	return qerr_put(e, key, json_object_new_boolean(val != 0), 0);
}

int
qerr_set_json(struct qerr *e, const char *key, json_object *val)
{
	return qerr_put(e, key, val, 1);
}

int
qerr_set_reason(struct qerr *e, const char *reason)
{
	return qerr_set_str(e, "reason", reason);
}

void
qerr_set_budget(struct qerr *e, int64_t budget_ms)
{
	if (e != NULL)
		e->budget_ms = budget_ms;
}

void
qerr_set_retryable(struct qerr *e, int retryable)
{
	if (e != NULL)
		e->retryable = retryable != 0;
}

void
qerr_set_retry_after(struct qerr *e, int seconds)
{
	if (e == NULL)
		return;
	e->ra_set = 1;
	e->ra = seconds < 0 ? -1 : seconds;
}

const struct qerr_def *
qerr_get_def(const struct qerr *e)
{
	return e->def;
}

const char *
qerr_code(const struct qerr *e)
{
	return e->def->code;
}

int
qerr_status(const struct qerr *e)
{
	return e->def->status;
}

int
qerr_retryable(const struct qerr *e)
{
	return e->retryable >= 0 ? e->retryable : e->def->retryable;
}

/* A string extra, or NULL. */
static const char *
qerr_extra_str(const struct qerr *e, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(e->extras, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int
qerr_retry_after(const struct qerr *e)
{
	json_object *v;
	int64_t budget = e->budget_ms;

	if (e->ra_set)
		return e->ra;
	if (budget < 0 && json_object_object_get_ex(e->extras, "timeoutMs", &v)
	    && json_object_is_type(v, json_type_int))
		budget = json_object_get_int64(v);
	return qerr_rule_seconds(e->def, qerr_extra_str(e, "reason"), budget);
}

/* 75 only when retryable with a known Retry-After. */
int
qerr_exit_class(const struct qerr *e)
{
	int x = e->def->exit_class;

	if (qerr_retryable(e) && qerr_retry_after(e) >= 0)
		return QERR_EXIT_TEMPFAIL;
	return x == QERR_EXIT_TEMPFAIL ? QERR_EXIT_FAILURE : x;
}

/* Append the text of extra key (or <key>) to a memstream. */
static void
qerr_render_key(const struct qerr *e, FILE *f, const char *key, size_t len)
{
	char name[64];
	json_object *v;

	if (len >= sizeof(name))
		len = sizeof(name) - 1;
	memcpy(name, key, len);
	name[len] = '\0';
	if (!json_object_object_get_ex(e->extras, name, &v))
		fprintf(f, "<%s>", name);
	else if (json_object_is_type(v, json_type_string))
		fputs(json_object_get_string(v), f);
	else
		fputs(json_object_to_json_string_ext(v,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), f);
}

const char *
qerr_message(struct qerr *e)
{
	const char *p, *close;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (e->fixed_msg != NULL)
		return e->fixed_msg;
	if ((f = open_memstream(&buf, &len)) == NULL)
		return e->def->message;
	for (p = e->def->message; *p != '\0'; p++) {
		if (*p == '{' && (close = strchr(p, '}')) != NULL) {
			qerr_render_key(e, f, p + 1, (size_t)(close - p - 1));
			p = close;
		} else
			fputc(*p, f);
	}
	if (fclose(f) != 0 || buf == NULL) {
		free(buf);
		return e->def->message;
	}
	free(e->rendered);
	e->rendered = buf;
	return buf;
}

/* Copy every extra into obj (shared references). */
static int
qerr_add_extras(const struct qerr *e, json_object *obj)
{
	json_object_object_foreach(e->extras, key, val) {
		if (json_object_object_add(obj, key, json_object_get(val)) != 0) {
			json_object_put(val);
			return -1;
		}
	}
	return 0;
}

/* obj[key] = val (a new object); -1 when val is NULL or the add fails. */
static int
qerr_add(json_object *obj, const char *key, json_object *val)
{
	if (val == NULL)
		return -1;
	if (json_object_object_add(obj, key, val) != 0) {
		json_object_put(val);
		return -1;
	}
	return 0;
}

json_object *
qerr_rest_body(struct qerr *e)
{
	json_object *body;
	int ra = qerr_retry_after(e), bad = 0;

	if ((body = json_object_new_object()) == NULL)
		return NULL;
	bad |= qerr_add(body, "error", json_object_new_string(qerr_message(e)));
	bad |= qerr_add(body, "code", json_object_new_string(e->def->code));
	if (e->def->kind != NULL)
		bad |= qerr_add(body, "errorKind",
		    json_object_new_string(e->def->kind));
	if (qerr_retryable(e))
		bad |= qerr_add(body, "retryable", json_object_new_boolean(1));
	bad |= qerr_add_extras(e, body);
	if (e->def->body_retry_after && ra >= 0)
		bad |= qerr_add(body, "retryAfterSeconds",
		    json_object_new_int(ra));
	if (bad) {
		json_object_put(body);
		return NULL;
	}
	return body;
}

/* data of the -32603 shape. */
static json_object *
qerr_rpc_data_full(struct qerr *e)
{
	const struct qerr_def *d = e->def;
	json_object *data;
	int ra = qerr_retry_after(e), bad = 0;

	if ((data = json_object_new_object()) == NULL)
		return NULL;
	bad |= qerr_add(data, "code", json_object_new_string(d->code));
	bad |= qerr_add(data, "errorKind", json_object_new_string(
	    d->kind != NULL ? d->kind : d->code));
	if (d->status > 0)
		bad |= qerr_add(data, "httpStatus",
		    json_object_new_int(d->status));
	bad |= qerr_add(data, "retryable",
	    json_object_new_boolean(qerr_retryable(e)));
	if (ra >= 0)
		bad |= qerr_add(data, "retryAfterSeconds",
		    json_object_new_int(ra));
	bad |= qerr_add_extras(e, data);
	if (bad) {
		json_object_put(data);
		return NULL;
	}
	return data;
}

/* data of the -32602-with-data and writer-lease shapes. */
static json_object *
qerr_rpc_data_kind(struct qerr *e, int with_status)
{
	const struct qerr_def *d = e->def;
	json_object *data;
	int bad = 0;

	if ((data = json_object_new_object()) == NULL)
		return NULL;
	if (with_status)
		bad |= qerr_add(data, "httpStatus",
		    json_object_new_int(d->status));
	bad |= qerr_add(data, "errorKind", json_object_new_string(
	    d->kind != NULL ? d->kind : d->code));
	if (bad) {
		json_object_put(data);
		return NULL;
	}
	return data;
}

json_object *
qerr_jsonrpc_error(struct qerr *e)
{
	json_object *err, *data = NULL;
	int bad = 0;

	if ((err = json_object_new_object()) == NULL)
		return NULL;
	bad |= qerr_add(err, "code", json_object_new_int(e->def->rpc_code));
	bad |= qerr_add(err, "message", json_object_new_string(qerr_message(e)));
	switch (e->def->rpc_shape) {
	case QERR_RPC_FULL:
		bad |= qerr_add(err, "data", data = qerr_rpc_data_full(e));
		break;
	case QERR_RPC_PARAMS_KIND:
		bad |= qerr_add(err, "data", data = qerr_rpc_data_kind(e, 1));
		break;
	case QERR_RPC_KIND:
		bad |= qerr_add(err, "data", data = qerr_rpc_data_kind(e, 0));
		break;
	case QERR_RPC_PARAMS:
	case QERR_RPC_PLAIN:
		break;
	}
	if (bad) {
		json_object_put(err);
		return NULL;
	}
	return err;
}
