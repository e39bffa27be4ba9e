/* SPDX-License-Identifier: ISC */
/* json-limit.c: the values and nesting of a JSON text, counted unparsed. */
#include "config.h"

#include <string.h>
#ifdef HAVE_MALLOC_TRIM
#include <malloc.h>
#endif

#include "json-limit.h"

/* Past the string that starts at p[i] (its opening quote). */
static size_t
skip_string(const char *p, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		if (p[i] == '\\')
			i++;
		else if (p[i] == '"')
			return i + 1;
	}
	return len;
}

/* Past the run of number or literal bytes that starts at p[i]. */
static size_t
skip_scalar(const char *p, size_t len, size_t i)
{
	while (i < len && strchr(",:]} \t\r\n{[\"", p[i]) == NULL)
		i++;
	return i;
}

/* Count values; *deepest gets the deepest nesting.  Stops past stop. */
static size_t
count(const char *p, size_t len, size_t stop, size_t *deepest)
{
	size_t i = 0, n = 0, depth = 0;

	*deepest = 0;
	while (i < len && (stop == 0 || n <= stop)) {
		switch (p[i]) {
		case '{':
		case '[':
			n++;
			if (++depth > *deepest)
				*deepest = depth;
			i++;
			break;
		case '}':
		case ']':
			if (depth > 0)
				depth--;
			i++;
			break;
		case '"':
			n++;
			i = skip_string(p, len, i);
			break;
		case ',': case ':': case ' ': case '\t': case '\r': case '\n':
			i++;
			break;
		default:
			n++;
			i = skip_scalar(p, len, i);
			break;
		}
	}
	return n;
}

int
json_limit_ok(const char *p, size_t len, size_t max_values, size_t max_depth)
{
	size_t deepest, n;

	n = count(p, len, max_values, &deepest);
	if (max_values != 0 && n > max_values)
		return 0;
	return max_depth == 0 || deepest <= max_depth;
}

size_t
json_limit_count(const char *p, size_t len, size_t stop)
{
	size_t deepest;

	return count(p, len, stop, &deepest);
}

void
json_limit_release(size_t request_bytes)
{
#ifdef HAVE_MALLOC_TRIM
	if (request_bytes >= 256 * 1024)
		malloc_trim(0);
#else
	(void)request_bytes;
#endif
}
