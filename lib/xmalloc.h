/* SPDX-License-Identifier: ISC */
/*
 * xmalloc.h: allocation for the programs, never for libqwen.
 *
 * The error policy (HACKING.md): a program cannot go on without memory, so
 * these end it with a message (fatalx(), fatal.h) instead of returning NULL; libqwen
 * itself keeps returning NULL or -1 with errno and leaves the decision to
 * its caller.  They are built as lib/libxmalloc.a, outside libqwen.a.
 */
#ifndef QWEN_XMALLOC_H
#define QWEN_XMALLOC_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "fatal.h"

void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);
int	 xasprintf(char **, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

/* A json-c constructor's result, never NULL. */
static inline json_object *
xjson_checked(json_object *o)
{
	if (o == NULL)
		fatalx("out of memory (json)");
	return o;
}

/* json-c's constructors through xjson_checked(): caller owns the result. */
#define xjson_object_new_object()	xjson_checked(json_object_new_object())
#define xjson_object_new_array()	xjson_checked(json_object_new_array())
#define xjson_object_new_string(s)	xjson_checked(json_object_new_string(s))
#define xjson_object_new_string_len(s, n) \
	xjson_checked(json_object_new_string_len((s), (n)))
#define xjson_object_new_boolean(b)	xjson_checked(json_object_new_boolean(b))
#define xjson_object_new_int(i)		xjson_checked(json_object_new_int(i))
#define xjson_object_new_int64(i)	xjson_checked(json_object_new_int64(i))
#define xjson_object_new_uint64(i)	xjson_checked(json_object_new_uint64(i))
#define xjson_object_new_double(d)	xjson_checked(json_object_new_double(d))
#define xjson_object_new_double_s(d, s) \
	xjson_checked(json_object_new_double_s((d), (s)))

#endif
