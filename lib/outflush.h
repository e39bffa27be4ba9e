/* SPDX-License-Identifier: ISC */
/*
 * outflush.h: did everything a program printed reach its reader?
 *
 * A full disk or an I/O error on standard output is a failure the user
 * must hear about (a truncated export otherwise exits 0); a reader that
 * went away (EPIPE: `| head`) is not.
 */
#ifndef QWEN_OUTFLUSH_H
#define QWEN_OUTFLUSH_H

#include <stdio.h>

/*
 * Flush f and report how its writes went: 0 when everything was written
 * or the reader closed the pipe (EPIPE), -1 with errno set on any other
 * write error (ENOSPC, EIO...).
 */
int	outflush(FILE *f);

#endif
