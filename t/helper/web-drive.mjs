// SPDX-License-Identifier: ISC
// web-drive.mjs: drive the qwen-serve console in headless Chromium.
// usage: node web-drive.mjs PLAYWRIGHT_DIR BASE_URL MODE [ARGS...]
//   main SID SID2 BUDGET     list, load with replay, prompt, self-heal
//   timeout SID CHILD_PID BUDGET REQ WD
//                            the timers, then a forced 504: countdown,
//                            SIGCONT, retry
//   unavailable SID          a 503 acp_channel_unavailable and its reason
//   attach CHILD_PID         the 30 s attach watchdog, on Playwright's
//                            clock, around an attach the stopped child
//                            cannot answer
//   timers BUDGET REQ WD [SID]
//                            the derived timer values in the DOM; with
//                            SID also attach, prompt, resume SID, prompt
//   workspaces SID_A SID_B WS_B
//                            two workspaces: the picker switches the list,
//                            load and attach to the second one
// Environment: WEB_TOKEN (the daemon's bearer, typed into the page),
// WEB_ARTIFACTS (screenshots go there).  Prints "ok - ..." lines; exits
// non-zero on the first failure.
import { createRequire } from 'node:module';
import path from 'node:path';

const [pwDir, base, mode, ...args] = process.argv.slice(2);
const require = createRequire(path.join(pwDir, 'node_modules', 'x.js'));
const { chromium } = require('playwright-core');
const token = process.env.WEB_TOKEN || '';
const artifacts = process.env.WEB_ARTIFACTS || '.';
const T = 20000;

const t0 = Date.now();

function ok(what) {
	console.log(`ok - ${what} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

function check(cond, what) {
	if (!cond)
		throw new Error(`not ok - ${what}`);
	ok(what);
}

// Requests from node (as another client would make them).
async function rest(method, p, body) {
	const headers = { 'Content-Type': 'application/json' };
	if (token)
		headers.Authorization = `Bearer ${token}`;
	const r = await fetch(base + p, { method, headers,
	    body: body === undefined ? undefined : JSON.stringify(body) });
	const text = await r.text();
	return { status: r.status, body: text ? JSON.parse(text) : null };
}

async function open(browser, opts = {}) {
	const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
	// The page's timers on a clock the test moves (time still flows).
	if (opts.clock)
		await page.clock.install();
	const problems = [];
	page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
	page.on('console', (m) => {
		// A refused request is logged by Chromium itself; the page shows it.
		if (m.type() === 'error' && !/Failed to load resource/.test(m.text()))
			problems.push(`console: ${m.text()}`);
	});
	await page.goto(base + '/');
	if (token) {
		await page.waitForSelector('#token-form:not([hidden])', { timeout: T });
		ok('the page asks for the token');
		await page.fill('#token-input', token);
		await page.click('#token-form button[type=submit]');
		check(await page.evaluate(() => sessionStorage.getItem('qwen-serve.token')) === token,
		    'the token is kept in sessionStorage');
	}
	await page.waitForSelector('#token-form[hidden]', { state: 'attached', timeout: T });
	await page.waitForFunction(() => document.body.dataset.state === 'idle', null,
	    { timeout: T }).catch((e) => {
		throw new Error(`not ok - the page did not start: ${e.message}; ${problems.join('; ')}`);
	});
	return { page, problems };
}

async function timers(page) {
	return page.$eval('#timers', (e) => ({ ...e.dataset, text: e.textContent }));
}

async function loadSession(page, id, what) {
	await page.click(`li[data-session-id="${id}"] button.load`);
	await page.waitForFunction(() => document.body.dataset.state === 'ready' &&
	    Number(document.getElementById('history').dataset.count) > 0, null, { timeout: T });
	await page.waitForSelector('#stream[data-state="live"]', { timeout: T });
	ok(what);
}

// Send text and wait for the streamed echo and the turn's end.
async function prompt(page, text, what) {
	await page.fill('#prompt-input', text);
	await page.click('#send');
	await page.waitForFunction((t) => [...document.querySelectorAll('.msg-agent .msg-body')]
	    .some((e) => e.textContent === `echo: ${t}`), text, { timeout: T });
	await page.waitForSelector('#turn[data-state="complete"]', { timeout: T });
	ok(what);
}

// Load id and expect the error box of kind with reason, and a countdown;
// returns the countdown's seconds.
async function loadFails(page, id, kind, reason, what) {
	await page.click(`li[data-session-id="${id}"] button.load`);
	await page.waitForSelector(`#error[data-kind="${kind}"]:not([hidden])`, { timeout: T });
	check(await page.$eval('#error', (e) => e.dataset.reason) === reason,
	    `${what} shown with its reason`);
	check((await page.$eval('#error-detail', (e) => e.textContent)).includes(reason),
	    `${what}: the reason is in the text`);
	const secs = Number(await page.$eval('#error-countdown', (e) => e.dataset.seconds));
	check(secs >= 1, `${what}: a countdown from Retry-After (${secs} s)`);
	return secs;
}

async function modeMain(browser, sidA, sidB, budget) {
	const { page, problems } = await open(browser);
	await page.waitForFunction(() => document.querySelectorAll('#sessions li').length >= 2,
	    null, { timeout: T });
	const ids = await page.$$eval('#sessions li', (l) => l.map((e) => e.dataset.sessionId));
	check(ids.includes(sidA) && ids.includes(sidB), 'both persisted sessions are listed');
	const t = await timers(page);
	check(t.restoreBudgetMs === budget &&
	    t.restoreRequestMs === String(Number(budget) + 10000) &&
	    t.restoreWatchdogMs === String(Number(budget) + 15000) &&
	    t.attachWatchdogMs === '30000', `timers from the default budget ${budget}`);

	const listed = await page.$eval(`li[data-session-id="${sidA}"] .first`, (e) => e.textContent);
	await loadSession(page, sidA, 'load replays the history');
	const first = await page.$eval('.msg-user .msg-body', (e) => e.textContent);
	check(first.startsWith(listed.slice(0, 60)), 'the first replayed prompt is the listed one');
	const replayed = await page.$$eval('.msg[data-replayed="1"]', (l) => l.length);
	check(replayed >= 3, `replayed messages shown (${replayed})`);
	check(await page.$$eval('.msg-tool', (l) => l.length) > 0, 'tool calls shown');
	await page.screenshot({ path: path.join(artifacts, 'web-console-loaded.png') });

	await prompt(page, 'hello from the browser', 'a prompt streams its answer over SSE');

	// Another client closes and reloads the session: our clientId is stale.
	const stale = await page.$eval('#current', (e) => e.dataset.clientId);
	check((await rest('DELETE', `/session/${sidA}`)).status === 204, 'closed from outside');
	await page.waitForSelector('#stream[data-state="closed"]', { timeout: T });
	check((await rest('POST', `/session/${sidA}/load`, {})).status === 200,
	    'reloaded by another client');
	await prompt(page, 'after the reload', 'the prompt heals its stale clientId (seed 001)');
	const fresh = await page.$eval('#current', (e) => e.dataset.clientId);
	check(fresh !== stale && fresh.startsWith('client_'), 'a new clientId is in use');
	const logText = await page.$eval('#log', (e) => e.textContent);
	check(/client id renewed/.test(logText), 'the log says the id was renewed');

	await page.screenshot({ path: path.join(artifacts, 'web-console.png') });
	ok(`screenshot ${path.join(artifacts, 'web-console.png')}`);
	check(!(await page.content()).includes(token || '\u0000'), 'the token is not in the DOM');
	check(problems.length === 0, `no page errors ${problems.join('; ')}`);
}

async function modeTimeout(browser, id, pid, budget, req, wd) {
	const { page, problems } = await open(browser);
	await checkTimers(page, budget, req, wd);
	await page.waitForSelector(`li[data-session-id="${id}"]`, { timeout: T });
	await page.click(`li[data-session-id="${id}"] button.load`);
	await page.waitForSelector('#error[data-kind="restore_timeout"]:not([hidden])',
	    { timeout: T });
	ok('504 shown as a restore timeout');
	const s1 = Number(await page.$eval('#error-countdown', (e) => e.dataset.seconds));
	check(s1 >= 1 && s1 <= 5, `countdown starts from Retry-After (${s1} s)`);
	check(await page.$eval('#error-retry', (e) => e.disabled && !e.hidden),
	    'retry waits for the countdown');
	await page.screenshot({ path: path.join(artifacts, 'web-console-timeout.png') });
	// A second load while the abandoned one is fenced: 409 with its reason.
	const s2 = await loadFails(page, id, 'restore_in_progress', 'awaiting_abandoned_cleanup',
	    '409 restore_in_progress');
	check(s2 <= 5, `the 409 countdown is the clamped budget (${s2} s)`);
	process.kill(Number(pid), 'SIGCONT');
	await page.waitForFunction((s) => Number(document.getElementById('error-countdown')
	    .dataset.seconds) < s, s2, { timeout: T });
	ok('the countdown runs');
	await page.waitForSelector('#error-retry:not([disabled])', { timeout: T });
	await page.click('#error-retry');
	await page.waitForFunction(() => document.body.dataset.state === 'ready' &&
	    Number(document.getElementById('history').dataset.count) > 0, null, { timeout: T });
	check(await page.$eval('#error', (e) => e.hidden), 'retry loads the session');
	check(problems.length === 0, `no page errors ${problems.join('; ')}`);
}

// Attach while the child is stopped: the console's own 30 s watchdog, not
// the daemon, ends it.  The page's clock is paused and moved by the test:
// 1 ms short of 30 s nothing has fired; at 30 s the watchdog has.
async function modeAttach(browser, pid) {
	const { page, problems } = await open(browser, { clock: true });
	// Time stands still from here: only the test moves it.
	await page.clock.pauseAt(await page.evaluate(() => Date.now()) + 1000);
	await page.click('#attach');
	await page.waitForFunction(() => document.body.dataset.state === 'restoring', null,
	    { timeout: T, polling: 50 });
	check((await page.$eval('#history', (e) => e.textContent)).includes('watchdog 30000 ms'),
	    'attach announces its 30000 ms watchdog');
	await page.clock.runFor(29999);
	check(await page.evaluate(() => document.body.dataset.state) === 'restoring' &&
	    await page.$eval('#error', (e) => e.hidden), 'still attaching at 29999 ms');
	await page.clock.runFor(1);
	await page.waitForSelector('#error[data-kind="watchdog"]:not([hidden])', { timeout: T });
	check(await page.$eval('#error-title', (e) => e.textContent) ===
	    'Attach: watchdog expired', 'the attach watchdog fired at 30000 ms');
	check((await page.$eval('#error-detail', (e) => e.textContent)).includes('30000 ms'),
	    'its detail names 30000 ms');
	check(await page.evaluate(() => document.body.dataset.state) === 'idle',
	    'the page is usable again');
	process.kill(Number(pid), 'SIGCONT');
	check(problems.length === 0, `no page errors ${problems.join('; ')}`);
}

// A fresh load on a quarantined channel: 503 with its reason.
async function modeUnavailable(browser, id) {
	const { page, problems } = await open(browser);
	await page.waitForSelector(`li[data-session-id="${id}"]`, { timeout: T });
	await loadFails(page, id, 'channel_unavailable', 'restore_cleanup_failed',
	    '503 acp_channel_unavailable');
	check(await page.$eval('#daemon', (e) => e.dataset.status) === 'degraded',
	    'the daemon status shows the quarantine');
	await page.screenshot({ path: path.join(artifacts, 'web-console-unavailable.png') });
	check(problems.length === 0, `no page errors ${problems.join('; ')}`);
}

async function checkTimers(page, budget, req, wd) {
	const t = await timers(page);
	check(t.restoreBudgetMs === budget, `budget ${budget} published`);
	check(t.restoreRequestMs === req, `load/resume timeout ${req}`);
	check(t.restoreWatchdogMs === wd, `watchdog ${wd}`);
	check(t.attachWatchdogMs === '30000', 'attach watchdog 30000');
	if (req === '0')
		check(/disabled/.test(t.text), 'shown as disabled');
}

// The timers; with sid, then attach (a new default session) and prompt,
// then resume sid (no history), all with those timers armed or disabled.
async function modeTimers(browser, budget, req, wd, sid) {
	const { page, problems } = await open(browser);
	await checkTimers(page, budget, req, wd);
	if (sid) {
		await page.click('#attach');
		await page.waitForFunction(() => document.body.dataset.state === 'ready' &&
		    document.getElementById('current').dataset.sessionId !== '', null,
		    { timeout: T });
		await page.waitForSelector('#stream[data-state="live"]', { timeout: T });
		ok('attach opens the default session');
		await prompt(page, 'on the default session', 'a prompt on the attached session');
		await page.click(`li[data-session-id="${sid}"] button.resume`);
		await page.waitForFunction((id) => document.body.dataset.state === 'ready' &&
		    document.getElementById('current').dataset.sessionId === id, sid,
		    { timeout: T });
		await page.waitForSelector('#stream[data-state="live"]', { timeout: T });
		check(await page.$eval('#history', (e) => e.dataset.count) === '0',
		    'resume shows no history');
		await prompt(page, 'after resume', 'a prompt on the resumed session');
	}
	check(problems.length === 0, `no page errors ${problems.join('; ')}`);
}

async function listed(page) {
	return page.$$eval('#sessions li', (l) => l.map((e) => e.dataset.sessionId));
}

async function modeWorkspaces(browser, sidA, sidB, wsB) {
	const { page, problems } = await open(browser);
	await page.waitForSelector('#workspace-pick-label:not([hidden])', { timeout: T });
	check((await page.$$eval('#workspace-pick option', (l) => l.length)) === 2,
	    'the picker offers both workspaces');
	await page.waitForFunction((id) => document.querySelector(`li[data-session-id="${id}"]`),
	    sidA, { timeout: T });
	check(!(await listed(page)).includes(sidB), "the primary's list has only its session");
	await page.selectOption('#workspace-pick', wsB);
	await page.waitForFunction((id) => document.querySelector(`li[data-session-id="${id}"]`),
	    sidB, { timeout: T });
	check(!(await listed(page)).includes(sidA), "the second workspace's list has its own");
	check(await page.$eval('#workspace', (e) => e.textContent) === wsB, 'its path is shown');
	await loadSession(page, sidB, 'a session of the second workspace loads');
	const st = await rest('GET', `/session/${sidB}/status`);
	check(st.status === 200 && st.body.workspaceCwd === wsB, 'it is live in the second workspace');
	await prompt(page, 'hello from b', 'a prompt there streams its answer');
	await page.click('#attach');
	await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: T });
	const cur = await page.$eval('#current', (e) => e.dataset.sessionId);
	const cs = await rest('GET', `/session/${cur}/status`);
	check(cs.status === 200 && cs.body.workspaceCwd === wsB, 'attach goes to its default session');
	check(problems.length === 0, `no page errors ${problems.join('; ')}`);
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
    headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
ok('chromium started');
let status = 0;
try {
	if (mode === 'main')
		await modeMain(browser, ...args);
	else if (mode === 'timeout')
		await modeTimeout(browser, ...args);
	else if (mode === 'attach')
		await modeAttach(browser, ...args);
	else if (mode === 'unavailable')
		await modeUnavailable(browser, ...args);
	else if (mode === 'timers')
		await modeTimers(browser, ...args);
	else if (mode === 'workspaces')
		await modeWorkspaces(browser, ...args);
	else
		throw new Error(`unknown mode ${mode}`);
} catch (e) {
	console.log(e.message.startsWith('not ok') ? e.message : `not ok - ${e.stack}`);
	status = 1;
} finally {
	await browser.close();
}
process.exit(status);
