/* SPDX-License-Identifier: ISC */
/*
 * main.c: qwen-serve options, signals and lifecycle.
 *
 * Parses the command line into conf, binds the listeners, runs the loop,
 * and on SIGTERM/SIGINT stops accepting, closes the sessions, ends the
 * children and exits 0.  SIGHUP reopens the log and trace files.
 */
#include "config.h"

#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "base64.h"
#include "budget.h"
#include "clock.h"
#include "log.h"
#include "otlp.h"
#include "outflush.h"
#include "paths.h"
#include "restore-fsm.h"
#include "rpc-frame.h"
#include "serve.h"
#include "acp.h"
#include "trace.h"
#include "ws.h"
#include "xmalloc.h"

static struct evhttp *http;
static struct event *stop_timer;

enum {
	OPT_SOCKET = 256, OPT_HOSTNAME, OPT_PORT, OPT_NO_TCP, OPT_TOKEN,
	OPT_REQUIRE_AUTH, OPT_ALLOW_ORIGIN, OPT_MAX_CONN, OPT_WORKSPACE,
	OPT_CHILD, OPT_DATA_DIR, OPT_CACHE_DIR, OPT_AGENT_CMD, OPT_LOG_FILE, OPT_LOG_LEVEL,
	OPT_TRACE_FILE, OPT_INIT_TO, OPT_RESTORE_TO, OPT_CHAN_IDLE,
	OPT_SESS_IDLE, OPT_SESS_REAP, OPT_SSE_HB, OPT_RING, OPT_REPLAY_MAX,
	OPT_MAX_SESS, OPT_MAX_TOTAL, OPT_CHILD_MAX, OPT_MAX_PENDING, OPT_HELP, OPT_VERSION,
	OPT_NO_WEB, OPT_WEB_DIR, OPT_SESSION_SHELL,
	OPT_PIDFILE, OPT_CHECK_CONFIG, OPT_OTLP, OPT_TOKEN_FILE, OPT_CHILD_CMD,
	OPT_AUDIT_LOG, OPT_LOG_FORMAT, OPT_PERM_TO, OPT_AGENT_ACP, OPT_PROMPT_DEADLINE, OPT_WRITER_IDLE,
	OPT_AGENT_PRESTART, OPT_AGENT_COMPACT, OPT_RATE_LIMIT, OPT_RL_PROMPT,
	OPT_RL_MUTATION, OPT_RL_READ, OPT_RL_WINDOW, OPT_RL_OWN_UID,
	OPT_TRUSTED_PROXY, OPT_ALLOW_HOST, OPT_DRAIN_GRACE,
};

static const struct option longopts[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "hostname", required_argument, NULL, OPT_HOSTNAME },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "no-tcp", no_argument, NULL, OPT_NO_TCP },
	{ "token", required_argument, NULL, OPT_TOKEN },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "require-auth", no_argument, NULL, OPT_REQUIRE_AUTH },
	{ "allow-origin", required_argument, NULL, OPT_ALLOW_ORIGIN },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONN },
	{ "workspace", required_argument, NULL, OPT_WORKSPACE },
	{ "child", required_argument, NULL, OPT_CHILD },
	{ "child-command", required_argument, NULL, OPT_CHILD_CMD },
	{ "data-dir", required_argument, NULL, OPT_DATA_DIR },
	{ "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
	{ "agent-command", required_argument, NULL, OPT_AGENT_CMD },
	{ "agent-acp", required_argument, NULL, OPT_AGENT_ACP },
	{ "agent-prestart", required_argument, NULL, OPT_AGENT_PRESTART },
	{ "agent-compact", required_argument, NULL, OPT_AGENT_COMPACT },
	{ "log-file", required_argument, NULL, OPT_LOG_FILE },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "audit-log", required_argument, NULL, OPT_AUDIT_LOG },
	{ "rate-limit", no_argument, NULL, OPT_RATE_LIMIT },
	{ "rate-limit-prompt", required_argument, NULL, OPT_RL_PROMPT },
	{ "rate-limit-mutation", required_argument, NULL, OPT_RL_MUTATION },
	{ "rate-limit-read", required_argument, NULL, OPT_RL_READ },
	{ "rate-limit-window-ms", required_argument, NULL, OPT_RL_WINDOW },
	{ "rate-limit-own-uid", no_argument, NULL, OPT_RL_OWN_UID },
	{ "trusted-proxy", required_argument, NULL, OPT_TRUSTED_PROXY },
	{ "allow-host", required_argument, NULL, OPT_ALLOW_HOST },
	{ "drain-grace-ms", required_argument, NULL, OPT_DRAIN_GRACE },
	{ "log-format", required_argument, NULL, OPT_LOG_FORMAT },
	{ "trace-file", required_argument, NULL, OPT_TRACE_FILE },
	{ "otlp-endpoint", required_argument, NULL, OPT_OTLP },
	{ "initialize-timeout-ms", required_argument, NULL, OPT_INIT_TO },
	{ "session-restore-timeout-ms", required_argument, NULL, OPT_RESTORE_TO },
	{ "permission-response-timeout-ms", required_argument, NULL, OPT_PERM_TO },
	{ "channel-idle-timeout-ms", required_argument, NULL, OPT_CHAN_IDLE },
	{ "session-idle-timeout-ms", required_argument, NULL, OPT_SESS_IDLE },
	{ "session-reap-interval-ms", required_argument, NULL, OPT_SESS_REAP },
	{ "sse-heartbeat-ms", required_argument, NULL, OPT_SSE_HB },
	{ "event-ring-size", required_argument, NULL, OPT_RING },
	{ "compacted-replay-max-bytes", required_argument, NULL, OPT_REPLAY_MAX },
	{ "max-sessions", required_argument, NULL, OPT_MAX_SESS },
	{ "max-total-sessions", required_argument, NULL, OPT_MAX_TOTAL },
	{ "child-max-sessions", required_argument, NULL, OPT_CHILD_MAX },
	{ "max-pending-prompts-per-session", required_argument, NULL, OPT_MAX_PENDING },
	{ "no-web", no_argument, NULL, OPT_NO_WEB },
	{ "enable-session-shell", no_argument, NULL, OPT_SESSION_SHELL },
	{ "web-dir", required_argument, NULL, OPT_WEB_DIR },
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
	{ "prompt-deadline-ms", required_argument, NULL, OPT_PROMPT_DEADLINE },
	{ "writer-idle-timeout-ms", required_argument, NULL, OPT_WRITER_IDLE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/*
 * --otlp-endpoint and the OTEL_* variables: export spans over OTLP/HTTP
 * from a worker thread, beside the trace file (or without one).
 */
static void __attribute__((noreturn)) fatal_cause(char *);

static void
otlp_setup(void)
{
	char	*cause, *url;

	if (otlp_endpoint(conf.otlp_endpoint, &url, &cause) == -1)
		fatal_cause(cause);
	if (url == NULL)
		return;
	if ((serve_otlp = otlp_start(url, "qwen-serve", &cause)) == NULL)
		fatal_cause(cause);
	if (serve_trace == NULL &&
	    (serve_trace = trace_sink_open(NULL, "qwen-serve")) == NULL)
		err(1, "trace sink");
	trace_sink_set_export(serve_trace, otlp_enqueue, serve_otlp);
	log_info("exporting spans to %s (OTLP/HTTP JSON)", url);
	free(url);
}

/* Print cause (from the OTLP setup), free it, exit 1. */
static void __attribute__((noreturn))
fatal_cause(char *cause)
{
	warnx("%s", cause != NULL ? cause :
	    "out of memory");
	free(cause);
	exit(1);
}

/* Exit with status once stdout is written; a write error exits 1. */
static void __attribute__((noreturn))
exit_flushed(int status)
{
	if (outflush(stdout) == -1)
		err(1, "write error");
	exit(status);
}

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: qwen-serve [--socket PATH] [--hostname HOST] [--port N] [--no-tcp]\n"
	    "\t[--token-file FILE | --token TOKEN] [--require-auth] [--allow-origin ORIGIN]...\n"
	    "\t[--max-connections N] [--workspace DIR]\n"
	    "\t[--child PATH | --child-command 'CMD ARGS']\n"
	    "\t[--data-dir DIR] [--cache-dir DIR]\n"
	    "\t[--agent-command CMD | --agent-acp 'CMD ARGS'] [--agent-prestart yes|no]\n"
	    "\t[--agent-compact yes|no]\n"
	    "\t[--log-file FILE] [--audit-log FILE]\n"
	    "\t[--log-format text|json]\n"
	    "\t[--rate-limit] [--rate-limit-prompt N] [--rate-limit-mutation N]\n"
	    "\t[--rate-limit-read N] [--rate-limit-window-ms MS] [--rate-limit-own-uid]\n"
	    "\t[--trusted-proxy ADDR]... [--allow-host HOST]... [--drain-grace-ms MS]\n"
	    "\t[--log-level LEVEL] [--trace-file FILE] [--otlp-endpoint URL]\n"
	    "\t[--initialize-timeout-ms MS]\n"
	    "\t[--session-restore-timeout-ms MS] [--channel-idle-timeout-ms MS]\n"
	    "\t[--permission-response-timeout-ms MS]\n"
	    "\t[--session-idle-timeout-ms MS] [--session-reap-interval-ms MS]\n"
	    "\t[--sse-heartbeat-ms MS] [--event-ring-size N]\n"
	    "\t[--compacted-replay-max-bytes N] [--max-sessions N]\n"
	    "\t[--max-total-sessions N] [--child-max-sessions N]\n"
	    "\t[--max-pending-prompts-per-session N]\n"
	    "\t[--prompt-deadline-ms MS] [--writer-idle-timeout-ms MS]\n"
	    "\t[--no-web | --web-dir DIR] [--pidfile FILE] [--check-config]\n"
	    "\t[--enable-session-shell]\n"
	    "\t[--help] [--version]\n");
	exit_flushed(status);
}

/* Parse a bounded integer option or exit 2 naming the flag. */
/* A load's replay reaches us in one frame of the child's, which the
   framer refuses past its cap: a larger bound could never be honoured. */
#define REPLAY_MAX_BYTES	((long long)RPC_DEFAULT_MAX_FRAME - 64 * 1024)

static long long
num_opt(const char *flag, const char *arg, long long min, long long max)
{
	const char *errstr;
	long long v;

	v = strtonum(arg, min, max, &errstr);
	if (errstr != NULL)
		errx(2, "--%s: value '%s' is %s (%lld..%lld)",
		    flag, arg, errstr, min, max);
	return v;
}

/* Parse a millisecond flag through libqwen's budget rules or exit 2. */
static int64_t
ms_opt(const char *flag, const char *arg, int allow_zero)
{
	char *cause = NULL, name[64];
	int64_t v;

	snprintf(name, sizeof(name), "--%s", flag);
	if (budget_parse_ms(name, arg, allow_zero, &v, &cause) == -1)
		errx(2, "%s", cause != NULL ? cause : "out of memory");
	return v;
}

/* Append a copy of s to a repeatable option's list. */
static void
strv_add(char ***v, size_t *n, const char *s)
{
	*v = xreallocarray(*v, *n + 1, sizeof(**v));
	(*v)[(*n)++] = xstrdup(s);
}

/*
 * Every workspace made canonical (the first is the primary; "." when none
 * was given); a directory named twice is one workspace.  Exits 2.
 */
static void
resolve_workspaces(void)
{
	size_t i, j, n = 0;
	char *real;

	if (conf.n_workspaces == 0)
		strv_add(&conf.workspaces, &conf.n_workspaces, ".");
	for (i = 0; i < conf.n_workspaces; i++) {
		if ((real = realpath(conf.workspaces[i], NULL)) == NULL)
			err(2, "--workspace %s", conf.workspaces[i]);
		free(conf.workspaces[i]);
		for (j = 0; j < n && strcmp(conf.workspaces[j], real) != 0; j++)
			;
		if (j < n)
			free(real);
		else
			conf.workspaces[n++] = real;
	}
	conf.n_workspaces = n;
	conf.workspace = conf.workspaces[0];
}

/* Default socket path: $XDG_RUNTIME_DIR/qwen-serve/ or /tmp/qwen-serve-$UID/. */
static char *
default_socket(void)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char *p = NULL;

	if (xdg != NULL && xdg[0] == '/')
		xasprintf(&p, "%s/qwen-serve/qwen-serve.sock", xdg);
	else
		xasprintf(&p, "/tmp/qwen-serve-%u/qwen-serve.sock",
		    (unsigned)geteuid());
	return p;
}

/*
 * The child: installed, qwen-serve runs from $(bindir) and the child is in
 * $(libexecdir); run from anywhere else (the build tree), the child beside
 * our own executable comes first.  Else PATH.
 */
static char *
default_child(void)
{
	char self[PATH_MAX], *slash, *p = NULL;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			if (strcmp(self, QWEN_BINDIR) != 0 &&
			    asprintf(&p, "%s/qwen-acp-child", self) != -1 &&
			    access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	if (access(QWEN_LIBEXECDIR "/qwen-acp-child", X_OK) == 0)
		return strdup(QWEN_LIBEXECDIR "/qwen-acp-child");
	return strdup("qwen-acp-child");
}

static void
conf_defaults(void)
{
	conf.hostname = xstrdup("127.0.0.1");
	conf.port = 4170;
	conf.max_connections = 256;
	conf.init_timeout_ms = BUDGET_INITIALIZE_DEFAULT_MS;
	conf.channel_idle_timeout_ms = 0;
	conf.agent_prestart = 1;
	conf.agent_compact = 1;
	conf.session_idle_timeout_ms = 1800000;
	conf.session_reap_interval_ms = 60000;
	conf.sse_heartbeat_ms = 15000;
	conf.event_ring_size = 8000;
	conf.compacted_replay_max_bytes = 4u * 1024 * 1024;
	conf.max_sessions = 32;
	conf.max_total_sessions = 800;
	conf.child_max_sessions = -1;	/* derived in child-cmd.c */
	conf.max_pending_prompts = 5;
	conf.prompt_deadline_ms = -1;		/* unset: the environment decides */
	conf.writer_idle_timeout_ms = -1;
	conf.rate_limit_prompt = 10;		/* upstream's, per minute */
	conf.rate_limit_mutation = 30;
	conf.rate_limit_read = 120;
	conf.rate_limit_window_ms = 60000;
}

/*
 * A millisecond guard from the environment when its flag was not given
 * (upstream's names); unset or 0 turns it off.  Exits 2 on a bad value.
 */
static int64_t
env_ms(int64_t flag_value, const char *var)
{
	const char *v = getenv(var);
	char *cause = NULL;
	int64_t ms;

	if (flag_value >= 0)
		return flag_value;
	if (v == NULL || *v == '\0')
		return 0;
	if (budget_parse_ms(var, v, 1, &ms, &cause) == -1)
		errx(2, "%s", cause != NULL ? cause : "out of memory");
	return ms;
}

/*
 * The operations options (rate limits, proxies, drain); 1 when ch was
 * one of them.  Any --rate-limit-* turns the limiter on.
 */
static int
ops_option(int ch, const char *arg)
{
	switch (ch) {
	case OPT_RATE_LIMIT: break;
	case OPT_RL_PROMPT: conf.rate_limit_prompt = (int)num_opt("rate-limit-prompt", arg, 1, 1000000); break;
	case OPT_RL_MUTATION: conf.rate_limit_mutation = (int)num_opt("rate-limit-mutation", arg, 1, 1000000); break;
	case OPT_RL_READ: conf.rate_limit_read = (int)num_opt("rate-limit-read", arg, 1, 1000000); break;
	case OPT_RL_WINDOW: conf.rate_limit_window_ms = ms_opt("rate-limit-window-ms", arg, 0); break;
	case OPT_RL_OWN_UID: conf.rate_limit_own_uid = 1; break;
	case OPT_TRUSTED_PROXY: strv_add(&conf.trusted_proxy, &conf.n_trusted_proxy, arg); return 1;
	case OPT_ALLOW_HOST: strv_add(&conf.allow_host, &conf.n_allow_host, arg); return 1;
	case OPT_DRAIN_GRACE: conf.drain_grace_ms = ms_opt("drain-grace-ms", arg, 1); return 1;
	default: return 0;
	}
	conf.rate_limit = 1;
	return 1;
}

/* Read the options; exits 2 on a usage error. */
static void
parse_args(int argc, char **argv)
{
	int64_t restore = -1, init = -1;
	const char *lvl;
	int ch;

	conf_defaults();
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_SOCKET: free(conf.socket_path); conf.socket_path = xstrdup(optarg); break;
		case OPT_HOSTNAME: free(conf.hostname); conf.hostname = xstrdup(optarg); break;
		case OPT_PORT: conf.port = (int)num_opt("port", optarg, 0, 65535); break;
		case OPT_NO_TCP: conf.no_tcp = 1; break;
		case OPT_TOKEN: free(conf.token); conf.token = token_from_argv(optarg); break;
		case OPT_TOKEN_FILE: free(conf.token_file); conf.token_file = xstrdup(optarg); break;
		case OPT_REQUIRE_AUTH: conf.require_auth = 1; break;
		case OPT_ALLOW_ORIGIN: strv_add(&conf.allow_origin, &conf.n_allow_origin, optarg); break;
		case OPT_MAX_CONN: conf.max_connections = (int)num_opt("max-connections", optarg, 1, 65536); break;
		case OPT_WORKSPACE: strv_add(&conf.workspaces, &conf.n_workspaces, optarg); break;
		case OPT_CHILD: free(conf.child_path); conf.child_path = xstrdup(optarg); break;
		case OPT_CHILD_CMD: child_cmd_option(optarg); break;
		case OPT_DATA_DIR: free(conf.data_dir); conf.data_dir = xstrdup(optarg); break;
		case OPT_CACHE_DIR: free(conf.cache_dir); conf.cache_dir = xstrdup(optarg); break;
		case OPT_AGENT_CMD: free(conf.agent_command); conf.agent_command = xstrdup(optarg); break;
		case OPT_AGENT_ACP: free(conf.agent_acp); conf.agent_acp = xstrdup(optarg); break;
		case OPT_AGENT_PRESTART:
			if (strcmp(optarg, "yes") != 0 && strcmp(optarg, "no") != 0)
				errx(2, "--agent-prestart: yes or no, not '%s'",
				    optarg);
			conf.agent_prestart = strcmp(optarg, "yes") == 0;
			break;
		case OPT_AGENT_COMPACT:
			if (strcmp(optarg, "yes") != 0 && strcmp(optarg, "no") != 0)
				errx(2, "--agent-compact: yes or no, not '%s'",
				    optarg);
			conf.agent_compact = strcmp(optarg, "yes") == 0;
			break;
		case OPT_LOG_FILE: free(conf.log_file); conf.log_file = xstrdup(optarg); break;
		case OPT_LOG_FORMAT:
			if (log_set_format(optarg) == -1)
				errx(2, "--log-format: unknown format '%s' "
				    "(text, json)", optarg);
			break;
		case OPT_AUDIT_LOG: free(conf.audit_log); conf.audit_log = xstrdup(optarg); break;
		case OPT_LOG_LEVEL:
			lvl = optarg;
			if (log_level_parse(lvl) == -1)
				errx(2, "--log-level: unknown level '%s'", lvl);
			log_set_level((enum log_level)log_level_parse(lvl));
			break;
		case OPT_TRACE_FILE: free(conf.trace_file); conf.trace_file = xstrdup(optarg); break;
		case OPT_OTLP: free(conf.otlp_endpoint); conf.otlp_endpoint = xstrdup(optarg); break;
		case OPT_INIT_TO: init = ms_opt("initialize-timeout-ms", optarg, 0); break;
		case OPT_RESTORE_TO: restore = ms_opt("session-restore-timeout-ms", optarg, 0); break;
		case OPT_PERM_TO: conf.permission_timeout_ms = ms_opt("permission-response-timeout-ms", optarg, 1); break;
		case OPT_CHAN_IDLE: conf.channel_idle_timeout_ms = ms_opt("channel-idle-timeout-ms", optarg, 1); break;
		case OPT_SESS_IDLE: conf.session_idle_timeout_ms = ms_opt("session-idle-timeout-ms", optarg, 1); break;
		case OPT_SESS_REAP: conf.session_reap_interval_ms = ms_opt("session-reap-interval-ms", optarg, 1); break;
		case OPT_SSE_HB: conf.sse_heartbeat_ms = ms_opt("sse-heartbeat-ms", optarg, 0); break;
		case OPT_RING: conf.event_ring_size = (size_t)num_opt("event-ring-size", optarg, 1, 1000000); break;
		case OPT_REPLAY_MAX: conf.compacted_replay_max_bytes = (size_t)num_opt("compacted-replay-max-bytes", optarg, 1, REPLAY_MAX_BYTES); break;
		case OPT_MAX_SESS: conf.max_sessions = (int)num_opt("max-sessions", optarg, 0, 1000000); break;
		case OPT_MAX_TOTAL: conf.max_total_sessions = (int)num_opt("max-total-sessions", optarg, 0, 1000000); break;
		case OPT_CHILD_MAX: conf.child_max_sessions = (int)num_opt("child-max-sessions", optarg, 0, 1000000); break;
		case OPT_MAX_PENDING: conf.max_pending_prompts = (int)num_opt("max-pending-prompts-per-session", optarg, 0, 100000); break;
		case OPT_NO_WEB: conf.no_web = 1; break;
		case OPT_SESSION_SHELL: conf.session_shell = 1; break;
		case OPT_WEB_DIR: free(conf.web_dir); conf.web_dir = xstrdup(optarg); break;
		case OPT_PIDFILE: free(conf.pidfile); conf.pidfile = xstrdup(optarg); break;
		case OPT_CHECK_CONFIG: conf.check_config = 1; break;
		case OPT_PROMPT_DEADLINE: conf.prompt_deadline_ms = ms_opt("prompt-deadline-ms", optarg, 1); break;
		case OPT_WRITER_IDLE: conf.writer_idle_timeout_ms = ms_opt("writer-idle-timeout-ms", optarg, 1); break;
		case OPT_VERSION: printf("qwen-serve %s\n", PACKAGE_VERSION); exit_flushed(0);
		case 'h': case OPT_HELP: usage(0);
		default:
			if (!ops_option(ch, optarg))
				usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	child_cmd_check();
	/* The same trace file as the child's, unless --trace-file names one. */
	if (conf.trace_file == NULL && getenv("QWEN_TRACE_FILE") != NULL &&
	    *getenv("QWEN_TRACE_FILE") != '\0')
		conf.trace_file = xstrdup(getenv("QWEN_TRACE_FILE"));
	if (init != -1)
		conf.init_timeout_ms = init;
	conf.restore_timeout_ms = budget_restore_ms(restore, init);
	conf.prompt_deadline_ms = env_ms(conf.prompt_deadline_ms,
	    "QWEN_SERVE_PROMPT_DEADLINE_MS");
	conf.writer_idle_timeout_ms = env_ms(conf.writer_idle_timeout_ms,
	    "QWEN_SERVE_WRITER_IDLE_TIMEOUT_MS");
}

/*
 * Without --data-dir (and --cache-dir) the data lives under the home
 * directory: with none, refuse to start rather than fall back to a shared
 * directory another user could own.  The directories that exist must be
 * ours alone, or another user could plant or read sessions.
 */
static void
check_home(void)
{
	char *d = NULL, *c = NULL;

	if ((conf.data_dir == NULL && (d = paths_data_dir(NULL)) == NULL) ||
	    (conf.cache_dir == NULL && (c = paths_cache_dir(NULL)) == NULL)) {
		if (errno != ENOENT)
			errx(1, "out of memory");
		errx(1, "no home directory (HOME is not set and the user has "
		    "none): set HOME, or give --data-dir and --cache-dir");
	}
	free(d);
	free(c);
	if (checkconf_dirs(&d) == -1)
		errx(1, "%s", d);
}

/* Resolve the workspace, the socket, the child and the token. */
static void
resolve_conf(void)
{
	resolve_workspaces();
	if (conf.socket_path == NULL) {
		if ((conf.socket_path = default_socket()) == NULL)
			exit(1);
		conf.socket_default = 1;
	}
	conf.tcp_loopback = listen_is_loopback_host(conf.hostname);
	if (conf.child_path == NULL)
		conf.child_path = default_child();
	if (conf.token != NULL && conf.token[0] == '\0')
		errx(2, "--token: the token must not be empty");
	if (conf.token != NULL && conf.token_file != NULL)
		errx(2, "--token and --token-file are exclusive");
	conf.token = token_resolve(conf.token_file, conf.token);
	if (conf.token != NULL)
		token_set(conf.token);
	if (conf.require_auth && conf.token == NULL)
		errx(2, "--require-auth needs --token or QWEN_SERVER_TOKEN (or "
		    "--token-file)");
}

/*
 * A TCP listener other hosts reach needs a configured token (a generated
 * one could only be read on this host) and the Host names its clients
 * use (--allow-host): the loopback names are not accepted there.
 * Exits 2.
 */
static void
remote_bind_check(void)
{
	if (conf.no_tcp || conf.tcp_loopback || conf.activated)
		return;
	if (conf.token == NULL)
		errx(2, "--hostname %s is not loopback: it needs a token "
		    "(--token-file, --token or QWEN_SERVER_TOKEN)",
		    conf.hostname);
	if (conf.n_allow_host == 0)
		errx(2, "--hostname %s is not loopback: name the Host its "
		    "clients use with --allow-host", conf.hostname);
}

/*
 * What a service manager hands us: NOTIFY_SOCKET, the listeners of socket
 * activation; and the pidfile other supervisors read.  Exits 1 on error.
 */
static void
ops_start(void)
{
	char *cause = NULL;

	sdnotify_init();
	if (sockact_take(&cause) == -1)
		errx(1, "socket activation: %s", cause);
	if (conf.pidfile != NULL) {
		if (pidfile_take(conf.pidfile, &cause) == -1)
			errx(1, "%s", cause);
		atexit(pidfile_release);
	}
}

static void
stop_check(evutil_socket_t fd, short what, void *arg)
{
	size_t active, unsettled, overdue, quarantined;

	(void)fd; (void)what; (void)arg;
	/* Each real settlement, raced with its channel's exit. */
	inflight_stats(&active, &unsettled, &overdue, &quarantined);
	if (channel_running() == 0 && active + unsettled == 0)
		event_base_loopexit(serve_base, NULL);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what; (void)arg;
	if (sig == SIGHUP) {
		log_info("SIGHUP: reopening log and trace files");
		if (conf.log_file != NULL && log_reopen() == -1)
			log_warn("reopen %s", conf.log_file);
		if (audit_reopen() == -1)
			log_warn("reopen %s", conf.audit_log);
		if (serve_trace != NULL && trace_sink_reopen(serve_trace) == -1)
			log_warn("reopen %s", conf.trace_file);
		return;
	}
	if (conf.drain_grace_ms > 0 && !serve_shutting_down()) {
		log_info("signal %d: draining", (int)sig);
		drain_begin(serve_request_shutdown);
		return;
	}
	log_info("signal %d: shutting down", (int)sig);
	serve_request_shutdown();
}

/* Stop accepting, close sessions, end children; the loop exits when done. */
void
serve_request_shutdown(void)
{
	struct timeval tv = { 0, 50000 };

	if (serve_shutting_down())
		return;
	serve_shutdown_begin();
	sdnotify_stopping();
	listen_stop();
	ws_shutdown();		/* before acp_shutdown(): ends its own connections */
	acp_http_shutdown();
	acp_shutdown();
	sessions_close_all("daemon_shutdown");
	channel_shutdown();
	stop_timer = event_new(serve_base, -1, EV_PERSIST, stop_check, NULL);
	event_add(stop_timer, &tv);
}

/* What a child's channel tells the modules above it. */
/* The child's requests we answer: its drain of a mid-turn queue, the
   admission of a turn of its own. */
static json_object *
child_request(struct channel *ch, const char *method, json_object *params)
{
	if (strcmp(method, "craft/drainMidTurnQueue") == 0)
		return midturn_drain(ch, params);
	if (strcmp(method, "_qwencode/start_turn") == 0)
		return autoturn_start(ch, params);
	return NULL;
}

/* The child's notifications past session/update. */
static void
child_notify(struct channel *ch, const char *method, json_object *params)
{
	if (strncmp(method, "_qwencode/", 10) == 0)
		autoturn_notify(ch, method, params);
	else
		route_generate_notify(ch, method, params);
}

static const struct channel_events child_events = {
	.child_started = metrics_child_started,
	.child_exited = metrics_child_exited,
	.sessions_died = sessions_channel_died,
	.inflight_died = inflight_channel_exited,
	.inflight_view = inflight_chan_view,
	.update = sessions_route_update,
	.permission = permission_ask,
	.request = child_request,
	.notify = child_notify,
};

/* What GET /metrics reads of the other modules when it is scraped. */
static const struct metrics_gauges gauges = {
	.sessions = sessions_count,
	.prompts_running = sessions_active_prompts,
	.prompts_waiting = sessions_totals,
	.sse_subscribers = sessions_subscribers,
	.restores = inflight_stats,
	.ws_conns = ws_conn_count,
	.acp_conns = acp_conn_count,
	.children = channel_running,
};

/*
 * The calls up that the lower modules make through hooks, set before
 * anything runs: http.c names no route and no in-process caller, the
 * bus no SSE stream, the channel no session, metrics.c no gauge's
 * module.
 */
static void
wire(void)
{
	http_set_routes(routes_request);
	http_capture_add(acp_call_capture);	/* an ACP call's reply */
	http_capture_add(branch_live_capture);	/* a branch's resume */
	bus_set_subscribers(&sse_subscribers);
	channel_set_events(&child_events);
	prompts_set_idle(midturn_settle);
	metrics_set_gauges(&gauges);
}

/* The HTTP server, its connections under conn.c's guard. */
static struct evhttp *
http_make(void)
{
	struct evhttp *h;

	if ((h = http_new(serve_base)) != NULL)
		conn_install(h);
	return h;
}

#ifdef QWEN_FUZZ_HTTP
struct evhttp	*serve_fuzz_http(int, char **);
int		 serve_main(int, char **);

/* t/fuzz/fuzz-http: the options resolved, the loop and the HTTP server
   made, nothing bound nor started; the harness hands it connections. */
struct evhttp *
serve_fuzz_http(int argc, char **argv)
{
	wire();
	parse_args(argc, argv);
	resolve_conf();
	/* Without the guard's caps every request is refused 503. */
	conn_init();
	if ((serve_base = event_base_new()) == NULL)
		return NULL;
	return http = http_make();
}
#define main serve_main
#endif

int
main(int argc, char **argv)
{
	struct event *sigs[4];
	const int signums[4] = { SIGTERM, SIGINT, SIGHUP, 0 };

	log_init("qwen-serve", LOG_LEVEL_INFO);
	wire();
	/*
	 * Restore answers are megabytes; keep their memory in the heap for the
	 * next one instead of handing it back and faulting it in again (page
	 * faults dominate a load's time on a small VM).
	 */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024 * 1024);
	conf.started_mono_ms = clock_mono_ms();
	conf.started_wall_ms = clock_wall_ms();
	parse_args(argc, argv);
	resolve_conf();
	if (conf.check_config)
		exit(checkconf_run());
	check_home();
	ops_start();
	remote_bind_check();
	signal(SIGPIPE, SIG_IGN);
	if (conf.log_file != NULL && log_open_file(conf.log_file) == -1)
		err(1, "--log-file %s", conf.log_file);
	reqid_init(sessions_log_lookup);
	if (conf.audit_log != NULL && audit_open(conf.audit_log) == -1)
		err(1, "--audit-log %s", conf.audit_log);
	if (conf.trace_file != NULL &&
	    (serve_trace = trace_sink_open(conf.trace_file, "qwen-serve")) == NULL)
		err(1, "--trace-file %s", conf.trace_file);
	conn_init();
	otlp_setup();
	if ((serve_base = event_base_new()) == NULL ||
	    (http = http_make()) == NULL)
		errx(1, "cannot create the event loop");
	if (listen_start(http) == -1)
		exit(1);
	if (!conf.no_tcp && conf.token == NULL)
		token_generate();
	for (int i = 0; signums[i] != 0; i++) {
		sigs[i] = evsignal_new(serve_base, signums[i], on_signal, NULL);
		event_add(sigs[i], NULL);
	}
	/* Before any request: what a killed daemon left half moved. */
	catalog_sweep();
	sessions_start_reaper();
	channel_prestart();
	web_check();
	printf("qwen-serve: ready\n");
	fflush(stdout);
	if (sdnotify_enabled())
		ready_probe_start(sdnotify_ready);
	log_info("serving %s (restore budget %lld ms)", conf.workspace,
	    (long long)conf.restore_timeout_ms);
	event_base_dispatch(serve_base);

	log_info("stopped");
	for (int i = 0; signums[i] != 0; i++)
		event_free(sigs[i]);
	if (stop_timer != NULL)
		event_free(stop_timer);
	ws_free_all();		/* before evhttp_free() frees their connections */
	reply_slice_free_all();	/* likewise */
	export_job_free_all();	/* likewise */
	route_shell_free_all();	/* likewise */
	route_generate_free_all();	/* likewise */
	ready_probe_free();
	sdnotify_free();
	http_free(http);
	audit_free();
	listing_free_all();
	acp_free();
	sessions_free();
	ratelimit_free();
	drain_free();
	channel_free_all();
	event_base_free(serve_base);
	if (serve_otlp != NULL) {
		trace_sink_set_export(serve_trace, NULL, NULL);
		otlp_stop(serve_otlp);
	}
	trace_sink_close(serve_trace);
	pidfile_release();
	token_unlink();
	return 0;
}
