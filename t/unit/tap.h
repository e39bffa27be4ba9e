/* SPDX-License-Identifier: ISC */
/*
 * tap.h: a minimal TAP producer for the C unit tests.
 *
 * Each test program calls plan_lazy() or nothing, runs ok()/is_int()/is_str()
 * checks, and ends with done_testing(), which prints the plan and returns the
 * exit status (non-zero when any check failed).  automake's tap-driver.sh
 * reads the output.
 */
#ifndef QWEN_TAP_H
#define QWEN_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count;
static int tap_failed;

static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static inline int
tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	printf("%sok %d - ", cond ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (!ok(g_ == w_, __VA_ARGS__)) \
		printf("#   got %lld, want %lld\n", g_, w_); \
} while (0)

#define is_str(got, want, ...) do { \
	const char *g_ = (got), *w_ = (want); \
	int same_ = (g_ == NULL && w_ == NULL) || \
	    (g_ != NULL && w_ != NULL && strcmp(g_, w_) == 0); \
	if (!ok(same_, __VA_ARGS__)) \
		printf("#   got \"%s\", want \"%s\"\n", g_ ? g_ : "(null)", \
		    w_ ? w_ : "(null)"); \
} while (0)

#define diag(...) do { printf("# "); printf(__VA_ARGS__); printf("\n"); } while (0)

static inline int
done_testing(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
