/* SPDX-License-Identifier: ISC */
/*
 * ws-upgrade.c: the RFC 6455 opening handshake on an evhttp request.
 *
 * libevent 2.1's evhttp has no upgrade support, so a valid GET /acp with
 * Upgrade: websocket is answered here: the usual gates run first (a bearer
 * given as the qwen-bearer.<base64url> subprotocol counts as an
 * Authorization header), then the 101 is written on the connection's
 * bufferevent and ws.c takes the connection over.  The bearer subprotocol
 * is never echoed; the first other offered subprotocol is selected (as
 * upstream does), or none.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <sha1.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "base64.h"
#include "errors.h"
#include "log.h"
#include "serve.h"
#include "ws.h"

#define WS_GUID			"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_BEARER_PREFIX	"qwen-bearer."
#define WS_TOKEN_MAX		512
#define WS_SUBPROTO_MAX		128

/* Whether the comma-separated list value holds token (case-insensitive). */
static int
list_has(const char *value, const char *token)
{
	size_t tlen = strlen(token);
	const char *p = value;

	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, ',');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

		while (n > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == tlen && strncasecmp(p, token, n) == 0)
			return 1;
		p = end != NULL ? end + 1 : NULL;
	}
	return 0;
}

/* GET with Upgrade: websocket; other methods keep their HTTP meaning. */
int
ws_wants_upgrade(struct evhttp_request *req)
{
	const char *up = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Upgrade");

	return evhttp_request_get_command(req) == EVHTTP_REQ_GET && up != NULL &&
	    list_has(up, "websocket");
}

/* An RFC 7230 token character. */
static int
tchar(int c)
{
	return isalnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/*
 * Walk every Sec-WebSocket-Protocol value: the bearer subprotocol's token
 * (decoded) into bearer, the first plain token into chosen.
 */
static void
subprotocols(struct evkeyvalq *h, char *bearer, size_t bsize, char *chosen,
    size_t csize)
{
	size_t plen = strlen(WS_BEARER_PREFIX);
	struct evkeyval *kv;

	bearer[0] = chosen[0] = '\0';
	TAILQ_FOREACH(kv, h, next) {
		const char *p = kv->value;

		if (strcasecmp(kv->key, "Sec-WebSocket-Protocol") != 0)
			continue;
		while (*p != '\0') {
			size_t n;
			long m;

			p += strspn(p, " \t,");
			for (n = 0; tchar((unsigned char)p[n]); n++)
				;
			if (n == 0) {
				p += strcspn(p, ",");
				continue;
			}
			if (n > plen && strncmp(p, WS_BEARER_PREFIX, plen) == 0) {
				m = base64_decode(BASE64_URL, p + plen,
				    n - plen, bearer, bsize - 1);
				bearer[m > 0 ? m : 0] = '\0';
				if (m > 0 && memchr(bearer, '\0', (size_t)m) != NULL)
					bearer[0] = '\0';
			} else if (chosen[0] == '\0' && n < csize) {
				memcpy(chosen, p, n);
				chosen[n] = '\0';
			}
			p += n;
		}
	}
}

/* Sec-WebSocket-Accept for key: base64(SHA-1(key GUID)). */
static void
accept_value(const char *key, char out[29])
{
	uint8_t digest[SHA1_DIGEST_LENGTH];
	SHA1_CTX sha;

	SHA1Init(&sha);
	SHA1Update(&sha, (const uint8_t *)key, strlen(key));
	SHA1Update(&sha, (const uint8_t *)WS_GUID, strlen(WS_GUID));
	SHA1Final(digest, &sha);
	base64_encode(BASE64_STD, digest, sizeof(digest), out, 29);
}

/* 400 bad_request with a message naming what is wrong with the handshake. */
static void
bad_handshake(struct evhttp_request *req, const char *what)
{
	http_send_qerr(req, qerr_new("bad_request", "WebSocket handshake: %s", what));
}

/* The handshake headers proper: NULL when valid, else what is wrong. */
static const char *
handshake_problem(struct evkeyvalq *h)
{
	const char *conn = evhttp_find_header(h, "Connection");
	const char *ver = evhttp_find_header(h, "Sec-WebSocket-Version");
	const char *key = evhttp_find_header(h, "Sec-WebSocket-Key");
	unsigned char raw[18];

	if (conn == NULL || !list_has(conn, "upgrade"))
		return "Connection: Upgrade required";
	if (ver == NULL || strcmp(ver, "13") != 0)
		return "Sec-WebSocket-Version must be 13";
	if (key == NULL || strlen(key) != 24 ||
	    base64_decode(BASE64_STD, key, 24, raw, sizeof(raw)) != 16)
		return "Sec-WebSocket-Key must be 16 bytes in base64";
	return NULL;
}

/*
 * A bearer given only as a subprotocol becomes the Authorization header,
 * so that gate_request() judges it exactly as it judges every route.
 */
static void
bearer_from_subprotocol(struct evkeyvalq *h, const char *bearer)
{
	char value[WS_TOKEN_MAX + 8];

	if (bearer[0] == '\0' || evhttp_find_header(h, "Authorization") != NULL)
		return;
	snprintf(value, sizeof(value), "Bearer %s", bearer);
	if (evhttp_add_header(h, "Authorization", value) == -1)
		log_debug("websocket: unusable bearer subprotocol");
}

/* Gates, handshake checks, then the 101 and the takeover (ws.c). */
void
ws_upgrade(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	char bearer[WS_TOKEN_MAX + 1], chosen[WS_SUBPROTO_MAX], accept[29];
	char head[512];
	const char *problem;

	subprotocols(h, bearer, sizeof(bearer), chosen, sizeof(chosen));
	bearer_from_subprotocol(h, bearer);
	explicit_bzero(bearer, sizeof(bearer));
	if (gate_request(req, GATE_API) == -1)
		return;
	if (serve_shutting_down()) {
		http_error(req, "workspace_draining", NULL);
		return;
	}
	if ((problem = handshake_problem(h)) != NULL) {
		if (strstr(problem, "Version") != NULL)
			evhttp_add_header(evhttp_request_get_output_headers(req),
			    "Sec-WebSocket-Version", "13");
		bad_handshake(req, problem);
		return;
	}
	if (evcon == NULL) {
		http_error(req, "internal", NULL);
		return;
	}
	accept_value(evhttp_find_header(h, "Sec-WebSocket-Key"), accept);
	snprintf(head, sizeof(head), "HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Accept: %s\r\n%s%s%s\r\n", accept,
	    chosen[0] != '\0' ? "Sec-WebSocket-Protocol: " : "", chosen,
	    chosen[0] != '\0' ? "\r\n" : "");
	ws_conn_start(req, head);
}
