/* SPDX-License-Identifier: ISC */
/*
 * sockact: socket activation without systemd, for the tests.
 *
 *	sockact [-p PID] [-n NAMES] -l SPEC... -- PROGRAM [ARG...]
 *
 * Binds and listens on each SPEC in order -- unix:PATH, tcp:HOST:PORT
 * (port 0 picks one), or, to test the refusals, udp:HOST:PORT (a datagram
 * socket), bound-unix:PATH (bound, not listening) and file:PATH (not a
 * socket) -- moves them to descriptors 3, 4, ..., sets LISTEN_FDS,
 * LISTEN_PID (our pid, which PROGRAM keeps; -p overrides it) and
 * LISTEN_FDNAMES (-n), and execs PROGRAM, as systemd-socket-activate does.
 * The port each tcp: spec got is printed first: "sockact: tcp port N".
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SPECS	8

/* A Unix stream socket bound at path; listening unless bound_only. */
static int
open_unix(const char *path, int bound_only)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		errx(2, "%s: too long", path);
	strcpy(sun.sun_path, path);
	unlink(path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    (!bound_only && listen(fd, 16) == -1))
		err(1, "unix:%s", path);
	return fd;
}

/* An IPv4 socket on host:port (type SOCK_STREAM listens). */
static int
open_inet(const char *spec, int type)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	char host[64], *colon;
	int fd, one = 1;

	if (strlcpy(host, spec, sizeof(host)) >= sizeof(host) ||
	    (colon = strrchr(host, ':')) == NULL)
		errx(2, "%s: want HOST:PORT", spec);
	*colon = '\0';
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		errx(2, "%s: not an IPv4 address", host);
	if ((fd = socket(AF_INET, type, 0)) == -1)
		err(1, "socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    (type == SOCK_STREAM && listen(fd, 16) == -1))
		err(1, "%s", spec);
	if (type == SOCK_STREAM &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		printf("sockact: tcp port %d\n", ntohs(sin.sin_port));
	return fd;
}

static int
open_spec(const char *spec)
{
	int fd;

	if (strncmp(spec, "unix:", 5) == 0)
		return open_unix(spec + 5, 0);
	if (strncmp(spec, "bound-unix:", 11) == 0)
		return open_unix(spec + 11, 1);
	if (strncmp(spec, "tcp:", 4) == 0)
		return open_inet(spec + 4, SOCK_STREAM);
	if (strncmp(spec, "udp:", 4) == 0)
		return open_inet(spec + 4, SOCK_DGRAM);
	if (strncmp(spec, "file:", 5) == 0) {
		if ((fd = open(spec + 5, O_RDONLY)) == -1)
			err(1, "%s", spec + 5);
		return fd;
	}
	errx(2, "%s: unknown socket spec", spec);
}

int
main(int argc, char **argv)
{
	const char *specs[MAX_SPECS], *names = NULL, *pid = NULL;
	int fds[MAX_SPECS], n = 0, ch;
	char buf[32];

	while ((ch = getopt(argc, argv, "l:n:p:")) != -1) {
		switch (ch) {
		case 'l':
			if (n == MAX_SPECS)
				errx(2, "too many sockets");
			specs[n++] = optarg;
			break;
		case 'n': names = optarg; break;
		case 'p': pid = optarg; break;
		default:
			errx(2, "usage: sockact [-p PID] [-n NAMES] -l SPEC... -- PROGRAM [ARG...]");
		}
	}
	if (optind >= argc || n == 0)
		errx(2, "usage: sockact [-p PID] [-n NAMES] -l SPEC... -- PROGRAM [ARG...]");
	/* Open everything above the target range, then move into place. */
	for (int i = 0; i < n; i++) {
		int fd = open_spec(specs[i]);

		if ((fds[i] = fcntl(fd, F_DUPFD, 3 + MAX_SPECS)) == -1)
			err(1, "dup");
		close(fd);
	}
	for (int i = 0; i < n; i++) {
		if (dup2(fds[i], 3 + i) == -1)
			err(1, "dup2");
		close(fds[i]);
	}
	fflush(stdout);
	snprintf(buf, sizeof(buf), "%d", n);
	setenv("LISTEN_FDS", buf, 1);
	snprintf(buf, sizeof(buf), "%ld", (long)getpid());
	setenv("LISTEN_PID", pid != NULL ? pid : buf, 1);
	if (names != NULL)
		setenv("LISTEN_FDNAMES", names, 1);
	execvp(argv[optind], argv + optind);
	err(127, "%s", argv[optind]);
}
