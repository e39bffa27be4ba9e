/* SPDX-License-Identifier: ISC */
/*
 * main.c: qwen-acp-child, an ACP agent over stdin/stdout that hosts many
 * sessions of qwen-code transcripts.
 *
 * One libevent loop: stdin is read into the NDJSON reader, answers and
 * notifications queue in a bounded output buffer (past its high-water
 * mark stdin and agent output are no longer read until it drains), loads
 * run on worker threads, agents are spawn_start() children watched by
 * pidfd.  stdin EOF, SIGTERM or SIGINT end the child cleanly: prompts are
 * cancelled, running loads finish and are answered, leases are released,
 * the output is flushed and the exit status is 0.
 *
 * This file reads the options and wires the layers: child.c owns the
 * process (struct child), io.c its stdin and stdout, rpc.c the dispatch.
 */
#include "config.h"

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "argv.h"
#include "child.h"
#include "clock.h"
#include "delegate.h"
#include "inspect.h"
#include "log.h"
#include "otlp.h"
#include "outflush.h"
#include "paths.h"
#include "trace.h"

/* Exit with status once stdout is written; a write error exits 1. */
static void __attribute__((noreturn))
exit_flushed(int status)
{
	if (outflush(stdout) == -1)
		err(1, "write error");
	exit(status);
}

/* The usage: on stdout with exit 0 for --help, else on stderr, exit 2. */
static void __attribute__((noreturn))
usage_status(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: %s [--data-dir DIR] [--cache-dir DIR] [--workspace DIR]\n"
	    "       [--agent-command CMD | --agent-acp 'CMD ARGS'] [--agent-prestart yes|no]\n"
	    "       [--agent-compact yes|no]\n"
	    "       [--trace-file FILE] [--otlp-endpoint URL]\n"
	    "       [--replay-max-bytes N] [--fsync always|never]\n"
	    "       [--max-frame-bytes N] [--max-sessions N] [--log-level LEVEL]\n"
	    "       [--help] [--version]\n"
	    "       %s --inspect FILE\n", getprogname(), getprogname());
	exit_flushed(status);
}

static void __attribute__((noreturn))
usage(void)
{
	usage_status(2);
}

/* A positive byte count for flag (1 .. 2^40). */
static size_t
parse_size(const char *flag, const char *text)
{
	const char *errstr;
	long long v;

	v = strtonum(text, 1, 1LL << 40, &errstr);
	if (errstr != NULL) {
		warnx("%s: a byte count from 1 to 2^40, not '%s'", flag, text);
		usage();
	}
	return (size_t)v;
}

/*
 * A bulk replay travels in one line, which the daemon's framer refuses
 * past the frame cap (the same cap as ours, 64 MiB by default): keep the
 * updates within the cap less room for the rest of the answer, so an
 * oversized replay is cut (partial: true) rather than lost.
 */
static void
replay_fit_frame(struct child_opts *o)
{
	size_t cap = o->max_frame != 0 ? o->max_frame : RPC_DEFAULT_MAX_FRAME;
	size_t room = cap / 4 < ANSWER_RESERVE ? cap / 4 : ANSWER_RESERVE;

	if (o->replay_max_bytes > cap - room) {
		log_info("--replay-max-bytes %zu lowered to %zu to fit the frame cap",
		    o->replay_max_bytes, cap - room);
		o->replay_max_bytes = cap - room;
	}
}

/* --agent-acp 'CMD ARGS': split now (libpipeline's rules, no shell). */
static void
agent_acp_opt(struct child_opts *o, const char *arg)
{
	char *cause = NULL;

	argv_free(o->agent_acp);
	if (argv_split(arg, &o->agent_acp, &cause) == -1)
		errx(2, "--agent-acp: %s",
		    cause != NULL ? cause : "out of memory");
}

/* --max-sessions N: 0 (no cap) to a million, else exit 2. */
static size_t
max_sessions_opt(const char *arg)
{
	const char *errstr;
	long long n = strtonum(arg, 0, 1000000, &errstr);

	if (errstr != NULL)
		errx(2, "--max-sessions: %s: '%s'", errstr, arg);
	return (size_t)n;
}

static void
parse_options(int argc, char **argv, struct child_opts *o, const char **inspect)
{
	static const struct option longopts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "cache-dir", required_argument, NULL, 'c' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "agent-command", required_argument, NULL, 'a' },
		{ "agent-acp", required_argument, NULL, 'A' },
		{ "agent-prestart", required_argument, NULL, 'P' },
		{ "agent-compact", required_argument, NULL, 'C' },
		{ "trace-file", required_argument, NULL, 't' },
		{ "otlp-endpoint", required_argument, NULL, 'o' },
		{ "replay-max-bytes", required_argument, NULL, 'r' },
		{ "fsync", required_argument, NULL, 'f' },
		{ "max-frame-bytes", required_argument, NULL, 'm' },
		{ "max-sessions", required_argument, NULL, 'S' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "inspect", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *data_dir = NULL, *cache_dir = NULL, *workspace = ".";
	char resolved[PATH_MAX];
	int ch, level;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd': data_dir = optarg; break;
		case 'c': cache_dir = optarg; break;
		case 'w': workspace = optarg; break;
		case 'a': o->agent_command = optarg; break;
		case 'A': agent_acp_opt(o, optarg); break;
		case 'P':
			if (strcmp(optarg, "yes") == 0)
				o->agent_prestart = 1;
			else if (strcmp(optarg, "no") == 0)
				o->agent_prestart = 0;
			else {
				warnx("--agent-prestart: yes or no, not '%s'",
				    optarg);
				usage();
			}
			break;
		case 'C':
			if (strcmp(optarg, "yes") == 0)
				o->agent_compact = 1;
			else if (strcmp(optarg, "no") == 0)
				o->agent_compact = 0;
			else {
				warnx("--agent-compact: yes or no, not '%s'",
				    optarg);
				usage();
			}
			break;
		case 't': o->trace_file = optarg; break;
		case 'o': o->otlp_endpoint = optarg; break;
		case 'r': o->replay_max_bytes = parse_size("--replay-max-bytes", optarg); break;
		case 'm': o->max_frame = parse_size("--max-frame-bytes", optarg); break;
		case 'S': o->max_sessions = max_sessions_opt(optarg); break;
		case 'i': *inspect = optarg; break;
		case 'f':
			if (strcmp(optarg, "always") == 0)
				o->do_fsync = 1;
			else if (strcmp(optarg, "never") == 0)
				o->do_fsync = 0;
			else {
				warnx("--fsync: always or never, not '%s'",
				    optarg);
				usage();
			}
			break;
		case 'l':
			if ((level = log_level_parse(optarg)) == -1) {
				warnx("--log-level: error, warn, notice, info "
				    "or debug, not '%s'", optarg);
				usage();
			}
			log_set_level((enum log_level)level);
			break;
		case 'V':
			printf("qwen-acp-child %s\n", PACKAGE_VERSION);
			exit_flushed(0);
		case 'h':
			usage_status(0);
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (o->agent_acp != NULL && o->agent_command != NULL)
		errx(2, "--agent-acp and --agent-command are exclusive");
	if (*inspect != NULL)
		return;
	replay_fit_frame(o);
	if (realpath(workspace, resolved) == NULL)
		err(1, "--workspace %s", workspace);
	if ((o->workspace = strdup(resolved)) == NULL ||
	    (o->data_dir = paths_data_dir(data_dir)) == NULL ||
	    (o->cache_dir = paths_cache_dir(cache_dir)) == NULL) {
		if (errno == ENOENT)
			errx(1, "no home directory (HOME is not set and the "
			    "user has none): set HOME, or give --data-dir and "
			    "--cache-dir");
		errx(1, "out of memory");
	}
	if (o->trace_file == NULL && getenv("QWEN_TRACE_FILE") != NULL &&
	    *getenv("QWEN_TRACE_FILE") != '\0')
		o->trace_file = getenv("QWEN_TRACE_FILE");
	/* Upstream's name first (what any qwen serve gives), then ours. */
	o->parent_capability = getenv("QWEN_CODE_PRIVATE_ACP_CAPABILITY");
	if (o->parent_capability == NULL || *o->parent_capability == '\0')
		o->parent_capability = getenv("QWEN_ACP_PARENT_CAPABILITY");
	if (o->parent_capability != NULL && *o->parent_capability == '\0')
		o->parent_capability = NULL;
}

/* The layers above the process core, for io.c and child.c. */
static const struct child_ops ops = {
	.dispatch = rpc_dispatch,
	.session_idle = rpc_session_idle,
	.stop_sessions = rpc_shutdown_sessions,
	.pause_producers = prompt_pause_all,
	.running = delegate_running,
};

/*
 * --otlp-endpoint and the OTEL_* variables: spans also go to an OTLP/HTTP
 * collector from a worker thread.  0, or -1 after a message.
 */
static int
otlp_setup(struct child *c)
{
	char	*cause, *url;

	if (otlp_endpoint(c->opts.otlp_endpoint, &url, &cause) == -1)
		goto fail;
	if (url == NULL)
		return 0;
	c->otlp = otlp_start(url, "qwen-acp-child", &cause);
	free(url);
	if (c->otlp == NULL)
		goto fail;
	if (c->trace == NULL &&
	    (c->trace = trace_sink_open(NULL, "qwen-acp-child")) == NULL) {
		warn("trace sink");
		return -1;
	}
	trace_sink_set_export(c->trace, otlp_enqueue, c->otlp);
	return 0;
fail:
	warnx("%s", cause != NULL ? cause :
	    "out of memory");
	free(cause);
	return -1;
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
	c.opts.max_sessions = CHILD_MAX_SESSIONS;
	c.opts.agent_prestart = 1;
	c.opts.agent_compact = 1;
	parse_options(argc, argv, &c.opts, &inspect);
	if (inspect != NULL)
		return inspect_main(inspect, NULL);
	if (c.opts.trace_file != NULL &&
	    (c.trace = trace_sink_open(c.opts.trace_file, "qwen-acp-child")) == NULL) {
		warn("trace file %s", c.opts.trace_file);
		return 1;
	}
	if (otlp_setup(&c) == -1)
		return 1;
	if (child_setup(&c, &ops) == -1) {
		log_warn("cannot set up the event loop");
		return 1;
	}
	log_debug("ready: data dir %s, cache dir %s, workspace %s",
	    c.opts.data_dir, c.opts.cache_dir, c.opts.workspace);
	delegate_prestart(&c);
	event_base_dispatch(c.base);
	child_teardown(&c);
	return c.exit_code;
}
