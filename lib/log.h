/* SPDX-License-Identifier: ISC */
/*
 * log.h: levelled logging for the daemons.
 *
 * Lines go to stderr (or to a file given with log_open_file()).  When stderr
 * is journald's stream (JOURNAL_STREAM names its device and inode) each line
 * starts with a "<N>" priority prefix and carries no timestamp, since journald
 * adds its own; otherwise lines read "TIME PROG[PID] LEVEL: message".
 * Never pass transcript content to these functions.
 */
#ifndef QWEN_LOG_H
#define QWEN_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* syslog(3) priorities, so the numbers can be used as journald prefixes. */
enum log_level {
	LOG_LEVEL_ERR = 3,
	LOG_LEVEL_WARN = 4,
	LOG_LEVEL_NOTICE = 5,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7,
};

/* Set the program name shown in each line and the most verbose level kept. */
void	log_init(const char *progname, enum log_level level);
void	log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* Parse "error", "warn", "notice", "info" or "debug"; -1 if none of them. */
int	log_level_parse(const char *name);
const char *log_level_name(enum log_level level);

/*
 * Write to path (appending, mode 0600) instead of stderr; NULL goes back to
 * stderr.  Returns 0, or -1 with errno set and the old destination kept.
 */
int	log_open_file(const char *path);

/* Reopen the file given to log_open_file() (for SIGHUP after rotation). */
int	log_reopen(void);

/*
 * "text" (the default) or "json": one object a line, {time, level,
 * program, pid, message}, sessionId when the message is about one
 * ("session ID: ..."), requestId and traceId where known (below).  0, or
 * -1 for another name.
 */
int	log_set_format(const char *name);

/*
 * The request a line is logged for, for the JSON format's requestId and
 * traceId: set while a request is handled, NULL (or "") for unknown.
 * Each is copied (at most LOG_ID_MAX bytes); the caller bounds and checks
 * them (they become JSON string content, escaped).
 */
#define LOG_ID_MAX	64
void	log_context_set(const char *request_id, const char *trace_id);

/*
 * For a line about a session ("session ID: ...") with no request id or
 * trace id in the context: fn(id, len) may give the ones last known for
 * that session (NULL or "" for none).
 */
typedef void (*log_session_lookup)(const char *id, size_t len,
    const char **request_id, const char **trace_id);
void	log_set_session_lookup(log_session_lookup fn);

/* Whether lines carry journald priority prefixes (for tests). */
int	log_is_journal(void);

void	log_msg(enum log_level level, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
void	log_vmsg(enum log_level level, const char *fmt, va_list ap)
	    __attribute__((format(printf, 2, 0)));

/* log_warn() appends ": strerror(errno)"; the x variants do not. */
void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_errx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
