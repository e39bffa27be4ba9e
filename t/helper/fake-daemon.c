/* SPDX-License-Identifier: ISC */
/*
 * fake-daemon: a scripted stand-in for qwen-serve in the qwen-restore tests.
 *
 * usage: fake-daemon --socket PATH --script FILE --log FILE [--port-file F]
 *
 * It answers each request from a script, per method + path (the query is
 * ignored for matching), and appends every request to the log as one JSON
 * line {"method","path","query","clientId","lastEventId","auth","body"}
 * (absent headers are null).  The script has one response per line:
 *
 *   METHOD PATH STATUS [option ...] [BODY]
 *
 * BODY is the rest of the line (first token starting with '{' or '['), or
 * none.  Options: delay=MS (answer late), retry-after=N, ctype=TYPE,
 * if-client=ID (only for that X-Qwen-Client-Id; "if-client=" matches a
 * request without one), sse (an event stream: the frame lines that follow
 * are sent, then the stream ends, or with hold stays open until the client
 * leaves; hold on a plain answer: it is never sent).  Frame lines: "> JSON" (sent as id/event/data from the JSON's id
 * and type), ">raw TEXT" (TEXT with \n \r \\ escapes, verbatim), ">sleep MS".
 * The responses of a route are used in order; the last one repeats.  A
 * request without a script line gets 500 {"code":"fake_unscripted"}.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <json-c/json.h>

#define MAX_FRAMES	64

struct frame {
	int	 sleep_ms;	/* >sleep */
	char	*text;		/* the bytes to send */
};

struct resp {
	char		*method, *path;
	int		 status;
	int		 delay_ms;
	char		*retry_after;
	char		*ctype;
	char		*if_client;	/* NULL: any */
	int		 sse, hold;
	char		*body;
	struct frame	 frames[MAX_FRAMES];
	int		 nframes;
	int		 used;
};

static struct resp	*script;
static size_t		 nscript;
static FILE		*log_fp;
static struct event_base *base;

/* Decode \n, \r, \\ escapes in place. */
static void
unescape(char *s)
{
	char	*d = s;

	for (; *s != '\0'; s++) {
		if (*s == '\\' && s[1] != '\0') {
			s++;
			*d++ = *s == 'n' ? '\n' : *s == 'r' ? '\r' : *s;
		} else
			*d++ = *s;
	}
	*d = '\0';
}

/* "> JSON": id/event/data lines from the envelope. */
static char *
frame_json(const char *json)
{
	json_object	*o = json_tokener_parse(json), *v;
	char		 idline[64] = "", *out;
	const char	*type = "message";

	if (o == NULL)
		errx(1, "script: bad frame JSON: %s", json);
	if (json_object_object_get_ex(o, "id", &v))
		snprintf(idline, sizeof(idline), "id: %lld\n",
		    (long long)json_object_get_int64(v));
	if (json_object_object_get_ex(o, "type", &v))
		type = json_object_get_string(v);
	if (asprintf(&out, "%sevent: %s\ndata: %s\n\n", idline, type,
	    json) == -1)
		err(1, "asprintf");
	json_object_put(o);
	return out;
}

/* Parse one frame line into the last response. */
static void
parse_frame(char *line)
{
	struct resp	*r;
	struct frame	*f;

	if (nscript == 0 || !script[nscript - 1].sse)
		errx(1, "script: frame line without an sse response");
	r = &script[nscript - 1];
	if (r->nframes == MAX_FRAMES)
		errx(1, "script: too many frames");
	f = &r->frames[r->nframes++];
	if (strncmp(line, ">sleep ", 7) == 0)
		f->sleep_ms = atoi(line + 7);
	else if (strncmp(line, ">raw ", 5) == 0) {
		f->text = strdup(line + 5);
		unescape(f->text);
	} else if (strncmp(line, "> ", 2) == 0)
		f->text = frame_json(line + 2);
	else
		errx(1, "script: bad frame line: %s", line);
}

/* Parse one response line. */
static void
parse_resp(char *line)
{
	struct resp	*r;
	char		*tok, *save;

	if ((script = reallocarray(script, nscript + 1, sizeof(*script))) == NULL)
		err(1, "reallocarray");
	r = &script[nscript++];
	memset(r, 0, sizeof(*r));
	r->method = strdup(strtok_r(line, " ", &save));
	if ((tok = strtok_r(NULL, " ", &save)) == NULL)
		errx(1, "script: no path");
	r->path = strdup(tok);
	if ((tok = strtok_r(NULL, " ", &save)) == NULL)
		errx(1, "script: no status");
	r->status = atoi(tok);
	while ((tok = strtok_r(NULL, " ", &save)) != NULL) {
		if (tok[0] == '{' || tok[0] == '[') {
			/* The body is the rest of the line. */
			if (save != NULL && *save != '\0')
				tok[strlen(tok)] = ' ';
			r->body = strdup(tok);
			break;
		}
		if (strncmp(tok, "delay=", 6) == 0)
			r->delay_ms = atoi(tok + 6);
		else if (strncmp(tok, "retry-after=", 12) == 0)
			r->retry_after = strdup(tok + 12);
		else if (strncmp(tok, "ctype=", 6) == 0)
			r->ctype = strdup(tok + 6);
		else if (strncmp(tok, "if-client=", 10) == 0)
			r->if_client = strdup(tok + 10);
		else if (strcmp(tok, "sse") == 0)
			r->sse = 1;
		else if (strcmp(tok, "hold") == 0)
			r->hold = 1;
		else
			errx(1, "script: unknown option %s", tok);
	}
}

/* Read the whole script before serving. */
static void
load_script(const char *path)
{
	FILE	*f;
	char	*line = NULL;
	size_t	 cap = 0;
	ssize_t	 n;

	if ((f = fopen(path, "r")) == NULL)
		err(1, "%s", path);
	while ((n = getline(&line, &cap, f)) != -1) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		if (line[0] == '>')
			parse_frame(line);
		else
			parse_resp(line);
	}
	free(line);
	fclose(f);
}

/* The response for a request: first unused match, else the last match. */
static struct resp *
find_resp(const char *method, const char *path, const char *client)
{
	struct resp	*last = NULL;
	size_t		 i;

	for (i = 0; i < nscript; i++) {
		struct resp *r = &script[i];

		if (strcmp(r->method, method) != 0 || strcmp(r->path, path) != 0)
			continue;
		if (r->if_client != NULL && strcmp(r->if_client,
		    client != NULL ? client : "") != 0)
			continue;
		if (!r->used) {
			r->used = 1;
			return r;
		}
		last = r;
	}
	return last;
}

/* Append the request to the log. */
static void
log_request(struct evhttp_request *req, const char *path, const char *query)
{
	struct evkeyvalq	*h = evhttp_request_get_input_headers(req);
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	json_object		*o = json_object_new_object();
	const char		*v;
	size_t			 len = evbuffer_get_length(in);
	char			*body;
	static const char	*methods[] = { "GET", "POST", "HEAD", "PUT",
	    "DELETE", "OPTIONS", "TRACE", "CONNECT", "PATCH" };
	int			 cmd = evhttp_request_get_command(req), i;

	for (i = 0; i < 9 && !(cmd & (1 << i)); i++)
		;
	json_object_object_add(o, "method",
	    json_object_new_string(i < 9 ? methods[i] : "?"));
	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "query", query ?
	    json_object_new_string(query) : NULL);
	v = evhttp_find_header(h, "X-Qwen-Client-Id");
	json_object_object_add(o, "clientId", v ? json_object_new_string(v) :
	    NULL);
	v = evhttp_find_header(h, "Last-Event-ID");
	json_object_object_add(o, "lastEventId", v ?
	    json_object_new_string(v) : NULL);
	v = evhttp_find_header(h, "Authorization");
	json_object_object_add(o, "auth", v ? json_object_new_string(v) : NULL);
	body = malloc(len + 1);
	evbuffer_copyout(in, body, len);
	body[len] = '\0';
	json_object_object_add(o, "body", json_object_new_string(body));
	free(body);
	fprintf(log_fp, "%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(log_fp);
	json_object_put(o);
}

/* One answer in progress. */
struct pending {
	struct evhttp_request	*req;
	struct resp		*r;
	struct event		*ev;
	int			 next;		/* next frame */
	int			 started;
};

static void pending_step(evutil_socket_t, short, void *);

/* Arm the step timer of p. */
static void
pending_arm(struct pending *p, int ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(p->ev, &tv);
}

/* Free an answer whose request is done. */
static void
pending_free(struct pending *p)
{
	event_free(p->ev);
	free(p);
}

/* Send a plain answer. */
static void
send_plain(struct pending *p)
{
	struct evkeyvalq	*oh = evhttp_request_get_output_headers(p->req);
	struct evbuffer		*b = evbuffer_new();

	if (p->r->retry_after != NULL)
		evhttp_add_header(oh, "Retry-After", p->r->retry_after);
	if (p->r->body != NULL) {
		evhttp_add_header(oh, "Content-Type", p->r->ctype ? p->r->ctype :
		    "application/json");
		evbuffer_add(b, p->r->body, strlen(p->r->body));
	}
	evhttp_send_reply(p->req, p->r->status, "Fake", b);
	evbuffer_free(b);
}

/* Advance an SSE answer: start it, send frames, end or hold. */
static void
sse_step(struct pending *p)
{
	struct evkeyvalq	*oh = evhttp_request_get_output_headers(p->req);
	struct evbuffer		*b;
	struct frame		*f;

	if (!p->started) {
		evhttp_add_header(oh, "Content-Type", p->r->ctype ? p->r->ctype :
		    "text/event-stream");
		evhttp_add_header(oh, "Cache-Control", "no-cache");
		evhttp_send_reply_start(p->req, p->r->status, "Fake");
		evhttp_connection_set_timeout(
		    evhttp_request_get_connection(p->req), 3600);
		p->started = 1;
		b = evbuffer_new();
		evbuffer_add_printf(b, "retry: 3000\n\n");
		evhttp_send_reply_chunk(p->req, b);
		evbuffer_free(b);
	}
	while (p->next < p->r->nframes) {
		f = &p->r->frames[p->next++];
		if (f->text == NULL) {
			pending_arm(p, f->sleep_ms);
			return;
		}
		b = evbuffer_new();
		evbuffer_add(b, f->text, strlen(f->text));
		evhttp_send_reply_chunk(p->req, b);
		evbuffer_free(b);
	}
	if (p->r->hold) {
		pending_arm(p, 50);	/* poll for the client leaving */
		return;
	}
	evhttp_send_reply_end(p->req);
	pending_free(p);
}

/* Timer: the delay passed, or the next SSE step is due. */
static void
pending_step(evutil_socket_t fd, short what, void *arg)
{
	struct pending	*p = arg;

	(void)fd; (void)what;
	if (evhttp_request_get_connection(p->req) == NULL) {
		/* The client left: this frees the request. */
		evhttp_send_reply_end(p->req);
		pending_free(p);
		return;
	}
	if (!p->r->sse && p->r->hold) {
		pending_arm(p, 50);	/* never answers; poll for the client leaving */
		return;
	}
	if (!p->r->sse) {
		send_plain(p);
		pending_free(p);
		return;
	}
	sse_step(p);
}

/* Every request. */
static void
handle(struct evhttp_request *req, void *arg)
{
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	const char		*path = evhttp_uri_get_path(uri);
	const char		*query = evhttp_uri_get_query(uri);
	const char		*client;
	struct pending		*p;
	struct resp		*r;
	char			 method[16];
	struct evbuffer		*b;

	(void)arg;
	log_request(req, path, query);
	client = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "X-Qwen-Client-Id");
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET: strlcpy(method, "GET", sizeof(method)); break;
	case EVHTTP_REQ_POST: strlcpy(method, "POST", sizeof(method)); break;
	case EVHTTP_REQ_DELETE: strlcpy(method, "DELETE", sizeof(method)); break;
	default: strlcpy(method, "OTHER", sizeof(method)); break;
	}
	if ((r = find_resp(method, path, client)) == NULL) {
		b = evbuffer_new();
		evbuffer_add_printf(b, "{\"error\":\"fake-daemon: no script for "
		    "%s %s\",\"code\":\"fake_unscripted\"}", method, path);
		evhttp_send_reply(req, 500, "Unscripted", b);
		evbuffer_free(b);
		return;
	}
	p = calloc(1, sizeof(*p));
	p->req = req;
	p->r = r;
	p->ev = evtimer_new(base, pending_step, p);
	pending_arm(p, r->delay_ms);
}

/* A Unix socket listener, mode 0600. */
static int
listen_unix(const char *path)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		errx(1, "socket path too long");
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(path, 0600) == -1 || listen(fd, 64) == -1)
		err(1, "%s", path);
	return fd;
}

/* SIGTERM: leave the loop, clean up, remove the socket. */
static void
on_term(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what; (void)arg;
	event_base_loopbreak(base);
}

/* Parse the options, listen, serve until SIGTERM. */
int
main(int argc, char **argv)
{
	const char			*sock = NULL, *scriptf = NULL, *logp = NULL;
	const char			*portf = NULL;
	struct evhttp			*http;
	struct evconnlistener		*l;
	struct evhttp_bound_socket	*bs;
	struct event			*sig;
	struct sockaddr_in		 sin;
	socklen_t			 slen = sizeof(sin);
	FILE				*pf;
	int				 ch;
	static const struct option	 opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "script", required_argument, NULL, 'f' },
		{ "log", required_argument, NULL, 'l' },
		{ "port-file", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's': sock = optarg; break;
		case 'f': scriptf = optarg; break;
		case 'l': logp = optarg; break;
		case 'p': portf = optarg; break;
		default:
			fprintf(stderr, "usage: fake-daemon --socket PATH "
			    "--script FILE --log FILE [--port-file FILE]\n");
			return 2;
		}
	}
	if (sock == NULL || scriptf == NULL || logp == NULL)
		errx(2, "--socket, --script and --log are required");
	signal(SIGPIPE, SIG_IGN);
	load_script(scriptf);
	if ((log_fp = fopen(logp, "a")) == NULL)
		err(1, "%s", logp);
	base = event_base_new();
	http = evhttp_new(base);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_DELETE);
	evhttp_set_gencb(http, handle, NULL);
	l = evconnlistener_new(base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE |
	    LEV_OPT_CLOSE_ON_EXEC, -1, listen_unix(sock));
	if (l == NULL || evhttp_bind_listener(http, l) == NULL)
		errx(1, "cannot listen on %s", sock);
	if (portf != NULL) {
		if ((bs = evhttp_bind_socket_with_handle(http, "127.0.0.1",
		    0)) == NULL)
			errx(1, "cannot listen on 127.0.0.1");
		getsockname(evhttp_bound_socket_get_fd(bs),
		    (struct sockaddr *)&sin, &slen);
		if ((pf = fopen(portf, "w")) == NULL)
			err(1, "%s", portf);
		fprintf(pf, "%d\n", ntohs(sin.sin_port));
		fclose(pf);
	}
	sig = evsignal_new(base, SIGTERM, on_term, NULL);
	event_add(sig, NULL);
	event_base_dispatch(base);
	event_free(sig);
	evhttp_free(http);
	event_base_free(base);
	fclose(log_fp);
	unlink(sock);
	return 0;
}
