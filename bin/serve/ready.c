/* SPDX-License-Identifier: ISC */
/*
 * ready.c: the readiness probe behind READY=1.
 *
 * "Ready" means a client gets an answer, not merely that a socket is bound:
 * the daemon connects to its own listener (the Unix socket, else the TCP
 * one), sends GET /capabilities through the same gates as any client, and
 * calls back once the status line reads 200.  A failed attempt is retried
 * every READY_RETRY_MS; systemd's start timeout bounds the whole thing.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "log.h"
#include "serve.h"

#define READY_RETRY_MS		200
#define READY_TIMEOUT_S		10
#define READY_STATUS_MAX	256	/* bytes of status line we look at */

static struct bufferevent *probe_bev;
static struct event *probe_timer;
static void (*probe_done)(void);
static unsigned probe_failures;

static void	ready_attempt(evutil_socket_t, short, void *);

/* Tear the current attempt down; retry unless ok. */
static void
ready_finish(int ok, const char *why)
{
	struct timeval tv = { 0, READY_RETRY_MS * 1000 };

	if (probe_bev != NULL)
		bufferevent_free(probe_bev);
	probe_bev = NULL;
	if (ok) {
		log_info("readiness probe: GET /capabilities answered 200");
		if (probe_timer != NULL)
			event_free(probe_timer);
		probe_timer = NULL;
		probe_done();
		return;
	}
	/* The first failure and then one in 25 (every 5 s). */
	if (probe_failures++ % 25 == 0)
		log_warnx("readiness probe: %s; retrying", why);
	if (serve_shutting_down())
		return;
	if (probe_timer == NULL)
		probe_timer = evtimer_new(serve_base, ready_attempt, NULL);
	if (probe_timer != NULL)
		evtimer_add(probe_timer, &tv);
}

/* Read the status line: "HTTP/1.x 200 ...". */
static void
ready_read(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr eol;
	char line[READY_STATUS_MAX];
	size_t n;

	(void)arg;
	eol = evbuffer_search(in, "\r\n", 2, NULL);
	if (eol.pos == -1) {
		if (evbuffer_get_length(in) >= sizeof(line))
			ready_finish(0, "status line too long");
		return;
	}
	n = (size_t)eol.pos < sizeof(line) - 1 ? (size_t)eol.pos : sizeof(line) - 1;
	evbuffer_copyout(in, line, n);
	line[n] = '\0';
	if (strncmp(line, "HTTP/1.", 7) == 0 && strncmp(line + 8, " 200 ", 5) == 0)
		ready_finish(1, NULL);
	else
		ready_finish(0, "GET /capabilities did not answer 200");
}

/* Connected: send the request.  Anything else ends the attempt. */
static void
ready_event(struct bufferevent *bev, short what, void *arg)
{
	char host[64];
	int tcp = (int)(intptr_t)arg;

	if (!(what & BEV_EVENT_CONNECTED)) {
		ready_finish(0, (what & BEV_EVENT_TIMEOUT) ? "timed out" :
		    (what & BEV_EVENT_EOF) ? "connection closed" :
		    strerror(EVUTIL_SOCKET_ERROR()));
		return;
	}
	if (!tcp)
		strlcpy(host, "localhost", sizeof(host));
	else
		snprintf(host, sizeof(host), "%s:%d", tcp == AF_INET6 ? "[::1]" :
		    "127.0.0.1", conf.bound_port);
	evbuffer_add_printf(bufferevent_get_output(bev),
	    "GET /capabilities HTTP/1.1\r\nHost: %s\r\n%s%s%s"
	    "Connection: close\r\n\r\n", host,
	    conf.token != NULL ? "Authorization: Bearer " : "",
	    conf.token != NULL ? conf.token : "", conf.token != NULL ? "\r\n" : "");
}

/* One attempt: connect to our own listener. */
static void
ready_attempt(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { READY_TIMEOUT_S, 0 };
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int family;

	(void)fd; (void)what; (void)arg;
	if (serve_shutting_down())
		return;
	if ((family = listen_probe_addr(&ss, &len)) == -1) {
		ready_finish(0, "no listener to probe");
		return;
	}
	probe_bev = bufferevent_socket_new(serve_base, -1,
	    BEV_OPT_CLOSE_ON_FREE);
	if (probe_bev == NULL) {
		ready_finish(0, "out of memory");
		return;
	}
	bufferevent_setcb(probe_bev, ready_read, NULL, ready_event,
	    (void *)(intptr_t)(family == AF_UNIX ? 0 : family));
	bufferevent_set_timeouts(probe_bev, &tv, &tv);
	bufferevent_enable(probe_bev, EV_READ | EV_WRITE);
	/* A synchronous failure may already have run ready_event(). */
	if (bufferevent_socket_connect(probe_bev, (struct sockaddr *)&ss,
	    (int)len) == -1 && probe_bev != NULL)
		ready_finish(0, strerror(errno));
}

void
ready_probe_start(void (*done)(void))
{
	probe_done = done;
	ready_attempt(-1, 0, NULL);
}

void
ready_probe_free(void)
{
	if (probe_bev != NULL)
		bufferevent_free(probe_bev);
	probe_bev = NULL;
	if (probe_timer != NULL)
		event_free(probe_timer);
	probe_timer = NULL;
}
