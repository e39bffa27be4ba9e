/* SPDX-License-Identifier: ISC */
/*
 * listen.c: the Unix socket and loopback TCP listeners: binding them (or
 * taking systemd's), and pausing them while descriptors run out.  The
 * gates each request then passes are in gate.c.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/util.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "cause.h"
#include "log.h"
#include "privdir.h"
#include "serve.h"

static struct evconnlistener *unix_listener;
static struct evconnlistener *tcp_listener;
static struct evhttp_bound_socket *tcp_handle;
static struct event *resume_ev;
static int accept_paused, accept_episode, accept_logged;
static time_t accept_logged_at;
/* At most one "not accepting" line in this many seconds. */
#define ACCEPT_LOG_SEC	60
/*
 * Connections waiting to be accepted: ten thousand clients may connect at
 * once (a restart, a burst of subscribers), and a Unix socket refuses a
 * connect with EAGAIN once its backlog is full.  The kernel caps it at
 * net.core.somaxconn (4096 by default).
 */
#define SERVE_LISTEN_BACKLOG	4096
static struct evhttp *bound_http;
static int lock_fd = -1;
static char *lock_path;
static int own_socket;

/* Whether host (an address or "localhost") is a loopback address. */
int
listen_is_loopback_host(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (strcasecmp(host, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return 0;
}

/*
 * Check (and for the default location, create) the socket directory: a
 * real directory (not a symlink) owned by us, writable by nobody else,
 * sticky or not, and with no group or other access at all when it is
 * the private default.  The token file lives there too.
 */
int
listen_check_dir(const char *dir, char **cause)
{
	char *why = NULL;
	int fd, flags;

	flags = conf.socket_default ? PRIVDIR_CREATE | PRIVDIR_PRIVATE :
	    PRIVDIR_ROOT_OK;
	if ((fd = privdir_open("socket directory", dir, flags, &why)) == -1) {
		/* Someone else may have made the default first: name a way out. */
		cause_set(cause, "%s%s", why != NULL ? why : strerror(errno),
		    conf.socket_default ? " (choose another with --socket, or "
		    "set XDG_RUNTIME_DIR to a directory of your own)" : "");
		free(why);
	}
	return fd;
}

/* Whether a daemon answers on path (connect succeeds). */
static int
socket_is_live(const char *path)
{
	struct sockaddr_un sun;
	int fd, live;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	live = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	close(fd);
	return live;
}

/*
 * Take the lock beside the socket so that two daemons never race for one
 * path, then deal with what is there: a live daemon is refused, a stale
 * socket unlinked, anything else that is not a socket refused.
 */
static int
claim_socket_path(const char *path)
{
	struct stat st;

	if (asprintf(&lock_path, "%s.lock", path) == -1)
		return -1;
	lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (lock_fd == -1) {
		log_errx("%s: %s", lock_path, strerror(errno));
		return -1;
	}
	if (flock(lock_fd, LOCK_EX | LOCK_NB) == -1) {
		log_errx("%s: another qwen-serve owns this socket", path);
		return -1;
	}
	if (lstat(path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		log_errx("%s exists and is not a socket; refusing to remove it", path);
		return -1;
	}
	if (socket_is_live(path)) {
		log_errx("%s: a daemon is already listening there", path);
		return -1;
	}
	log_info("removing stale socket %s", path);
	if (unlink(path) == -1 && errno != ENOENT) {
		log_errx("unlink %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Accept on both listeners again (a descriptor was freed, or a second passed). */
static void
accept_resume(void)
{
	if (!accept_paused)
		return;
	accept_paused = 0;
	if (unix_listener != NULL)
		evconnlistener_enable(unix_listener);
	if (tcp_listener != NULL)
		evconnlistener_enable(tcp_listener);
}

static void
resume_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what; (void)arg;
	accept_resume();
}

/*
 * accept() failed for want of descriptors: stop polling the listeners
 * (libevent would retry them at once, forever) until a connection closes,
 * or a second passes (a child or a file may have freed one).  One log
 * line per episode.
 */
static void
accept_error(struct evconnlistener *lev, void *arg)
{
	struct timeval tv = { 1, 0 };
	int err = EVUTIL_SOCKET_ERROR();
	time_t now;

	(void)lev; (void)arg;
	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM) {
		log_warnx("accept: %s", strerror(err));
		return;
	}
	if (!accept_episode) {
		/* Episodes come in bursts (a flood): one line a minute. */
		now = time(NULL);
		accept_logged = now - accept_logged_at >= ACCEPT_LOG_SEC;
		if (accept_logged) {
			log_warnx("accept: %s: not accepting until a descriptor "
			    "is free", strerror(err));
			accept_logged_at = now;
		}
	}
	accept_episode = 1;
	accept_paused = 1;
	if (unix_listener != NULL)
		evconnlistener_disable(unix_listener);
	if (tcp_listener != NULL)
		evconnlistener_disable(tcp_listener);
	if (resume_ev == NULL)
		resume_ev = evtimer_new(serve_base, resume_timer, NULL);
	if (resume_ev != NULL)
		evtimer_add(resume_ev, &tv);
}

/* A connection closed: its descriptor is free again. */
void
listen_fd_freed(void)
{
	accept_resume();
}

/* A connection was accepted: an EMFILE episode, if any, is over. */
void
listen_accepted(void)
{
	if (accept_episode && !accept_paused) {
		if (accept_logged)
			log_info("accept: accepting again");
		accept_episode = 0;
	}
}

/* Serve HTTP on the listening Unix socket fd (ours or systemd's). */
static int
listen_unix_fd(struct evhttp *http, int fd, const char *path)
{
	unix_listener = evconnlistener_new(serve_base, NULL, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (unix_listener == NULL || evhttp_bind_listener(http, unix_listener) == NULL) {
		log_errx("cannot listen on %s", path);
		return -1;
	}
	evconnlistener_set_error_cb(unix_listener, accept_error);
	printf("qwen-serve: listening on unix:%s%s\n", path,
	    fd == conf.act_unix_fd ? " (from systemd)" : "");
	return 0;
}

/* Bind, chmod 0600 and listen on the Unix socket; hand it to evhttp. */
static int
listen_unix(struct evhttp *http, const char *path)
{
	struct sockaddr_un sun;
	char *dir, *cause = NULL;
	mode_t old;
	int fd, dfd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >= sizeof(sun.sun_path)) {
		log_errx("socket path too long: %s", path);
		return -1;
	}
	if ((dir = privdir_of(path)) == NULL)
		return -1;
	dfd = listen_check_dir(dir, &cause);
	free(dir);
	if (dfd == -1) {
		/* No socket, no daemon: an error, not a warning. */
		log_errx("%s", cause != NULL ? cause : "out of memory");
		free(cause);
		return -1;
	}
	close(dfd);
	if (claim_socket_path(path) == -1)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		log_errx("bind %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	own_socket = 1;
	if (chmod(path, 0600) == -1 || listen(fd, SERVE_LISTEN_BACKLOG) == -1) {
		log_errx("listen %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return listen_unix_fd(http, fd, path);
}

/*
 * Our own TCP listener on host:port (so that accept errors are ours), or
 * NULL with *cause (the port taken, the address not ours, ...).
 */
static struct evconnlistener *
tcp_bind(const char *host, char **cause)
{
	struct evutil_addrinfo hints, *ai = NULL;
	struct evconnlistener *lev;
	char port[16];
	int r, saved;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_ADDRCONFIG;
	snprintf(port, sizeof(port), "%d", conf.port);
	if ((r = evutil_getaddrinfo(host, port, &hints, &ai)) != 0 || ai == NULL) {
		cause_set(cause, "%s", r != 0 ? evutil_gai_strerror(r) :
		    "no address");
		return NULL;
	}
	lev = evconnlistener_new_bind(serve_base, NULL, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE,
	    SERVE_LISTEN_BACKLOG, ai->ai_addr, (int)ai->ai_addrlen);
	saved = errno;	/* bind's or listen's */
	evutil_freeaddrinfo(ai);
	if (lev == NULL)
		cause_set(cause, "%s", strerror(saved));
	return lev;
}

/* Bind the TCP listener and record the port it got. */
static int
listen_tcp(struct evhttp *http)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const char *host = conf.hostname;
	char *cause = NULL;
	int fd;

	if (strcasecmp(host, "localhost") == 0)
		host = "127.0.0.1";	/* resolved and pinned */
	if (conf.act_tcp_fd != -1)
		tcp_listener = evconnlistener_new(serve_base, NULL, NULL,
		    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1,
		    conf.act_tcp_fd);
	else
		tcp_listener = tcp_bind(host, &cause);
	if (tcp_listener == NULL ||
	    (tcp_handle = evhttp_bind_listener(http, tcp_listener)) == NULL) {
		/* Say why: a port another program holds is the usual case. */
		log_errx("cannot listen on %s port %d%s%s", conf.hostname,
		    conf.port, cause != NULL ? ": " : "",
		    cause != NULL ? cause : "");
		free(cause);
		return -1;
	}
	evconnlistener_set_error_cb(tcp_listener, accept_error);
	fd = evconnlistener_get_fd(tcp_listener);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return -1;
	if (ss.ss_family == AF_INET)
		conf.bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	else
		conf.bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	printf("qwen-serve: listening on http://%s%s%s:%d%s\n",
	    strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
	    conf.bound_port, conf.act_tcp_fd != -1 ? " (from systemd)" : "");
	return 0;
}

int
listen_start(struct evhttp *http)
{
	bound_http = http;
	if (conf.act_unix_fd != -1) {
		if (listen_unix_fd(http, conf.act_unix_fd, conf.socket_path) == -1)
			return -1;
	} else if (!conf.no_socket && listen_unix(http, conf.socket_path) == -1)
		return -1;
	if (!conf.no_tcp && listen_tcp(http) == -1)
		return -1;
	fflush(stdout);
	return 0;
}

int
listen_probe_addr(struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	int fd;

	if (unix_listener != NULL)
		fd = evconnlistener_get_fd(unix_listener);
	else if (tcp_handle != NULL)
		fd = evhttp_bound_socket_get_fd(tcp_handle);
	else
		return -1;
	memset(ss, 0, sizeof(*ss));
	if (getsockname(fd, (struct sockaddr *)ss, len) == -1)
		return -1;
	if (ss->ss_family == AF_INET && s4->sin_addr.s_addr == htonl(INADDR_ANY))
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
		s6->sin6_addr = in6addr_loopback;
	return ss->ss_family;
}

/* Stop accepting and remove our socket and lock. */
void
listen_stop(void)
{
	if (tcp_handle != NULL) {
		evhttp_del_accept_socket(bound_http, tcp_handle);
		tcp_handle = NULL;
		tcp_listener = NULL;
	}
	if (resume_ev != NULL) {
		event_free(resume_ev);
		resume_ev = NULL;
	}
	accept_paused = 0;
	if (unix_listener != NULL) {
		evconnlistener_disable(unix_listener);
		evconnlistener_set_error_cb(unix_listener, NULL);
		if (own_socket)
			unlink(conf.socket_path);
		own_socket = 0;
	}
	if (lock_fd != -1) {
		unlink(lock_path);
		close(lock_fd);
		lock_fd = -1;
	}
	free(lock_path);
	lock_path = NULL;
}
