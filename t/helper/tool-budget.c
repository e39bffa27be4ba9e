/* SPDX-License-Identifier: ISC */
/*
 * tool-budget.c: qwen-test-tool budget, the budget arithmetic for the shell.
 *
 *   budget restore [--restore MS] [--init MS]       daemon restore budget
 *   budget client [--request MS] [--fetch MS] [--cached MS]
 *                                                   client restore timer
 *                                                   ("none" when disabled)
 *   budget watchdog [MS]                            web watchdog ("none")
 *   budget web-request [MS]                         web load/resume timeout
 *   budget retry-after MS                           Retry-After seconds
 *   budget parse FLAG TEXT [--allow-zero]           exit 0 + value, or
 *                                                   exit 2 + message
 *
 * MS values here are taken as given (any int64, so overflow can be tested);
 * only "parse" applies the user-input rules.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "tool.h"

/* Any decimal int64. */
static int
parse_i64(const char *s, int64_t *out)
{
	char *end;

	if (*s == '\0')
		return -1;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno != 0 || *end != '\0' ? -1 : 0;
}

/* Read "--name MS" pairs into vals[] by names[] position; -1 when absent. */
static int
parse_opts(int argc, char **argv, const char **names, int64_t *vals, int n)
{
	int i, j;

	for (j = 0; j < n; j++)
		vals[j] = -1;
	for (i = 0; i < argc; i += 2) {
		for (j = 0; j < n; j++)
			if (strcmp(argv[i], names[j]) == 0)
				break;
		if (j == n || i + 1 >= argc ||
		    parse_i64(argv[i + 1], &vals[j]) == -1) {
			fprintf(stderr, "budget: bad argument '%s'\n", argv[i]);
			return -1;
		}
	}
	return 0;
}

/* Print a timer value, "none" for 0 (no timer). */
static int
print_timer(int64_t ms)
{
	if (ms == 0)
		printf("none\n");
	else
		printf("%" PRId64 "\n", ms);
	return 0;
}

/* budget parse FLAG TEXT [--allow-zero]. */
static int
cmd_parse(int argc, char **argv)
{
	char *cause = NULL;
	int64_t v;
	int allow_zero = argc == 3 && strcmp(argv[2], "--allow-zero") == 0;

	if (argc < 2 || (argc == 3 && !allow_zero) || argc > 3) {
		fprintf(stderr,
		    "usage: budget parse FLAG TEXT [--allow-zero]\n");
		return 2;
	}
	if (budget_parse_ms(argv[0], argv[1], allow_zero, &v, &cause) == -1) {
		fprintf(stderr, "%s\n", cause != NULL ? cause : "out of memory");
		free(cause);
		return 2;
	}
	printf("%" PRId64 "\n", v);
	return 0;
}

/* One optional MS argument, -1 when absent. */
static int
one_ms(int argc, char **argv, int64_t *v)
{
	*v = -1;
	if (argc > 1 || (argc == 1 && parse_i64(argv[0], v) == -1)) {
		fprintf(stderr, "budget: bad argument\n");
		return -1;
	}
	return 0;
}

/* Dispatch the budget subcommands. */
int
tool_budget(int argc, char **argv)
{
	static const char *rnames[] = { "--restore", "--init" };
	static const char *cnames[] = { "--request", "--fetch", "--cached" };
	const char *cmd = argc >= 2 ? argv[1] : "";
	int64_t v[3];

	argc -= 2;
	argv += 2;
	if (strcmp(cmd, "restore") == 0 && parse_opts(argc, argv, rnames, v,
	    2) == 0) {
		printf("%" PRId64 "\n", budget_restore_ms(v[0], v[1]));
		return 0;
	}
	if (strcmp(cmd, "client") == 0 && parse_opts(argc, argv, cnames, v,
	    3) == 0)
		return print_timer(budget_client_restore_ms(v[0], v[1], v[2],
		    NULL));
	if (strcmp(cmd, "watchdog") == 0 && one_ms(argc, argv, v) == 0)
		return print_timer(budget_watchdog_ms(v[0]));
	if (strcmp(cmd, "web-request") == 0 && one_ms(argc, argv, v) == 0)
		return print_timer(budget_web_request_ms(v[0]));
	if (strcmp(cmd, "retry-after") == 0 && argc == 1 &&
	    parse_i64(argv[0], v) == 0) {
		printf("%d\n", budget_retry_after_s(v[0]));
		return 0;
	}
	if (strcmp(cmd, "parse") == 0)
		return cmd_parse(argc, argv);
	fprintf(stderr, "usage: qwen-test-tool budget restore [--restore MS] "
	    "[--init MS] | client [--request MS] [--fetch MS] [--cached MS] | "
	    "watchdog [MS] | web-request [MS] | retry-after MS | "
	    "parse FLAG TEXT [--allow-zero]\n");
	return 2;
}
