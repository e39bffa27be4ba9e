/* SPDX-License-Identifier: ISC */
/* xmalloc.c: allocation that ends the program on failure (programs only). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatal.h"
#include "xmalloc.h"

/* Zero bytes gets one, so a result is never NULL. */
void *
xmalloc(size_t size)
{
	void *p;

	if ((p = malloc(size == 0 ? 1 : size)) == NULL)
		fatalx("xmalloc: allocating %zu bytes", size);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p;

	if (nmemb == 0 || size == 0)
		nmemb = size = 1;
	if ((p = calloc(nmemb, size)) == NULL)
		fatalx("xcalloc: allocating %zu * %zu bytes", nmemb, size);
	return p;
}

/* Overflow of nmemb * size is checked by reallocarray itself. */
void *
xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void *p;

	if (nmemb == 0 || size == 0)
		nmemb = size = 1;
	if ((p = reallocarray(ptr, nmemb, size)) == NULL)
		fatalx("xreallocarray: allocating %zu * %zu bytes", nmemb, size);
	return p;
}

char *
xstrdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		fatalx("xstrdup: out of memory");
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char *p;

	if ((p = strndup(s, n)) == NULL)
		fatalx("xstrndup: out of memory");
	return p;
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n == -1)
		fatalx("xasprintf: out of memory");
	return n;
}
