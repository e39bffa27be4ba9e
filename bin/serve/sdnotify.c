/* SPDX-License-Identifier: ISC */
/*
 * sdnotify.c: the systemd readiness protocol without libsystemd.
 *
 * When NOTIFY_SOCKET names a Unix datagram socket (a path, or an abstract
 * name written "@name"), each state change is one datagram of
 * newline-separated KEY=VALUE fields: READY=1 (with MAINPID) once the daemon
 * has answered its own GET /capabilities, STATUS= with the session counts
 * (sent when they change, at most once per SDNOTIFY_STATUS_MS), and
 * STOPPING=1 on shutdown.  The variable is removed from the environment so
 * that the children never talk to systemd in our name.
 *
 * With WatchdogSec= systemd sets WATCHDOG_USEC (and WATCHDOG_PID): from
 * READY=1 on, a timer on the event loop sends WATCHDOG=1 every half
 * period.  The ping comes from the loop itself, so a loop that stalls (a
 * blocking call, a spin) stops pinging and systemd restarts the daemon.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "serve.h"

#define SDNOTIFY_STATUS_MS	1000

static int notify_fd = -1;
static struct sockaddr_un notify_addr;
static socklen_t notify_len;
static struct event *status_timer;
static struct event *watchdog_timer;
static uint64_t watchdog_usec;		/* 0: no watchdog */
static char last_status[256];

/*
 * Parse NOTIFY_SOCKET into a sockaddr_un; -1 (logged) when it is set but
 * unusable, 0 when unset, 1 when usable.
 */
static int
sdnotify_parse(const char *env)
{
	size_t n;

	if (env == NULL || *env == '\0')
		return 0;
	n = strlen(env);
	if ((env[0] != '/' && env[0] != '@') || n >= sizeof(notify_addr.sun_path)) {
		log_warnx("NOTIFY_SOCKET=%s: not an absolute path or an abstract "
		    "@name that fits a socket address; not notifying", env);
		return -1;
	}
	memset(&notify_addr, 0, sizeof(notify_addr));
	notify_addr.sun_family = AF_UNIX;
	memcpy(notify_addr.sun_path, env, n);
	if (env[0] == '@')
		notify_addr.sun_path[0] = '\0';
	/* Abstract names are exactly n bytes long: no trailing NUL. */
	notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
	    (env[0] == '/' ? 1 : 0));
	return 1;
}

/*
 * WATCHDOG_USEC, when it is meant for us (WATCHDOG_PID unset or ours):
 * the period in microseconds, 0 for none.  Both variables are removed.
 */
static uint64_t
sdnotify_watchdog_env(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	const char *errstr = NULL;
	long long v = 0;

	if (usec != NULL && *usec != '\0') {
		v = strtonum(usec, 1, 86400LL * 1000000, &errstr);
		if (errstr != NULL) {
			log_warnx("WATCHDOG_USEC=%s: %s; no watchdog", usec, errstr);
			v = 0;
		}
		if (pid != NULL && *pid != '\0' &&
		    strtonum(pid, 1, INT32_MAX, &errstr) != (long long)getpid())
			v = 0;
	}
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return (uint64_t)v;
}

int
sdnotify_init(void)
{
	const char *env = getenv("NOTIFY_SOCKET");
	int rc;

	rc = sdnotify_parse(env);
	unsetenv("NOTIFY_SOCKET");
	watchdog_usec = sdnotify_watchdog_env();
	if (rc != 1)
		return rc;
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (notify_fd == -1) {
		log_warn("NOTIFY_SOCKET: socket");
		return -1;
	}
	return 1;
}

int
sdnotify_enabled(void)
{
	return notify_fd != -1;
}

/* Send one datagram; failures are logged, never fatal. */
void
sdnotify_send(const char *msg)
{
	if (notify_fd == -1)
		return;
	if (sendto(notify_fd, msg, strlen(msg), MSG_NOSIGNAL,
	    (struct sockaddr *)&notify_addr, notify_len) == -1)
		log_warn("sd_notify");
}

/* The STATUS= text for the current counts. */
static void
sdnotify_status_text(char *buf, size_t size)
{
	snprintf(buf, size, "STATUS=%s%zu sessions, %zu restores in flight, "
	    "%zu prompts running, %zu connections",
	    serve_shutting_down() ? "stopping: " : "",
	    sessions_count(), inflight_count(), sessions_active_prompts(),
	    conn_count());
}

/* The rate limiter: send STATUS= when the text changed since the last one. */
static void
sdnotify_status_tick(evutil_socket_t fd, short what, void *arg)
{
	char buf[sizeof(last_status)];

	(void)fd; (void)what; (void)arg;
	sdnotify_status_text(buf, sizeof(buf));
	if (strcmp(buf, last_status) == 0)
		return;
	strlcpy(last_status, buf, sizeof(last_status));
	sdnotify_send(buf);
}

/* The watchdog timer: the loop is alive. */
static void
sdnotify_watchdog_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what; (void)arg;
	sdnotify_send("WATCHDOG=1");
}

/* Ping every half period from the event loop. */
static void
sdnotify_watchdog_start(void)
{
	uint64_t half = watchdog_usec / 2;
	struct timeval tv = { (time_t)(half / 1000000),
	    (suseconds_t)(half % 1000000) };

	if (watchdog_usec == 0 || notify_fd == -1)
		return;
	watchdog_timer = event_new(serve_base, -1, EV_PERSIST,
	    sdnotify_watchdog_tick, NULL);
	if (watchdog_timer == NULL || event_add(watchdog_timer, &tv) == -1) {
		log_warnx("watchdog: cannot start its timer");
		return;
	}
	sdnotify_send("WATCHDOG=1");
	log_info("systemd watchdog: WATCHDOG=1 every %llu ms",
	    (unsigned long long)(half / 1000));
}

void
sdnotify_ready(void)
{
	char msg[sizeof(last_status) + 64];
	struct timeval tv = { SDNOTIFY_STATUS_MS / 1000,
	    (SDNOTIFY_STATUS_MS % 1000) * 1000 };

	if (notify_fd == -1)
		return;
	sdnotify_status_text(last_status, sizeof(last_status));
	snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%ld\n%s", (long)getpid(),
	    last_status);
	sdnotify_send(msg);
	log_info("notified systemd: ready");
	status_timer = event_new(serve_base, -1, EV_PERSIST,
	    sdnotify_status_tick, NULL);
	if (status_timer != NULL)
		event_add(status_timer, &tv);
	sdnotify_watchdog_start();
}

void
sdnotify_stopping(void)
{
	char msg[sizeof(last_status) + 16];

	if (notify_fd == -1)
		return;
	sdnotify_status_text(last_status, sizeof(last_status));
	snprintf(msg, sizeof(msg), "STOPPING=1\n%s", last_status);
	sdnotify_send(msg);
}

void
sdnotify_free(void)
{
	if (status_timer != NULL)
		event_free(status_timer);
	status_timer = NULL;
	if (watchdog_timer != NULL)
		event_free(watchdog_timer);
	watchdog_timer = NULL;
	if (notify_fd != -1)
		close(notify_fd);
	notify_fd = -1;
}
