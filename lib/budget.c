/* SPDX-License-Identifier: ISC */
/* budget.c: millisecond budgets and timeouts (seed 000). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "budget.h"
#include "cause.h"

/* Quote at most 40 bytes of the rejected text, so a message stays short. */
static void
budget_reject(const char *flag, const char *text, int allow_zero, char **cause)
{
	cause_set(cause, "%s: must be a %s integer of milliseconds "
	    "no greater than %lld, not '%.40s%s'",
	    flag != NULL ? flag : "value",
	    allow_zero ? "non-negative" : "positive", BUDGET_MAX_MS,
	    text != NULL ? text : "", text != NULL && strlen(text) > 40 ?
	    "..." : "");
}

/*
 * Decimal digits only: no sign, no blanks, no exponent, no hex, and no
 * leading zero unless the whole text is "0" (so "007" is rejected rather
 * than guessed at as octal or decimal).
 */
int
budget_parse_ms(const char *flag, const char *text, int allow_zero,
    int64_t *out, char **cause)
{
	const char *p;
	int64_t v = 0;

	if (text == NULL || *text == '\0')
		goto bad;
	if (text[0] == '0' && text[1] != '\0')
		goto bad;
	for (p = text; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		v = v * 10 + (*p - '0');
		if (v > BUDGET_MAX_MS)
			goto bad;
	}
	if (v == 0 && !allow_zero)
		goto bad;
	if (out != NULL)
		*out = v;
	return 0;
bad:
	budget_reject(flag, text, allow_zero, cause);
	return -1;
}

/* Explicit restore value wins; a larger initialize value raises; 60 s. */
int64_t
budget_restore_ms(int64_t restore_ms, int64_t init_ms)
{
	if (restore_ms > 0)
		return restore_ms;
	if (init_ms > BUDGET_RESTORE_DEFAULT_MS)
		return init_ms;
	return BUDGET_RESTORE_DEFAULT_MS;
}

/* Base plus headroom, or 0 (no timer) when it would pass 2^31-1. */
static int64_t
budget_add_capped(int64_t base, int64_t headroom, int *disabled)
{
	if (base > BUDGET_MAX_MS - headroom) {
		if (disabled != NULL)
			*disabled = 1;
		return 0;
	}
	return base + headroom;
}

/* A value that is the timer itself: 0 or above 2^31-1 means no timer. */
static int64_t
budget_timer(int64_t ms, int *disabled)
{
	if (ms == 0 || ms > BUDGET_MAX_MS) {
		if (disabled != NULL)
			*disabled = 1;
		return 0;
	}
	return ms;
}

/* The SDK's resolveRestoreTimeoutMs order. */
int64_t
budget_client_restore_ms(int64_t per_request_ms, int64_t fetch_timeout_ms,
    int64_t cached_capability_ms, int *disabled)
{
	if (disabled != NULL)
		*disabled = 0;
	if (per_request_ms >= 0)
		return budget_timer(per_request_ms, disabled);
	if (fetch_timeout_ms >= 0)
		return budget_timer(fetch_timeout_ms, disabled);
	if (cached_capability_ms > 0)
		return budget_add_capped(cached_capability_ms,
		    BUDGET_CLIENT_HEADROOM_MS, disabled);
	return BUDGET_CLIENT_FALLBACK_MS;
}

/* Web watchdog: budget + 15 s, 75 s without a budget, 0 past 2^31-1. */
int64_t
budget_watchdog_ms(int64_t server_budget_ms)
{
	if (server_budget_ms <= 0)
		return BUDGET_WATCHDOG_FALLBACK_MS;
	return budget_add_capped(server_budget_ms, BUDGET_WATCHDOG_HEADROOM_MS,
	    NULL);
}

/* Web load/resume request timeout: budget + 10 s, 70 s, 0 past 2^31-1. */
int64_t
budget_web_request_ms(int64_t server_budget_ms)
{
	if (server_budget_ms <= 0)
		return BUDGET_CLIENT_FALLBACK_MS;
	return budget_add_capped(server_budget_ms, BUDGET_CLIENT_HEADROOM_MS,
	    NULL);
}

/* clamp(ceil(ms / 1000), 5, 120); no overflow for any int64_t. */
int
budget_retry_after_s(int64_t budget_ms)
{
	int64_t s;

	if (budget_ms <= 0)
		return 5;
	s = budget_ms / 1000 + (budget_ms % 1000 != 0);
	if (s < 5)
		return 5;
	if (s > 120)
		return 120;
	return (int)s;
}
