/* SPDX-License-Identifier: ISC */
/*
 * acp.c: ACP client connections, independent of the transport: the
 * connection registry and cap, message intake and the method table.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "json-limit.h"
#include "log.h"
#include "rpc-frame.h"
#include "serve.h"
#include "acp.h"
#include "acp-int.h"
#include "xmalloc.h"

static TAILQ_HEAD(, acp_conn) conns = TAILQ_HEAD_INITIALIZER(conns);
static size_t nconns;
/* The workspace of the request that is opening a connection (http.c). */
const char *acp_bound_workspace;

/* ---- registry ------------------------------------------------------------ */

/* A connection, counted against the cap. */
struct acp_conn *
acp_conn_new(const struct acp_sink *sink, void *arg, const char *transport,
    struct qerr **errp)
{
	struct acp_conn *c;

	if (errp != NULL)
		*errp = NULL;
	if (nconns >= ACP_MAX_CONNECTIONS) {
		if (errp != NULL && (*errp = qerr_new("acp_connection_limit_exceeded",
		    NULL)) != NULL)
			qerr_set_int(*errp, "limit", ACP_MAX_CONNECTIONS);
		return NULL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		if (errp != NULL)
			*errp = qerr_new("internal", NULL);
		return NULL;
	}
	uuid_new(c->id);
	c->workspace = acp_bound_workspace != NULL ? acp_bound_workspace : conf.workspace;
	c->sink = sink;
	c->arg = arg;
	strlcpy(c->transport, transport != NULL ? transport : "", sizeof(c->transport));
	TAILQ_INIT(&c->sessions);
	TAILQ_INSERT_TAIL(&conns, c, entry);
	nconns++;
	log_info("acp: %s connection %s opened", c->transport, c->id);
	return c;
}

/* Orphan its calls, detach its sessions, forget it. */
void
acp_conn_close(struct acp_conn *c)
{
	if (c == NULL)
		return;
	c->closing = 1;
	acp_calls_orphan(c);
	acp_sessions_release(c);
	TAILQ_REMOVE(&conns, c, entry);
	nconns--;
	log_info("acp: %s connection %s closed", c->transport, c->id);
	free(c);
}

const char *
acp_conn_id(const struct acp_conn *c)
{
	return c->id;
}

const char *
acp_conn_transport(const struct acp_conn *c)
{
	return c->transport;
}

void *
acp_conn_arg(const struct acp_conn *c)
{
	return c->arg;
}

/* Connection by id. */
struct acp_conn *
acp_conn_find(const char *id)
{
	struct acp_conn *c;

	if (id == NULL)
		return NULL;
	TAILQ_FOREACH(c, &conns, entry)
		if (strcmp(c->id, id) == 0)
			return c;
	return NULL;
}

/* A session id as the session map keys it (UUIDs lower-cased); -1: bad. */
int
acp_canon_id(const char *in, char *out, size_t size)
{
	if (in == NULL || strlen(in) >= size || !names_session_id_ok(in))
		return -1;
	strlcpy(out, in, size);
	if (uuid_valid(out))
		for (char *p = out; *p != '\0'; p++)
			*p = (char)tolower((unsigned char)*p);
	return 0;
}

/* Whether c holds (or is restoring) session_id. */
int
acp_conn_owns(const struct acp_conn *c, const char *session_id)
{
	char id[SERVE_SESSION_ID_MAX + 1];

	return acp_canon_id(session_id, id, sizeof(id)) == 0 &&
	    acp_sess_find((struct acp_conn *)c, id) != NULL;
}

size_t
acp_conn_count(void)
{
	return nconns;
}

/* Close what the transports left. */
void
acp_shutdown(void)
{
	struct acp_conn *c;

	while ((c = TAILQ_FIRST(&conns)) != NULL)
		acp_conn_close(c);
}

/* After the loop: nothing may answer the calls any more. */
void
acp_free(void)
{
	acp_shutdown();
	acp_calls_free_orphans();
}

/* ---- outbound ------------------------------------------------------------ */

/* Send msg (takes ownership) on c, for session_id (NULL: the connection). */
void
acp_send(struct acp_conn *c, const char *session_id, json_object *msg)
{
	const char *s;

	if (c != NULL && !c->closing && msg != NULL) {
		s = json_object_to_json_string_ext(msg,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		c->sink->send(c->arg, session_id, s, strlen(s));
	}
	json_object_put(msg);
}

/* {jsonrpc, id, error}: id borrowed, err (the error member) taken. */
json_object *
acp_error_wrap(json_object *id, json_object *err)
{
	json_object *m = xjson_object_new_object();

	json_object_object_add(m, "jsonrpc", xjson_object_new_string("2.0"));
	json_object_object_add(m, "id", json_object_get(id));
	json_object_object_add(m, "error", err);
	return m;
}

/* The JSON-RPC error message of e (the catalog mapping). */
json_object *
acp_error_message(json_object *id, struct qerr *e)
{
	json_object *err;

	if (e == NULL)
		e = qerr_new("internal", NULL);
	err = e != NULL ? qerr_jsonrpc_error(e) : NULL;
	qerr_free(e);
	return acp_error_wrap(id, err);
}

/* A result (takes ownership) for id (borrowed). */
void
acp_reply(struct acp_conn *c, const char *session_id, json_object *id,
    json_object *result)
{
	acp_send(c, session_id, rpc_new_result(json_object_get(id), result));
}

/* An error (takes ownership of e) for id (borrowed). */
void
acp_reply_error(struct acp_conn *c, const char *session_id, json_object *id,
    struct qerr *e)
{
	acp_send(c, session_id, acp_error_message(id, e));
}

/* A plain JSON-RPC error (method not found, invalid request). */
void
acp_reply_rpc(struct acp_conn *c, json_object *id, int code, const char *message)
{
	acp_send(c, NULL,
	    rpc_new_error(json_object_get(id), code, message, NULL));
}

/* ---- inbound ------------------------------------------------------------- */

/* A parsed or refused message: dispatch it, or answer the refusal. */
static int
intake(struct acp_conn *c, enum rpc_read_status st, struct rpc_msg *m,
    struct rpc_bad *bad)
{
	int rc = -1;

	if (st == RPC_READ_BAD)
		acp_send(c, NULL, rpc_new_bad_error(bad));
	else
		rc = acp_dispatch(c, m);
	rpc_bad_clear(bad);
	rpc_msg_clear(m);
	return rc;
}

/* One raw message from the transport. */
int
acp_conn_handle(struct acp_conn *c, const char *msg, size_t len)
{
	struct rpc_msg m;
	struct rpc_bad bad;
	int rc;

	rc = intake(c, rpc_parse_limited(msg, len, JSON_LIMIT_VALUES, &m, &bad),
	    &m, &bad);
	json_limit_release(len);
	return rc;
}

/* One parsed message from the transport. */
int
acp_conn_handle_json(struct acp_conn *c, json_object *msg)
{
	struct rpc_msg m;
	struct rpc_bad bad;

	return intake(c, rpc_classify(json_object_get(msg), &m, &bad), &m,
	    &bad);
}
