/* SPDX-License-Identifier: ISC */
/*
 * audit.c: --audit-log FILE, one JSON object a line for every
 * state-changing request (POST and DELETE routes): who (the peer's uid,
 * or the bearer token), what (the route), which session, and the
 * outcome (the HTTP status sent), and the client's address (the one a
 * --trusted-proxy forwarded).  A record is written and fsync'd when
 * its answer has gone out, so a request that was answered is on disk
 * even if the daemon is killed right after.  Reopened on SIGHUP.
 * Records never hold a body, a prompt or anything else a client wrote
 * but the session id of the path.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <json-c/json.h>

#include "appendfile.h"
#include "clock.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

/* Requests awaiting their answer beyond this are dropped oldest first. */
#define AUDIT_MAX_PENDING	4096

struct audit_req {
	TAILQ_ENTRY(audit_req)	 entry;
	struct evhttp_request	*req;
	char			*what;
	char			*session_id;
	char			 who[32];
	char			 client[PEER_ADDR_MAX];
	char			 request_id[REQID_MAX + 1];
	int			 tcp;
};

static TAILQ_HEAD(, audit_req) pending = TAILQ_HEAD_INITIALIZER(pending);
static size_t npending;
static int audit_fd = -1;
static char *audit_path;

int
audit_open(const char *path)
{
	if ((audit_fd = appendfile_open(path)) == -1)
		return -1;
	audit_path = xstrdup(path);
	return 0;
}

int
audit_reopen(void)
{
	return audit_fd == -1 ? 0 : appendfile_reopen(audit_fd, audit_path);
}

static void
audit_req_free(struct audit_req *a)
{
	TAILQ_REMOVE(&pending, a, entry);
	npending--;
	free(a->what);
	free(a->session_id);
	free(a);
}

/* Who sent req: "uid:N" from the Unix socket's credentials or the TCP
   peer's socket owner, "token" for a bearer that was checked. */
static void
audit_who(struct evhttp_request *req, struct audit_req *a)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss), cl;
	struct ucred uc;
	long uid;
	int fd;

	strlcpy(a->who, "unknown", sizeof(a->who));
	if (evcon == NULL)
		return;
	fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon));
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return;
	if (ss.ss_family == AF_UNIX) {
		cl = sizeof(uc);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &cl) == 0)
			snprintf(a->who, sizeof(a->who), "uid:%u", (unsigned)uc.uid);
		return;
	}
	a->tcp = 1;
	if (conf.token != NULL && token_check(evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Authorization")))
		strlcpy(a->who, "token", sizeof(a->who));
	else if ((uid = peer_tcp_uid(fd)) >= 0)
		snprintf(a->who, sizeof(a->who), "uid:%ld", uid);
}

/* A stale entry whose request went away unanswered at this address. */
void
audit_forget(struct evhttp_request *req)
{
	struct audit_req *a;

	TAILQ_FOREACH(a, &pending, entry)
		if (a->req == req) {
			audit_req_free(a);
			return;
		}
}

void
audit_begin(struct evhttp_request *req, const char *what, const char *session_id)
{
	struct audit_req *a;
	char tid[REQID_TRACE_LEN + 1];

	if (audit_fd == -1)
		return;
	if (npending >= AUDIT_MAX_PENDING)
		audit_req_free(TAILQ_FIRST(&pending));
	a = xcalloc(1, sizeof(*a));
	a->req = req;
	a->what = xstrdup(what);
	a->session_id = session_id != NULL ? xstrdup(session_id) : NULL;
	audit_who(req, a);
	peer_client_addr(req, a->client, sizeof(a->client));
	reqid_current(a->request_id, tid, NULL);
	TAILQ_INSERT_TAIL(&pending, a, entry);
	npending++;
}

/* Write one record and make it durable. */
static void
audit_write(const struct audit_req *a, int status)
{
	json_object *o = xjson_object_new_object();
	char now[CLOCK_ISO_LEN];
	const char *s;
	char *line;

	clock_iso_now(now);
	json_object_object_add(o, "time", xjson_object_new_string(now));
	json_object_object_add(o, "who", xjson_object_new_string(a->who));
	json_object_object_add(o, "listener", xjson_object_new_string(
	    a->tcp ? "tcp" : "unix"));
	json_object_object_add(o, "client", xjson_object_new_string(a->client));
	json_object_object_add(o, "what", xjson_object_new_string(a->what));
	if (a->request_id[0] != '\0')
		json_object_object_add(o, "requestId",
		    xjson_object_new_string(a->request_id));
	json_object_object_add(o, "sessionId", a->session_id != NULL ?
	    xjson_object_new_string(a->session_id) : NULL);
	json_object_object_add(o, "status", xjson_object_new_int(status));
	json_object_object_add(o, "outcome", xjson_object_new_string(
	    status >= 200 && status < 300 ? "ok" : "error"));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	xasprintf(&line, "%s\n", s);
	if (write(audit_fd, line, strlen(line)) != (ssize_t)strlen(line) ||
	    fsync(audit_fd) == -1)
		log_warn("audit log %s", audit_path);
	free(line);
	json_object_put(o);
}

/* req's answer is sent (conn-input.c): its record goes to disk. */
void
audit_done(struct evhttp_request *req)
{
	struct audit_req *a;

	TAILQ_FOREACH(a, &pending, entry)
		if (a->req == req) {
			audit_write(a, evhttp_request_get_response_code(req));
			audit_req_free(a);
			return;
		}
}

void
audit_free(void)
{
	while (!TAILQ_EMPTY(&pending))
		audit_req_free(TAILQ_FIRST(&pending));
	if (audit_fd != -1)
		close(audit_fd);
	audit_fd = -1;
	free(audit_path);
	audit_path = NULL;
}
