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
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stddef.h>
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

int
sdnotify_init(void)
{
	const char *env = getenv("NOTIFY_SOCKET");
	int rc;

	rc = sdnotify_parse(env);
	unsetenv("NOTIFY_SOCKET");
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
	    http_conn_count());
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
	if (notify_fd != -1)
		close(notify_fd);
	notify_fd = -1;
}
