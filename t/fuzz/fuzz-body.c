/* SPDX-License-Identifier: ISC */
/*
 * fuzz-body.c: libFuzzer harness, JSON request bodies through the
 * daemon's real request path: the route, the session and the caller
 * checked, the value budget counted (json-limit.c), the body parsed and
 * read by the route.
 *
 * The first byte of an input picks a POST route from routes[], the
 * second its headers (bit 0: the client id the fixture's load was
 * given); the rest is the body, sent
 * with its Content-Length on a new connection (serve-fixture.c).  With
 * FUZZ_BODY_CHILD naming an agent (the tests' fake child) the fixture's
 * session is loaded first, and again whenever an input ended it or
 * detached its client, so that
 * the routes of a live session parse their bodies too; without it no
 * session is live and only the others do.  Routes that delete or archive
 * the fixture's transcript are left out.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"
#include "serve-fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define S	"/session/" FIXTURE_SID

static const char *const routes[] = {
	S "/prompt", S "/cancel", S "/branch", S "/model", S "/approval-mode",
	S "/heartbeat", S "/continue", S "/fork", S "/goal", S "/rewind",
	S "/load", S "/resume", S "/permission/p1", S "/detach", "/session",
	"/acp", "/workspace/primary/session-groups",
};
#define NROUTES	(sizeof(routes) / sizeof(routes[0]))

static int live;	/* FUZZ_BODY_CHILD: the fixture's session is loaded */
static char client_id[SERVE_CLIENT_ID_MAX + 1] = "fuzz-client";

/* POST body to path on one connection: its status (0: none). */
static int
post(const char *path, int client, const uint8_t *body, size_t len)
{
	char head[512], hdr[SERVE_CLIENT_ID_MAX + 32];
	uint8_t *msg;
	int n, status;

	snprintf(hdr, sizeof hdr, "X-Qwen-Client-Id: %s\r\n", client_id);
	n = snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: localhost\r\n"
	    "Content-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n",
	    path, client ? hdr : "", len);
	if (n < 0 || (size_t)n >= sizeof head || (msg = malloc((size_t)n + len)) == NULL)
		abort();
	memcpy(msg, head, (size_t)n);
	if (len > 0)
		memcpy(msg + n, body, len);
	status = fixture_send(msg, (size_t)n + len);
	free(msg);
	return status;
}

/* Keep the fixture's session live (loaded) with our client attached for
   the next input; the daemon names the client. */
static void
keep_live(void)
{
	static const char b[] = "{}";
	struct session *s;
	struct client *c;

	if (!live || ((s = sessions_find(FIXTURE_SID)) != NULL &&
	    clients_find(&s->clients, client_id) != NULL))
		return;
	(void)post(S "/load", 0, (const uint8_t *)b, sizeof b - 1);
	if ((s = sessions_find(FIXTURE_SID)) != NULL &&
	    (c = TAILQ_LAST(&s->clients, client_list)) != NULL)
		strlcpy(client_id, c->id, sizeof client_id);
}

/* One input: a route, its headers and a body, on one connection. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	int status;

	if (!ready) {
		fixture_setup(getenv("FUZZ_BODY_CHILD"));
		live = getenv("FUZZ_BODY_CHILD") != NULL;
		ready = 1;
	}
	if (size < 2)
		return 0;
	keep_live();
	status = post(routes[data[0] % NROUTES], data[1] & 1, data + 2, size - 2);
	if (getenv("FUZZ_BODY_STATUS") != NULL)	/* what the replay reports */
		printf("%s %d\n", routes[data[0] % NROUTES], status);
	return 0;
}
