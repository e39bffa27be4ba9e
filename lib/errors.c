/* SPDX-License-Identifier: ISC */
/* errors.c: the structured error value and its REST / JSON-RPC forms. */
#include "config.h"	/* _GNU_SOURCE, for vasprintf and open_memstream */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "errors.h"

#define QERR_JSON_OUT \
	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
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

/* Allocate an error for code; see errors.h for the fallbacks. */
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

/* Free the error and its extras. */
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

/* Set a string extra (NULL val: JSON null). */
int
qerr_set_str(struct qerr *e, const char *key, const char *val)
{
	if (val == NULL)
		return qerr_put(e, key, NULL, 1);
	return qerr_put(e, key, json_object_new_string(val), 0);
}

/* Set an integer extra. */
int
qerr_set_int(struct qerr *e, const char *key, int64_t val)
{
	return qerr_put(e, key, json_object_new_int64(val), 0);
}

/* Set a boolean extra. */
int
qerr_set_bool(struct qerr *e, const char *key, int val)
{
	return qerr_put(e, key, json_object_new_boolean(val != 0), 0);
}

/* Set any JSON extra; takes ownership of val. */
int
qerr_set_json(struct qerr *e, const char *key, json_object *val)
{
	return qerr_put(e, key, val, 1);
}

/* The reason extra, which also selects the Retry-After rule. */
int
qerr_set_reason(struct qerr *e, const char *reason)
{
	return qerr_set_str(e, "reason", reason);
}

/* The budget behind a BUDGET rule. */
void
qerr_set_budget(struct qerr *e, int64_t budget_ms)
{
	if (e != NULL)
		e->budget_ms = budget_ms;
}

/* Override the catalog's retryable for this error. */
void
qerr_set_retryable(struct qerr *e, int retryable)
{
	if (e != NULL)
		e->retryable = retryable != 0;
}

/* Override the Retry-After for this error (-1: none). */
void
qerr_set_retry_after(struct qerr *e, int seconds)
{
	if (e == NULL)
		return;
	e->ra_set = 1;
	e->ra = seconds < 0 ? -1 : seconds;
}

/* The catalog entry of the error. */
const struct qerr_def *
qerr_get_def(const struct qerr *e)
{
	return e->def;
}

/* The stable code. */
const char *
qerr_code(const struct qerr *e)
{
	return e->def->code;
}

/* The HTTP status (0 for client-side codes). */
int
qerr_status(const struct qerr *e)
{
	return e->def->status;
}

/* Retryable: the override, else the catalog. */
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

/* Retry-After seconds: the override, else the rule with the budget. */
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
		fputs(json_object_to_json_string_ext(v, QERR_JSON_OUT), f);
}

/* The message: qerr_new's, else the template filled from the extras. */
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
		json_object_get(val);
		if (json_object_object_add(obj, key, val) != 0) {
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

/* The REST body; the one mapping every REST route uses. */
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

/* The JSON-RPC error member; the one mapping ACP HTTP and WebSocket use. */
json_object *
qerr_jsonrpc_error(struct qerr *e)
{
	json_object *err, *data = NULL;
	int bad = 0;

	if ((err = json_object_new_object()) == NULL)
		return NULL;
	bad |= qerr_add(err, "code", json_object_new_int(e->def->rpc_code));
	bad |= qerr_add(err, "message",
	    json_object_new_string(qerr_message(e)));
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
