// SPDX-License-Identifier: ISC
// web-history.mjs: the console's history in headless Chromium.
// usage: node web-history.mjs PLAYWRIGHT_DIR BASE_URL MODE SID
//   pending   SID's turn already waits for a permission when the console
//             loads it: the request shows with one button per option
//             (Always allow too); Allow answers it
//   render    SID's replay: markdown as elements (and a hostile tag as
//             text), tool input and output, times, thinking folded
//   older     SID has more records than a page: "Load older" at the top
//             brings the older pages until the start of the session;
//             Send follows the streaming answer when scrolled up
// Environment: WEB_ARTIFACTS (screenshots).  Prints "ok - ..." lines;
// exits non-zero on the first failure.
import { createRequire } from 'node:module';
import path from 'node:path';

const [pwDir, base, mode, sid] = process.argv.slice(2);
const require = createRequire(path.join(pwDir, 'node_modules', 'x.js'));
const { chromium } = require('playwright-core');
const artifacts = process.env.WEB_ARTIFACTS || '.';
const T = 30000;

function check(cond, what) {
	if (!cond)
		throw new Error(`not ok - ${what}`);
	console.log(`ok - ${what}`);
}

// The console with SID loaded (its Load button clicked).
async function loaded(page) {
	await page.goto(base + '/');
	await page.waitForFunction(() => document.body.dataset.state === 'idle', null,
	    { timeout: T });
	await page.click(`li[data-session-id="${sid}"] button.load`);
	await page.waitForSelector('#stream[data-state="live"]', { timeout: T });
}

async function pending(page) {
	await loaded(page);
	await page.waitForSelector('.msg-permission', { timeout: T });
	const box = await page.$('.msg-permission');
	const names = await box.$$eval('button', (l) => l.map((b) => b.textContent));
	check(names.length === 3, `one button per option (${names.join(', ')})`);
	check(await box.$('.perm-allow_always') !== null, 'the "always" option is offered');
	check((await box.$eval('.tool-title', (e) => e.textContent)) === 'write the marker',
	    'the pending request shows its tool call');
	check((await box.$eval('.tool-input pre', (e) => e.textContent)).includes('marker.txt'),
	    'and its input');
	await page.screenshot({ path: path.join(artifacts, 'web-pending-permission.png') });
	await (await box.$('.perm-allow')).click();
	await page.waitForFunction(() => document.querySelector('.msg-permission')
	    .dataset.outcome !== undefined, null, { timeout: T });
	check((await box.evaluate((e) => e.dataset.outcome)) === 'proceed_once',
	    'Allow answered the request that was made before the console came');
	await page.waitForFunction(() => [...document.querySelectorAll('.msg-agent')]
	    .some((m) => m.textContent.includes('permission proceed_once')), null, { timeout: T });
	check(true, 'the agent saw the answer');
}

async function render(page) {
	await loaded(page);
	await page.waitForSelector('.msg-agent strong', { timeout: T });
	const agent = await page.$('.msg-agent .msg-body');
	check((await agent.$eval('strong', (e) => e.textContent)) === 'bold', 'bold is an element');
	check((await agent.$eval('pre code', (e) => e.textContent)) === 'if (a < b) {}',
	    'a fenced block is a code element, its text intact');
	check((await agent.$$eval('ul li', (l) => l.length)) === 2, 'a list is a list');
	check(await page.$('.msg-body img') === null, 'a tag in the text is never markup');
	check((await agent.textContent()).includes('<img src=x onerror=alert(1)>'),
	    'it shows as text');
	const a = await agent.$('a');
	check(a !== null && (await a.getAttribute('href')) === 'https://example.org/doc',
	    'an https link is a link');
	check((await agent.$$eval('a', (l) => l.length)) === 1, 'a javascript: link is not');
	const thought = await page.$('.msg-thought details');
	check(thought !== null && !(await thought.evaluate((d) => d.open)),
	    'thinking is folded');
	check(!(await page.$eval('.msg-thought .msg-body', (e) => e.checkVisibility())),
	    'its text hidden until opened');
	await page.click('.msg-thought summary');
	check(await page.$eval('.msg-thought .msg-body', (e) => e.checkVisibility()),
	    'and shown when opened');
	const tool = await page.$('.msg-tool');
	check((await tool.$eval('.tool-input pre', (e) => e.textContent)).includes('/src/a.ts'),
	    'a tool call shows its input');
	check((await tool.$eval('.tool-output pre', (e) => e.textContent)).includes('line two'),
	    'and its output');
	const times = await page.$$eval('.msg-time', (l) => l.map((t) => t.dateTime));
	check(times.length > 0 && times.includes('2026-08-01T08:00:02.000Z'),
	    `messages carry their record's time (${times[1]})`);
	await page.screenshot({ path: path.join(artifacts, 'web-history-render.png'),
	    fullPage: true });
}

async function older(page) {
	await loaded(page);
	const count = () => page.$eval('#history', (h) => Number(h.dataset.count));
	const first = await count();
	check(await page.$('#history > .older:first-child button.older-load') !== null,
	    'the "Load older" bar is at the top of the history');
	await page.screenshot({ path: path.join(artifacts, 'web-history-older.png') });
	for (let i = 0; i < 10 && await page.$('.older[data-done]') === null; i++) {
		const n = await count();
		await page.click('button.older-load');
		await page.waitForFunction((k) => Number(document.querySelector('#history')
		    .dataset.count) > k || document.querySelector('.older[data-done]'), n,
		    { timeout: T });
	}
	check(await page.$('.older[data-done]') !== null, 'the pages end at the start of the session');
	const all = await count();
	check(all > first, `older pages were added (${first} then ${all} messages)`);
	const texts = await page.$$eval('.msg-user .msg-body', (l) => l.map((e) => e.textContent));
	check(texts[0] === 'question 1', `the oldest message comes first (${texts[0]})`);
	check(texts[texts.length - 1] === 'question 300', 'the newest last');
	check(new Set(texts).size === texts.length, 'no message twice');
	// Scrolled to the top, Send follows the answer down.
	await page.$eval('#history', (h) => { h.scrollTop = 0; });
	await page.fill('#prompt-input', 'hello');
	await page.click('#send');
	await page.waitForSelector('#turn[data-state="complete"]', { timeout: T });
	const gap = await page.$eval('#history', (h) => h.scrollHeight - h.scrollTop - h.clientHeight);
	check(gap < 5, `Send followed the answer to the bottom (${gap} px left)`);
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox'] });
try {
	const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
	const problems = [];
	page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
	page.on('dialog', (d) => { problems.push('a dialog opened'); d.dismiss(); });
	await { pending, render, older }[mode](page);
	check(problems.length === 0, `no page errors ${problems.join('; ')}`);
} finally {
	await browser.close();
}
