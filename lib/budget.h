/* SPDX-License-Identifier: ISC */
/*
 * budget.h: millisecond budgets and timeouts (seed 000).
 *
 * Every duration given by a user is a positive integer of milliseconds no
 * greater than 2^31-1.  The daemon's restore budget, the client's restore
 * timeout and the web watchdog are derived here, in one place, so that the
 * programs and the tests agree.
 */
#ifndef QWEN_BUDGET_H
#define QWEN_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#define BUDGET_MAX_MS			2147483647LL	/* 2^31-1 */
#define BUDGET_RESTORE_DEFAULT_MS	60000LL
#define BUDGET_INITIALIZE_DEFAULT_MS	10000LL
#define BUDGET_CLIENT_HEADROOM_MS	10000LL
#define BUDGET_CLIENT_FALLBACK_MS	70000LL
#define BUDGET_WATCHDOG_HEADROOM_MS	15000LL
#define BUDGET_WATCHDOG_FALLBACK_MS	75000LL
#define BUDGET_ATTACH_WATCHDOG_MS	30000LL

/*
 * Parse a millisecond value given for flag (used only in the message):
 * decimal digits only, 1..2^31-1 (allow_zero: 0 too).  No sign, blank,
 * exponent, fraction or hex; a leading zero is rejected too ("007"), so the
 * text means the same to every reader.  Returns 0 and sets *out, or -1 and
 * writes a message such as "--session-restore-timeout-ms: must be a
 * positive integer of milliseconds no greater than 2147483647, not '0'"
 * in *cause (lib/cause.h: the caller frees it; NULL cause: no message;
 * with allow_zero it says "non-negative").
 */
int	budget_parse_ms(const char *flag, const char *text, int allow_zero,
	    int64_t *out, char **cause);

/*
 * The daemon's restore budget.  restore_ms / init_ms are the values given
 * on the command line (already parsed: 1..2^31-1), or -1 when not given.  An explicit restore timeout
 * wins outright (also below the default); else an explicit initialize
 * timeout larger than the default raises it; an initialize budget never
 * lowers it.
 */
int64_t	budget_restore_ms(int64_t restore_ms, int64_t init_ms);

/*
 * The client's restore timeout in ms, or 0 for "no timer".  Each input is
 * -1 (any negative) when absent.  Order: per-request value (0 = no timer,
 * and the caller does not send it), then an explicitly given global fetch
 * timeout (0 = no timer), then cached capability + 10 s (a cached value
 * <= 0 counts as absent), then 70 s.  A value or sum above 2^31-1 also
 * means no timer, never a wrapped value.  Whenever 0 is returned *disabled
 * is set to 1, else to 0; disabled may be NULL.
 */
int64_t	budget_client_restore_ms(int64_t per_request_ms, int64_t fetch_timeout_ms,
	    int64_t cached_capability_ms, int *disabled);

/*
 * Watchdog delay for a web client: budget + 15 s, or 75 s without a
 * published budget (-1).  Above 2^31-1 the timer is disabled: returns 0.
 */
int64_t	budget_watchdog_ms(int64_t server_budget_ms);

/*
 * The request timeout a web client passes for load/resume: budget + 10 s,
 * or 70 s without a published budget (-1).  Above 2^31-1: 0 (no timer).
 */
int64_t	budget_web_request_ms(int64_t server_budget_ms);

/*
 * Retry-After seconds for a budget: clamp(ceil(ms / 1000), 5, 120).  An
 * unknown budget (negative) counts as 0, so gives 5.
 */
int	budget_retry_after_s(int64_t budget_ms);

#endif
