/* SPDX-License-Identifier: ISC */
/* test-budget.c: budget parsing and resolution (seed 000). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "tap.h"

#define MAX	BUDGET_MAX_MS

/* budget_parse_ms: the brief's reject and accept lists. */
static void
test_parse(void)
{
	static const char *bad[] = {
		"", "0", "-1", "1.5", "1e3", " 5", "5 ", "2147483648",
		"99999999999999999999", "+5", "0x10", "007", "00", "5ms", "1_000",
		"\t5", "٥",
	};
	static const struct {
		const char	*text;
		int64_t		 want;
	} good[] = {
		{ "1", 1 }, { "2147483647", MAX }, { "60000", 60000 },
		{ "10", 10 }, { "1000000000", 1000000000 },
	};
	char *err = NULL;
	int64_t v;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		free(err);
		err = NULL;
		is_int(budget_parse_ms("--x-ms", bad[i], 0, &v, &err), -1,
		    "parse rejects '%s'", bad[i]);
		is_int(v, 42, "parse leaves *out alone for '%s'", bad[i]);
		ok(err != NULL && strstr(err, "--x-ms: must be a positive integer of "
		    "milliseconds no greater than 2147483647") == err,
		    "message for '%s' names the flag and the rule", bad[i]);
	}
	free(err);
	err = NULL;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = -5;
		is_int(budget_parse_ms("--x-ms", good[i].text, 0, &v, &err), 0,
		    "parse accepts '%s'", good[i].text);
		is_int(v, good[i].want, "parse value of '%s'", good[i].text);
	}
	ok(err == NULL, "an accepted value leaves no message");
	budget_parse_ms("--session-restore-timeout-ms", "0", 0, &v, &err);
	is_str(err, "--session-restore-timeout-ms: must be a positive integer "
	    "of milliseconds no greater than 2147483647, not '0'",
	    "the documented message, exactly");
	free(err);
	err = NULL;
	is_int(budget_parse_ms("--x", "0", 1, &v, &err), 0, "allow_zero accepts 0");
	is_int(v, 0, "allow_zero value 0");
	is_int(budget_parse_ms("--x", "00", 1, &v, &err), -1,
	    "allow_zero still rejects 00");
	ok(err != NULL && strstr(err, "non-negative") != NULL, "allow_zero message says "
	    "non-negative");
	free(err);
	err = NULL;
	is_int(budget_parse_ms("--x", "-1", 1, &v, &err), -1,
	    "allow_zero rejects -1");
	free(err);
	err = NULL;
	is_int(budget_parse_ms("--x", NULL, 0, &v, NULL), -1,
	    "NULL text rejected, NULL cause tolerated");
	budget_parse_ms("--x", "123456789012345678901234567890123456789012345",
	    0, &v, &err);
	ok(err != NULL && strstr(err, "...'") != NULL, "a long text is cut in the message");
	free(err);
}

/* The server restore budget order of seed 000. */
static void
test_restore(void)
{
	static const struct {
		int64_t restore, init, want;
		const char *what;
	} c[] = {
		{ -1, -1, 60000, "defaults: 60 s" },
		{ 5000, -1, 5000, "explicit restore below the default wins" },
		{ 1, -1, 1, "explicit restore of 1 ms wins" },
		{ 90000, -1, 90000, "explicit restore above the default" },
		{ 5000, 120000, 5000, "explicit restore wins over larger init" },
		{ 90000, 30000, 90000, "explicit restore wins over smaller init" },
		{ -1, 120000, 120000, "larger init raises the budget" },
		{ -1, 60001, 60001, "init one above the default raises" },
		{ -1, 60000, 60000, "init equal to the default" },
		{ -1, 5000, 60000, "smaller init never lowers the budget" },
		{ -1, 10000, 60000, "default init (10 s) leaves 60 s" },
		{ -1, MAX, MAX, "init at 2^31-1" },
		{ MAX, -1, MAX, "restore at 2^31-1" },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		is_int(budget_restore_ms(c[i].restore, c[i].init), c[i].want,
		    "restore budget: %s", c[i].what);
}

/* The SDK restore timeout order, with the timer ceiling. */
static void
test_client(void)
{
	static const struct {
		int64_t req, fetch, cached, want;
		int disabled;
		const char *what;
	} c[] = {
		{ -1, -1, -1, 70000, 0, "nothing known: 70 s" },
		{ -1, -1, 60000, 70000, 0, "cached 60 s + 10 s" },
		{ -1, -1, 120000, 130000, 0, "cached 120 s + 10 s" },
		{ -1, -1, 5000, 15000, 0, "cached below default + 10 s" },
		{ -1, 30000, 60000, 30000, 0, "explicit fetch wins over cache" },
		{ -1, 30000, -1, 30000, 0, "explicit fetch below server budget" },
		{ -1, 0, 60000, 0, 1, "fetch 0 disables the timer" },
		{ 5000, 30000, 60000, 5000, 0, "per-request wins over all" },
		{ 0, 30000, 60000, 0, 1, "per-request 0 disables the timer" },
		{ 0, -1, -1, 0, 1, "per-request 0 alone disables" },
		{ MAX, -1, -1, MAX, 0, "per-request 2^31-1 kept" },
		{ MAX + 1, -1, -1, 0, 1, "per-request above 2^31-1 disables" },
		{ -1, MAX + 1, -1, 0, 1, "fetch above 2^31-1 disables" },
		{ -1, -1, MAX - 10000, MAX, 0, "cached + 10 s exactly 2^31-1" },
		{ -1, -1, MAX - 9999, 0, 1, "cached + 10 s past 2^31-1 disables" },
		{ -1, -1, MAX, 0, 1, "cached 2^31-1 + 10 s disables" },
		{ -1, -1, INT64_MAX, 0, 1, "cached int64 max: no wrap" },
		{ -1, -1, 0, 70000, 0, "cached 0 is invalid: 70 s" },
	};
	int64_t got;
	size_t i;
	int dis;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		dis = -7;
		got = budget_client_restore_ms(c[i].req, c[i].fetch,
		    c[i].cached, &dis);
		is_int(got, c[i].want, "client: %s", c[i].what);
		is_int(dis, c[i].disabled, "client disabled flag: %s",
		    c[i].what);
	}
	is_int(budget_client_restore_ms(-1, -1, 60000, NULL), 70000,
	    "client: NULL disabled pointer");
}

/* Web watchdog and request timeouts, with the timer ceiling. */
static void
test_web(void)
{
	is_int(budget_watchdog_ms(60000), 75000, "watchdog 60 s + 15 s");
	is_int(budget_watchdog_ms(5000), 20000, "watchdog 5 s + 15 s");
	is_int(budget_watchdog_ms(-1), 75000, "watchdog fallback 75 s");
	is_int(budget_watchdog_ms(MAX - 15000), MAX, "watchdog at 2^31-1");
	is_int(budget_watchdog_ms(MAX - 14999), 0, "watchdog past 2^31-1: off");
	is_int(budget_watchdog_ms(MAX), 0, "watchdog budget 2^31-1: off");
	is_int(budget_watchdog_ms(INT64_MAX), 0, "watchdog int64 max: off");
	is_int(budget_web_request_ms(60000), 70000, "web request 60 s + 10 s");
	is_int(budget_web_request_ms(-1), 70000, "web request fallback 70 s");
	is_int(budget_web_request_ms(MAX - 10000), MAX, "web request at max");
	is_int(budget_web_request_ms(MAX - 9999), 0, "web request past max");
	is_int(BUDGET_ATTACH_WATCHDOG_MS, 30000, "attach watchdog stays 30 s");
}

/* clamp(ceil(ms / 1000), 5, 120) at its edges. */
static void
test_retry_after(void)
{
	static const struct {
		int64_t ms;
		int want;
	} c[] = {
		{ 0, 5 }, { 1, 5 }, { 4999, 5 }, { 5000, 5 }, { 5001, 6 },
		{ 60000, 60 }, { 60001, 61 }, { 119001, 120 }, { 120000, 120 },
		{ 120001, 120 }, { 121000, 120 }, { -1, 5 }, { MAX, 120 },
		{ INT64_MAX, 120 }, { INT64_MIN, 5 },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		is_int(budget_retry_after_s(c[i].ms), c[i].want,
		    "retry-after for %lld ms", (long long)c[i].ms);
}

/* Run every group; the exit status says whether all passed. */
int
main(void)
{
	test_parse();
	test_restore();
	test_client();
	test_web();
	test_retry_after();
	return done_testing();
}
