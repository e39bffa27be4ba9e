/* SPDX-License-Identifier: ISC */
/* log.c: levelled logging to stderr or a file, journald-aware. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "appendfile.h"
#include "log.h"

#define LOG_PROG_MAX	64	/* bytes of progname shown */

static const char *log_prog = "qwen";
static enum log_level log_level_max = LOG_LEVEL_INFO;
static int log_fd = STDERR_FILENO;
static char *log_path;
static int log_journal;
static int log_json;

static const struct {
	const char *name;
	enum log_level level;
} log_names[] = {
	{ "error", LOG_LEVEL_ERR },
	{ "warn", LOG_LEVEL_WARN },
	{ "notice", LOG_LEVEL_NOTICE },
	{ "info", LOG_LEVEL_INFO },
	{ "debug", LOG_LEVEL_DEBUG },
};

/* JOURNAL_STREAM is "DEV:INO" of the stream journald gave us as stderr. */
static int
log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &st) == -1)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *progname, enum log_level level)
{
	if (progname != NULL)
		log_prog = progname;
	log_level_max = level;
	log_journal = log_fd == STDERR_FILENO && log_stderr_is_journal();
}

void
log_set_level(enum log_level level)
{
	log_level_max = level;
}

enum log_level
log_get_level(void)
{
	return log_level_max;
}

int
log_level_parse(const char *name)
{
	size_t i;

	if (name == NULL)
		return -1;
	for (i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++)
		if (strcmp(name, log_names[i].name) == 0)
			return (int)log_names[i].level;
	return -1;
}

const char *
log_level_name(enum log_level level)
{
	size_t i;

	for (i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++)
		if (log_names[i].level == level)
			return log_names[i].name;
	return "log";
}

int
log_open_file(const char *path)
{
	int fd;
	char *copy;

	if (path == NULL) {
		if (log_fd != STDERR_FILENO)
			close(log_fd);
		log_fd = STDERR_FILENO;
		free(log_path);
		log_path = NULL;
		log_journal = log_stderr_is_journal();
		return 0;
	}
	fd = appendfile_open(path);
	if (fd == -1)
		return -1;
	if ((copy = strdup(path)) == NULL) {
		close(fd);
		return -1;
	}
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	free(log_path);
	log_fd = fd;
	log_path = copy;
	log_journal = 0;
	return 0;
}

/* Reopen the log file for rotation (appendfile_reopen()). */
int
log_reopen(void)
{
	if (log_path == NULL)
		return 0;
	return appendfile_reopen(log_fd, log_path);
}

int
log_is_journal(void)
{
	return log_journal;
}

/* Advance *n by an snprintf result, clamped to what fit in size bytes. */
static void
log_advance(size_t *n, int rc, size_t size)
{
	if (rc > 0)
		*n += (size_t)rc < size - *n ? (size_t)rc : size - *n - 1;
}

/* Write the "<N>" or "TIME PROG[PID] LEVEL: " prefix; its length. */
static size_t
log_prefix(enum log_level level, char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	if (log_journal) {
		n = 0;
		log_advance(&n, snprintf(buf, size, "<%d>", (int)level), size);
		return n;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	/* Cap the progname so that a long one cannot crowd out the message. */
	log_advance(&n, snprintf(buf + n, size - n, ".%03ldZ %.*s[%ld] %s: ",
	    ts.tv_nsec / 1000000L, LOG_PROG_MAX, log_prog, (long)getpid(),
	    log_level_name(level)), size);
	return n;
}

int
log_set_format(const char *name)
{
	if (strcmp(name, "text") == 0)
		log_json = 0;
	else if (strcmp(name, "json") == 0)
		log_json = 1;
	else
		return -1;
	return 0;
}

/* Append s[0..n) to buf as JSON string content; controls become \\u00XX. */
static void
log_json_str(char *buf, size_t *at, size_t size, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n && *at + 7 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			buf[(*at)++] = '\\';
			buf[(*at)++] = (char)c;
		} else if (c < 0x20) {
			memcpy(buf + *at, "\\u00", 4);
			*at += 4;
			buf[(*at)++] = hex[c >> 4];
			buf[(*at)++] = hex[c & 15];
		} else
			buf[(*at)++] = (char)c;
	}
}

/* The id of a "session ID: ..." message, its length in *n; NULL if none. */
static const char *
log_session_of(const char *msg, size_t *n)
{
	const char *p;

	if (strncmp(msg, "session ", 8) != 0)
		return NULL;
	msg += 8;
	*n = strcspn(msg, ": ");
	p = msg + *n;
	return *n > 0 && *n <= 128 && *p == ':' ? msg : NULL;
}

static char log_ctx_rid[LOG_ID_MAX + 1], log_ctx_tid[LOG_ID_MAX + 1];
static log_session_lookup log_lookup;

void
log_context_set(const char *request_id, const char *trace_id)
{
	strlcpy(log_ctx_rid, request_id != NULL ? request_id : "", sizeof(log_ctx_rid));
	strlcpy(log_ctx_tid, trace_id != NULL ? trace_id : "", sizeof(log_ctx_tid));
}

void
log_set_session_lookup(log_session_lookup fn)
{
	log_lookup = fn;
}

/* Append ,"key":"value" (escaped, bounded) when value is known. */
static void
log_json_field(char *line, size_t *n, size_t size, const char *key,
    const char *value)
{
	if (value == NULL || value[0] == '\0')
		return;
	log_advance(n, snprintf(line + *n, size - *n, "\"%s\":\"", key), size);
	log_json_str(line, n, size, value, strnlen(value, LOG_ID_MAX));
	log_advance(n, snprintf(line + *n, size - *n, "\","), size);
}

/* One JSON object a line (--log-format json), in one write(). */
static void
log_vmsg_json(enum log_level level, const char *fmt, va_list ap)
{
	char msg[1536], line[4096], ts[40];
	struct timespec tspec;
	struct tm tm;
	const char *sid, *rid = log_ctx_rid, *tid = log_ctx_tid, *lr, *lt;
	size_t n, m, sn;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	clock_gettime(CLOCK_REALTIME, &tspec);
	gmtime_r(&tspec.tv_sec, &tm);
	n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", tspec.tv_nsec / 1000000L);
	n = 0;
	log_advance(&n, snprintf(line, sizeof(line), "{\"time\":\"%s\",\"level\":\"%s\","
	    "\"program\":\"", ts, log_level_name(level)), sizeof(line));
	log_json_str(line, &n, sizeof(line), log_prog, strnlen(log_prog, LOG_PROG_MAX));
	log_advance(&n, snprintf(line + n, sizeof(line) - n, "\",\"pid\":%ld,",
	    (long)getpid()), sizeof(line));
	if ((sid = log_session_of(msg, &sn)) != NULL) {
		log_advance(&n, snprintf(line + n, sizeof(line) - n, "\"sessionId\":\""),
		    sizeof(line));
		log_json_str(line, &n, sizeof(line), sid, sn);
		log_advance(&n, snprintf(line + n, sizeof(line) - n, "\","), sizeof(line));
		if (log_lookup != NULL && (rid[0] == '\0' || tid[0] == '\0')) {
			lr = lt = NULL;
			log_lookup(sid, sn, &lr, &lt);
			if (rid[0] == '\0' && lr != NULL)
				rid = lr;
			if (tid[0] == '\0' && lt != NULL)
				tid = lt;
		}
	}
	log_json_field(line, &n, sizeof(line), "requestId", rid);
	log_json_field(line, &n, sizeof(line), "traceId", tid);
	log_advance(&n, snprintf(line + n, sizeof(line) - n, "\"message\":\""), sizeof(line));
	m = strlen(msg);
	log_json_str(line, &n, sizeof(line) - 3, msg, m);
	line[n++] = '"';
	line[n++] = '}';
	line[n++] = '\n';
	if (write(log_fd, line, n) < 0) {
	}
}

/*
 * Format the line in one buffer so that one write() keeps it whole.  Control
 * characters in the message (a newline from a peer's string) become '?', so
 * one call is always one line and nobody can forge a log line.
 */
void
log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char line[2048];
	size_t n, i, size = sizeof(line) - 1;	/* room for the '\n' */
	int saved = errno;

	if (level > log_level_max)
		return;
	if (log_json) {
		log_vmsg_json(level, fmt, ap);
		errno = saved;
		return;
	}
	n = log_prefix(level, line, size);
	i = n;
	log_advance(&n, vsnprintf(line + n, size - n, fmt, ap), size);
	for (; i < n; i++)
		if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
			line[i] = '?';
	line[n++] = '\n';
	/* A failed log write has nowhere to be reported; ignore it. */
	if (write(log_fd, line, n) < 0) {
	}
	errno = saved;
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	char buf[1536];
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_msg(LOG_LEVEL_WARN, "%s: %s", buf, strerror(saved));
	errno = saved;
}

#define LOG_SIMPLE(name, lvl) \
void \
name(const char *fmt, ...) \
{ \
	va_list ap; \
	va_start(ap, fmt); \
	log_vmsg(lvl, fmt, ap); \
	va_end(ap); \
}

LOG_SIMPLE(log_warnx, LOG_LEVEL_WARN)
LOG_SIMPLE(log_info, LOG_LEVEL_INFO)
LOG_SIMPLE(log_debug, LOG_LEVEL_DEBUG)
LOG_SIMPLE(log_errx, LOG_LEVEL_ERR)
