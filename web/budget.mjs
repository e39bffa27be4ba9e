// SPDX-License-Identifier: ISC
// budget.mjs: the console's timer rules (seed 000) and error reading.
// No DOM here: node imports this file to test it (t/helper/web-budget-test.mjs).
// The same arithmetic as libqwen's budget_web_request_ms/budget_watchdog_ms.

// The JavaScript timer ceiling: a longer delay is clamped to ~1 ms.
export const TIMER_MAX_MS = 2147483647;
export const REQUEST_HEADROOM_MS = 10000;	// load/resume request timeout
export const WATCHDOG_HEADROOM_MS = 15000;	// the console's own watchdog
export const REQUEST_FALLBACK_MS = 70000;	// no published budget
export const WATCHDOG_FALLBACK_MS = 75000;
export const ATTACH_WATCHDOG_MS = 30000;	// attach keeps its 30 s
export const OTHER_REQUEST_MS = 30000;		// every other request

// limits.sessionRestoreTimeoutMs of a capabilities answer, or null.
export function publishedBudget(caps) {
	const v = caps && caps.limits ? caps.limits.sessionRestoreTimeoutMs : undefined;
	return Number.isSafeInteger(v) && v > 0 ? v : null;
}

// budget + headroom, fallback without a budget, 0 (no timer) past 2^31-1.
function derive(budget, headroom, fallback) {
	if (budget === null || budget === undefined)
		return fallback;
	const ms = budget + headroom;
	return ms > TIMER_MAX_MS ? 0 : ms;
}

// The request timeout passed to load/resume.
export function restoreRequestMs(budget) {
	return derive(budget, REQUEST_HEADROOM_MS, REQUEST_FALLBACK_MS);
}

// The console's watchdog around a load/resume.
export function restoreWatchdogMs(budget) {
	return derive(budget, WATCHDOG_HEADROOM_MS, WATCHDOG_FALLBACK_MS);
}

// All derived values at once (what the page shows and exposes).
export function timerPlan(caps) {
	const budget = publishedBudget(caps);
	return {
		budget,
		requestMs: restoreRequestMs(budget),
		watchdogMs: restoreWatchdogMs(budget),
		attachMs: ATTACH_WATCHDOG_MS,
	};
}

// setTimeout unless ms is 0, not finite or above the ceiling: then no
// timer at all (null) rather than one the runtime fires at once.
export function armTimer(fn, ms, set = globalThis.setTimeout) {
	if (!Number.isFinite(ms) || ms <= 0 || ms > TIMER_MAX_MS)
		return null;
	return set(fn, ms);
}

// Seconds to wait from a Retry-After header (delta-seconds), else the
// body's retryAfterSeconds, else null.
export function retryAfterSeconds(header, body) {
	if (typeof header === 'string' && /^\s*\d{1,9}\s*$/.test(header))
		return parseInt(header, 10);
	const v = body && body.retryAfterSeconds;
	return Number.isSafeInteger(v) && v >= 0 ? v : null;
}

// seed 001: a 400 whose object body has code invalid_client_id.
export function isInvalidClientId(status, body) {
	return status === 400 && body !== null && typeof body === 'object' &&
	    body.code === 'invalid_client_id';
}

// What each reason means, for the page.
const REASONS = {
	restore_in_progress: 'another load or resume of this session is running',
	awaiting_abandoned_cleanup: 'an earlier restore of this session timed out ' +
	    'and has not settled yet',
	restore_cleanup_failed: 'cleanup of a timed-out restore failed; the agent ' +
	    'refuses fresh work until it drains',
	restore_settlement_overdue: 'a timed-out restore has not settled one budget ' +
	    'after its deadline; the agent refuses fresh work until it drains',
	new_session_cleanup_failed: 'cleanup of a timed-out new session failed',
	new_session_settlement_overdue: 'a timed-out new session has not settled',
};

function reasonText(reason) {
	const r = typeof reason === 'string' ? reason : 'unknown';
	return REASONS[r] ? `${REASONS[r]} (reason: ${r})` : `reason: ${r}`;
}

// A REST error as the page shows it: {kind, title, detail, retryAfter}.
// kind: restore_timeout | restore_in_progress | channel_unavailable |
// unauthorized | not_found | error.
export function describeError(status, body, retryAfterHeader) {
	const b = body !== null && typeof body === 'object' ? body : {};
	const ra = retryAfterSeconds(retryAfterHeader, b);
	const msg = typeof b.error === 'string' ? b.error : `HTTP ${status}`;
	if (status === 504 && b.code === 'session_restore_timeout')
		return { kind: 'restore_timeout', title: 'Restore timed out',
		    detail: `The daemon gave up on ${b.action || 'the restore'} ` +
		    `after ${b.timeoutMs} ms; it keeps the work fenced until it settles.`,
		    retryAfter: ra ?? 5, code: b.code };
	if (status === 409 && b.code === 'restore_in_progress')
		return { kind: 'restore_in_progress', title: 'Restore in progress',
		    detail: reasonText(b.reason) +
		    (b.activeAction ? `; active: ${b.activeAction}` : ''),
		    reason: b.reason, retryAfter: ra, code: b.code };
	if (status === 503 && b.code === 'acp_channel_unavailable')
		return { kind: 'channel_unavailable', title: 'Agent channel unavailable',
		    detail: reasonText(b.reason), reason: b.reason,
		    retryAfter: ra, code: b.code };
	if (status === 401)
		return { kind: 'unauthorized', title: 'Token required',
		    detail: 'The daemon wants a bearer token.', retryAfter: null,
		    code: b.code || 'unauthorized' };
	if (status === 404)
		return { kind: 'not_found', title: 'Not found', detail: msg,
		    retryAfter: ra, code: b.code || 'not_found' };
	return { kind: 'error', title: b.code ? b.code : `HTTP ${status}`,
	    detail: msg, retryAfter: ra, code: b.code || null };
}
