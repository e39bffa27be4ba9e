/* SPDX-License-Identifier: ISC */
/*
 * serve-fixture.c: the daemon the HTTP fuzz harnesses drive (fuzz-http,
 * fuzz-body), set up once as the daemon sets itself up: a workspace and a
 * data dir of its own (one transcript in it), no listener but a loopback
 * evhttp socket of the harness's.  Each input goes on a new connection.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "clock.h"
#include "serve.h"
#include "serve-fixture.h"

struct evhttp *serve_fuzz_http(int, char **);

static struct sockaddr_in addr;

/* A transcript so that the session routes find something to read. */
static void
fixture(const char *data, const char *ws)
{
	char path[1024], cmd[2048];
	FILE *f;
	size_t i;

	snprintf(path, sizeof path, "%s/projects/", data);
	for (i = strlen(path); *ws != '\0' && i < sizeof path - 1; ws++)
		path[i++] = (*ws >= 'a' && *ws <= 'z') || (*ws >= 'A' && *ws <= 'Z') ||
		    (*ws >= '0' && *ws <= '9') ? *ws : '-';
	path[i] = '\0';
	snprintf(cmd, sizeof cmd, "mkdir -p '%s/chats'", path);
	if (system(cmd) != 0)
		abort();
	strlcat(path, "/chats/" FIXTURE_SID ".jsonl", sizeof path);
	if ((f = fopen(path, "w")) == NULL)
		abort();
	fputs("{\"uuid\":\"u1\",\"parentUuid\":null,\"sessionId\":"
	    "\"" FIXTURE_SID "\",\"type\":\"user\","
	    "\"message\":{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}}\n", f);
	fclose(f);
}

/* The daemon, once: options as a test would give them. */
void
fixture_setup(const char *child)
{
	static char tmpl[] = "/tmp/fuzz-http.XXXXXX";
	char ws[256], data[256], sock[256], cpath[1024];
	char *argv[] = { "qwen-serve", "--workspace", ws, "--data-dir", data,
	    "--socket", sock, "--no-tcp", "--no-web", "--child", cpath,
	    "--log-level", "error", NULL };
	struct evhttp_bound_socket *b;
	struct evhttp *http;
	socklen_t len = sizeof addr;

	signal(SIGPIPE, SIG_IGN);
	if (mkdtemp(tmpl) == NULL)
		abort();
	snprintf(ws, sizeof ws, "%s/ws", tmpl);
	snprintf(data, sizeof data, "%s/data", tmpl);
	snprintf(sock, sizeof sock, "%s/s.sock", tmpl);
	snprintf(cpath, sizeof cpath, "%s", child != NULL ? child :
	    "/nonexistent/qwen-acp-child");
	if (mkdir(ws, 0700) == -1 || mkdir(data, 0700) == -1)
		abort();
	if ((http = serve_fuzz_http(13, argv)) == NULL ||
	    (b = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0)) == NULL ||
	    getsockname(evhttp_bound_socket_get_fd(b), (struct sockaddr *)&addr,
	    &len) == -1)
		abort();
	/* As if on port 80: "Host: localhost" passes the loopback check
	   without the inputs having to guess an ephemeral port. */
	conf.bound_port = 80;
	fixture(data, conf.workspace);
}

/* The status of an answer's first line ("HTTP/1.1 NNN"), or 0. */
static int
status_of(const char *buf, size_t n)
{
	if (n < 12 || strncmp(buf, "HTTP/1.", 7) != 0)
		return 0;
	return atoi(buf + 9);
}

/* Run the loop until fd is closed by the daemon or the deadline passes. */
static int
run_until_closed(int fd, uint64_t deadline)
{
	char buf[65536];
	ssize_t n;
	int status = 0, first = 1;

	while (clock_mono_ms() < deadline) {
		event_base_loop(serve_base, EVLOOP_NONBLOCK);
		n = read(fd, buf, sizeof buf);
		if (n > 0 && first) {
			status = status_of(buf, (size_t)n);
			first = 0;
		}
		if (n > 0 && getenv("FUZZ_HTTP_ECHO") != NULL)
			fwrite(buf, 1, (size_t)n, stderr);	/* harness debugging */
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			return status;
		if (n == -1) {
			struct pollfd p = { fd, POLLIN, 0 };
			(void)poll(&p, 1, 1);
		}
	}
	return status;
}

/*
 * Connect the non-blocking fd to the daemon: the kernel completes a
 * loopback handshake by itself, but the daemon's children end with a
 * SIGCHLD that may interrupt the wait.  0, or -1 with errno.
 */
static int
connect_loopback(int fd)
{
	struct pollfd p = { fd, POLLOUT, 0 };
	socklen_t len = sizeof(int);
	int err = 0;

	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EINTR)
		return -1;
	while (poll(&p, 1, 1000) == -1)
		if (errno != EINTR)
			return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		return -1;
	errno = err;
	return err == 0 ? 0 : -1;
}

/* One input on a connection of its own, closed with a reset. */
int
fixture_send(const uint8_t *data, size_t size)
{
	struct linger nolinger = { 1, 0 };
	int fd, one = 1, i, status;
	size_t off = 0;
	ssize_t n;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		abort();
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	/* Close with a reset: thousands of connections a second would
	   otherwise use up the ephemeral ports in TIME_WAIT. */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &nolinger, sizeof nolinger);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (connect_loopback(fd) == -1) {
		fprintf(stderr, "fuzz: connect: %s\n", strerror(errno));
		abort();
	}
	while (off < size) {
		n = write(fd, data + off, size - off);
		if (n > 0)
			off += (size_t)n;
		else if (n == -1 && errno != EAGAIN && errno != EINTR)
			break;
		event_base_loop(serve_base, EVLOOP_NONBLOCK);
	}
	shutdown(fd, SHUT_WR);
	status = run_until_closed(fd, clock_mono_ms() + 1000);
	close(fd);
	/* Let the daemon see the close and free the connection. */
	for (i = 0; i < 4; i++)
		event_base_loop(serve_base, EVLOOP_NONBLOCK);
	return status;
}
