/* SPDX-License-Identifier: ISC */
/*
 * acp-drive: drive an NDJSON JSON-RPC child over real pipes from a script.
 *
 * usage: acp-drive [-q] [-t SECONDS] [-e STDERR-FILE] -- COMMAND [ARG...]
 *
 * Every line the child writes is copied to stdout (with -q only lines
 * shorter than 64 KiB); the
 * driver's own reports are lines starting with '#'.  Script commands, one
 * per line on stdin:
 *   send LINE            write LINE and '\n' to the child
 *   batch N              send the next N script lines in one write()
 *   big ID N             send a request with id ID padded to N bytes
 *   wait ID              wait for the answer to id ID (JSON text: 5, "a")
 *   waitfor TEXT         wait for a line containing TEXT (each line matches once)
 *   probe PFX UNTIL METHOD [PARAMS]
 *                        send METHOD requests one at a time (ids "PFX-k")
 *                        until the answer to UNTIL has arrived; report
 *                        "#probe n=N p50=.. p99=.. max=.. (ms)"
 *   elapsed ID           report "#elapsed ID MS": send to answer
 *   hwm                  report "#hwm KB" (the child's VmHWM)
 *   pid                  report "#pid PID"
 *   kill SIG             send signal number SIG to the child
 *   shell CMD            run CMD with sh -c (fail: exit 4)
 *   close                close the child's stdin
 *   exit                 wait for the child to exit, report "#exit STATUS"
 * At the end of the script stdin is closed and the child waited for.
 * A wait that times out (default 10 s) kills the child and exits 3.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#define MAX_IDS 65536

static pid_t child;
static int to_child = -1, from_child = -1;
static int quiet;
static double timeout_s = 10;
static char *inbuf;
static size_t inlen, incap;
static char **lines;		/* unmatched lines for waitfor */
static size_t nlines, capl;
static int child_eof;

struct idrec {
	char	*id;
	double	 sent, answered;
};
static struct idrec ids[MAX_IDS];
static size_t nids;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct idrec *
id_find(const char *id, int add)
{
	size_t i;

	for (i = nids; i > 0; i--)
		if (strcmp(ids[i - 1].id, id) == 0)
			return &ids[i - 1];
	if (!add || nids == MAX_IDS)
		return NULL;
	ids[nids].id = strdup(id);
	ids[nids].sent = ids[nids].answered = 0;
	return &ids[nids++];
}

static void
die_timeout(const char *what)
{
	fprintf(stderr, "acp-drive: timed out: %s\n", what);
	printf("#timeout %s\n", what);
	fflush(stdout);
	kill(child, SIGKILL);
	exit(3);
}

/*
 * Parse a line; for a long answer only its head ({"jsonrpc","id"} before
 * "result"/"error"), so that megabyte answers do not slow the driver.
 */
static json_object *
parse_head(const char *line)
{
	const char *cut;
	char head[512];
	size_t n;

	if (strlen(line) < 65536)
		return json_tokener_parse(line);
	if ((cut = strstr(line, ",\"result\":")) == NULL || cut - line > 400)
		if ((cut = strstr(line, ",\"error\":")) == NULL || cut - line > 400)
			return NULL;
	n = (size_t)(cut - line);
	memcpy(head, line, n);
	head[n] = '}';
	head[n + 1] = '\0';
	return json_tokener_parse(head);
}

/* One line from the child: print, note answers, keep for waitfor. */
static void
got_line(char *line)
{
	json_object *o, *id, *m;
	struct idrec *r;

	if (!quiet || strlen(line) < 65536)
		printf("%s\n", line);
	o = parse_head(line);
	if (o != NULL && json_object_object_get_ex(o, "id", &id) &&
	    !json_object_object_get_ex(o, "method", &m)) {
		r = id_find(json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN), 1);
		if (r != NULL && r->answered == 0)
			r->answered = now_ms();
	}
	json_object_put(o);
	if (nlines == capl) {
		capl = capl ? capl * 2 : 64;
		lines = realloc(lines, capl * sizeof(*lines));
	}
	lines[nlines++] = strdup(line);
}

/* Read what the child wrote, waiting up to ms; 0 on EOF. */
static int
pump(int ms)
{
	static size_t scanned;		/* bytes of inbuf known to hold no '\n' */
	struct pollfd pfd = { from_child, POLLIN, 0 };
	char *nl, *start;
	ssize_t n;

	if (child_eof)
		return 0;
	if (poll(&pfd, 1, ms) <= 0)
		return 1;
	if (incap - inlen < (1u << 20)) {
		incap = incap * 2 + (1u << 20);
		inbuf = realloc(inbuf, incap);
	}
	n = read(from_child, inbuf + inlen, incap - inlen - 1);
	if (n <= 0) {
		child_eof = 1;
		return 0;
	}
	inlen += (size_t)n;
	/* Lines are handled in place; only new bytes are scanned. */
	start = inbuf;
	while ((nl = memchr(inbuf + scanned, '\n', inlen - scanned)) != NULL) {
		*nl = '\0';
		got_line(start);
		scanned = (size_t)(nl + 1 - inbuf);
		start = nl + 1;
		/* Shift out handled lines only when the next one starts fresh. */
		memmove(inbuf, start, inlen - scanned);
		inlen -= scanned;
		scanned = 0;
		start = inbuf;
	}
	scanned = inlen;
	fflush(stdout);
	return 1;
}

/* Remember when the request in line (if any) was sent. */
static void
note_sent(const char *line)
{
	json_object *o, *id;
	struct idrec *r;

	o = json_tokener_parse(line);
	if (o != NULL && json_object_object_get_ex(o, "id", &id)) {
		r = id_find(json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN), 1);
		if (r != NULL) {
			r->sent = now_ms();
			r->answered = 0;
		}
	}
	json_object_put(o);
}

static void
write_all(const char *line, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		struct pollfd pfd[2] = { { to_child, POLLOUT, 0 }, { from_child, POLLIN, 0 } };
		if (poll(pfd, child_eof ? 1 : 2, 1000) <= 0)
			continue;
		if (!child_eof && (pfd[1].revents & (POLLIN | POLLHUP)))
			pump(0);
		if (pfd[0].revents & (POLLERR | POLLHUP)) {
			fprintf(stderr, "acp-drive: child stdin closed\n");
			return;
		}
		if (!(pfd[0].revents & POLLOUT))
			continue;
		n = write(to_child, line + off, len - off);
		if (n == -1 && errno != EAGAIN && errno != EINTR) {
			perror("acp-drive: write");
			return;
		}
		if (n > 0)
			off += (size_t)n;
	}
}

static void
send_line(const char *line, size_t len)
{
	note_sent(line);
	write_all(line, len);
}

static void
send_text(const char *s)
{
	char *l;
	size_t n = strlen(s);

	l = malloc(n + 2);
	memcpy(l, s, n);
	l[n] = '\n';
	l[n + 1] = '\0';
	send_line(l, n + 1);
	free(l);
}

static void
wait_id(const char *id)
{
	double deadline = now_ms() + timeout_s * 1e3;
	struct idrec *r;

	for (;;) {
		r = id_find(id, 0);
		if (r != NULL && r->answered != 0)
			return;
		if (now_ms() > deadline || !pump(50)) {
			r = id_find(id, 0);
			if (r != NULL && r->answered != 0)
				return;
			die_timeout(id);
		}
	}
}

static void
wait_text(const char *text)
{
	double deadline = now_ms() + timeout_s * 1e3;
	size_t i;

	for (;;) {
		for (i = 0; i < nlines; i++) {
			if (lines[i] != NULL && strstr(lines[i], text) != NULL) {
				free(lines[i]);
				lines[i] = NULL;
				return;
			}
		}
		if (now_ms() > deadline || !pump(50))
			die_timeout(text);
	}
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
rank(const double *v, size_t n, double pct)
{
	size_t k = (size_t)(pct / 100.0 * (double)n + 0.999999);

	if (n == 0)
		return 0;
	return v[(k < 1 ? 1 : k > n ? n : k) - 1];
}

/* Round trips of METHOD while UNTIL is outstanding. */
static void
probe(const char *pfx, const char *until, const char *method, const char *params)
{
	double *rtt = NULL, deadline = now_ms() + timeout_s * 1e3, start = now_ms();
	double max = 0, max_at = 0;
	size_t n = 0, cap = 0;
	struct idrec *u, *r;
	char line[4096], idtxt[256];

	for (;;) {
		u = id_find(until, 0);
		if (u != NULL && u->answered != 0)
			break;
		snprintf(idtxt, sizeof(idtxt), "\"%s-%zu\"", pfx, n);
		snprintf(line, sizeof(line),
		    "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"%s\",\"params\":%s}",
		    idtxt, method, params != NULL ? params : "{}");
		send_text(line);
		wait_id(idtxt);
		r = id_find(idtxt, 0);
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			rtt = realloc(rtt, cap * sizeof(*rtt));
		}
		rtt[n++] = r->answered - r->sent;
		if (rtt[n - 1] > max) {
			max = rtt[n - 1];
			max_at = r->sent - start;
		}
		if (now_ms() > deadline)
			die_timeout(until);
	}
	qsort(rtt, n, sizeof(*rtt), cmp_d);
	printf("#probe n=%zu p50=%.3f p99=%.3f max=%.3f max_at=%.1f\n", n,
	    rank(rtt, n, 50), rank(rtt, n, 99), n ? rtt[n - 1] : 0.0, max_at);
	free(rtt);
}

static void
report_hwm(void)
{
	char path[64], buf[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)child);
	if ((f = fopen(path, "r")) == NULL) {
		printf("#hwm -1\n");
		return;
	}
	while (fgets(buf, sizeof(buf), f) != NULL)
		if (strncmp(buf, "VmHWM:", 6) == 0)
			printf("#hwm %ld\n", strtol(buf + 6, NULL, 10));
	fclose(f);
}

static void
close_stdin(void)
{
	if (to_child != -1)
		close(to_child);
	to_child = -1;
}

static void
wait_exit(void)
{
	double deadline = now_ms() + timeout_s * 1e3;
	int st;

	close_stdin();
	for (;;) {
		pid_t w = waitpid(child, &st, WNOHANG);
		if (w == child)
			break;
		if (now_ms() > deadline)
			die_timeout("exit");
		if (!pump(20))
			usleep(10000);
	}
	while (pump(0))
		;
	printf("#exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	fflush(stdout);
	child = -1;
}

static void
spawn(char **argv, const char *errfile)
{
	int in[2], out[2], fd;

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1) {
		perror("acp-drive: pipe");
		exit(1);
	}
	if ((child = fork()) == -1) {
		perror("acp-drive: fork");
		exit(1);
	}
	if (child == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (errfile != NULL &&
		    (fd = open(errfile, O_WRONLY | O_CREAT | O_APPEND, 0644)) != -1)
			dup2(fd, 2);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	to_child = in[1];
	from_child = out[0];
	fcntl(from_child, F_SETPIPE_SZ, 1 << 20);	/* fewer wake-ups for big answers */
	fcntl(to_child, F_SETFL, O_NONBLOCK);
}

static void
send_batch(long n)
{
	char *line = NULL, *all = NULL;
	size_t cap = 0, len = 0;
	ssize_t k;

	while (n-- > 0 && (k = getline(&line, &cap, stdin)) != -1) {
		note_sent(line);
		all = realloc(all, len + (size_t)k + 2);
		memcpy(all + len, line, (size_t)k);
		len += (size_t)k;
		if (all[len - 1] != '\n')
			all[len++] = '\n';
	}
	if (len > 0)
		write_all(all, len);
	free(all);
	free(line);
}

static void
run_command(char *cmd)
{
	char *arg = strchr(cmd, ' '), *a2, *a3, *a4;

	if (arg != NULL)
		*arg++ = '\0';
	if (strcmp(cmd, "send") == 0 && arg != NULL)
		send_text(arg);
	else if (strcmp(cmd, "batch") == 0 && arg != NULL)
		send_batch(strtol(arg, NULL, 10));
	else if (strcmp(cmd, "big") == 0 && arg != NULL &&
	    (a2 = strchr(arg, ' ')) != NULL) {
		*a2++ = '\0';
		size_t n = strtoul(a2, NULL, 10), off;
		char *l = malloc(n + 128);
		off = (size_t)sprintf(l, "{\"jsonrpc\":\"2.0\",\"id\":%s,"
		    "\"method\":\"qwen/status/loop_lag\",\"params\":{\"pad\":\"", arg);
		while (off < n)
			l[off++] = 'x';
		off += (size_t)sprintf(l + off, "\"}}\n");
		send_line(l, off);
		free(l);
	} else if (strcmp(cmd, "wait") == 0 && arg != NULL)
		wait_id(arg);
	else if (strcmp(cmd, "waitfor") == 0 && arg != NULL)
		wait_text(arg);
	else if (strcmp(cmd, "probe") == 0 && arg != NULL &&
	    (a2 = strchr(arg, ' ')) != NULL && (*a2++ = '\0', 1) &&
	    (a3 = strchr(a2, ' ')) != NULL) {
		*a3++ = '\0';
		if ((a4 = strchr(a3, ' ')) != NULL)
			*a4++ = '\0';
		probe(arg, a2, a3, a4);
	} else if (strcmp(cmd, "elapsed") == 0 && arg != NULL) {
		struct idrec *r = id_find(arg, 0);
		printf("#elapsed %s %.3f\n", arg, r != NULL && r->answered != 0 ?
		    r->answered - r->sent : -1.0);
	} else if (strcmp(cmd, "hwm") == 0)
		report_hwm();
	else if (strcmp(cmd, "pid") == 0)
		printf("#pid %ld\n", (long)child);
	else if (strcmp(cmd, "kill") == 0 && arg != NULL)
		kill(child, atoi(arg));
	else if (strcmp(cmd, "shell") == 0 && arg != NULL) {
		fflush(stdout);
		if (system(arg) != 0) {
			fprintf(stderr, "acp-drive: shell command failed: %s\n", arg);
			kill(child, SIGKILL);
			exit(4);
		}
	} else if (strcmp(cmd, "close") == 0)
		close_stdin();
	else if (strcmp(cmd, "exit") == 0)
		wait_exit();
	else if (*cmd != '\0' && *cmd != '#') {
		fprintf(stderr, "acp-drive: bad command: %s\n", cmd);
		kill(child, SIGKILL);
		exit(2);
	}
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	const char *errfile = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ch;

	while ((ch = getopt(argc, argv, "qt:e:")) != -1) {
		switch (ch) {
		case 'q': quiet = 1; break;
		case 't': timeout_s = atof(optarg); break;
		case 'e': errfile = optarg; break;
		default:
			fprintf(stderr, "usage: acp-drive [-q] [-t S] [-e FILE] -- CMD...\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: acp-drive [-q] [-t S] [-e FILE] -- CMD...\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	spawn(argv + optind, errfile);
	while ((n = getline(&line, &cap, stdin)) != -1) {
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		run_command(line);
	}
	free(line);
	if (child > 0)
		wait_exit();
	return 0;
}
