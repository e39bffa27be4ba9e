/* SPDX-License-Identifier: ISC */
/*
 * errors.h: the error catalog, one table of every error code the system
 * emits, and the one structured error value built from it.
 *
 * Each catalog entry gives a stable code its HTTP status, errorKind (or
 * none), whether it is retryable, its Retry-After rule, its JSON-RPC shape,
 * the exit code class a CLI uses for it, and its default message.  One
 * struct qerr is mapped to the REST body + Retry-After header and to the
 * JSON-RPC error object by the same code, so REST, ACP over HTTP and the
 * WebSocket can never disagree.  httpStatus appears only in JSON-RPC data,
 * never in a REST body.
 *
 * Decisions (upstream 0.24.4 differs, clients are unaffected):
 * - Every REST error body carries a code.  Upstream's code-less bodies keep
 *   their exact "error" message but gain one: 401 {"error":"Unauthorized",
 *   "code":"unauthorized"}, 400 invalid_json, 413 payload_too_large,
 *   403 forbidden_host ("Invalid Host header").  The classifier still
 *   recognises the code-less upstream forms by status and message.
 * - errorKind and retryable:true are written to the REST body whenever the
 *   catalog has them (upstream writes them for some codes only).
 * - -32603 JSON-RPC data always has the full shape {code, errorKind,
 *   httpStatus, retryable, retryAfterSeconds?, ...extras}; errorKind falls
 *   back to the code when the catalog has none.
 *
 * The reverse direction, the classifier, turns an HTTP status + body (+
 * Retry-After header) or a JSON-RPC error object into a struct qerr_class.
 */
#ifndef QWEN_ERRORS_H
#define QWEN_ERRORS_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* Exit code classes of the CLIs (sysexits for 69 and 75). */
#define QERR_EXIT_OK		0
#define QERR_EXIT_FAILURE	1
#define QERR_EXIT_USAGE		2
#define QERR_EXIT_NOT_FOUND	3
#define QERR_EXIT_UNAVAILABLE	69	/* daemon unreachable */
#define QERR_EXIT_TEMPFAIL	75	/* retryable, Retry-After known */

/* JSON-RPC error codes used by the catalog. */
#define QERR_RPC_PARSE_ERROR		(-32700)
#define QERR_RPC_INVALID_PARAMS		(-32602)
#define QERR_RPC_INTERNAL_ERROR		(-32603)
#define QERR_RPC_RESOURCE_NOT_FOUND	(-32002)
#define QERR_RPC_WRITER_CONFLICT	(-32020)
#define QERR_RPC_WRITER_LOST		(-32021)
#define QERR_RPC_TRANSCRIPT_CHANGED	(-32022)
#define QERR_RPC_WRITER_UNAVAILABLE	(-32023)

enum qerr_retry_rule {
	QERR_RETRY_NONE,	/* no Retry-After */
	QERR_RETRY_FIXED,	/* retry_s seconds */
	QERR_RETRY_BUDGET,	/* clamp(ceil(budget_ms / 1000), 5, 120) */
	QERR_RETRY_REASON,	/* per reason (qerr_reasons()); else retry_s */
	QERR_RETRY_CALLER,	/* the caller computes it (rate limiting) */
};

enum qerr_rpc_shape {
	QERR_RPC_FULL,		/* -32603, data {code, errorKind, httpStatus, ...} */
	QERR_RPC_PARAMS,	/* -32602, no data */
	QERR_RPC_PARAMS_KIND,	/* -32602, data {httpStatus, errorKind} */
	QERR_RPC_KIND,		/* rpc_code, data {errorKind} (writer lease) */
	QERR_RPC_PLAIN,		/* rpc_code, no data */
};

/*
 * One catalog entry.  status is 0 for client-side codes that no server
 * sends (daemon_unreachable).  message may hold {key} placeholders, filled
 * from the error's extras (a missing key renders as <key>).
 */
struct qerr_def {
	const char		*code;
	int			 status;
	const char		*kind;		/* errorKind, NULL for none */
	int			 retryable;
	enum qerr_retry_rule	 rule;
	int			 retry_s;	/* FIXED, and REASON's default */
	int			 rpc_code;
	enum qerr_rpc_shape	 rpc_shape;
	int			 exit_class;	/* QERR_EXIT_* */
	int			 body_retry_after; /* REST body has retryAfterSeconds */
	const char		*message;
};

/* A reason-specific Retry-After rule (restore_in_progress, ...). */
struct qerr_reason {
	const char		*code;
	const char		*reason;
	enum qerr_retry_rule	 rule;		/* FIXED or BUDGET */
	int			 retry_s;
};

/* The whole catalog / reason table (static; *n gets the entry count). */
const struct qerr_def		*qerr_catalog(size_t *n);
const struct qerr_reason	*qerr_reasons(size_t *n);

/* Catalog entry by code / by errorKind / by JSON-RPC code, or NULL. */
const struct qerr_def	*qerr_lookup(const char *code);
const struct qerr_def	*qerr_lookup_kind(const char *kind);
const struct qerr_def	*qerr_lookup_rpc(int rpc_code);

/* Retry-After seconds of def for reason and budget_ms (-1 unknown): or -1. */
int	qerr_rule_seconds(const struct qerr_def *def, const char *reason,
	    int64_t budget_ms);

/* "none", "fixed:N", "budget", "reason" or "caller". */
const char *qerr_rule_name(const struct qerr_def *def, char *buf, size_t len);

/* ---- the structured error value -------------------------------------- */

struct qerr;

/*
 * A new error for code; caller frees with qerr_free().  fmt (printf) sets
 * the message; NULL uses the catalog's template.  An unknown code gives the
 * "internal" entry with extra unknownCode (a programming error, not hidden).
 * NULL only on allocation failure.
 */
struct qerr	*qerr_new(const char *code, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));
void		 qerr_free(struct qerr *);	/* NULL-safe */

/*
 * Extras, written to the REST body and JSON-RPC data in the order set (a
 * key set again keeps its place).  The reserved keys error, code,
 * errorKind, retryable, retryAfterSeconds and httpStatus are refused:
 * -1 with errno EINVAL; -1 ENOMEM on allocation failure; else 0.  "reason"
 * is an ordinary extra that also selects the Retry-After rule.
 * qerr_set_json takes ownership of val (also on failure).
 */
int	qerr_set_str(struct qerr *, const char *key, const char *val);
int	qerr_set_int(struct qerr *, const char *key, int64_t val);
int	qerr_set_bool(struct qerr *, const char *key, int val);
int	qerr_set_json(struct qerr *, const char *key, json_object *val);
int	qerr_set_reason(struct qerr *, const char *reason);

/*
 * The budget behind a BUDGET rule, in ms.  Without one, an int extra
 * timeoutMs is used; without that the budget counts as 0 (Retry-After 5).
 */
void	qerr_set_budget(struct qerr *, int64_t budget_ms);

/*
 * Overrides of the catalog for one error, for the reduced shapes of
 * §3 (e.g. init_timeout of a load whose channel start timed out:
 * qerr_set_retryable(e, 0) and qerr_set_retry_after(e, -1); POST /session's
 * channel.initialize timeout: qerr_set_retry_after(e, 5)).
 */
void	qerr_set_retryable(struct qerr *, int retryable);
void	qerr_set_retry_after(struct qerr *, int seconds);

/* Accessors; pointers are borrowed from the error. */
const struct qerr_def	*qerr_get_def(const struct qerr *);
const char		*qerr_code(const struct qerr *);
int			 qerr_status(const struct qerr *);
const char		*qerr_message(struct qerr *);	/* renders the template */
int			 qerr_retryable(const struct qerr *);
int			 qerr_retry_after(const struct qerr *);	/* seconds or -1 */
int			 qerr_exit_class(const struct qerr *);

/*
 * REST body {error, code, errorKind?, retryable?, ...extras,
 * retryAfterSeconds?}; the Retry-After header value is qerr_retry_after().
 * New object, caller puts.  NULL on allocation failure.
 */
json_object	*qerr_rest_body(struct qerr *);

/*
 * The JSON-RPC error member {code, message, data?} (§5.2): the caller adds
 * jsonrpc and id.  New object, caller puts.  NULL on allocation failure.
 */
json_object	*qerr_jsonrpc_error(struct qerr *);

/* ---- the classifier ---------------------------------------------------- */

/*
 * A classified error.  def is the catalog entry or NULL (code "unknown");
 * raw_code is the wire code as text (string or JSON-RPC number) or NULL.
 * status is the HTTP status (from data.httpStatus or the entry for
 * JSON-RPC; 0 when none is known).  rpc_code is the JSON-RPC code, 0 for
 * REST.  retry_after is seconds or -1.  Strings are owned by the struct.
 */
struct qerr_class {
	const struct qerr_def	*def;
	const char		*code;		/* def->code or "unknown" */
	char			*raw_code;
	int			 status;
	int			 rpc_code;
	char			*kind;		/* NULL for none */
	int			 retryable;
	int			 retry_after;
	char			*reason;
	char			*message;
	int			 exit_class;
};

/*
 * Classify an HTTP error answer: body is the response text (need not be
 * NUL-terminated; NULL or garbage is fine: then the status decides),
 * retry_after the Retry-After header value or NULL.  Returns 0, or -1 on
 * allocation failure (*c cleared).  Free with qerr_class_clear().
 */
int	qerr_classify_http(struct qerr_class *c, int status, const char *body,
	    size_t len, const char *retry_after);

/*
 * Classify a JSON-RPC error member (borrowed; anything is tolerated).
 * Returns 0, or -1 on allocation failure.
 */
int	qerr_classify_rpc(struct qerr_class *c, json_object *error);

void	qerr_class_clear(struct qerr_class *c);	/* frees the strings */

/*
 * {code, rawCode, status, rpcCode, errorKind, retryable, retryAfter,
 * reason, message, exit} with null for absent fields.  New object, caller
 * puts.
 */
json_object	*qerr_class_json(const struct qerr_class *c);

/* Strict Retry-After header parse: decimal seconds, or -1. */
int	qerr_parse_retry_after(const char *value);

#endif
