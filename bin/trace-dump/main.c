/* SPDX-License-Identifier: ISC */
/*
 * qwen-trace-dump: where restore time went, from the daemon's and the
 * child's OTLP/JSON spans.
 *
 * usage: qwen-trace-dump [options] [FILE...]
 */
#include "config.h"

#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "outflush.h"
#include "trace-dump.h"

#define DEFAULT_MAX_PENDING	10000
#define FOLLOW_POLL_MS		100

static volatile sig_atomic_t stop;

/* SIGINT/SIGTERM during --follow: finish cleanly. */
static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Exit with status once stdout is written; a write error exits 1. */
static __attribute__((noreturn)) void
exit_flushed(int status)
{
	if (outflush(stdout) == -1)
		err(1, "write error");
	exit(status);
}

/* Print the usage and exit with status. */
static __attribute__((noreturn)) void
usage(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: %s [--summary] [--format text|json|chrome|svg] [--session ID]\n"
	    "       [--trace ID] [--since TIME] [--result timeout|failure|success]\n"
	    "       [--slowest N] [--follow] [--linger MS] [--no-pager]\n"
	    "       [--max-pending N] [--help] [--version] [FILE...]\n",
	    getprogname());
	exit_flushed(status);
}

/* Parse the options into opts; exits 2 on a usage error. */
static int
parse_options(int argc, char **argv, struct td_opts *opts, size_t *cap)
{
	static const struct option longopts[] = {
		{ "session", required_argument, NULL, 's' },
		{ "trace", required_argument, NULL, 't' },
		{ "since", required_argument, NULL, 'S' },
		{ "result", required_argument, NULL, 'r' },
		{ "slowest", required_argument, NULL, 'n' },
		{ "format", required_argument, NULL, 'F' },
		{ "summary", no_argument, NULL, 'u' },
		{ "follow", no_argument, NULL, 'f' },
		{ "no-pager", no_argument, NULL, 'P' },
		{ "max-pending", required_argument, NULL, 'm' },
		{ "linger", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *errstr;
	int ch;

	while ((ch = getopt_long(argc, argv, "fhn:r:s:t:", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			opts->session = optarg;
			break;
		case 't':
			opts->trace = optarg;
			for (const char *p = optarg; *p != '\0'; p++)
				if (!isxdigit((unsigned char)*p))
					errx(2, "--trace: not a hex trace id: %s", optarg);
			break;
		case 'S':
			if (since_parse(optarg, clock_wall_ns(), &opts->since_ns) == -1)
				errx(2, "--since: not an ISO 8601 time or a "
				    "relative time like 10m: %s", optarg);
			break;
		case 'r':
			if (strcmp(optarg, "timeout") != 0 &&
			    strcmp(optarg, "failure") != 0 &&
			    strcmp(optarg, "success") != 0)
				errx(2, "--result: must be timeout, failure or "
				    "success: %s", optarg);
			opts->result = optarg;
			break;
		case 'n':
			opts->slowest = (size_t)strtonum(optarg, 1, 1000000, &errstr);
			if (errstr != NULL)
				errx(2, "--slowest: %s: %s", errstr, optarg);
			break;
		case 'F':
			if (strcmp(optarg, "text") == 0)
				opts->format = FORMAT_TEXT;
			else if (strcmp(optarg, "json") == 0)
				opts->format = FORMAT_JSON;
			else if (strcmp(optarg, "chrome") == 0)
				opts->format = FORMAT_CHROME;
			else if (strcmp(optarg, "svg") == 0)
				opts->format = FORMAT_SVG;
			else
				errx(2, "--format: must be text, json, chrome or "
				    "svg: %s", optarg);
			break;
		case 'u':
			opts->summary = 1;
			break;
		case 'f':
			opts->follow = 1;
			break;
		case 'P':
			opts->pager = 0;
			break;
		case 'm':
			*cap = (size_t)strtonum(optarg, 1, 100000000, &errstr);
			if (errstr != NULL)
				errx(2, "--max-pending: %s: %s", errstr, optarg);
			break;
		case 'L':
			opts->linger_ms = (uint64_t)strtonum(optarg, 0, 86400000,
			    &errstr);
			if (errstr != NULL)
				errx(2, "--linger: %s: %s", errstr, optarg);
			break;
		case 'h':
			usage(0);
		case 'V':
			printf("qwen-trace-dump %s\n", PACKAGE_VERSION);
			exit_flushed(0);
		default:
			usage(2);
		}
	}
	if (opts->follow && (opts->summary || opts->slowest > 0 ||
	    opts->format == FORMAT_CHROME || opts->format == FORMAT_SVG))
		errx(2, "--follow cannot be combined with --summary, --slowest "
		    "or --format chrome or svg");
	if (opts->summary && opts->format != FORMAT_TEXT)
		errx(2, "--summary is text only");
	return optind;
}

struct run {
	struct reader	**readers;
	size_t		  nreaders;
	struct join	 *join;
	struct output	 *out;
	uint64_t	  linger_ns;	/* --follow: wait for a missing half */
	int		  status;
};

/* Reader callback: into the join; stop when our reader has gone. */
static void
on_span(struct tspan *sp, void *arg)
{
	struct run *rn = arg;

	join_add(rn->join, sp);
	if (output_closed(rn->out))
		stop = 1;
}

/* Read every input once; with follow, keep polling the growing ones. */
static void
run_inputs(struct run *rn, int follow)
{
	int *done = calloc(rn->nreaders, sizeof(int));
	size_t left = rn->nreaders;
	struct timespec ts = { 0, FOLLOW_POLL_MS * 1000000L };

	if (done == NULL)
		err(1, "calloc");
	while (left > 0 && !stop && !output_closed(rn->out)) {
		for (size_t i = 0; i < rn->nreaders && !stop; i++) {
			if (done[i])
				continue;
			if (reader_run(rn->readers[i], follow, on_span, rn) == -1) {
				warn("%s", reader_name(rn->readers[i]));
				rn->status = 1;
				done[i] = 1;
				left--;
			} else if (!follow || !reader_growable(rn->readers[i])) {
				done[i] = 1;
				left--;
			}
		}
		if (!follow)
			break;
		join_flush(rn->join, clock_mono_ns() - rn->linger_ns);
		output_flush(rn->out);
		if (left > 0 && !stop)
			nanosleep(&ts, NULL);
	}
	free(done);
}

/*
 * --follow on a file not there yet waits for it, as tail -F does: the
 * daemon creates its trace file with its first span.  NULL once stopped.
 */
static struct reader *
open_when_there(const char *path)
{
	struct timespec ts = { 0, FOLLOW_POLL_MS * 1000000L };
	struct reader *r;

	warnx("%s: not there yet; waiting for it", path);
	while (!stop) {
		if ((r = reader_open(path)) != NULL) {
			warnx("%s: has appeared; following it", path);
			return r;
		}
		if (errno != ENOENT)
			return NULL;
		nanosleep(&ts, NULL);
	}
	errno = EINTR;
	return NULL;
}

/* Open the inputs named on the command line (or the default). */
static void
open_inputs(struct run *rn, int argc, char **argv, int follow)
{
	const char *dflt = getenv("QWEN_TRACE_FILE");
	static char dash[] = "-";
	char *one[1] = { dash };

	if (argc == 0) {
		if (isatty(STDIN_FILENO)) {
			if (dflt == NULL || *dflt == '\0')
				errx(2, "no trace file given and QWEN_TRACE_FILE "
				    "is not set");
			one[0] = (char *)dflt;
		}
		argv = one;
		argc = 1;
	}
	if ((rn->readers = calloc((size_t)argc, sizeof(*rn->readers))) == NULL)
		err(1, "calloc");
	for (int i = 0; i < argc; i++) {
		struct reader *r = reader_open(argv[i]);

		if (r == NULL && errno == ENOENT && follow &&
		    strcmp(argv[i], "-") != 0)
			r = open_when_there(argv[i]);
		if (r == NULL && stop)
			continue;
		if (r == NULL) {
			warn("%s", argv[i]);
			rn->status = 1;
			continue;
		}
		reader_set_stop(r, &stop);
		rn->readers[rn->nreaders++] = r;
	}
}

/*
 * Read, join, filter and show; exit 0, 1 (unreadable input), 2 (usage) or
 * 3 (filters that matched no restore).
 */
int
main(int argc, char **argv)
{
	struct td_opts opts = { .pager = 1, .linger_ms = 2000 };
	struct run rn = { 0 };
	struct join_out jo = { output_restore, output_span, NULL };
	size_t cap = DEFAULT_MAX_PENDING;
	unsigned long malformed = 0, evicted;
	int fs, optend = parse_options(argc, argv, &opts, &cap);

	if (opts.follow) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}
	open_inputs(&rn, argc - optend, argv + optend, opts.follow);
	if ((rn.out = output_new(&opts)) == NULL)
		err(1, "output");
	jo.arg = rn.out;
	if ((rn.join = join_new(cap, &jo)) == NULL)
		err(1, "join");
	rn.linger_ns = opts.linger_ms * 1000000ULL;
	run_inputs(&rn, opts.follow);
	join_flush(rn.join, 0);
	evicted = join_evicted(rn.join);
	for (size_t i = 0; i < rn.nreaders; i++) {
		malformed += reader_malformed(rn.readers[i]);
		reader_free(rn.readers[i]);
	}
	free(rn.readers);
	if ((fs = output_finish(rn.out, malformed, evicted)) != 0 &&
	    rn.status == 0)
		rn.status = fs;
	join_free(rn.join);
	if (malformed > 0)
		warnx("%lu malformed line%s skipped", malformed,
		    malformed == 1 ? "" : "s");
	if (evicted > 0)
		warnx("%lu incomplete restore%s shown early: more than %zu "
		    "pending (--max-pending)", evicted, evicted == 1 ? "" : "s",
		    cap);
	return rn.status;
}
