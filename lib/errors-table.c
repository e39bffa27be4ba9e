/* SPDX-License-Identifier: ISC */
/* errors-table.c: THE error catalog, and lookups in it. */
#include "config.h"

#include <stdio.h>
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
	{ "invalid_detail", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "detail must be one of: summary, full" },
	{ "invalid_transcript_cursor", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "Invalid transcript cursor" },
	{ "transcript_read_timeout", 504, "transcript_read_timeout", 1, F, 5,
	  FULL, X_TMP, 0, "Reading the transcript of session {sessionId} timed "
	  "out after {timeoutMs}ms" },
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
	/* Standalone (projectless) sessions: upstream's codes and messages. */
	{ "invalid_request", 400, "invalid_request", 0, N, 0, PARAMS, X_USE, 0,
	  "The standalone session request is invalid." },
	{ "standalone_session_not_found", 404, "standalone_session_not_found",
	  0, N, 0, PARAMS, X_NF, 0, "The standalone session was not found." },
	{ "standalone_session_conflict", 409, "standalone_session_conflict",
	  0, N, 0, PARAMS, X_FAIL, 0, "The standalone session id or durable "
	  "state conflicts with an existing session." },
	{ "standalone_session_operation_failed", 409,
	  "standalone_session_operation_failed", 0, N, 0, PARAMS, X_FAIL, 0,
	  "The standalone session operation failed." },
	{ "invalid_cursor", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "The cursor is not valid" },
	{ "working_directory_compromised", 409, "working_directory_compromised",
	  0, N, 0, PARAMS, X_FAIL, 0,
	  "The standalone working directory identity is compromised." },
	{ "working_directory_recovery_failed", 409,
	  "working_directory_recovery_failed", 0, N, 0, PARAMS, X_FAIL, 0,
	  "The standalone working directory could not be recovered." },
	{ "group_not_found", 404, NULL, 0, N, 0, PARAMS, X_NF, 0,
	  "No such session group" },
	{ "prompt_not_found", 404, NULL, 0, N, 0, PARAMS, X_NF, 0,
	  "No turn with promptId \"{promptId}\" in session {sessionId}" },
	{ "invalid_session_view", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "`view` must be \"organized\"" },
	{ "invalid_session_group_filter", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "`group` requires `view=organized`" },
	{ "invalid_archive_state", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "`archiveState` must be \"active\" or \"archived\"" },
	{ "invalid_root_agent_id", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "`rootAgentId` must be a non-empty agent id" },
	{ "invalid_subagent_ref", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "`subagentRef` must be a non-empty subagent reference" },
	{ "session_shell_disabled", 403, "session_shell_disabled", 0, N, 0,
	  FULL, X_FAIL, 0, "Direct session shell is disabled for this daemon" },
	{ "shell_limit_exceeded", 429, NULL, 1, F, 5, FULL, X_TMP, 0,
	  "Too many session shell commands are running" },
	{ "invalid_prompt", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "`prompt` must be a non-empty string no larger than 32768 UTF-8 "
	  "bytes" },
	{ "generation_limit_exceeded", 429, NULL, 1, F, 5, FULL, X_TMP, 0,
	  "Too many session generations are running" },
	{ "invalid_parent_session_id", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "`parentSessionId` must be a non-empty string" },
	{ "invalid_parent_session_filter", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "`parentSessionId` is not supported with `view=organized`" },
	{ "invalid_session_organization", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "Invalid session organization" },
	{ "live_session_active", 409, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Session {sessionId} is live; close it first" },
	{ "session_not_archived", 409, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Session {sessionId} is not archived" },
	{ "invalid_search_query", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "q must be a non-empty string of at most 256 bytes" },
	{ "invalid_search_max_results", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "maxResults must be an integer from 1 to 50" },
	{ "invalid_export_format", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "Invalid export format" },
	{ "session_archiving", 409, NULL, 1, F, 5, FULL, X_TMP, 0,
	  "Session {sessionId} is being archived" },
	{ "session_busy", 409, "session_busy", 1, F, 5, FULL, X_TMP, 0,
	  "Session {sessionId} is busy" },
	{ "branch_point_invalid", 409, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "The branch point is not a record of session {sessionId}'s active "
	  "history" },
	{ "invalid_turn_anchor", 400, NULL, 0, N, 0, FULL, X_USE, 0,
	  "atRecordId must be a non-empty record id" },
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
	{ "transcript_unreadable", 500, "transcript_unreadable", 0, N, 0, FULL,
	  X_FAIL, 0, "Transcript of session {sessionId} cannot be read" },
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
	{ "branch_limit_exceeded", 429, "branch_limit_exceeded", 1, F, 5, FULL,
	  X_TMP, 0, "Branch limit reached ({inFlight} in flight per {scope}, "
	  "limit {limit})" },
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

	/* A session's sources (upstream's source errors). */
	{ "invalid_source", 400, "invalid_source", 0, N, 0, PKIND, X_USE, 0,
	  "Invalid source" },
	{ "client_id_required", 403, "client_id_required", 0, N, 0, PKIND,
	  X_USE, 0, "A session-bound client id is required" },
	{ "source_attachment_not_found", 404, "source_attachment_not_found", 0,
	  N, 0, PKIND, X_NF, 0, "Session attachment not found" },
	{ "source_limit_reached", 409, "source_limit_reached", 0, N, 0, FULL,
	  X_FAIL, 0, "Session source limit reached" },
	{ "source_persistence_unavailable", 503, "source_persistence_unavailable",
	  0, N, 0, FULL, X_FAIL, 0, "Session sources cannot be persisted" },

	/* A content block naming a session's attachment. */
	{ "invalid_session_attachment_reference", 400, NULL, 0, N, 0, PARAMS,
	  X_USE, 0, "Invalid session attachment reference" },
	{ "session_attachment_gone", 410, NULL, 0, N, 0, FULL, X_NF, 0,
	  "Unknown or unavailable session attachment" },

	/* A session's artifacts. */
	{ "session_artifact_forbidden", 403, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Artifact {artifactId} is owned by a different client" },

	/* HTTP and ACP transport. */
	{ "invalid_json", 400, NULL, 0, N, 0, QERR_RPC_PARSE_ERROR,
	  QERR_RPC_PLAIN, X_FAIL, 0, "Invalid JSON in request body" },
	{ "bad_request", 400, NULL, 0, N, 0, PARAMS, X_USE, 0, "Bad request" },
	{ "invalid_session_catalog_request", 400, NULL, 0, N, 0, PARAMS, X_USE,
	  0, "Invalid session catalog request." },
	{ "too_many_workspaces", 400, NULL, 0, N, 0, PARAMS, X_USE, 0,
	  "Select at most 20 workspaces per request." },
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
	{ "json_too_complex", 413, "json_too_complex", 0, N, 0, FULL, X_FAIL,
	  0, "Request has too many JSON values (max 16384) or nests deeper "
	  "than 64" },
	{ "unsupported_media_type", 415, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Content-Type must be application/json" },
	{ "not_implemented", 501, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Not implemented" },
	{ "acp_connection_required", 400, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Acp-Connection-Id header required" },
	{ "acp_connection_not_found", 404, NULL, 0, N, 0, FULL, X_FAIL, 0,
	  "Unknown ACP connection" },
	{ "connection_limit_exceeded", 503, NULL, 1, F, 1, FULL, X_TMP, 0,
	  "Too many connections" },
	{ "acp_connection_limit_exceeded", 503, NULL, 1, F, 5, FULL, X_TMP, 0,
	  "Too many ACP connections" },
	{ "acp_child_protocol_error", 502, "acp_child_protocol_error", 0, N, 0,
	  FULL, X_FAIL, 0, "The ACP child's answer could not be read" },
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

/*
 * Reasons with their own Retry-After rule, and the known reasons.  The
 * caller passes the budget of the operation that timed out: the restore
 * budget, or the initialize budget for new_session_* reasons and for an
 * abandoned cleanup whose owner was a caller-supplied-id spawn.
 */
static const struct qerr_reason qerr_reason_table[] = {
	{ "restore_in_progress", "restore_in_progress", F, 5 },
	{ "restore_in_progress", "awaiting_abandoned_cleanup", B, 0 },
	{ "acp_channel_unavailable", "restore_cleanup_failed", B, 0 },
	{ "acp_channel_unavailable", "restore_settlement_overdue", B, 0 },
	{ "acp_channel_unavailable", "new_session_cleanup_failed", B, 0 },
	{ "acp_channel_unavailable", "new_session_settlement_overdue", B, 0 },
};

#define NITEMS(a)	(sizeof(a) / sizeof((a)[0]))

/* The whole table, for the tool and the tests. */
const struct qerr_def *
qerr_catalog(size_t *n)
{
	if (n != NULL)
		*n = NITEMS(qerr_table);
	return qerr_table;
}

/* The reason rows, for the tool and the tests. */
const struct qerr_reason *
qerr_reasons(size_t *n)
{
	if (n != NULL)
		*n = NITEMS(qerr_reason_table);
	return qerr_reason_table;
}

/* Entry by its stable code. */
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

/* Entry by errorKind (kinds are unique in the table). */
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

/* Apply def's Retry-After rule (a reason row first, when one fits). */
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

/* The rule as the table column shows it. */
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
