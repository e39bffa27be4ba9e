/* SPDX-License-Identifier: ISC */
/*
 * reqid.c: the request id and trace id of the JSON log's lines.  Each
 * HTTP request has an id: the client's X-Request-Id when it is a short
 * token (a proxy's or a client's correlation id), else one made here; it
 * is sent back in X-Request-Id.  Its trace id is the one of a valid W3C
 * traceparent header.  Both are the log context while the request is
 * handled; a session remembers the last ones (and the trace id of the
 * daemon's span of its turn or restore), so that the lines logged about
 * it later, when a restore settles or a turn ends, carry them too.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "log.h"
#include "serve.h"
#include "trace.h"
#include "uuid.h"

static char cur_rid[REQID_MAX + 1], cur_tid[REQID_TRACE_LEN + 1];

/* A client's id: 1 to REQID_MAX of [A-Za-z0-9._:-], nothing else. */
static int
rid_valid(const char *s)
{
	size_t n = 0;

	if (s == NULL)
		return 0;
	for (; s[n] != '\0'; n++)
		if (n >= REQID_MAX || !(isalnum((unsigned char)s[n]) ||
		    strchr("._:-", s[n]) != NULL))
			return 0;
	return n > 0;
}

/*
 * The log asks lookup for a session's ids (sessions_log_lookup(), handed
 * over by main.c: the ids live on the sessions, above this file).
 */
void
reqid_init(log_session_lookup lookup)
{
	log_set_session_lookup(lookup);
}

/* A request: its id (the client's or a new one, echoed), its trace id. */
void
reqid_begin(struct evhttp_request *req)
{
	const char *h = http_header(req, "X-Request-Id");
	struct trace_ctx tc;
	char uuid[UUID_LEN + 1];

	if (rid_valid(h))
		strlcpy(cur_rid, h, sizeof(cur_rid));
	else {
		uuid_new(uuid);
		strlcpy(cur_rid, uuid, sizeof(cur_rid));
	}
	cur_tid[0] = '\0';
	if ((h = http_header(req, "traceparent")) != NULL &&
	    trace_parse_traceparent(h, &tc) == 0)
		trace_hex(tc.trace_id, sizeof(tc.trace_id), cur_tid);
	http_set_header(req, "X-Request-Id", cur_rid);
	log_context_set(cur_rid, cur_tid);
}

/* The request handled: later lines are not its. */
void
reqid_end(void)
{
	cur_rid[0] = cur_tid[0] = '\0';
	log_context_set(NULL, NULL);
}

/* The request acts on s: s's later lines carry its ids. */
void
reqid_session(struct session *s)
{
	if (s == NULL || cur_rid[0] == '\0')
		return;
	strlcpy(s->log_rid, cur_rid, sizeof(s->log_rid));
	if (cur_tid[0] != '\0')
		strlcpy(s->log_tid, cur_tid, sizeof(s->log_tid));
}

/* A turn of s started the daemon's span: its trace is s's now. */
void
reqid_session_span(struct session *s, const struct span *sp)
{
	struct trace_ctx tc;

	if (s == NULL || sp == NULL)
		return;
	span_context(sp, &tc);
	trace_hex(tc.trace_id, sizeof(tc.trace_id), s->log_tid);
}

/* s registered by a spawn or restore: the ids that op ran for. */
void
reqid_session_set(struct session *s, const char *rid, const char *tid)
{
	if (rid[0] != '\0')
		strlcpy(s->log_rid, rid, sizeof(s->log_rid));
	if (tid[0] != '\0')
		strlcpy(s->log_tid, tid, sizeof(s->log_tid));
}

/* A spawn or restore starts: the ids of the request that asked. */
void
reqid_current(char *rid, char *tid, const struct span *sp)
{
	struct trace_ctx tc;

	strlcpy(rid, cur_rid, REQID_MAX + 1);
	strlcpy(tid, cur_tid, REQID_TRACE_LEN + 1);
	if (sp != NULL) {
		span_context(sp, &tc);
		trace_hex(tc.trace_id, sizeof(tc.trace_id), tid);
	}
}
