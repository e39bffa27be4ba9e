// SPDX-License-Identifier: ISC
// web-budget-test.mjs: the console's timer rules (web/budget.mjs) in node,
// without a browser.  usage: node web-budget-test.mjs WEB_DIR.  TAP output.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const b = await import(pathToFileURL(path.join(process.argv[2], 'budget.mjs')).href);
const MAX = 2147483647;
let n = 0, failed = 0;

function is(got, want, what) {
	n++;
	const good = Object.is(got, want);
	if (!good)
		failed++;
	console.log(`${good ? 'ok' : 'not ok'} ${n} - ${what}` +
	    (good ? '' : ` (got ${got}, want ${want})`));
}

is(b.TIMER_MAX_MS, MAX, 'the ceiling is 2^31-1');
is(b.restoreRequestMs(60000), 70000, 'request: budget + 10 s');
is(b.restoreWatchdogMs(60000), 75000, 'watchdog: budget + 15 s');
is(b.restoreRequestMs(null), 70000, 'request without a budget: 70 s');
is(b.restoreWatchdogMs(null), 75000, 'watchdog without a budget: 75 s');
is(b.restoreRequestMs(1500), 11500, 'request from 1500');
is(b.restoreWatchdogMs(1500), 16500, 'watchdog from 1500');
is(b.restoreRequestMs(MAX - 10000), MAX, 'request exactly 2^31-1 keeps its timer');
is(b.restoreWatchdogMs(MAX - 10000), 0, 'watchdog past 2^31-1: disabled');
is(b.restoreRequestMs(MAX - 9999), 0, 'request past 2^31-1: disabled');
is(b.restoreRequestMs(MAX), 0, 'budget 2^31-1: request disabled');
is(b.restoreWatchdogMs(MAX), 0, 'budget 2^31-1: watchdog disabled');
is(b.ATTACH_WATCHDOG_MS, 30000, 'attach keeps 30 s');

is(b.publishedBudget(null), null, 'no capabilities: no budget');
is(b.publishedBudget({ limits: {} }), null, 'no limits field: no budget');
is(b.publishedBudget({ limits: { sessionRestoreTimeoutMs: '60000' } }), null,
    'a string is not a budget');
is(b.publishedBudget({ limits: { sessionRestoreTimeoutMs: 0 } }), null, '0 is not a budget');
is(b.publishedBudget({ limits: { sessionRestoreTimeoutMs: 1.5 } }), null,
    'a fraction is not a budget');
is(b.publishedBudget({ limits: { sessionRestoreTimeoutMs: 1500 } }), 1500, 'published 1500');
const plan = b.timerPlan({ limits: { sessionRestoreTimeoutMs: 2147483000 } });
is(plan.requestMs, 0, 'plan: a huge budget disables the request timer');
is(plan.watchdogMs, 0, 'plan: ... and the watchdog');
is(plan.attachMs, 30000, 'plan: attach stays 30 s');

// armTimer with a recording setTimeout.
const calls = [];
const rec = (fn, ms) => { calls.push(ms); return 42; };
is(b.armTimer(() => {}, 0, rec), null, 'armTimer 0: no timer');
is(b.armTimer(() => {}, MAX + 1, rec), null, 'armTimer 2^31: no timer');
is(b.armTimer(() => {}, Number.NaN, rec), null, 'armTimer NaN: no timer');
is(b.armTimer(() => {}, -5, rec), null, 'armTimer negative: no timer');
is(calls.length, 0, 'setTimeout never called for those');
is(b.armTimer(() => {}, MAX, rec), 42, 'armTimer 2^31-1: armed');
is(calls[0], MAX, '... with the exact delay');

// The real runtime: a raw 2^31 ms setTimeout fires at once; armTimer's does not.
process.removeAllListeners('warning');
process.on('warning', () => {});
let raw = false, armed = false;
setTimeout(() => { raw = true; }, MAX + 1);
const t = b.armTimer(() => { armed = true; }, MAX + 1);
await new Promise((r) => setTimeout(r, 50));
is(raw, true, 'node shortens a raw 2^31 ms timer (the bug)');
is(armed, false, 'armTimer did not fire');
is(t, null, 'armTimer returned no handle');

is(b.retryAfterSeconds('7', null), 7, 'Retry-After header');
is(b.retryAfterSeconds(' 12 ', null), 12, 'Retry-After with blanks');
is(b.retryAfterSeconds(null, { retryAfterSeconds: 9 }), 9, 'body retryAfterSeconds');
is(b.retryAfterSeconds('soon', null), null, 'garbage: none');
is(b.isInvalidClientId(400, { code: 'invalid_client_id' }), true, 'invalid_client_id');
is(b.isInvalidClientId(400, { code: 'bad_request' }), false, 'another 400');
is(b.isInvalidClientId(404, { code: 'invalid_client_id' }), false, 'not a 400');
is(b.isInvalidClientId(400, null), false, 'no body');

let d = b.describeError(504, { code: 'session_restore_timeout', action: 'load',
    timeoutMs: 1500 }, '5');
is(d.kind, 'restore_timeout', '504 restore timeout');
is(d.retryAfter, 5, '... its countdown from Retry-After');
d = b.describeError(409, { code: 'restore_in_progress', reason: 'awaiting_abandoned_cleanup' }, '60');
is(d.kind, 'restore_in_progress', '409 restore_in_progress');
is(d.reason, 'awaiting_abandoned_cleanup', '... with its reason');
d = b.describeError(503, { code: 'acp_channel_unavailable', reason: 'restore_cleanup_failed',
    retryAfterSeconds: 60 }, null);
is(d.kind, 'channel_unavailable', '503 acp_channel_unavailable');
is(d.reason, 'restore_cleanup_failed', '... with its reason');
is(d.retryAfter, 60, '... retry from the body');
is(b.describeError(500, 'x', null).kind, 'error', 'a non-object body');

console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
