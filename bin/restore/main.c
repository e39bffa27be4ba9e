/* SPDX-License-Identifier: ISC */
/*
 * main.c: qwen-restore, the command-line client of qwen-serve.
 *
 * Global options, the daemon address, the state directory, and one
 * function per command.  Options may come before or after the command.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <err.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cause.h"
#include "outflush.h"
#include "restore.h"
#include "xmalloc.h"

enum {
	OPT_SOCKET = 256, OPT_URL, OPT_TOKEN, OPT_CWD, OPT_FETCH, OPT_TIMEOUT,
	OPT_JSON, OPT_RETRY, OPT_STATE, OPT_NO_AUTO, OPT_NO_WAIT, OPT_PARALLEL,
	OPT_LAST_ID, OPT_VERSION, OPT_PAGE_SIZE, OPT_REPLAY_MODE, OPT_DEADLINE,
	OPT_SESSION_ID, OPT_APPROVAL, OPT_MODEL_SERVICE, OPT_LIMIT, OPT_BEFORE,
	OPT_AT, OPT_NAME, OPT_APPROVE, OPT_TOKEN_FILE, OPT_ALL, OPT_NO_HEADER,
	OPT_MAX_TIME,
};

static const struct option longopts[] = {
	{ "socket",		required_argument, NULL, OPT_SOCKET },
	{ "url",		required_argument, NULL, OPT_URL },
	{ "token",		required_argument, NULL, OPT_TOKEN },
	{ "token-file",		required_argument, NULL, OPT_TOKEN_FILE },
	{ "cwd",		required_argument, NULL, OPT_CWD },
	{ "fetch-timeout-ms",	required_argument, NULL, OPT_FETCH },
	{ "timeout-ms",		required_argument, NULL, OPT_TIMEOUT },
	{ "json",		no_argument,	   NULL, OPT_JSON },
	{ "retry",		required_argument, NULL, OPT_RETRY },
	{ "state-dir",		required_argument, NULL, OPT_STATE },
	{ "no-auto-resume",	no_argument,	   NULL, OPT_NO_AUTO },
	{ "no-wait",		no_argument,	   NULL, OPT_NO_WAIT },
	{ "parallel",		no_argument,	   NULL, OPT_PARALLEL },
	{ "last-event-id",	required_argument, NULL, OPT_LAST_ID },
	{ "page-size",		required_argument, NULL, OPT_PAGE_SIZE },
	{ "replay-mode",	required_argument, NULL, OPT_REPLAY_MODE },
	{ "deadline-ms",	required_argument, NULL, OPT_DEADLINE },
	{ "session-id",		required_argument, NULL, OPT_SESSION_ID },
	{ "approval-mode",	required_argument, NULL, OPT_APPROVAL },
	{ "model-service",	required_argument, NULL, OPT_MODEL_SERVICE },
	{ "limit",		required_argument, NULL, OPT_LIMIT },
	{ "all",		no_argument,	   NULL, OPT_ALL },
	{ "no-header",		no_argument,	   NULL, OPT_NO_HEADER },
	{ "max-time",		required_argument, NULL, OPT_MAX_TIME },
	{ "before",		required_argument, NULL, OPT_BEFORE },
	{ "at",			required_argument, NULL, OPT_AT },
	{ "name",		required_argument, NULL, OPT_NAME },
	{ "approve",		required_argument, NULL, OPT_APPROVE },
	{ "quiet",		no_argument,	   NULL, 'q' },
	{ "verbose",		no_argument,	   NULL, 'v' },
	{ "help",		no_argument,	   NULL, 'h' },
	{ "version",		no_argument,	   NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* Exit with status once stdout is written; a write error exits 1. */
static void __attribute__((noreturn))
exit_flushed(int status)
{
	if (outflush(stdout) == -1)
		err(EXIT_FAIL, "write error");
	exit(status);
}

static void __attribute__((noreturn))
usage(int status)
{
	FILE	*f = status == 0 ? stdout : stderr;

	fprintf(f, "usage: %s [--socket path | --url url] "
	    "[--token-file file | --token token] [--cwd dir]\n"
	    "\t[--fetch-timeout-ms ms] [--timeout-ms ms] [--json] "
	    "[--retry n]\n"
	    "\t[--state-dir dir] [-qv] [--help] [--version] command [args]\n"
	    "commands: capabilities,\n"
	    "\tlist [--limit n | --all] [--no-header],\n"
	    "\tnew [--session-id ID] [--approval-mode mode] "
	    "[--model-service id],\n"
	    "\tattach [--approval-mode mode] [--model-service id],\n"
	    "\tload ID [--page-size n] [--replay-mode full|summary] "
	    "[--approval-mode mode],\n"
	    "\tresume ID [--approval-mode mode], model ID MODEL, "
	    "mode ID MODE,\n"
	    "\tprompt ID [TEXT|-] [--no-wait] [--parallel] "
	    "[--no-auto-resume] [--deadline-ms ms]\n"
	    "\t    [--max-time s] [--approve ask|all|none],\n"
	    "\tpermission ID REQUEST-ID allow|deny,\n"
	    "\tevents|follow ID [--last-event-id n], cancel ID, heartbeat ID, "
	    "detach ID,\n"
	    "\tclose ID, status ID, transcript|show ID [--limit n] "
	    "[--before record],\n"
	    "\tbranch ID [--at record] [--name name], help [COMMAND]\n"
	    "'%s help COMMAND' or '%s COMMAND --help' tells what one does.\n",
	    getprogname(), getprogname(), getprogname());
	exit_flushed(status);
}

/* A usage error: one line, exit 2. */
static void __attribute__((noreturn, format(printf, 1, 2)))
usage_err(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	verrx(EXIT_USAGE, fmt, ap);
}

/* A non-negative decimal integer option up to max. */
static int64_t
parse_num(const char *flag, const char *text, long long max)
{
	const char	*errstr;
	long long	 v;

	if (text[0] < '0' || text[0] > '9')
		usage_err("%s: must be a non-negative integer, not '%s'", flag,
		    text);
	v = strtonum(text, 0, max, &errstr);
	if (errstr != NULL)
		usage_err("%s: %s: '%s'", flag, errstr, text);
	return v;
}

/* A flag's count from 1 to max; what is wrong ends as usage_err. */
static int64_t
parse_count(const char *flag, const char *text, long long max)
{
	int64_t	 v = parse_num(flag, text, max);

	if (v < 1 && max == INT_MAX)
		usage_err("%s: must be a positive integer", flag);
	if (v < 1)
		usage_err("%s: must be 1 to %lld", flag, max);
	return v;
}

/* Seconds as curl's --max-time takes them ("30", "2.5"), in ms. */
static int64_t
parse_seconds(const char *flag, const char *text)
{
	char	*end;
	double	 v;

	errno = 0;
	v = strtod(text, &end);
	if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 ||
	    v <= 0 || v > 86400 * 365)
		usage_err("%s: seconds above 0, not '%s'", flag, text);
	return (int64_t)(v * 1000 + 0.5) > 0 ? (int64_t)(v * 1000 + 0.5) : 1;
}

/* --retry waits. */
int
restore_retry_wait(const struct rctx *ctx, const struct rerr *e, int *attempt)
{
	int	wait_s;

	if (!e->retryable || *attempt >= ctx->retry)
		return 0;
	wait_s = e->retry_after >= 0 ? e->retry_after : 1;
	(*attempt)++;
	output_verbose(ctx, "%s: retrying in %d s (retry %d of %d)", e->code,
	    wait_s, *attempt, ctx->retry);
	sleep((unsigned)wait_s);
	return 1;
}

/* The address: flags, then the environment, then the default socket. */
static void
setup_address(struct rctx *ctx, const char *sock, const char *url)
{
	size_t		 len;

	if (sock != NULL && url != NULL)
		usage_err("--socket and --url are exclusive");
	if (sock == NULL && url == NULL) {
		sock = getenv("QWEN_SERVE_SOCKET");
		url = getenv("QWEN_SERVE_URL");
		if (sock != NULL && sock[0] == '\0')
			sock = NULL;
		if (sock != NULL || (url != NULL && url[0] == '\0'))
			url = NULL;
	}
	if (url != NULL) {
		if (strncmp(url, "http://", 7) != 0 &&
		    strncmp(url, "https://", 8) != 0)
			usage_err("--url: must start with http:// or https://");
		ctx->base_url = xstrdup(url);
		len = strlen(ctx->base_url);
		while (len > 0 && ctx->base_url[len - 1] == '/')
			ctx->base_url[--len] = '\0';
		ctx->addr_key = xstrdup(ctx->base_url);
		return;
	}
	if (sock != NULL)
		ctx->socket_path = xstrdup(sock);
	else
		address_default_socket(ctx);
	ctx->base_url = xstrdup("http://localhost");
	if (ctx->socket_path != NULL)
		xasprintf(&ctx->addr_key, "unix:%s", ctx->socket_path);
}

/* The workspace: --cwd (made absolute) or the current directory. */
static void
setup_cwd(struct rctx *ctx, const char *dir)
{
	char	buf[PATH_MAX];

	if (dir == NULL) {
		if (getcwd(buf, sizeof(buf)) == NULL)
			usage_err("getcwd: %s", strerror(errno));
		ctx->cwd = xstrdup(buf);
	} else if (realpath(dir, buf) != NULL)
		ctx->cwd = xstrdup(buf);
	else
		usage_err("--cwd %s: %s", dir, strerror(errno));
}

/* The token: --token, else QWEN_SERVER_TOKEN (trimmed; empty: none). */
static void
setup_token(struct rctx *ctx, const char *flag)
{
	const char	*t = flag != NULL ? flag : getenv("QWEN_SERVER_TOKEN");
	size_t		 len;

	if (t == NULL)
		return;
	while (*t == ' ' || *t == '\t' || *t == '\n')
		t++;
	ctx->token = strdup(t);
	len = strlen(ctx->token);
	while (len > 0 && strchr(" \t\r\n", ctx->token[len - 1]) != NULL)
		ctx->token[--len] = '\0';
	if (len == 0) {
		free(ctx->token);
		ctx->token = NULL;
	} else if (strpbrk(ctx->token, "\r\n") != NULL)
		usage_err("--token: must be one line");
}

/* Whether url (http://host[:port]...) names this host's loopback. */
static int
url_is_loopback(const char *url)
{
	const char *h = strstr(url, "://");
	const char *hosts[] = { "127.0.0.1", "localhost", "[::1]" };

	if (h == NULL)
		return 0;
	h += 3;
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		size_t n = strlen(hosts[i]);

		if (strncasecmp(h, hosts[i], n) == 0 && strchr(":/", h[n]) != NULL)
			return 1;
	}
	return 0;
}

/*
 * The first line of a token file into ctx->token: a regular file of ours
 * that nobody else may read.  0, or -1 with *cause (what is wrong with
 * the file; caller frees; cause may be NULL).
 */
static int
read_token_file(struct rctx *ctx, const char *path, char **cause)
{
	char buf[4096];
	struct stat st;
	ssize_t n;
	int fd, rc = -1;
	const char *why = NULL;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) == -1)
		return cause_set(cause, "cannot be opened");
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		why = "is not a regular file";
	else if (st.st_uid != getuid())
		why = "is not yours";
	else if ((st.st_mode & 077) != 0)
		why = "is readable by others (chmod 600 it)";
	else if ((n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		why = "is empty";
	else {
		buf[n] = '\0';
		buf[strcspn(buf, "\r\n")] = '\0';
		if (buf[0] == '\0')
			why = "is empty";
		else {
			free(ctx->token);
			ctx->token = xstrdup(buf);
			rc = 0;
		}
	}
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	if (why != NULL)
		(void)cause_set(cause, "%s", why);
	return rc;
}

/*
 * --token-file FILE, else without a token: the one the local daemon wrote
 * beside its socket (<socket dir>/token), if it is ours and private, over
 * the socket itself or loopback TCP.  Never for another host: the token
 * would go to it.
 */
static void
setup_token_file(struct rctx *ctx, const char *file)
{
	const char *sock = ctx->socket_path != NULL ? ctx->socket_path :
	    getenv("QWEN_SERVE_SOCKET");
	const char *slash;
	char *path = NULL, *cause = NULL;

	if (file != NULL) {
		if (read_token_file(ctx, file, &cause) == -1)
			usage_err("--token-file %s %s", file,
			    cause != NULL ? cause : "cannot be read");
		return;
	}
	if (ctx->token != NULL ||
	    (ctx->socket_path == NULL && !url_is_loopback(ctx->base_url)))
		return;
	if (sock != NULL && (slash = strrchr(sock, '/')) != NULL)
		xasprintf(&path, "%.*s/token", (int)(slash - sock), sock);
	else if ((path = address_default_token()) == NULL)
		return;
	(void)read_token_file(ctx, path, NULL);
	free(path);
}

/* QWEN_FETCH_TIMEOUT_MS when --fetch-timeout-ms was not given. */
static void
setup_fetch_env(struct rctx *ctx)
{
	const char	*v = getenv("QWEN_FETCH_TIMEOUT_MS");

	if (ctx->fetch_timeout_ms >= 0 || v == NULL || v[0] == '\0')
		return;
	ctx->fetch_timeout_ms = parse_num("QWEN_FETCH_TIMEOUT_MS", v,
	    LLONG_MAX);
	ctx->fetch_source = TIMEOUT_FETCH_ENV;
}

/* Parse argv into ctx; returns the index of the first operand. */
static void
parse_args(struct rctx *ctx, int argc, char **argv)
{
	const char	*sock = NULL, *url = NULL, *token = NULL, *cwd = NULL;
	const char	*token_file = NULL;
	int		 ch, approve_set = 0;

	while ((ch = getopt_long(argc, argv, "qvh", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_SOCKET: sock = optarg; break;
		case OPT_URL: url = optarg; break;
		case OPT_TOKEN: token = optarg; break;
		case OPT_TOKEN_FILE: token_file = optarg; break;
		case OPT_CWD: cwd = optarg; break;
		case OPT_FETCH:
			ctx->fetch_timeout_ms = parse_num("--fetch-timeout-ms",
			    optarg, LLONG_MAX);
			ctx->fetch_source = TIMEOUT_FETCH_FLAG;
			break;
		case OPT_TIMEOUT:
			ctx->timeout_ms = parse_num("--timeout-ms", optarg,
			    LLONG_MAX);
			break;
		case OPT_JSON: ctx->json = 1; break;
		case OPT_RETRY:
			ctx->retry = (int)parse_num("--retry", optarg, 100);
			break;
		case OPT_STATE: ctx->state_dir = xstrdup(optarg); break;
		case OPT_NO_AUTO: ctx->no_auto_resume = 1; break;
		case OPT_NO_WAIT: ctx->no_wait = 1; break;
		case OPT_PARALLEL: ctx->parallel = 1; break;
		case OPT_LAST_ID:
			ctx->last_event_id = parse_num("--last-event-id",
			    optarg, 9007199254740991LL);
			break;
		case OPT_PAGE_SIZE:
			ctx->page_size = parse_count("--page-size", optarg, 500);
			break;
		case OPT_REPLAY_MODE:
			if (strcmp(optarg, "full") != 0 && strcmp(optarg, "summary") != 0)
				usage_err("--replay-mode: full or summary, not '%s'", optarg);
			ctx->replay_mode = optarg;
			break;
		case OPT_DEADLINE:
			ctx->deadline_ms = parse_count("--deadline-ms", optarg,
			    INT_MAX);
			break;
		case OPT_SESSION_ID: ctx->new_id = optarg; break;
		case OPT_APPROVAL: ctx->approval_mode = optarg; break;
		case OPT_MODEL_SERVICE: ctx->model_service = optarg; break;
		case OPT_LIMIT:
			ctx->limit = parse_count("--limit", optarg, LIST_MAX);
			break;
		case OPT_ALL: ctx->all = 1; break;
		case OPT_NO_HEADER: ctx->no_header = 1; break;
		case OPT_MAX_TIME:
			ctx->max_time_ms = parse_seconds("--max-time", optarg);
			break;
		case OPT_BEFORE: ctx->before = optarg; break;
		case OPT_AT: ctx->at = optarg; break;
		case OPT_NAME: ctx->name = optarg; break;
		case OPT_APPROVE:
			if ((ctx->approve = approve_parse(optarg)) == -1)
				usage_err("--approve: ask, all or none, not '%s'", optarg);
			approve_set = 1;
			break;
		case 'q': ctx->quiet = 1; break;
		case 'v': ctx->verbose = 1; break;
		case 'h': ctx->help = 1; break;
		case OPT_VERSION:
			printf("qwen-restore %s\n", PACKAGE_VERSION);
			exit_flushed(0);
		default: usage(EXIT_USAGE);
		}
	}
	/* Ask only where someone can answer: never hang a cron job. */
	if (!approve_set)
		ctx->approve = isatty(STDIN_FILENO) ? APPROVE_ASK : APPROVE_NONE;
	else if (ctx->approve == APPROVE_ASK && !isatty(STDIN_FILENO))
		ctx->approve = APPROVE_NONE;
	setup_address(ctx, sock, url);
	setup_cwd(ctx, cwd);
	setup_token(ctx, token);
	if (token != NULL && token_file != NULL)
		usage_err("--token and --token-file are exclusive");
	setup_token_file(ctx, token_file);
	setup_fetch_env(ctx);
	if (ctx->base_url == NULL || ctx->addr_key == NULL || ctx->cwd == NULL)
		usage_err("out of memory");
}

/* Options that belong to one command only: a usage error elsewhere. */
static void
check_options(const struct rctx *ctx, const char *cmd)
{
	const char	*bad = NULL;

	if (strcmp(cmd, "prompt") != 0) {
		if (ctx->no_wait)
			bad = "--no-wait";
		else if (ctx->parallel)
			bad = "--parallel";
		else if (ctx->no_auto_resume)
			bad = "--no-auto-resume";
		if (bad != NULL)
			usage_err("%s: only for prompt, not %s", bad, cmd);
	}
	if (strcmp(cmd, "events") != 0 && strcmp(cmd, "follow") != 0 &&
	    ctx->last_event_id >= 0)
		usage_err("--last-event-id: only for events and follow, not %s",
		    cmd);
	if (ctx->limit > 500 && strcmp(cmd, "list") != 0)
		usage_err("--limit: 1 to 500 for %s", cmd);
	if (ctx->all && ctx->limit >= 0)
		usage_err("--limit and --all are exclusive");
}

/* The width tables are cut to: the terminal's, else $COLUMNS, else none. */
static int
output_width(void)
{
	struct winsize	 ws;
	const char	*c, *errstr;
	int		 n;

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
	    ws.ws_col > 0)
		return ws.ws_col;
	if ((c = getenv("COLUMNS")) != NULL &&
	    (n = (int)strtonum(c, 20, 10000, &errstr), errstr == NULL))
		return n;
	return 0;
}

/* The command table: name, operands, the function, and its help. */
static const struct command {
	const char	*name;
	int		 takes_id;	/* 1: ID required */
	int		 max_args;	/* operands after the ID */
	int		(*fn)(struct rctx *, char **args);
} commands[] = {
	{ "capabilities",	0, 0, cmd_capabilities },
	{ "list",		0, 0, cmd_list },
	{ "new",		0, 0, cmd_new },
	{ "attach",		0, 0, cmd_attach },
	{ "load",		1, 0, cmd_load },
	{ "resume",		1, 0, cmd_resume },
	{ "prompt",		1, 1, cmd_prompt_args },
	{ "events",		1, 0, cmd_events_args },
	{ "cancel",		1, 0, cmd_cancel },
	{ "heartbeat",		1, 0, cmd_heartbeat },
	{ "detach",		1, 0, cmd_detach },
	{ "close",		1, 0, cmd_close },
	{ "status",		1, 0, cmd_status },
	{ "transcript",		1, 0, cmd_transcript },
	{ "show",		1, 0, cmd_transcript },
	{ "follow",		1, 0, cmd_events_args },
	{ "branch",		1, 0, cmd_branch },
	{ "permission",		1, 2, cmd_permission },
	{ "model",		1, 1, cmd_model },
	{ "mode",		1, 1, cmd_mode },
};

/* What "help CMD" and "CMD --help" print: the synopsis, then what it does. */
static const struct command_help {
	const char	*name, *synopsis, *text;
} command_help[] = {
	{ "capabilities", "capabilities",
	  "Show what the daemon offers and cache its restore budget\n"
	  "(the timer of later loads and resumes)." },
	{ "list", "list [--limit N | --all] [--no-header]",
	  "List the persisted sessions of the workspace, newest first: 100\n"
	  "unless --limit or --all, a line on standard error when there are\n"
	  "more.  A session ID may be given to any command by a unique prefix." },
	{ "new", "new [--session-id ID] [--approval-mode MODE] [--model-service ID]",
	  "Create a session of its own in the workspace and print its id\n"
	  "(a model the agent did not take: exit 1, the id printed)." },
	{ "attach", "attach [--approval-mode MODE] [--model-service ID]",
	  "Join the workspace's default session, shared with other clients,\n"
	  "and print its id." },
	{ "load", "load ID [--page-size N] [--replay-mode full|summary] "
	  "[--approval-mode MODE]",
	  "Restore a session with its history (under the restore budget) and\n"
	  "print its id, then what was restored (standard error)." },
	{ "resume", "resume ID [--approval-mode MODE]",
	  "Restore a session without its history and print its id." },
	{ "prompt", "prompt ID [TEXT|-] [--no-wait] [--parallel] "
	  "[--no-auto-resume]\n\t[--deadline-ms MS] [--max-time SECONDS] "
	  "[--approve ask|all|none]",
	  "Send a prompt (TEXT, or standard input with - or without TEXT) and\n"
	  "stream the answer to standard output; --approve answers the agent's\n"
	  "permission requests.  ^C cancels the turn (a second ^C leaves it\n"
	  "running and exits 130); --max-time SECONDS cancels it after that\n"
	  "long and exits 124." },
	{ "permission", "permission ID REQUEST-ID allow|deny",
	  "Answer a pending permission request of the session (see status)." },
	{ "events", "events ID [--last-event-id N]",
	  "Follow the session's events as text (--json: one JSON envelope a\n"
	  "line)." },
	{ "follow", "follow ID [--last-event-id N]",
	  "Follow the session's events as a conversation (events as text)." },
	{ "show", "show ID [--limit N] [--before RECORD]",
	  "Print the session's history as a conversation (transcript as text)." },
	{ "cancel", "cancel ID", "Cancel the session's running turn." },
	{ "heartbeat", "heartbeat ID", "Tell the daemon this client is alive." },
	{ "detach", "detach ID", "Leave the session; it stays live for others." },
	{ "close", "close ID", "Close the session for every client." },
	{ "status", "status ID",
	  "Show the session's live state and every request it waits for." },
	{ "transcript", "transcript ID [--limit N] [--before RECORD]",
	  "Show the session's history as a conversation (--json: NDJSON\n"
	  "events), all of it or --limit N records." },
	{ "branch", "branch ID [--at RECORD] [--name NAME]",
	  "Make a new session from the history of ID and print its id." },
	{ "model", "model ID MODEL", "Switch the session's model." },
	{ "mode", "mode ID plan|default|auto-edit|auto|yolo",
	  "Switch the session's approval mode." },
	{ "help", "help [COMMAND]", "Show the usage, or one command's help." },
};

/* help [CMD]: one command's help, or the usage; exits 0 (2 if unknown). */
static void __attribute__((noreturn))
help(const char *name)
{
	size_t i;

	if (name == NULL)
		usage(0);
	for (i = 0; i < sizeof(command_help) / sizeof(command_help[0]); i++)
		if (strcmp(command_help[i].name, name) == 0) {
			printf("usage: %s [options] %s\n\n%s\n\n"
			    "Options for every command: %s --help; "
			    "all of it: man qwen-restore\n", getprogname(),
			    command_help[i].synopsis, command_help[i].text,
			    getprogname());
			exit_flushed(0);
		}
	usage_err("help: unknown command '%s'", name);
}

/* Whether word is one of the space-separated words of list. */
static int
word_in(const char *word, const char *list)
{
	size_t	n = strlen(word);
	const char *p;

	for (p = list; (p = strstr(p, word)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
			return 1;
	return 0;
}

/* A command's own options, refused with any other command. */
static void
check_command_options(const struct rctx *ctx, const char *cmd)
{
	static const struct { const char *opt, *cmd; } only[] = {
		{ "--page-size", "load" }, { "--replay-mode", "load" },
		{ "--deadline-ms", "prompt" }, { "--session-id", "new" },
		{ "--approval-mode", "new attach load resume" },
		{ "--model-service", "new attach" },
		{ "--limit", "transcript show list" },
		{ "--before", "transcript show" },
		{ "--at", "branch" }, { "--name", "branch" },
		{ "--all", "list" }, { "--no-header", "list" },
		{ "--max-time", "prompt" },
	};
	const int given[] = { ctx->page_size >= 0, ctx->replay_mode != NULL,
	    ctx->deadline_ms >= 0, ctx->new_id != NULL, ctx->approval_mode != NULL,
	    ctx->model_service != NULL, ctx->limit >= 0, ctx->before != NULL,
	    ctx->at != NULL, ctx->name != NULL, ctx->all, ctx->no_header,
	    ctx->max_time_ms >= 0 };
	size_t i;

	for (i = 0; i < sizeof(only) / sizeof(only[0]); i++)
		if (given[i] && !word_in(cmd, only[i].cmd))
			usage_err("%s: only with %s", only[i].opt, only[i].cmd);
}

/*
 * Widths by wcwidth need a UTF-8 character type: the user's locale, else
 * C.UTF-8 (what the daemon sends is UTF-8 whatever the locale says).
 */
static void
setup_locale(void)
{
	if (setlocale(LC_CTYPE, "") == NULL || MB_CUR_MAX == 1)
		(void)setlocale(LC_CTYPE, "C.UTF-8");
}

/* Parse, open the state, run one command, exit with its code. */
int
main(int argc, char **argv)
{
	struct rctx		 ctx;
	const struct command	*cmd = NULL;
	char			*cause = NULL;
	size_t			 i;
	int			 nargs, rc;

	memset(&ctx, 0, sizeof(ctx));
	ctx.fetch_timeout_ms = ctx.timeout_ms = ctx.last_event_id = -1;
	ctx.page_size = ctx.deadline_ms = ctx.limit = ctx.max_time_ms = -1;
	setup_locale();
	parse_args(&ctx, argc, argv);
	ctx.cols = output_width();
	if (ctx.help)
		help(optind < argc ? argv[optind] : NULL);
	if (optind < argc && strcmp(argv[optind], "help") == 0) {
		if (argc - optind > 2)
			usage_err("help: too many arguments");
		help(optind + 1 < argc ? argv[optind + 1] : NULL);
	}
	if (optind >= argc)
		usage(EXIT_USAGE);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[optind], commands[i].name) == 0)
			cmd = &commands[i];
	if (cmd == NULL)
		usage_err("unknown command '%s'", argv[optind]);
	ctx.command = cmd->name;
	check_command_options(&ctx, cmd->name);
	nargs = argc - optind - 1;
	if (cmd->takes_id && nargs < 1)
		usage_err("%s: a session ID is required", cmd->name);
	if (nargs > cmd->takes_id + cmd->max_args)
		usage_err("%s: too many arguments", cmd->name);
	check_options(&ctx, cmd->name);
	if (ctx.parallel && nargs > 1 && strcmp(argv[optind + 2], "-") != 0)
		usage_err("prompt: --parallel reads the prompts from standard "
		    "input");
	if (cmd->takes_id) {
		ctx.session_id = argv[optind + 1];
		if (!state_id_valid(ctx.session_id))
			usage_err("%s: invalid session ID '%s'", cmd->name,
			    ctx.session_id);
	}
	if ((ctx.state = state_open(ctx.state_dir, ctx.addr_key,
	    &cause)) == NULL) {
		warnx("%s", cause);
		free(cause);
		return EXIT_FAIL;
	}
	if (http_global_init() == -1) {
		warnx("cannot initialise libcurl");
		return EXIT_FAIL;
	}
	ctx.follow = strcmp(cmd->name, "follow") == 0;
	if (strcmp(cmd->name, "show") == 0 || ctx.follow)
		ctx.json = 0;	/* text is what they are for */
	rc = ctx.session_id != NULL ? prefix_resolve(&ctx) : 0;
	if (rc == 0)
		rc = cmd->fn(&ctx, argv + optind + 1 + cmd->takes_id);
	http_global_cleanup();
	state_free(ctx.state);
	free(ctx.socket_path);
	free(ctx.socket_tried);
	free(ctx.base_url);
	free(ctx.addr_key);
	free(ctx.token);
	free(ctx.cwd);
	free(ctx.state_dir);
	free(ctx.session_id_full);
	if (outflush(stdout) == -1) {
		warn("write error");
		if (rc == EXIT_OK)
			rc = EXIT_FAIL;
	}
	return rc;
}
