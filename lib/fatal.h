/* SPDX-License-Identifier: ISC */
/*
 * fatal.h: the programs' last words, beside the log (OpenNTPD's manner).
 *
 * Built into lib/libxmalloc.a with xmalloc.c, for programs only: libqwen
 * never ends the program (HACKING.md, Errors).  Both log through log.h,
 * so a daemon's last line goes where its other lines go (stderr, the
 * journal or the log file, text or JSON), then exit(1).
 */
#ifndef QWEN_FATAL_H
#define QWEN_FATAL_H

/* Log "fatal: <message>: <strerror(errno)>" and exit(1). */
void	fatal(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
/* Log "fatal: <message>" and exit(1). */
void	fatalx(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
