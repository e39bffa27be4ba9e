/* SPDX-License-Identifier: ISC */
/*
 * notify-recv: a stand-in for systemd's NOTIFY_SOCKET end.
 *
 *	notify-recv [-c CMD] SOCKET OUT
 *
 * Binds a Unix datagram socket at SOCKET (a path, or "@name" for an
 * abstract one), creates OUT once bound, and appends each datagram to OUT
 * as one line with its newlines shown as '|'.  With -c, CMD runs through
 * sh the moment a datagram with READY=1 arrives, and "ready-check: STATUS"
 * (its exit status) follows that line.  Runs until killed.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <err.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bind the datagram socket named by name; exits on error. */
static int
bind_notify(const char *name)
{
	struct sockaddr_un sun;
	size_t n = strlen(name);
	socklen_t len;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (n >= sizeof(sun.sun_path))
		errx(2, "%s: too long", name);
	memcpy(sun.sun_path, name, n);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	if (name[0] == '@')
		sun.sun_path[0] = '\0';
	else
		len++;
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (bind(fd, (struct sockaddr *)&sun, len) == -1)
		err(1, "bind %s", name);
	return fd;
}

int
main(int argc, char **argv)
{
	const char *cmd = NULL;
	char buf[4096];
	FILE *out;
	ssize_t n;
	int fd, ch, st;

	while ((ch = getopt(argc, argv, "c:")) != -1) {
		if (ch != 'c')
			errx(2, "usage: notify-recv [-c CMD] SOCKET OUT");
		cmd = optarg;
	}
	if (argc - optind != 2)
		errx(2, "usage: notify-recv [-c CMD] SOCKET OUT");
	fd = bind_notify(argv[optind]);
	if ((out = fopen(argv[optind + 1], "a")) == NULL)
		err(1, "%s", argv[optind + 1]);
	for (;;) {
		if ((n = recv(fd, buf, sizeof(buf) - 1, 0)) == -1)
			err(1, "recv");
		buf[n] = '\0';
		while (n > 0 && buf[n - 1] == '\n')
			buf[--n] = '\0';
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\n')
				buf[i] = '|';
		fprintf(out, "%s\n", buf);
		fflush(out);
		if (cmd != NULL && (strncmp(buf, "READY=1", 7) == 0 ||
		    strstr(buf, "|READY=1") != NULL)) {
			st = system(cmd);
			fprintf(out, "ready-check: %d\n",
			    WIFEXITED(st) ? WEXITSTATUS(st) : 128);
			fflush(out);
		}
	}
}
