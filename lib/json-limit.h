/* SPDX-License-Identifier: ISC */
/*
 * json-limit.h: what a JSON text would cost once parsed, counted before it
 * is.
 *
 * A byte cap does not bound a json-c tree: 1 MiB of "[{},{},...]" is a
 * third of a million objects, each with its own hash table (some 550 MB).
 * json_limit_ok() counts the values (every string, object key included,
 * number, literal, object and array) and the nesting of a text in one pass
 * without allocating, so that a request over its budget is refused before
 * anything is built.  It only counts: a malformed text is left to the
 * parser.
 */
#ifndef QWEN_JSON_LIMIT_H
#define QWEN_JSON_LIMIT_H

#include <stddef.h>

/*
 * The budget of one request body or message: json-c spends about 1 KiB
 * on the costliest value (an empty object), so a request under it costs
 * at most some 16 MiB of tree besides its bytes.
 */
#define JSON_LIMIT_VALUES	16384
#define JSON_LIMIT_DEPTH	64

/* Whether p[0..len) has at most max_values values nested at most
   max_depth deep (0 for either: no limit). */
int	json_limit_ok(const char *p, size_t len, size_t max_values,
	    size_t max_depth);

/* The values counted in p[0..len), stopping once past stop (0: never). */
size_t	json_limit_count(const char *p, size_t len, size_t stop);

/* Give the memory of a large request back to the system (glibc keeps a
   freed tree's pages otherwise); a no-op below a few hundred KiB. */
void	json_limit_release(size_t request_bytes);

#endif
