/* SPDX-License-Identifier: ISC */
/*
 * gate.c: the gates every request passes: peer credentials (Unix socket),
 * Host allowlist (loopback names against DNS rebinding, --allow-host),
 * Origin, the
 * browser's Sec-Fetch-Site (cross-site requests without an Origin), and
 * the bearer token, which a loopback TCP peer running as the daemon's own
 * user may go without (peer.c); and the CORS preflight (gate-cors.c
 * writes the headers).
 */
#include "config.h"

#include <sys/socket.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "errors.h"
#include "serve.h"

/* The socket's address family (AF_UNIX or AF_INET*), -1 if unknown. */
static int
req_family(struct evhttp_request *req, int *fdp)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd;

	if (evcon == NULL)
		return -1;
	fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon));
	*fdp = fd;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return -1;
	return ss.ss_family;
}

/* Host is name, or name and our port (a default port may go without). */
static int
host_is(const char *host, const char *name)
{
	char want[300];

	snprintf(want, sizeof(want), "%s:%d", name, conf.bound_port);
	if (strcasecmp(host, want) == 0)
		return 1;
	return (conf.bound_port == 80 || conf.bound_port == 443) &&
	    strcasecmp(host, name) == 0;
}

/*
 * The Host header must name a loopback host and our port (against DNS
 * rebinding), or an --allow-host name; on a listener that is not
 * loopback, only an --allow-host name (a proxy's, or the host's).
 */
static int
host_ok(const char *host)
{
	const char *names[] = { "localhost", "127.0.0.1", "[::1]",
	    "host.docker.internal", conf.hostname };

	if (host == NULL)
		return 0;
	for (size_t i = 0; i < conf.n_allow_host; i++)
		if (host_is(host, conf.allow_host[i]) ||
		    strcasecmp(host, conf.allow_host[i]) == 0)
			return 1;
	if (!conf.tcp_loopback)
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (host_is(host, names[i]))
			return 1;
	return 0;
}

/* Same-origin loopback (the page is served by us) or --allow-origin. */
static int
origin_ok(const char *origin)
{
	char self[300];

	if (strcmp(origin, "null") == 0)
		return 0;
	for (size_t i = 0; i < conf.n_allow_origin; i++)
		if (strcasecmp(origin, conf.allow_origin[i]) == 0)
			return 1;
	if (conf.bound_port != 0) {
		snprintf(self, sizeof(self), "http://127.0.0.1:%d", conf.bound_port);
		if (strcasecmp(origin, self) == 0)
			return 1;
		snprintf(self, sizeof(self), "http://localhost:%d", conf.bound_port);
		if (strcasecmp(origin, self) == 0)
			return 1;
	}
	return 0;
}

/*
 * Fetch Metadata: a browser says where a request comes from.  From
 * another site, or another origin of this one (another port of
 * localhost), it is refused unless it names an Origin we serve or allow:
 * a cross-site GET carries no Origin and would pass as the same user's
 * otherwise.  "none" is a typed URL or a bookmark.  A link followed to
 * the console (a top-level navigation to a document) opens it as a typed
 * URL would: the page reads nothing for the site that linked it, and a
 * frame or a fetch is still refused.
 */
static int
fetch_site_ok(struct evhttp_request *req, enum gate_kind kind, const char *origin)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *site = evhttp_find_header(h, "Sec-Fetch-Site");
	const char *mode = evhttp_find_header(h, "Sec-Fetch-Mode");
	const char *dest = evhttp_find_header(h, "Sec-Fetch-Dest");

	if (site == NULL || strcasecmp(site, "same-origin") == 0 ||
	    strcasecmp(site, "none") == 0)
		return 1;
	if (kind == GATE_PUBLIC && evhttp_request_get_command(req) == EVHTTP_REQ_GET &&
	    mode != NULL && strcasecmp(mode, "navigate") == 0 &&
	    dest != NULL && strcasecmp(dest, "document") == 0)
		return 1;
	return origin != NULL && origin_ok(origin);
}

/*
 * Whether a TCP peer is let in without the bearer: only on a loopback
 * listener, and only when the kernel says its socket is our uid's.  With
 * a configured token this opens the console and /health only; with the
 * one we generated, everything (the same user's browser and tools).
 */
static int
tcp_peer_trusted(int fd)
{
	return conf.tcp_loopback && peer_tcp_trusted(fd);
}

/* 401 unauthorized with the Bearer challenge. */
static int
gate_unauthorized(struct evhttp_request *req)
{
	int fd;

	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "WWW-Authenticate", "Bearer");
	metrics_refusal(req_family(req, &fd) == AF_UNIX, "unauthorized");
	http_error(req, "unauthorized", NULL);
	return -1;
}

/*
 * The bearer rule.  Unix socket (peer already checked): a configured token
 * gates the API as upstream does.  TCP: a peer that is not ours needs the
 * bearer for every route; ours needs it only for the API and only when
 * the token was configured.
 */
static int
gate_bearer(struct evhttp_request *req, enum gate_kind kind, int fam, int fd)
{
	const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	int open_route = kind == GATE_PUBLIC ||
	    (kind == GATE_HEALTH && !conf.require_auth);

	if (conf.token == NULL || token_check(auth)) {
		conn_authed(req);
		return 0;
	}
	if (fam == AF_UNIX)
		return conf.token_generated || open_route ? 0 :
		    gate_unauthorized(req);
	if (!tcp_peer_trusted(fd))
		/* The console's files carry no secret; with a configured token
		 * a remote browser loads them and then asks for it. */
		return kind == GATE_PUBLIC && !conf.token_generated ? 0 :
		    gate_unauthorized(req);
	conn_authed(req);		/* our own user */
	return conf.token_generated || open_route ? 0 : gate_unauthorized(req);
}

int
gate_request(struct evhttp_request *req, enum gate_kind kind)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *origin = evhttp_find_header(h, "Origin");
	int fd = -1, fam = req_family(req, &fd);

	if (fam == AF_UNIX && !peer_unix_trusted(fd)) {
		metrics_refusal(1, "forbidden_host");
		http_send_qerr(req, qerr_new("forbidden_host",
		    "Peer credentials not allowed"));
		return -1;
	}
	if (fam != AF_UNIX && !host_ok(evhttp_find_header(h, "Host"))) {
		metrics_refusal(0, "forbidden_host");
		http_error(req, "forbidden_host", NULL);
		return -1;
	}
	if (origin != NULL && !origin_ok(origin)) {
		metrics_refusal(fam == AF_UNIX, "origin_forbidden");
		http_error(req, "origin_forbidden", NULL);
		return -1;
	}
	if (!fetch_site_ok(req, kind, origin)) {
		metrics_refusal(fam == AF_UNIX, "origin_forbidden");
		http_send_qerr(req, qerr_new("origin_forbidden",
		    "Cross-site request refused (Sec-Fetch-Site)"));
		return -1;
	}
	return gate_bearer(req, kind, fam, fd);
}

/*
 * A CORS preflight from an allowed origin: answered before the bearer
 * gate (a browser never sends credentials on it).  1 when answered.
 */
int
gate_preflight(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *origin = evhttp_find_header(h, "Origin");
	int fd = -1, fam = req_family(req, &fd);

	if (evhttp_request_get_command(req) != EVHTTP_REQ_OPTIONS ||
	    origin == NULL ||
	    evhttp_find_header(h, "Access-Control-Request-Method") == NULL)
		return 0;
	if (fam == AF_UNIX && !peer_unix_trusted(fd))
		return 0;
	if (fam != AF_UNIX && !host_ok(evhttp_find_header(h, "Host")))
		return 0;
	if (!origin_ok(origin))
		return 0;
	gate_cors_headers(req);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Access-Control-Max-Age", "600");
	evhttp_send_reply(req, 204, NULL, NULL);
	return 1;
}
