/* SPDX-License-Identifier: ISC */
/*
 * timeout.c: which timer applies to a request (seed 000, SDK rules).
 *
 * load/resume: per-request --timeout-ms (0: no timer, never sent), then an
 * explicitly given --fetch-timeout-ms / QWEN_FETCH_TIMEOUT_MS, then the
 * cached limits.sessionRestoreTimeoutMs + 10 s, then 70 s.  The arithmetic
 * is libqwen's budget_client_restore_ms(); the cache is only read here,
 * never fetched, so a restore makes no implicit capability request.
 * Every other request: --timeout-ms, then the fetch timeout, then 30 s
 * (also no timer above 2^31-1).
 */
#include "config.h"

#include "budget.h"
#include "restore.h"

/* The restore timeout (0: no timer) and where it came from. */
int64_t
timeout_restore_ms(const struct rctx *ctx, enum timeout_source *src,
    int *disabled)
{
	int64_t	cached = -1, ms;

	if (ctx->timeout_ms >= 0)
		*src = TIMEOUT_PER_REQUEST;
	else if (ctx->fetch_timeout_ms >= 0)
		*src = ctx->fetch_source;
	else {
		cached = state_cap_restore_ms(ctx->state);
		*src = cached > 0 ? TIMEOUT_CAPABILITY : TIMEOUT_DEFAULT;
	}
	ms = budget_client_restore_ms(ctx->timeout_ms, ctx->fetch_timeout_ms,
	    cached, disabled);
	/* *disabled tells "over 2^31-1" apart from an explicit 0. */
	if ((*src == TIMEOUT_PER_REQUEST && ctx->timeout_ms == 0) ||
	    ((*src == TIMEOUT_FETCH_FLAG || *src == TIMEOUT_FETCH_ENV) &&
	    ctx->fetch_timeout_ms == 0))
		*disabled = 0;
	return ms;
}

/* The timer of any other request (0: none). */
int64_t
timeout_fetch_ms(const struct rctx *ctx, enum timeout_source *src)
{
	if (ctx->timeout_ms >= 0) {
		*src = TIMEOUT_PER_REQUEST;
		return ctx->timeout_ms > BUDGET_MAX_MS ? 0 : ctx->timeout_ms;
	}
	if (ctx->fetch_timeout_ms >= 0) {
		*src = ctx->fetch_source;
		return ctx->fetch_timeout_ms > BUDGET_MAX_MS ? 0 :
		    ctx->fetch_timeout_ms;
	}
	*src = TIMEOUT_DEFAULT;
	return RESTORE_FETCH_DEFAULT_MS;
}

/* The source as -v prints it. */
const char *
timeout_source_name(enum timeout_source src)
{
	switch (src) {
	case TIMEOUT_PER_REQUEST:
		return "--timeout-ms";
	case TIMEOUT_FETCH_FLAG:
		return "--fetch-timeout-ms";
	case TIMEOUT_FETCH_ENV:
		return "QWEN_FETCH_TIMEOUT_MS";
	case TIMEOUT_CAPABILITY:
		return "cached capability + 10000 ms";
	case TIMEOUT_DEFAULT:
		break;
	}
	return "default";
}
