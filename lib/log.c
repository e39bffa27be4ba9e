/* log.c: levelled logging to stderr or a file, journald-aware. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *log_prog = "qwen";
static enum log_level log_level_max = LOG_LEVEL_INFO;
static int log_fd = STDERR_FILENO;
static char *log_path;
static int log_journal;

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
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
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

int
log_reopen(void)
{
	char *path;
	int rc;

	if (log_path == NULL)
		return 0;
	/* log_open_file frees log_path, so hand it a copy. */
	if ((path = strdup(log_path)) == NULL)
		return -1;
	rc = log_open_file(path);
	free(path);
	return rc;
}

int
log_is_journal(void)
{
	return log_journal;
}

/* Format the line in one buffer so that one write() keeps it whole. */
void
log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char line[2048];
	int n = 0, m;
	struct timespec ts;
	struct tm tm;

	if (level > log_level_max)
		return;
	if (log_journal) {
		n = snprintf(line, sizeof(line), "<%d>", (int)level);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = (int)strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
		n += snprintf(line + n, sizeof(line) - n, ".%03ldZ %s[%ld] %s: ",
		    ts.tv_nsec / 1000000L, log_prog, (long)getpid(),
		    log_level_name(level));
	}
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* A failed log write has nowhere to be reported; ignore it. */
	if (write(log_fd, line, (size_t)n) < 0)
		return;
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
