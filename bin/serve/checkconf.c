/* SPDX-License-Identifier: ISC */
/*
 * checkconf.c: qwen-serve --check-config.
 *
 * Everything that would stop the daemon, or make it misbehave, once it is
 * started, checked up front and without serving: the data directory, the
 * token, the budgets, the child program, the socket and the TCP port, the
 * log, trace and pid files, and the environment systemd passes
 * (NOTIFY_SOCKET, LISTEN_FDS).  Each problem is one line naming the flag
 * or variable; warnings do not change the exit status, errors make it 1.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netdb.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "paths.h"
#include "privdir.h"
#include "serve.h"
#include "xmalloc.h"

static int n_errors;

static void __attribute__((format(printf, 2, 3)))
complain(int error, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "qwen-serve: check-config: %s: ", error ? "error" : "warning");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	n_errors += error;
}

/* The deepest existing ancestor of path (path itself if it exists). */
static char *
existing_ancestor(const char *path)
{
	char *p = strdup(path), *slash;
	struct stat st;

	while (p != NULL && stat(p, &st) == -1 &&
	    (errno == ENOENT || errno == ENOTDIR)) {
		if ((slash = strrchr(p, '/')) == NULL) {
			strlcpy(p, ".", 2);
			break;
		}
		slash[slash == p ? 1 : 0] = '\0';
	}
	return p;
}

/* A directory we will write in: exists and writable, or creatable. */
static void
check_dir(const char *what, const char *dir)
{
	char *anc = existing_ancestor(dir);
	struct stat st;

	if (anc == NULL || stat(anc, &st) == -1)
		complain(1, "%s %s: %s", what, dir, strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		complain(1, "%s %s: %s is not a directory", what, dir, anc);
	else if (access(anc, W_OK | X_OK) == -1)
		complain(1, "%s %s: %s is not writable: %s", what, dir, anc,
		    strerror(errno));
	free(anc);
}

/* A file opened for appending: writable if it exists, else its directory. */
static void
check_file(const char *flag, const char *path)
{
	char *dir = strdup(path), *slash;
	struct stat st;

	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			complain(1, "%s %s: is a directory", flag, path);
		else if (access(path, W_OK) == -1)
			complain(1, "%s %s: %s", flag, path, strerror(errno));
	} else if (dir != NULL) {
		if ((slash = strrchr(dir, '/')) == NULL)
			strlcpy(dir, ".", 2);
		else
			slash[slash == dir ? 1 : 0] = '\0';
		if (access(dir, W_OK | X_OK) == -1)
			complain(1, "%s %s: directory %s: %s", flag, path, dir,
			    strerror(errno));
	}
	free(dir);
}

/* The child: an executable file, by path or found on PATH. */
static void
check_child(void)
{
	const char *c = conf.child_argv != NULL ? conf.child_argv[0] : conf.child_path;
	const char *flag = conf.child_argv != NULL ? "--child-command" : "--child";
	char *path, *p, *dir, buf[PATH_MAX];
	struct stat st;

	if (strchr(c, '/') != NULL) {
		if (stat(c, &st) == -1)
			complain(1, "%s %s: %s", flag, c, strerror(errno));
		else if (!S_ISREG(st.st_mode) || access(c, X_OK) == -1)
			complain(1, "%s %s: not an executable file", flag, c);
		return;
	}
	path = strdup(getenv("PATH") != NULL ? getenv("PATH") : "/usr/bin:/bin");
	for (p = path; p != NULL && (dir = strsep(&p, ":")) != NULL;) {
		snprintf(buf, sizeof(buf), "%s/%s", *dir ? dir : ".", c);
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			break;
		dir = NULL;
	}
	if (dir == NULL)
		complain(1, "%s %s: not found%s%s or on PATH", flag, c,
		    conf.child_argv != NULL ? "" : " in ",
		    conf.child_argv != NULL ? "" : QWEN_LIBEXECDIR);
	free(path);
}

/* The token: header-safe characters; the rules about when one is needed. */
static void
check_token(void)
{
	if (conf.token != NULL) {
		for (const char *t = conf.token; *t != '\0'; t++)
			if (*t <= ' ' || *t == 0x7f) {
				complain(1, "the token (--token or QWEN_SERVER_TOKEN) "
				    "contains a blank or control character");
				break;
			}
		if (strlen(conf.token) < 16)
			complain(0, "the token is shorter than 16 characters");
	} else if (!conf.no_tcp && !conf.tcp_loopback && !conf.activated)
		complain(1, "--hostname %s is not loopback and no token is set "
		    "(--token-file, --token or QWEN_SERVER_TOKEN)", conf.hostname);
	if (!conf.no_tcp && !conf.tcp_loopback && !conf.activated &&
	    conf.n_allow_host == 0)
		complain(1, "--hostname %s is not loopback and no --allow-host "
		    "names the Host its clients use", conf.hostname);
}

/* Budgets that parse but do not fit together. */
static void
check_budgets(void)
{
	if (conf.restore_timeout_ms < conf.init_timeout_ms)
		complain(0, "the restore budget (%lld ms) is below the initialize "
		    "timeout (%lld ms): a restore on a new child can time out "
		    "first", (long long)conf.restore_timeout_ms,
		    (long long)conf.init_timeout_ms);
	if (budget_watchdog_ms(conf.restore_timeout_ms) == 0)
		complain(0, "the restore budget (%lld ms) leaves no room for the "
		    "web clients' watchdog: they run without one",
		    (long long)conf.restore_timeout_ms);
	if (conf.session_reap_interval_ms > conf.session_idle_timeout_ms)
		complain(0, "--session-reap-interval-ms (%lld) is longer than "
		    "--session-idle-timeout-ms (%lld)",
		    (long long)conf.session_reap_interval_ms,
		    (long long)conf.session_idle_timeout_ms);
}

/*
 * One directory the daemon keeps things in, when it exists: a real
 * directory owned by us (or root) that nobody else may write into, as
 * the socket's (privdir.h).  0, or -1 with the problem and way out in
 * *cause.
 */
static int
check_own_dir(const char *what, const char *dir, const char *way_out,
    char **cause)
{
	char *why = NULL;
	int fd;

	if (dir == NULL || (access(dir, F_OK) == -1 && errno == ENOENT))
		return 0;	/* made private when first used */
	if ((fd = privdir_open(what, dir, PRIVDIR_ROOT_OK, &why)) != -1) {
		close(fd);
		return 0;
	}
	xasprintf(cause, "%s (%s)", why != NULL ? why : strerror(errno), way_out);
	free(why);
	return -1;
}

int
checkconf_dirs(char **cause)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char *data = paths_data_dir(conf.data_dir);
	char *cache = paths_cache_dir(conf.cache_dir);
	int rc = -1;

	*cause = NULL;
	if (check_own_dir("data directory", data,
	    "give --data-dir a directory of your own", cause) == 0 &&
	    check_own_dir("cache directory", cache,
	    "give --cache-dir a directory of your own", cause) == 0 &&
	    (!conf.socket_default || xdg == NULL || xdg[0] != '/' ||
	    check_own_dir("runtime directory (XDG_RUNTIME_DIR)", xdg,
	    "set XDG_RUNTIME_DIR to a directory of your own, or choose a "
	    "socket with --socket", cause) == 0))
		rc = 0;
	free(data);
	free(cache);
	return rc;
}

/* An existing socket directory is ours alone to write (privdir.h). */
static void
check_socket_dir_owner(const char *dir)
{
	char *cause = NULL;
	int fd, flags;

	flags = conf.socket_default ? PRIVDIR_PRIVATE : PRIVDIR_ROOT_OK;
	if (access(dir, F_OK) == -1)
		return;		/* the default one, made at start */
	if ((fd = privdir_open("--socket directory", dir, flags, &cause)) != -1)
		close(fd);
	else
		complain(1, "%s", cause != NULL ? cause : strerror(errno));
	free(cause);
}

/* The Unix socket: fits, its directory is usable, nobody listens there. */
static void
check_socket(void)
{
	struct sockaddr_un sun;
	struct stat st;
	char *dir, *slash;
	int fd;

	if (conf.no_socket || conf.activated)
		return;
	if (strlen(conf.socket_path) >= sizeof(sun.sun_path)) {
		complain(1, "--socket %s: longer than %zu bytes", conf.socket_path,
		    sizeof(sun.sun_path) - 1);
		return;
	}
	if ((dir = strdup(conf.socket_path)) == NULL)
		return;
	if ((slash = strrchr(dir, '/')) != NULL)
		slash[slash == dir ? 1 : 0] = '\0';
	else
		strlcpy(dir, ".", 2);
	/* Only the private default directory is created (one level). */
	if (stat(dir, &st) == -1 && !(conf.socket_default && errno == ENOENT))
		complain(1, "--socket directory %s: %s", dir, strerror(errno));
	else {
		check_dir("--socket directory", dir);
		check_socket_dir_owner(dir);
	}
	free(dir);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strlcpy(sun.sun_path, conf.socket_path, sizeof(sun.sun_path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
		complain(1, "--socket %s: a daemon is already listening there",
		    conf.socket_path);
	close(fd);
}

/* The TCP address: resolves and can be bound now. */
static void
check_tcp(void)
{
	struct addrinfo hints, *res = NULL;
	char port[16];
	int fd, one = 1, rc;

	if (conf.no_tcp || conf.activated)
		return;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%d", conf.port);
	if ((rc = getaddrinfo(conf.hostname, port, &hints, &res)) != 0) {
		complain(1, "--hostname %s: %s", conf.hostname, gai_strerror(rc));
		return;
	}
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
	if (fd != -1) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, res->ai_addr, res->ai_addrlen) == -1)
			complain(1, "--hostname %s --port %d: %s", conf.hostname,
			    conf.port, strerror(errno));
		close(fd);
	}
	freeaddrinfo(res);
}

/* NOTIFY_SOCKET and LISTEN_FDS, as the daemon would take them. */
static void
check_environment(void)
{
	char *cause = NULL;

	if (sdnotify_init() == -1)
		complain(1, "NOTIFY_SOCKET: not usable (see above)");
	if (sockact_take(&cause) == -1)
		complain(1, "socket activation: %s", cause);
	free(cause);
}

/* The command line a child would be started with. */
static void
show_child(void)
{
	char *line = child_cmd_describe();

	printf("child: %s\n", conf.child_argv != NULL ? conf.child_argv[0] :
	    conf.child_path);
	printf("child command: %s\n", line != NULL ? line : "(out of memory)");
	free(line);
}

int
checkconf_run(void)
{
	char *data = paths_data_dir(conf.data_dir), *cause = NULL;
	struct stat st;

	for (size_t i = 0; i < conf.n_workspaces; i++)
		if (stat(conf.workspaces[i], &st) == -1 || !S_ISDIR(st.st_mode))
			complain(1, "--workspace %s: not a directory", conf.workspaces[i]);
	if (data == NULL && errno == ENOENT)
		complain(1, "the data directory: no home directory (HOME is not "
		    "set and the user has none): set HOME, or give --data-dir");
	else if (data == NULL)
		complain(1, "the data directory: out of memory");
	else
		check_dir("the data directory", data);
	if (checkconf_dirs(&cause) == -1)
		complain(1, "%s", cause);
	free(cause);
	cause = NULL;
	check_environment();
	check_token();
	check_budgets();
	check_child();
	check_socket();
	check_tcp();
	if (conf.log_file != NULL)
		check_file("--log-file", conf.log_file);
	if (conf.audit_log != NULL)
		check_file("--audit-log", conf.audit_log);
	if (conf.trace_file != NULL)
		check_file("--trace-file", conf.trace_file);
	if (conf.pidfile != NULL) {
		check_file("--pidfile", conf.pidfile);
		if (pidfile_check(conf.pidfile, &cause) == -1)
			complain(1, "%s", cause);
		free(cause);
	}
	if (n_errors > 0) {
		fprintf(stderr, "qwen-serve: check-config: %d error%s\n", n_errors,
		    n_errors == 1 ? "" : "s");
		free(data);
		return 1;
	}
	printf("qwen-serve: configuration OK\n"
	    "workspace: %s\ndata directory: %s\n", conf.workspace, data);
	show_child();
	for (size_t i = 1; i < conf.n_workspaces; i++)
		printf("workspace: %s\n", conf.workspaces[i]);
	if (!conf.no_socket)
		printf("socket: %s%s\n", conf.socket_path,
		    conf.act_unix_fd != -1 ? " (from systemd)" : "");
	if (!conf.no_tcp)
		printf("tcp: %s port %d%s\n", conf.hostname, conf.port,
		    conf.act_tcp_fd != -1 ? " (from systemd)" : "");
	printf("restore budget: %lld ms\n", (long long)conf.restore_timeout_ms);
	free(data);
	return 0;
}
