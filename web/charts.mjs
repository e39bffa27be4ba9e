// SPDX-License-Identifier: ISC
// charts.mjs: the console's pictures, as inline SVG built with DOM calls.
//
// RestoreBars: each restore of this tab as a bar of its elapsed time on a
// scale that holds the deadline (the daemon's budget), the console's
// request timeout and its watchdog, each marked; a refused restore with a
// Retry-After adds the countdown after its end.  The running one grows.
//
// LiveChart: active, unsettled and quarantined restores and live sessions
// from the status polls, over the last minutes, one line each.
//
// Every picture has role="img" and an aria-label that says in words what
// it shows; the numbers are also in the text panels beside them.
const NS = 'http://www.w3.org/2000/svg';
const MAX_BARS = 6;

function svg(tag, attrs = {}, text = null) {
	const e = document.createElementNS(NS, tag);
	for (const [k, v] of Object.entries(attrs))
		e.setAttribute(k, String(v));
	if (text !== null)
		e.textContent = text;
	return e;
}

const secs = (ms) => `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;

// The bars of this tab's restores, newest first, in container.
export class RestoreBars {
	constructor(container) {
		this.box = container;
		this.rows = [];
		this.timer = null;
	}

	// A restore starts now; returns its row (for finish()).
	start(what, id, plan, reqMs, wdMs) {
		const row = { what, id: id || 'default session', t0: performance.now(),
		    budget: plan.budget, reqMs, wdMs, end: null, outcome: 'running',
		    retryAfter: null, el: document.createElement('li') };
		row.el.className = 'restore-row';
		this.rows.unshift(row);
		while (this.rows.length > MAX_BARS)
			this.rows.pop().el.remove();
		this.box.prepend(row.el);
		this.box.dataset.count = String(this.rows.length);
		this.draw(row);
		if (this.timer === null)
			this.timer = setInterval(() => this.tick(), 200);
		return row;
	}

	// The restore ended: outcome (success, timeout, error, watchdog) and
	// the Retry-After seconds the daemon asked for, if any.
	finish(row, outcome, retryAfter = null) {
		row.end = performance.now() - row.t0;
		row.outcome = outcome;
		row.retryAfter = retryAfter > 0 ? retryAfter : null;
		row.finishedAt = performance.now();
		this.draw(row);
	}

	tick() {
		let moving = false;
		for (const row of this.rows) {
			const counting = row.retryAfter !== null &&
			    performance.now() - row.finishedAt < row.retryAfter * 1000 + 1000;
			if (row.end === null || counting) {
				this.draw(row);
				moving = true;
			}
		}
		if (!moving) {
			clearInterval(this.timer);
			this.timer = null;
		}
	}

	// The scale: enough for the watchdog, the deadline and what happened.
	scale(row, elapsed) {
		let max = Math.max(elapsed, row.reqMs || 0, row.wdMs || 0, row.budget || 0);
		if (row.retryAfter !== null)
			max = Math.max(max, elapsed + row.retryAfter * 1000);
		return max > 0 ? max : 1;
	}

	draw(row) {
		const W = 560, H = 50, X0 = 4, BW = W - 8;
		const elapsed = row.end ?? performance.now() - row.t0;
		const max = this.scale(row, elapsed), x = (ms) => X0 + BW * Math.min(ms, max) / max;
		const left = row.retryAfter === null ? 0 : Math.max(0, row.retryAfter -
		    Math.floor((performance.now() - row.finishedAt) / 1000));
		const words = `${row.what} ${row.id}: ${row.outcome}, ${secs(elapsed)}` +
		    (row.budget !== null ? ` of a ${secs(row.budget)} budget` : ', no budget published') +
		    (row.wdMs ? `; watchdog ${secs(row.wdMs)}` : '') +
		    (row.retryAfter !== null ? `; retry after ${row.retryAfter} s` +
		    (left > 0 ? ` (${left} s left)` : ' (now)') : '');
		const pic = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img',
		    'aria-label': words, class: 'restore-bar', 'data-outcome': row.outcome,
		    'data-elapsed-ms': Math.round(elapsed) });
		pic.append(svg('rect', { x: X0, y: 8, width: BW, height: 14, class: 'track' }));
		pic.append(svg('rect', { x: X0, y: 8, width: Math.max(1, x(elapsed) - X0),
		    height: 14, class: `fill ${row.outcome}` }));
		if (row.retryAfter !== null)
			pic.append(svg('rect', { x: x(elapsed), y: 8,
			    width: Math.max(1, x(elapsed + left * 1000) - x(elapsed)), height: 14,
			    class: 'retry', 'data-seconds-left': left }));
		const marks = [];
		if (row.budget !== null)
			marks.push(['deadline', row.budget, `deadline ${secs(row.budget)}`]);
		if (row.wdMs)
			marks.push(['watchdog', row.wdMs, `watchdog ${secs(row.wdMs)}`]);
		if (row.retryAfter !== null)
			marks.push(['retry-after', elapsed + row.retryAfter * 1000,
			    `Retry-After ${row.retryAfter} s`]);
		marks.forEach(([cls, ms, label], i) => {
			const mx = x(ms);
			pic.append(svg('line', { x1: mx, x2: mx, y1: 4, y2: 26, class: `mark ${cls}` }));
			pic.append(svg('text', { x: mx > W - 120 ? mx - 2 : mx + 2, y: 36 + (i % 2) * 8,
			    'text-anchor': mx > W - 120 ? 'end' : 'start', class: `mark-label ${cls}` },
			    label));
		});
		const cap = document.createElement('div');
		cap.className = 'restore-caption';
		cap.textContent = words;
		row.el.replaceChildren(cap, pic);
		row.el.dataset.outcome = row.outcome;
	}
}

const SERIES = [
	['active', 'restoresActive', 'active restores'],
	['unsettled', 'restoresUnsettled', 'unsettled restores'],
	['quarantined', 'restoresQuarantined', 'quarantined restores'],
	['sessions', 'sessions', 'live sessions'],
];

// A line chart of the status polls over the last minutes.
export class LiveChart {
	constructor(container, keep = 60) {
		this.box = container;
		this.keep = keep;
		this.samples = [];
	}

	// One /health?deep=1 answer.
	push(health) {
		this.samples.push({ t: Date.now(),
		    v: SERIES.map(([, key]) => Number(health[key]) || 0) });
		while (this.samples.length > this.keep)
			this.samples.shift();
		this.draw();
	}

	draw() {
		const W = 280, H = 90, P = 4, n = this.samples.length;
		const top = Math.max(1, ...this.samples.flatMap((s) => s.v));
		const last = n ? this.samples[n - 1].v : SERIES.map(() => 0);
		const span = n > 1 ? (this.samples[n - 1].t - this.samples[0].t) / 60000 : 0;
		const words = `Over the last ${span.toFixed(1)} minutes: ` +
		    SERIES.map(([, , name], i) => `${name} now ${last[i]}`).join(', ');
		const pic = svg('svg', { viewBox: `0 0 ${W} ${H + 14}`, role: 'img',
		    'aria-label': words, class: 'live-chart', 'data-samples': n });
		pic.append(svg('rect', { x: 0, y: 0, width: W, height: H, class: 'track' }));
		for (let g = 1; g < 4; g++)
			pic.append(svg('line', { x1: 0, x2: W, y1: (H * g) / 4, y2: (H * g) / 4,
			    class: 'grid' }));
		SERIES.forEach(([cls], i) => {
			const pts = this.samples.map((s, j) => {
				const px = n > 1 ? P + ((W - 2 * P) * j) / (n - 1) : W - P;
				const py = H - P - ((H - 2 * P) * s.v[i]) / top;
				return `${px.toFixed(1)},${py.toFixed(1)}`;
			});
			if (pts.length === 1)
				pts.unshift(`${P},${pts[0].split(',')[1]}`);
			if (pts.length)
				pic.append(svg('polyline', { points: pts.join(' '),
				    class: `series ${cls}`, 'data-last': last[i] }));
		});
		pic.append(svg('text', { x: 2, y: H + 11, class: 'axis' }, `max ${top}`));
		pic.append(svg('text', { x: W - 2, y: H + 11, 'text-anchor': 'end', class: 'axis' },
		    'now'));
		const legend = document.createElement('ul');
		legend.className = 'legend';
		SERIES.forEach(([cls, , name], i) => {
			const li = document.createElement('li');
			li.className = cls;
			li.textContent = `${name}: ${last[i]}`;
			legend.append(li);
		});
		this.box.replaceChildren(pic, legend);
	}
}
