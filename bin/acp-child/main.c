/*
 * main.c: qwen-acp-child, an ACP agent over stdin/stdout that hosts many
 * sessions of qwen-code transcripts.
 *
 * One libevent loop: stdin is read into the NDJSON reader, answers and
 * notifications queue in a bounded output buffer (past its high-water
 * mark stdin and agent output are no longer read until it drains), loads
 * run on worker threads, agents are libpipeline children watched by
 * pidfd.  stdin EOF, SIGTERM or SIGINT end the child cleanly: prompts are
 * cancelled, running loads finish and are answered, leases are released,
 * the output is flushed and the exit status is 0.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "child.h"
#include "clock.h"
#include "lagmon.h"
#include "loadwork.h"
#include "log.h"
#include "paths.h"
#include "trace.h"

#define IN_READ_SIZE	65536
#define IN_READS_PER_CB	16
#define WORKERS		2
#define LAG_INTERVAL_MS	50
#define LAG_WINDOW	1024

#include "inspect.h"

static void	child_begin_shutdown(struct child *);
static void	child_in_resume(struct child *);

static void
usage(void)
{
	fprintf(stderr,
	    "usage: %s [--data-dir DIR] [--workspace DIR] [--agent-command CMD]\n"
	    "       [--trace-file FILE] [--replay-max-bytes N] [--fsync always|never]\n"
	    "       [--max-frame-bytes N] [--log-level LEVEL]\n"
	    "       %s --inspect FILE\n", getprogname(), getprogname());
	exit(2);
}

/* Write what the output buffer holds; -1 when stdout is gone. */
static int
child_flush(struct child *c)
{
	while (evbuffer_get_length(c->out) > 0) {
		int n = evbuffer_write(c->out, STDOUT_FILENO);
		if (n > 0)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EINTR) && !c->out_direct)
			return 0;
		if (n == -1 && errno == EINTR)
			continue;
		log_warnx("stdout closed (%s): dropping output", strerror(errno));
		c->out_dead = 1;
		evbuffer_drain(c->out, evbuffer_get_length(c->out));
		return -1;
	}
	return 0;
}

/* After output drained: read input again, wake paused agents. */
static void
child_after_write(struct child *c)
{
	if (evbuffer_get_length(c->out) <= CHILD_OUT_LOW) {
		if (c->in_paused)
			child_in_resume(c);
		prompt_pause_all(c, 0);
	}
	if (c->out_dead && !c->closing)
		child_begin_shutdown(c);
	else
		child_check_done(c);
}

static void
child_out_cb(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;

	(void)fd;
	(void)what;
	child_flush(c);
	if (evbuffer_get_length(c->out) == 0)
		event_del(c->ev_out);
	child_after_write(c);
}

static void
child_free_ref(const void *data, size_t len, void *extra)
{
	(void)len;
	(void)extra;
	free((void *)(uintptr_t)data);
}

void
child_send_raw(struct child *c, char *buf, size_t len)
{
	if (c->out_dead || evbuffer_add_reference(c->out, buf, len,
	    child_free_ref, NULL) == -1) {
		free(buf);
		return;
	}
	if (c->out_direct) {
		child_flush(c);
		return;
	}
	event_add(c->ev_out, NULL);
}

void
child_send(struct child *c, json_object *msg)
{
	char *line;
	size_t len;

	line = msg != NULL ? rpc_encode(msg, &len) : NULL;
	json_object_put(msg);
	if (line == NULL) {
		log_warnx("cannot encode an outgoing message");
		return;
	}
	child_send_raw(c, line, len);
}

void
child_send_error(struct child *c, json_object *id, int code, const char *message,
    json_object *data)
{
	child_send(c, rpc_new_error(json_object_get(id), code, message, data));
}

void
child_send_result(struct child *c, json_object *id, json_object *result)
{
	child_send(c, rpc_new_result(json_object_get(id), result));
}

int
child_out_full(const struct child *c)
{
	return evbuffer_get_length(c->out) > CHILD_OUT_HIGH;
}

/* Hand every complete message (or bad frame) to the dispatcher. */
static void
child_drain_reader(struct child *c, int at_eof)
{
	struct rpc_msg msg;
	struct rpc_bad bad;
	enum rpc_read_status st;

	memset(&msg, 0, sizeof(msg));
	memset(&bad, 0, sizeof(bad));
	for (;;) {
		st = at_eof ? rpc_reader_finish(c->reader, &msg, &bad) :
		    rpc_reader_next(c->reader, &msg, &bad);
		if (st == RPC_READ_MORE)
			break;
		if (st == RPC_READ_MSG)
			rpc_dispatch(c, &msg);
		else {
			log_info("bad input line %zu: %s", bad.line_no, bad.message);
			child_send(c, rpc_new_bad_error(&bad));
			rpc_bad_clear(&bad);
		}
		at_eof = 0;	/* finish yields at most the unterminated tail */
	}
}

static void
child_in_pause(struct child *c)
{
	if (c->in_paused)
		return;
	c->in_paused = 1;
	event_del(c->ev_in);
}

static void
child_in_resume(struct child *c)
{
	struct timeval zero = { 0, 0 };

	if (!c->in_paused || c->in_eof || c->closing)
		return;
	c->in_paused = 0;
	if (c->in_direct)
		event_add(c->ev_in, &zero);
	else
		event_add(c->ev_in, NULL);
}

static void
child_in_cb(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;
	char buf[IN_READ_SIZE];
	struct timeval zero = { 0, 0 };
	ssize_t n;
	int i;

	(void)fd;
	(void)what;
	for (i = 0; i < IN_READS_PER_CB && !c->in_eof && !c->in_paused; i++) {
		n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			if (n == -1)
				log_warn("stdin");
			c->in_eof = 1;
			event_del(c->ev_in);
			child_drain_reader(c, 1);
			log_debug("stdin closed: shutting down");
			child_begin_shutdown(c);
			return;
		}
		if (rpc_reader_feed(c->reader, buf, (size_t)n) == -1) {
			log_warnx("out of memory reading stdin");
			c->exit_code = 1;
			child_begin_shutdown(c);
			return;
		}
		child_drain_reader(c, 0);
		if (child_out_full(c))
			child_in_pause(c);
	}
	if (c->in_direct && !c->in_eof && !c->in_paused && !c->closing)
		event_add(c->ev_in, &zero);
}

/* Whether anything still holds the loop: a load, a prompt, pending output. */
static int
child_busy(struct child *c)
{
	struct session *s;

	if (loadwork_inflight(c->work) > 0)
		return 1;
	RB_FOREACH(s, session_tree, &c->sessions)
		if (s->busy)
			return 1;
	return 0;
}

void
child_check_done(struct child *c)
{
	if (!c->closing || child_busy(c))
		return;
	if (!c->out_dead && evbuffer_get_length(c->out) > 0)
		return;		/* the write callback calls us again */
	event_base_loopbreak(c->base);
}

static void
child_begin_shutdown(struct child *c)
{
	if (c->closing) {
		child_check_done(c);
		return;
	}
	c->closing = 1;
	if (!c->in_eof)
		event_del(c->ev_in);
	rpc_shutdown_sessions(c);
	child_check_done(c);
}

static void
child_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct child *c = arg;

	(void)what;
	if (sig == SIGHUP) {
		if (c->trace != NULL && trace_sink_reopen(c->trace) == -1)
			log_warn("reopen trace file");
		return;
	}
	log_info("signal %d: shutting down", (int)sig);
	child_begin_shutdown(c);
}

/* A positive byte count for flag (1 .. 2^40). */
static size_t
parse_size(const char *flag, const char *text)
{
	const char *errstr;
	long long v;

	v = strtonum(text, 1, 1LL << 40, &errstr);
	if (errstr != NULL) {
		fprintf(stderr, "%s: %s: a byte count from 1 to 2^40, not '%s'\n",
		    getprogname(), flag, text);
		usage();
	}
	return (size_t)v;
}

static void
parse_options(int argc, char **argv, struct child_opts *o, const char **inspect)
{
	static const struct option longopts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "agent-command", required_argument, NULL, 'a' },
		{ "trace-file", required_argument, NULL, 't' },
		{ "replay-max-bytes", required_argument, NULL, 'r' },
		{ "fsync", required_argument, NULL, 'f' },
		{ "max-frame-bytes", required_argument, NULL, 'm' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "inspect", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *data_dir = NULL, *workspace = ".";
	char resolved[PATH_MAX];
	int ch, level;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd': data_dir = optarg; break;
		case 'w': workspace = optarg; break;
		case 'a': o->agent_command = optarg; break;
		case 't': o->trace_file = optarg; break;
		case 'r': o->replay_max_bytes = parse_size("--replay-max-bytes", optarg); break;
		case 'm': o->max_frame = parse_size("--max-frame-bytes", optarg); break;
		case 'i': *inspect = optarg; break;
		case 'f':
			if (strcmp(optarg, "always") == 0)
				o->do_fsync = 1;
			else if (strcmp(optarg, "never") == 0)
				o->do_fsync = 0;
			else {
				fprintf(stderr, "%s: --fsync: always or never, not '%s'\n",
				    getprogname(), optarg);
				usage();
			}
			break;
		case 'l':
			if ((level = log_level_parse(optarg)) == -1) {
				fprintf(stderr, "%s: --log-level: error, warn, notice, "
				    "info or debug, not '%s'\n", getprogname(), optarg);
				usage();
			}
			log_set_level((enum log_level)level);
			break;
		case 'V':
			printf("qwen-acp-child %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (*inspect != NULL)
		return;
	if (realpath(workspace, resolved) == NULL) {
		fprintf(stderr, "%s: --workspace %s: %s\n", getprogname(), workspace,
		    strerror(errno));
		exit(1);
	}
	if ((o->workspace = strdup(resolved)) == NULL ||
	    (o->data_dir = paths_data_dir(data_dir)) == NULL) {
		fprintf(stderr, "%s: out of memory\n", getprogname());
		exit(1);
	}
	if (o->trace_file == NULL && getenv("QWEN_TRACE_FILE") != NULL &&
	    *getenv("QWEN_TRACE_FILE") != '\0')
		o->trace_file = getenv("QWEN_TRACE_FILE");
	o->parent_capability = getenv("QWEN_ACP_PARENT_CAPABILITY");
	if (o->parent_capability != NULL && *o->parent_capability == '\0')
		o->parent_capability = NULL;
}

/* A pollable fd gets a normal event; a regular file or /dev/null is read
   or written directly (epoll refuses them). */
static int
child_pollable(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return 0;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode) ?
	    !(S_ISCHR(st.st_mode) && major(st.st_rdev) == 1) : 0;
}

static int
child_setup_io(struct child *c)
{
	struct timeval zero = { 0, 0 };

	c->in_direct = !child_pollable(STDIN_FILENO);
	c->out_direct = !child_pollable(STDOUT_FILENO);
	if (!c->in_direct)
		fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
	if (!c->out_direct) {
		fcntl(STDOUT_FILENO, F_SETFL, fcntl(STDOUT_FILENO, F_GETFL) | O_NONBLOCK);
		/* A bulk answer is megabytes: move it in fewer, larger pieces. */
		fcntl(STDOUT_FILENO, F_SETPIPE_SZ, 1 << 20);
	}
	c->ev_in = c->in_direct ? evtimer_new(c->base, child_in_cb, c) :
	    event_new(c->base, STDIN_FILENO, EV_READ | EV_PERSIST, child_in_cb, c);
	c->ev_out = event_new(c->base, STDOUT_FILENO, EV_WRITE | EV_PERSIST,
	    child_out_cb, c);
	if (c->ev_in == NULL || c->ev_out == NULL)
		return -1;
	return event_add(c->ev_in, c->in_direct ? &zero : NULL);
}

static int
child_setup(struct child *c)
{
	struct event_config *cfg;

	signal(SIGPIPE, SIG_IGN);
	RB_INIT(&c->sessions);
	paths_new_uuid(c->owner_id);
	if ((cfg = event_config_new()) == NULL)
		return -1;
	/* The lag monitor needs a precise clock, not CLOCK_MONOTONIC_COARSE. */
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	c->base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (c->base == NULL ||
	    (c->out = evbuffer_new()) == NULL ||
	    (c->reader = rpc_reader_new(c->opts.max_frame)) == NULL ||
	    (c->lag = lagmon_new(c->base, LAG_INTERVAL_MS, LAG_WINDOW)) == NULL ||
	    (c->work = loadwork_new(c->base, WORKERS)) == NULL)
		return -1;
	c->ev_term = evsignal_new(c->base, SIGTERM, child_signal_cb, c);
	c->ev_int = evsignal_new(c->base, SIGINT, child_signal_cb, c);
	c->ev_exit = evsignal_new(c->base, SIGHUP, child_signal_cb, c);
	if (c->ev_term == NULL || c->ev_int == NULL || c->ev_exit == NULL ||
	    event_add(c->ev_term, NULL) == -1 || event_add(c->ev_int, NULL) == -1 ||
	    event_add(c->ev_exit, NULL) == -1)
		return -1;
	return child_setup_io(c);
}

/* Everything is idle: free sessions (releasing leases) and the rest. */
static void
child_teardown(struct child *c)
{
	struct session *s;

	loadwork_free(c->work);	/* runs done() of loads that finished late */
	while ((s = RB_MIN(session_tree, &c->sessions)) != NULL) {
		RB_REMOVE(session_tree, &c->sessions, s);
		session_free(s);
	}
	if (!c->out_dead) {
		fcntl(STDOUT_FILENO, F_SETFL, fcntl(STDOUT_FILENO, F_GETFL) & ~O_NONBLOCK);
		c->out_direct = 1;
		child_flush(c);
	}
	lagmon_free(c->lag);
	if (c->ev_in != NULL)
		event_free(c->ev_in);
	if (c->ev_out != NULL)
		event_free(c->ev_out);
	if (c->ev_term != NULL)
		event_free(c->ev_term);
	if (c->ev_int != NULL)
		event_free(c->ev_int);
	if (c->ev_exit != NULL)
		event_free(c->ev_exit);
	evbuffer_free(c->out);
	rpc_reader_free(c->reader);
	trace_sink_close(c->trace);
	event_base_free(c->base);
	free(c->opts.data_dir);
	free(c->opts.workspace);
}

int
main(int argc, char **argv)
{
	struct child c;
	const char *inspect = NULL;

	memset(&c, 0, sizeof(c));
	log_init(getprogname(), LOG_LEVEL_INFO);
	/*
	 * Keep freed memory for the next load instead of returning it: first
	 * touch of a fresh page costs microseconds on a VM, and a load or a
	 * bulk answer touches tens of megabytes.  The peak is the same.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
	c.opts.replay_max_bytes = 4u * 1024 * 1024;
	c.opts.do_fsync = 1;
	parse_options(argc, argv, &c.opts, &inspect);
	if (inspect != NULL)
		return inspect_main(inspect);
	if (c.opts.trace_file != NULL &&
	    (c.trace = trace_sink_open(c.opts.trace_file, "qwen-acp-child")) == NULL) {
		fprintf(stderr, "%s: trace file %s: %s\n", getprogname(),
		    c.opts.trace_file, strerror(errno));
		return 1;
	}
	if (child_setup(&c) == -1) {
		log_warn("cannot set up the event loop");
		return 1;
	}
	log_debug("ready: data dir %s, workspace %s", c.opts.data_dir,
	    c.opts.workspace);
	event_base_dispatch(c.base);
	child_teardown(&c);
	return c.exit_code;
}
