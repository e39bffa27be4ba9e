// SPDX-License-Identifier: ISC
// web-pictures.mjs: the console's pictures and accessibility in headless
// Chromium (issue 17).
// usage: node web-pictures.mjs PLAYWRIGHT_DIR BASE_URL SID SLOW_SID
//   SID loads at once (a success bar); SLOW_SID's load outlasts the
//   daemon's budget (a 504: a timeout bar with the deadline, the watchdog
//   and the Retry-After countdown marked).  Then the live chart, the
//   accessible names of every control, live regions, and WCAG AA contrast
//   of every visible text, in the light and the dark scheme; screenshots
//   of both go to WEB_ARTIFACTS.  Prints "ok - ..." lines; exits non-zero
//   on the first failure.
import { createRequire } from 'node:module';
import path from 'node:path';

const [pwDir, base, sid, slow] = process.argv.slice(2);
const require = createRequire(path.join(pwDir, 'node_modules', 'x.js'));
const { chromium } = require('playwright-core');
const artifacts = process.env.WEB_ARTIFACTS || '.';
const T = 20000;

function check(cond, what) {
	if (!cond)
		throw new Error(`not ok - ${what}`);
	console.log(`ok - ${what}`);
}

// In the page: controls without an accessible name, and duplicate names
// among the session buttons.
function auditNames() {
	const name = (e) => (e.getAttribute('aria-label') ||
	    (e.labels && [...e.labels].map((l) => l.textContent).join(' ')) ||
	    e.getAttribute('title') || e.textContent || '').trim();
	const shown = (e) => e.offsetParent !== null || e.getClientRects().length > 0;
	const controls = [...document.querySelectorAll('button, input, textarea, select')]
	    .filter((e) => shown(e) && e.type !== 'hidden');
	const unnamed = controls.filter((e) => !name(e)).map((e) => e.outerHTML.slice(0, 80));
	const sessionNames = [...document.querySelectorAll('#sessions button')].map(name);
	const dup = sessionNames.filter((n, i) => sessionNames.indexOf(n) !== i);
	const imgs = [...document.querySelectorAll('svg[role="img"]')]
	    .filter((s) => !(s.getAttribute('aria-label') || '').trim()).length;
	return { controls: controls.length, unnamed, sessions: sessionNames.length, dup,
	    unnamedImgs: imgs,
	    live: document.querySelectorAll('[role="status"], [aria-live], [role="alert"]').length };
}

// In the page: every visible text node's contrast against its background.
function auditContrast() {
	const rgb = (c) => {
		const m = c.match(/rgba?\(([^)]+)\)/);
		if (!m)
			return null;
		const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
		return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
	};
	const lum = ({ r, g, b }) => {
		const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
		return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
	};
	const bgOf = (e) => {
		for (; e; e = e.parentElement) {
			const c = rgb(getComputedStyle(e).backgroundColor);
			if (c && c.a > 0.5)
				return c;
		}
		return { r: 255, g: 255, b: 255, a: 1 };
	};
	const bad = [];
	let n = 0;
	const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let t = walker.nextNode(); t; t = walker.nextNode()) {
		const e = t.parentElement;
		if (!t.textContent.trim() || !e || e.closest('svg, [hidden], .sr-only'))
			continue;
		const cs = getComputedStyle(e);
		if (cs.visibility === 'hidden' || cs.display === 'none' || e.getClientRects().length === 0)
			continue;
		if (e.closest('button:disabled, textarea:disabled'))
			continue;	// WCAG exempts inactive controls
		const fg = rgb(cs.color), bg = bgOf(e);
		const a = lum(fg), b = lum(bg);
		const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
		const large = parseFloat(cs.fontSize) >= 24 ||
		    (parseFloat(cs.fontSize) >= 18.66 && Number(cs.fontWeight) >= 700);
		n++;
		if (ratio < (large ? 3 : 4.5))
			bad.push(`${ratio.toFixed(2)} "${t.textContent.trim().slice(0, 30)}" ${cs.color} on rgb(${bg.r},${bg.g},${bg.b})`);
	}
	return { n, bad };
}

async function audit(page, scheme) {
	const names = await page.evaluate(auditNames);
	check(names.controls > 5 && names.unnamed.length === 0,
	    `${scheme}: all ${names.controls} controls have accessible names ${JSON.stringify(names.unnamed)}`);
	check(names.sessions >= 4 && names.dup.length === 0,
	    `${scheme}: the ${names.sessions} session buttons have distinct names`);
	check(names.unnamedImgs === 0, `${scheme}: every picture has an aria-label`);
	check(names.live >= 3, `${scheme}: status changes are announced (${names.live} live regions)`);
	const c = await page.evaluate(auditContrast);
	check(c.n > 20 && c.bad.length === 0,
	    `${scheme}: WCAG AA contrast of ${c.n} texts ${JSON.stringify(c.bad.slice(0, 5))}`);
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox'] });
try {
	const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
	const problems = [];
	page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
	await page.goto(base + '/');
	await page.waitForSelector(`#sessions li[data-session-id="${sid}"]`, { timeout: T });
	await page.waitForSelector('#live-chart svg[data-samples="1"], #live-chart svg[data-samples="2"]',
	    { timeout: T });
	check(true, 'the live chart has the first status sample');

	await page.click(`#sessions li[data-session-id="${sid}"] button.load`);
	await page.waitForSelector('#restores li[data-outcome="success"]', { timeout: T });
	const ok1 = await page.$eval('#restores li[data-outcome="success"] svg', (s) => ({
		label: s.getAttribute('aria-label'),
		marks: [...s.querySelectorAll('line.mark')].map((l) => l.getAttribute('class')),
	}));
	check(/^Load .*: success, .* budget; watchdog/.test(ok1.label),
	    `a success bar, described: ${ok1.label}`);
	check(ok1.marks.includes('mark deadline') && ok1.marks.includes('mark watchdog'),
	    'the deadline and the watchdog are marked');

	await page.click(`#sessions li[data-session-id="${slow}"] button.load`);
	await page.waitForSelector('#restores li[data-outcome="running"]', { timeout: T });
	check(true, 'the running restore has its own growing bar');
	await page.waitForSelector('#restores li[data-outcome="timeout"]', { timeout: T });
	const to = await page.$eval('#restores li[data-outcome="timeout"] svg', (s) => ({
		label: s.getAttribute('aria-label'),
		marks: [...s.querySelectorAll('line.mark')].map((l) => l.getAttribute('class')),
		retry: s.querySelector('rect.retry')?.getAttribute('data-seconds-left'),
	}));
	check(to.marks.includes('mark retry-after') && Number(to.retry) > 0,
	    `the 504's Retry-After countdown is drawn: ${to.label}`);
	check(/timeout, .* budget; watchdog .*; retry after \d+ s/.test(to.label),
	    'the timeout bar says it in words');

	// Two more status samples make the chart's lines.
	await page.waitForFunction(() => Number(document.querySelector('#live-chart svg')
	    ?.getAttribute('data-samples')) >= 2, null, { timeout: T });
	const series = await page.$$eval('#live-chart polyline', (ps) => ps.map((p) => p.getAttribute('class')));
	check(series.length === 4, `the live chart draws ${series.join(', ')}`);
	// Each legend entry is one line: its colour mark beside its name.
	const rows = await page.$$eval('#live-chart .legend li', (lis) => lis.map((li) =>
	    li.getBoundingClientRect().height / parseFloat(getComputedStyle(li).fontSize)));
	check(rows.length === 4 && rows.every((h) => h < 1.6),
	    `every legend entry is one line (heights in em: ${rows.map((h) => h.toFixed(2)).join(', ')})`);

	await audit(page, 'light');
	await page.screenshot({ path: path.join(artifacts, 'web-console-pictures.png'), fullPage: true });
	await page.emulateMedia({ colorScheme: 'dark' });
	const dark = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
	check(dark !== 'rgb(246, 247, 249)', `prefers-color-scheme: dark gives a dark page (${dark})`);
	await audit(page, 'dark');
	await page.screenshot({ path: path.join(artifacts, 'web-console-pictures-dark.png'), fullPage: true });
	check(problems.length === 0, `no page errors ${JSON.stringify(problems)}`);
} finally {
	await browser.close();
}
