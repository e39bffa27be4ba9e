/* SPDX-License-Identifier: ISC */
/*
 * cause.c: the one helper behind every char **cause (cause.h).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "cause.h"

static void
cause_vset(char **cause, const char *fmt, va_list ap)
{
	if (cause == NULL)
		return;
	if (vasprintf(cause, fmt, ap) == -1)
		*cause = NULL;
}

int
cause_set(char **cause, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	cause_vset(cause, fmt, ap);
	va_end(ap);
	errno = saved;
	return -1;
}

int
cause_errno(char **cause, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cause_vset(cause, fmt, ap);
	va_end(ap);
	errno = err;
	return -1;
}
