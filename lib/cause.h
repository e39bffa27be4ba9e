/* SPDX-License-Identifier: ISC */
/*
 * cause.h: the error policy's char **cause (HACKING.md "Errors"): a
 * recoverable error goes back as -1 or NULL plus a malloc'd message the
 * caller frees.
 */
#ifndef QWEN_CAUSE_H
#define QWEN_CAUSE_H

/*
 * *cause = the formatted message (NULL when memory ran out); errno is
 * kept as it was.  cause may be NULL (no message wanted); an earlier
 * *cause is overwritten, not freed.  Returns -1.
 */
int	cause_set(char **cause, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* The same, with errno = err on return. */
int	cause_errno(char **cause, int err, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

#endif
