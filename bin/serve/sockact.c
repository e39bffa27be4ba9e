/* SPDX-License-Identifier: ISC */
/*
 * sockact.c: socket activation, the LISTEN_FDS protocol of systemd.
 *
 * When LISTEN_PID names us, descriptors 3 .. 3+LISTEN_FDS-1 are listening
 * sockets bound by the service manager (LISTEN_FDNAMES, colon-separated,
 * names them for messages).  Each must be a listening stream socket: at
 * most one AF_UNIX (the API socket) and at most one AF_INET or AF_INET6
 * (the TCP port); anything else is refused before we serve.  An adopted TCP
 * listener that is not loopback needs a token: unlike a bind of our own,
 * no token is generated, since it would only be printed to the journal.
 * The three variables are removed from the environment either way, and the
 * descriptors made close-on-exec, so no child inherits them.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve.h"
#include "xmalloc.h"

#define SD_LISTEN_FDS_START	3
#define SOCKACT_MAX_FDS		16

/* Field i (0-based) of the colon-separated names into out, or "unnamed". */
static void
sockact_name(const char *names, int i, char *out, size_t size)
{
	const char *p = names, *end;

	strlcpy(out, "unnamed", size);
	for (; p != NULL && i > 0; i--)
		if ((p = strchr(p, ':')) != NULL)
			p++;
	if (p == NULL || *p == '\0' || *p == ':')
		return;
	end = strchr(p, ':');
	snprintf(out, size, "%.*s", (int)(end != NULL ? end - p : (ptrdiff_t)strlen(p)), p);
}

/* Whether a bound inet address is loopback (127/8, ::1, ::ffff:127/104). */
static int
sockact_loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

	if (ss->ss_family == AF_INET)
		return (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
	if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
		return 1;
	return IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) &&
	    s6->sin6_addr.s6_addr[12] == 127;
}

/* Record an adopted Unix listener: its path (or "@name") for messages. */
static void
sockact_unix(int fd, const struct sockaddr_storage *ss, socklen_t len)
{
	const struct sockaddr_un *sun = (const struct sockaddr_un *)ss;
	size_t n = len > offsetof(struct sockaddr_un, sun_path) ?
	    len - offsetof(struct sockaddr_un, sun_path) : 0;
	char *path = NULL;

	if (n > 0 && sun->sun_path[0] == '\0')
		xasprintf(&path, "@%.*s", (int)n - 1, sun->sun_path + 1);
	else
		xasprintf(&path, "%.*s", (int)strnlen(sun->sun_path, n),
		    sun->sun_path);
	free(conf.socket_path);
	conf.socket_path = path;
	conf.socket_default = 0;
	conf.act_unix_fd = fd;
}

/* Record an adopted TCP listener: address, port and loopback-ness. */
static int
sockact_tcp(int fd, const char *name, const struct sockaddr_storage *ss,
    char **cause)
{
	char addr[INET6_ADDRSTRLEN];
	const void *a;
	int port;

	if (ss->ss_family == AF_INET) {
		a = &((const struct sockaddr_in *)ss)->sin_addr;
		port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
	} else {
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	}
	if (inet_ntop(ss->ss_family, a, addr, sizeof(addr)) == NULL)
		strlcpy(addr, "?", sizeof(addr));
	conf.tcp_loopback = sockact_loopback(ss);
	if (!conf.tcp_loopback && conf.token == NULL) {
		xasprintf(cause, "fd %d (%s): TCP listener on %s port %d is "
		    "not loopback and no token is set (--token or "
		    "QWEN_SERVER_TOKEN)", fd, name, addr, port);
		return -1;
	}
	if (!conf.tcp_loopback && conf.n_allow_host == 0) {
		xasprintf(cause, "fd %d (%s): TCP listener on %s port %d is "
		    "not loopback and no --allow-host names the Host its "
		    "clients use", fd, name, addr, port);
		return -1;
	}
	free(conf.hostname);
	conf.hostname = xstrdup(addr);
	conf.port = port;
	conf.act_tcp_fd = fd;
	return 0;
}

/* Validate one passed descriptor and adopt it as the Unix or TCP listener. */
static int
sockact_adopt(int fd, const char *name, char **cause)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss), olen;
	int type = 0, acc = 0, fl;

	olen = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) == -1) {
		xasprintf(cause, "fd %d (%s): not a socket: %s", fd, name,
		    strerror(errno));
		return -1;
	}
	olen = sizeof(acc);
	if (type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &olen) == -1 || !acc) {
		xasprintf(cause, "fd %d (%s): not a listening stream socket "
		    "(use ListenStream=)", fd, name);
		return -1;
	}
	memset(&ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1) {
		xasprintf(cause, "fd %d (%s): getsockname: %s", fd, name,
		    strerror(errno));
		return -1;
	}
	if (ss.ss_family != AF_UNIX && ss.ss_family != AF_INET &&
	    ss.ss_family != AF_INET6) {
		xasprintf(cause, "fd %d (%s): address family %d is neither "
		    "AF_UNIX nor AF_INET/AF_INET6", fd, name, (int)ss.ss_family);
		return -1;
	}
	if ((ss.ss_family == AF_UNIX ? conf.act_unix_fd : conf.act_tcp_fd) != -1) {
		xasprintf(cause, "fd %d (%s): a second %s listener (one Unix "
		    "and one TCP socket at most)", fd, name,
		    ss.ss_family == AF_UNIX ? "Unix" : "TCP");
		return -1;
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) == -1) {
		xasprintf(cause, "fd %d (%s): fcntl: %s", fd, name,
		    strerror(errno));
		return -1;
	}
	if (ss.ss_family == AF_UNIX) {
		sockact_unix(fd, &ss, len);
		return 0;
	}
	return sockact_tcp(fd, name, &ss, cause);
}

/* LISTEN_PID and LISTEN_FDS: the count for us, 0 if not ours, -1 if bad. */
static int
sockact_count(const char *pid_s, const char *fds_s, char **cause)
{
	const char *errstr;
	long long pid, n;

	if (fds_s == NULL)
		return 0;
	if (pid_s == NULL) {
		xasprintf(cause, "LISTEN_FDS is set without LISTEN_PID");
		return -1;
	}
	pid = strtonum(pid_s, 1, INT32_MAX, &errstr);
	if (errstr != NULL) {
		xasprintf(cause, "LISTEN_PID=%s is %s", pid_s, errstr);
		return -1;
	}
	if (pid != (long long)getpid())
		return 0;	/* meant for another process */
	n = strtonum(fds_s, 0, SOCKACT_MAX_FDS, &errstr);
	if (errstr != NULL) {
		xasprintf(cause, "LISTEN_FDS=%s is %s (0..%d)", fds_s, errstr,
		    SOCKACT_MAX_FDS);
		return -1;
	}
	return (int)n;
}

int
sockact_take(char **cause)
{
	char *pid_s = NULL, *fds_s = NULL, *names = NULL, name[64];
	int n, rc = 0;

	conf.act_unix_fd = conf.act_tcp_fd = -1;
	conf.activated = 0;
	if (getenv("LISTEN_PID") != NULL)
		pid_s = xstrdup(getenv("LISTEN_PID"));
	if (getenv("LISTEN_FDS") != NULL)
		fds_s = xstrdup(getenv("LISTEN_FDS"));
	if (getenv("LISTEN_FDNAMES") != NULL)
		names = xstrdup(getenv("LISTEN_FDNAMES"));
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if ((n = sockact_count(pid_s, fds_s, cause)) == -1)
		rc = -1;
	for (int i = 0; rc == 0 && i < n; i++) {
		sockact_name(names, i, name, sizeof(name));
		rc = sockact_adopt(SD_LISTEN_FDS_START + i, name, cause);
	}
	if (rc == 0 && n > 0) {
		conf.activated = n;
		conf.no_socket = conf.act_unix_fd == -1;
		conf.no_tcp = conf.act_tcp_fd == -1;
		rc = 1;
	}
	free(pid_s);
	free(fds_s);
	free(names);
	return rc;
}
