/* SPDX-License-Identifier: ISC */
/* fatal.c: a program's last words through its log, then exit (programs only). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatal.h"
#include "log.h"

/* The message with the errno it was called under, then out. */
void
fatal(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_errx("fatal: %s: %s", msg, strerror(saved));
	exit(1);
}

/* The message alone, then out. */
void
fatalx(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_errx("fatal: %s", msg);
	exit(1);
}
