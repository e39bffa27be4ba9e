// SPDX-License-Identifier: ISC
// web-permission.mjs: the console in headless Chromium answers the real
// agent's permission requests with its Allow / Deny buttons.
// usage: node web-permission.mjs PLAYWRIGHT_DIR BASE_URL
// Attaches to the default session, sends two prompts that make the agent
// ask before running a shell command: Allow on the first, Deny on the
// second.  Prints "ok - ..." lines; exits non-zero on the first failure.
import { createRequire } from 'node:module';
import path from 'node:path';

const [pwDir, base] = process.argv.slice(2);
const require = createRequire(path.join(pwDir, 'node_modules', 'x.js'));
const { chromium } = require('playwright-core');
const T = 180000;

function check(cond, what) {
	if (!cond)
		throw new Error(`not ok - ${what}`);
	console.log(`ok - ${what}`);
}

// Send text, answer its permission request with button, wait for the end.
async function turn(page, n, text, button) {
	await page.fill('#prompt-input', text);
	await page.click('#send');
	await page.waitForFunction((k) => document.querySelectorAll('.msg-permission').length >= k,
	    n, { timeout: T });
	const box = (await page.$$('.msg-permission'))[n - 1];
	const title = await box.$eval('.tool-title', (e) => e.textContent);
	check(title.length > 0, `permission ${n}: the tool call is shown (${title})`);
	check(!(await box.$eval(`.perm-${button}`, (e) => e.disabled)), `permission ${n}: ${button} is enabled`);
	await (await box.$(`.perm-${button}`)).click();
	await page.waitForFunction((k) => document.querySelectorAll('.msg-permission')[k - 1]
	    .dataset.outcome !== undefined, n, { timeout: T });
	await page.waitForSelector('#turn[data-state="complete"]', { timeout: T });
	const outcome = await box.evaluate((e) => e.dataset.outcome);
	const disabled = await box.$$eval('button', (l) => l.every((b) => b.disabled));
	check(disabled, `permission ${n}: the buttons are disabled once answered`);
	return outcome;
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox'] });
try {
	const page = await browser.newPage();
	const problems = [];
	page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
	await page.goto(base + '/');
	await page.waitForFunction(() => document.body.dataset.state === 'idle', null,
	    { timeout: 20000 });
	await page.click('#attach');
	await page.waitForFunction(() => document.body.dataset.state === 'ready', null,
	    { timeout: T });
	await page.waitForSelector('#stream[data-state="live"]', { timeout: T });
	const allowed = await turn(page, 1, 'please write the marker', 'allow');
	check(allowed.startsWith('proceed'), `Allow sent the allow option (${allowed})`);
	check(await page.$$eval('.msg-tool', (l) => l.length) > 0, 'the tool call is shown');
	const denied = await turn(page, 2, 'please write the marker again', 'deny');
	check(denied === 'cancel', `Deny sent the reject option (${denied})`);
	check(problems.length === 0, `no page errors ${problems.join('; ')}`);
} finally {
	await browser.close();
}
