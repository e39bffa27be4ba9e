/* SPDX-License-Identifier: ISC */
/*
 * web.c: the browser console's static files at /.
 *
 * A fixed table maps each served path to one file of the web directory
 * ($(pkgdatadir)/web, --web-dir DIR or QWEN_SERVE_WEB_DIR); no request
 * path is ever joined to a directory, so nothing else can be reached.
 * GET and HEAD only.  The files are public (the page carries no secret,
 * it asks for the token and sends it on its API calls), so the route
 * passes the peer, Host and Origin gates but not the bearer one.
 * Every answer carries a strict Content-Security-Policy, nosniff and
 * Cache-Control: no-cache with an ETag, so an upgrade is seen at once.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "errors.h"
#include "log.h"
#include "serve.h"

/* No web file is anywhere near this; a bigger one is refused. */
#define WEB_MAX_FILE	(4u * 1024 * 1024)

#define WEB_CSP \
	"default-src 'none'; script-src 'self'; style-src 'self'; " \
	"connect-src 'self'; img-src 'self' data:; base-uri 'none'; " \
	"form-action 'none'; frame-ancestors 'none'"

struct web_file {
	const char	*path;		/* request path */
	const char	*name;		/* file in the web directory */
	const char	*type;		/* Content-Type */
};

static const struct web_file web_files[] = {
	{ "/", "index.html", "text/html; charset=utf-8" },
	{ "/index.html", "index.html", "text/html; charset=utf-8" },
	{ "/app.css", "app.css", "text/css; charset=utf-8" },
	{ "/app.js", "app.js", "text/javascript; charset=utf-8" },
	{ "/budget.mjs", "budget.mjs", "text/javascript; charset=utf-8" },
	{ "/charts.mjs", "charts.mjs", "text/javascript; charset=utf-8" },
	{ "/history.mjs", "history.mjs", "text/javascript; charset=utf-8" },
	{ "/markdown.mjs", "markdown.mjs", "text/javascript; charset=utf-8" },
	{ "/sse.mjs", "sse.mjs", "text/javascript; charset=utf-8" },
};

/*
 * A daemon run from a build tree (not from the installed bindir) serves
 * the tree's own console, as it starts the tree's own child: <dir of the
 * program>/../web when it has an index.html.  NULL otherwise.
 */
static const char *
build_tree_web(void)
{
	static char dir[PATH_MAX];
	static int done;
	char self[PATH_MAX], p[PATH_MAX + 16], *slash;
	ssize_t n;

	if (done)
		return dir[0] != '\0' ? dir : NULL;
	done = 1;
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return NULL;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return NULL;
	*slash = '\0';
	if (strcmp(self, QWEN_BINDIR) == 0 || (slash = strrchr(self, '/')) == NULL)
		return NULL;
	*slash = '\0';
	snprintf(p, sizeof(p), "%s/web/index.html", self);
	if (access(p, R_OK) == 0 &&
	    (size_t)snprintf(dir, sizeof(dir), "%s/web", self) >= sizeof(dir))
		dir[0] = '\0';
	return dir[0] != '\0' ? dir : NULL;
}

/*
 * The web directory in effect: flag, then environment, then a build
 * tree's own, then pkgdatadir.
 */
const char *
web_dir(void)
{
	const char *env, *tree;

	if (conf.web_dir != NULL)
		return conf.web_dir;
	if ((env = getenv("QWEN_SERVE_WEB_DIR")) != NULL && env[0] != '\0')
		return env;
	if ((tree = build_tree_web()) != NULL)
		return tree;
	return QWEN_PKGDATADIR "/web";
}

/* Startup: say once when the console is off or its files are missing. */
void
web_check(void)
{
	char p[PATH_MAX];

	if (conf.no_web)
		return;
	snprintf(p, sizeof(p), "%s/index.html", web_dir());
	if (access(p, R_OK) == -1)
		log_warnx("web console: %s: %s (/ answers 404)", p, strerror(errno));
}

static const struct web_file *
web_lookup(const char *path)
{
	for (size_t i = 0; i < sizeof(web_files) / sizeof(web_files[0]); i++)
		if (strcmp(path, web_files[i].path) == 0)
			return &web_files[i];
	return NULL;
}

/* The headers every answer of this route carries. */
static void
web_headers(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Security-Policy", WEB_CSP);
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "X-Frame-Options", "DENY");
	evhttp_add_header(h, "Referrer-Policy", "no-referrer");
	evhttp_add_header(h, "Cross-Origin-Opener-Policy", "same-origin");
	evhttp_add_header(h, "Cross-Origin-Resource-Policy", "same-origin");
	evhttp_add_header(h, "Cache-Control", "no-cache");
}

/* Open f as a regular file of a sane size; -1 with errno. */
static int
web_open(const struct web_file *f, struct stat *st)
{
	char p[PATH_MAX];
	int fd;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", web_dir(), f->name) >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1)
		return -1;
	if (fstat(fd, st) == -1 || !S_ISREG(st->st_mode) ||
	    (uint64_t)st->st_size > WEB_MAX_FILE) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

/* Send f (GET) or its headers (HEAD), or 304 when the ETag matches. */
static void
web_send(struct evhttp_request *req, const struct web_file *f)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	const char *inm = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "If-None-Match");
	struct evbuffer *buf;
	struct stat st;
	char etag[64];
	int fd;

	if ((fd = web_open(f, &st)) == -1) {
		log_debug("web console: %s: %s", f->name, strerror(errno));
		http_send_qerr(req, qerr_new("not_found",
		    "The web console is not installed"));
		return;
	}
	snprintf(etag, sizeof(etag), "\"%llx-%llx-%llx\"",
	    (unsigned long long)st.st_size, (unsigned long long)st.st_mtim.tv_sec,
	    (unsigned long long)st.st_mtim.tv_nsec);
	evhttp_add_header(h, "ETag", etag);
	if (inm != NULL && strcmp(inm, etag) == 0) {
		close(fd);
		evhttp_send_reply(req, 304, "Not Modified", NULL);
		return;
	}
	evhttp_add_header(h, "Content-Type", f->type);
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		/* The length of the GET answer, and no body. */
		snprintf(etag, sizeof(etag), "%llu", (unsigned long long)st.st_size);
		evhttp_add_header(h, "Content-Length", etag);
		close(fd);
		evhttp_send_reply(req, 200, "OK", NULL);
		return;
	}
	if ((buf = evbuffer_new()) == NULL || (st.st_size > 0 &&
	    evbuffer_add_file(buf, fd, 0, st.st_size) == -1)) {
		if (buf == NULL)
			close(fd);
		evbuffer_free(buf);
		evhttp_send_error(req, 500, NULL);
		return;
	}
	if (st.st_size == 0)
		close(fd);
	evhttp_send_reply(req, 200, "OK", buf);
	evbuffer_free(buf);
}

/*
 * The route: 0 when path is not a console file (or the console is off),
 * else 1 after answering.  Its own gates: peer, Host, Origin; no bearer.
 */
int
web_route(struct evhttp_request *req, const char *path)
{
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	const struct web_file *f;

	if (conf.no_web || (f = web_lookup(path)) == NULL)
		return 0;
	if (gate_request(req, GATE_PUBLIC) == -1)
		return 1;
	web_headers(req);
	if (m == EVHTTP_REQ_GET || m == EVHTTP_REQ_HEAD)
		web_send(req, f);
	else {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Allow", "GET, HEAD");
		http_error(req, "method_not_allowed", NULL);
	}
	return 1;
}
