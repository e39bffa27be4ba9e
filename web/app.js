// SPDX-License-Identifier: ISC
// app.js: the qwen-serve browser console.  Plain ES module, no framework.
// It talks to the daemon's REST API on the same origin: GET /capabilities,
// GET /workspace/sessions, POST /session/:id/{load,resume,prompt,cancel,
// detach,permission}, GET /session/:id/{events,status,transcript} (SSE read
// through fetch() so that the bearer can ride in the Authorization header),
// GET /health?deep=1.
// Timers follow seed 000 (budget.mjs); the prompt heals a stale clientId
// once as in seed 001.  All text goes in through textContent.
import {
	ATTACH_WATCHDOG_MS, OTHER_REQUEST_MS, TIMER_MAX_MS, armTimer,
	describeError, isInvalidClientId, timerPlan,
} from './budget.mjs';
import { History, el } from './history.mjs';
import { LiveChart, RestoreBars } from './charts.mjs';
import { SseParser } from './sse.mjs';

const TOKEN_KEY = 'qwen-serve.token';
const STATUS_POLL_MS = 5000;
const HISTORY_PAGE = 200;	// records a load replays, and a "Load older" page
const $ = (id) => document.getElementById(id);

const st = {
	token: sessionStorage.getItem(TOKEN_KEY) || '',
	caps: null,
	plan: timerPlan(null),
	cur: null,		// {id, clientId, lastEventId, epoch, action}
	stream: null,		// {ctrl, cur, live}
	healing: null,		// the single reattach in flight (seed 001)
	busy: false,
	countdown: null,
	hist: null,		// the History of #history
	settled: new Set(),	// promptIds whose end the stream already showed
	ws: '',			// the workspace the list, attach and restores use
	bars: null,		// RestoreBars of #restores
	chart: null,		// LiveChart of #live-chart
};

// ---- small helpers ---------------------------------------------------------

function log(text) {
	const li = el('li', '', `${new Date().toLocaleTimeString()} ${text}`);
	const ol = $('log');
	ol.prepend(li);
	while (ol.children.length > 50)
		ol.lastChild.remove();
}

function fmtMs(ms) {
	return ms === 0 ? `disabled (over ${TIMER_MAX_MS} ms)` : `${ms} ms`;
}

function fmtBytes(n) {
	return n >= 1048576 ? `${(n / 1048576).toFixed(1)} MiB` :
	    n >= 1024 ? `${Math.round(n / 1024)} KiB` : `${n} B`;
}

function kv(dl, pairs) {
	dl.replaceChildren();
	for (const [k, v] of pairs) {
		dl.append(el('dt', '', k), el('dd', '', String(v)));
	}
}

function setBusy(busy, what) {
	st.busy = busy;
	document.body.dataset.state = busy ? 'restoring' : st.cur ? 'ready' : 'idle';
	for (const b of document.querySelectorAll('.sessions button, #attach'))
		b.disabled = busy;
	if (what !== undefined)
		$('turn').textContent = what;
	promptEnabled();
}

function promptEnabled() {
	const ok = !st.busy && st.cur !== null;
	$('prompt-input').disabled = !ok;
	$('send').disabled = !ok;
}

// ---- HTTP ------------------------------------------------------------------

// One API call: {status, body, retryAfter} or status 0 with timedOut or
// netError.  timeoutMs 0 (or over the ceiling) arms no timer at all.
async function api(method, path, opts = {}) {
	const ctrl = new AbortController();
	const ms = opts.timeoutMs ?? OTHER_REQUEST_MS;
	let timedOut = false;
	const t = armTimer(() => { timedOut = true; ctrl.abort(); }, ms);
	const onAbort = () => ctrl.abort();
	opts.signal?.addEventListener('abort', onAbort);
	const headers = {};
	if (st.token)
		headers.Authorization = `Bearer ${st.token}`;
	if (opts.clientId)
		headers['X-Qwen-Client-Id'] = opts.clientId;
	if (opts.body !== undefined)
		headers['Content-Type'] = 'application/json';
	try {
		const r = await fetch(path, { method, headers, cache: 'no-store',
		    credentials: 'omit', signal: ctrl.signal, keepalive: !!opts.keepalive,
		    body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
		const text = await r.text();
		let body = null;
		try {
			body = text ? JSON.parse(text) : null;
		} catch {
			body = null;
		}
		if (r.status === 401)
			needToken();
		return { status: r.status, body, retryAfter: r.headers.get('Retry-After') };
	} catch (e) {
		return { status: 0, body: null, retryAfter: null, timedOut,
		    aborted: !timedOut && ctrl.signal.aborted, netError: String(e) };
	} finally {
		clearTimeout(t);
		opts.signal?.removeEventListener('abort', onAbort);
	}
}

const sid = (id) => encodeURIComponent(id);

// ---- token -----------------------------------------------------------------

function needToken() {
	$('token-form').hidden = false;
	$('token-error').hidden = !st.token;
	$('token-error').textContent = st.token ? 'That token was refused.' : '';
	$('daemon').dataset.status = 'auth';
	$('daemon-text').textContent = 'token required';
	$('token-input').focus();
}

function onToken(ev) {
	ev.preventDefault();
	st.token = $('token-input').value.trim();
	$('token-input').value = '';
	if (st.token)
		sessionStorage.setItem(TOKEN_KEY, st.token);
	else
		sessionStorage.removeItem(TOKEN_KEY);
	$('token-form').hidden = true;
	$('token-change').hidden = !st.token;
	start();
}

// ---- errors and the retry countdown ---------------------------------------

function clearError() {
	if (st.countdown !== null)
		clearInterval(st.countdown);
	st.countdown = null;
	$('error').hidden = true;
	$('error').dataset.kind = '';
}

// Show d (from describeError or a local kind); retry: a function or null.
function showError(d, retry) {
	clearError();
	const box = $('error'), btn = $('error-retry'), cd = $('error-countdown');
	box.dataset.kind = d.kind;
	box.dataset.code = d.code || '';
	box.dataset.reason = d.reason || '';
	$('error-title').textContent = d.title;
	$('error-detail').textContent = d.detail || '';
	cd.textContent = '';
	cd.dataset.seconds = '';
	btn.hidden = retry === null;
	btn.onclick = retry === null ? null : () => { clearError(); retry(); };
	box.hidden = false;
	log(`${d.title}: ${d.detail || ''}`);
	if (retry === null || !(d.retryAfter > 0)) {
		btn.disabled = false;
		btn.textContent = 'Retry';
		return;
	}
	let left = d.retryAfter;
	const tick = () => {
		cd.dataset.seconds = String(left);
		cd.textContent = left > 0 ? `Retry-After: ${left} s` : '';
		btn.disabled = left > 0;
		btn.textContent = left > 0 ? `Retry in ${left} s` : 'Retry now';
		if (left <= 0 && st.countdown !== null) {
			clearInterval(st.countdown);
			st.countdown = null;
		}
		left--;
	};
	tick();
	st.countdown = setInterval(tick, 1000);
}

// A failed answer of any request, described.
function failure(r, what) {
	if (r.timedOut)
		return { kind: 'client_timeout', title: `${what}: no answer in time`,
		    detail: 'The console stopped waiting (its request timeout).',
		    retryAfter: null };
	if (r.status === 0)
		return { kind: 'network', title: `${what}: network error`,
		    detail: r.netError || '', retryAfter: null };
	return describeError(r.status, r.body, r.retryAfter);
}

// ---- capabilities, timers, status -----------------------------------------

function showTimers() {
	const p = st.plan, t = $('timers');
	t.dataset.restoreBudgetMs = p.budget === null ? 'none' : String(p.budget);
	t.dataset.restoreRequestMs = String(p.requestMs);
	t.dataset.restoreWatchdogMs = String(p.watchdogMs);
	t.dataset.attachWatchdogMs = String(p.attachMs);
	kv(t, [
		['restore budget', p.budget === null ? 'not published' : `${p.budget} ms`],
		['load/resume timeout', fmtMs(p.requestMs)],
		['restore watchdog', fmtMs(p.watchdogMs)],
		['attach watchdog', fmtMs(p.attachMs)],
	]);
}

async function loadCaps() {
	const r = await api('GET', '/capabilities');
	if (r.status !== 200) {
		st.plan = timerPlan(null);
		showTimers();
		return r;
	}
	st.caps = r.body;
	st.plan = timerPlan(r.body);
	showTimers();
	showWorkspaces(r.body);
	return r;
}

// One workspace: its path.  Several (--workspace repeated): a picker; the
// list, attach and restores then go to the one picked.
function showWorkspaces(caps) {
	const list = Array.isArray(caps.workspaces) ? caps.workspaces : [];
	const pick = $('workspace-pick');
	if (!list.some((w) => w.cwd === st.ws))
		st.ws = caps.workspaceCwd || '';
	$('workspace').textContent = st.ws;
	$('workspace').title = st.ws;
	$('workspace-pick-label').hidden = list.length < 2;
	pick.replaceChildren(...list.map((w) => {
		const o = el('option', '', w.displayName ? `${w.displayName} (${w.cwd})` : w.cwd);
		o.value = w.cwd;
		o.selected = w.cwd === st.ws;
		return o;
	}));
}

function onWorkspacePick() {
	st.ws = $('workspace-pick').value;
	$('workspace').textContent = st.ws;
	$('workspace').title = st.ws;
	log(`workspace ${st.ws}`);
	loadSessions();
}

async function pollStatus() {
	const r = await api('GET', '/health?deep=1', { timeoutMs: OTHER_REQUEST_MS });
	const d = $('daemon');
	if (r.status === 200 && r.body) {
		const b = r.body;
		const bad = b.restoresQuarantined || b.restoresOverdue;
		d.dataset.status = bad ? 'degraded' : 'ok';
		$('daemon-text').textContent = `daemon ${b.status}` +
		    (bad ? ', agent refusing fresh work' : '') +
		    (st.caps?.qwenServeVersion ? ` · v${st.caps.qwenServeVersion}` : '');
		st.chart.push(b);
		kv($('status'), [
			['live sessions', b.sessions ?? '?'],
			['active prompts', b.activePrompts ?? '?'],
			['agent child', b.channelAlive ? 'running' : 'idle'],
			['restores active', b.restoresActive ?? 0],
			['restores unsettled', b.restoresUnsettled ?? 0],
			['overdue / quarantined', `${b.restoresOverdue ?? 0} / ${b.restoresQuarantined ?? 0}`],
			['connections', b.connections ?? '?'],
		]);
	} else if (r.status !== 401) {
		d.dataset.status = 'down';
		$('daemon-text').textContent = r.status === 0 ? 'unreachable' : `HTTP ${r.status}`;
	}
}

// ---- the session list ------------------------------------------------------

async function loadSessions() {
	const q = st.ws ? `&cwd=${encodeURIComponent(st.ws)}` : '';
	const r = await api('GET', `/workspace/sessions?limit=200${q}`);
	const ul = $('sessions');
	if (r.status !== 200) {
		if (r.status !== 401)
			showError(failure(r, 'Session list'), loadSessions);
		return;
	}
	ul.replaceChildren();
	for (const s of r.body.sessions || [])
		ul.append(sessionItem(s));
	ul.dataset.count = String(ul.children.length);
	$('sessions-empty').hidden = ul.children.length > 0;
	markCurrent();
}

function sessionItem(s) {
	const li = el('li', 'session');
	li.dataset.sessionId = s.sessionId;
	const head = el('div', 'session-head');
	head.append(el('span', 'mono sid', s.sessionId.slice(0, 8)));
	if (s.live)
		head.append(el('span', 'badge live', 'live'));
	head.append(el('span', 'hint', `${fmtBytes(s.size)} · ` +
	    new Date(s.mtime).toLocaleString()));
	const text = el('div', 'first', s.firstPrompt || '(no prompt text)');
	text.title = s.sessionId;
	const acts = el('div', 'session-actions');
	const load = el('button', 'load', 'Load');
	load.type = 'button';
	load.title = 'Restore with the replayed history';
	load.setAttribute('aria-label', `Load session ${s.sessionId.slice(0, 8)}: ` +
	    (s.firstPrompt || 'no prompt text').slice(0, 60));
	load.onclick = () => restore('load', s.sessionId);
	const res = el('button', 'resume ghost', 'Resume');
	res.type = 'button';
	res.title = 'Restore without history';
	res.setAttribute('aria-label', `Resume session ${s.sessionId.slice(0, 8)}: ` +
	    (s.firstPrompt || 'no prompt text').slice(0, 60));
	res.onclick = () => restore('resume', s.sessionId);
	acts.append(load, res);
	li.append(head, text, acts);
	return li;
}

function markCurrent() {
	for (const li of $('sessions').children)
		li.classList.toggle('selected', st.cur !== null && li.dataset.sessionId === st.cur.id);
}

// ---- restore: load / resume / attach ---------------------------------------

function setCurrent(cur) {
	st.cur = cur;
	const c = $('current');
	c.dataset.sessionId = cur ? cur.id : '';
	c.dataset.clientId = cur ? cur.clientId || '' : '';
	$('current-title').textContent = cur ? `Session ${cur.id}` : 'No session open';
	$('current-meta').textContent = cur ?
	    `${cur.action} · client ${cur.clientId || '-'} · ${cur.workspaceCwd || ''}` : '';
	markCurrent();
}

// Leave the open session: stop its stream, release our client id.
function leaveCurrent() {
	closeStream();
	const cur = st.cur;
	if (cur && cur.clientId)
		api('POST', `/session/${sid(cur.id)}/detach`, { body: {}, clientId: cur.clientId,
		    keepalive: true });
	setCurrent(null);
}

// POST load/resume (or attach: POST /session) under the seed-000 timers:
// the request timeout, and the console's own watchdog around the whole
// transaction.  A late answer after the watchdog is dropped.
async function restore(action, id) {
	if (st.busy)
		return;
	clearError();
	leaveCurrent();
	const attach = action === 'attach';
	const reqMs = attach ? ATTACH_WATCHDOG_MS : st.plan.requestMs;
	const wdMs = attach ? ATTACH_WATCHDOG_MS : st.plan.watchdogMs;
	const path = attach ? '/session' : `/session/${sid(id)}/${action}`;
	const what = attach ? 'Attach' : action === 'load' ? 'Load' : 'Resume';
	const ctrl = new AbortController();
	let dead = false;
	setBusy(true, `${what} in progress…`);
	const bar = st.bars.start(what, id, st.plan, reqMs, wdMs);
	st.hist.placeholder(`${what} ${id ?? 'default session'}… (request timeout ` +
	    `${fmtMs(reqMs)}, watchdog ${fmtMs(wdMs)})`);
	const wd = armTimer(() => {
		dead = true;
		ctrl.abort();
		st.bars.finish(bar, 'watchdog');
		setBusy(false, '');
		st.hist.placeholder(PICK);
		showError({ kind: 'watchdog', title: `${what}: watchdog expired`,
		    detail: `No settled answer within ${wdMs} ms.`, retryAfter: null },
		    () => restore(action, id));
	}, wdMs);
	const body = st.ws ? { cwd: st.ws } : {};
	if (action === 'load')
		body.historyPageSize = HISTORY_PAGE;
	const r = await api('POST', path, { body, timeoutMs: reqMs, signal: ctrl.signal });
	clearTimeout(wd);
	if (dead)
		return;
	setBusy(false, '');
	if (r.status !== 200 || !r.body) {
		const f = failure(r, what);
		st.bars.finish(bar, f.kind === 'restore_timeout' ? 'timeout' : 'error',
		    f.retryAfter);
		st.hist.placeholder(PICK);
		if (r.status !== 401)
			showError(f, () => restore(action, id));
		return;
	}
	st.bars.finish(bar, 'success');
	const b = r.body;
	setCurrent({ id: b.sessionId, clientId: b.clientId, action,
	    lastEventId: b.lastEventId ?? null, epoch: b.eventEpoch ?? null,
	    workspaceCwd: b.workspaceCwd });
	setBusy(false, '');
	st.hist.reset();
	const replay = [...(b.compactedReplay || []), ...(b.liveJournal || [])];
	for (const env of replay)
		renderEvent(env, true);
	if (action !== 'load')
		st.hist.note(attach ? `Attached (${b.attached ? 'existing' : 'new'} session).` :
		    'Resumed without history; new events appear below.');
	else if (replay.length === 0)
		st.hist.note('No history to replay.');
	if (b.historyHasMore && b.historyAnchorRecordId)
		olderFrom(b.sessionId, b.historyAnchorRecordId);
	else if (b.historyHasMore || b.partial)
		st.hist.note('Older history was left out of this replay.');
	log(`${what} ${b.sessionId.slice(0, 8)}: ${replay.length} events replayed`);
	openStream();
	showPending(st.cur);
	loadSessions();
	pollStatus();
}

// A permission asked before this console attached is in the session's
// status only: show each one with its buttons, as if it had been seen.
async function showPending(cur) {
	const r = await api('GET', `/session/${sid(cur.id)}/status`,
	    { timeoutMs: OTHER_REQUEST_MS });
	if (st.cur !== cur || r.status !== 200 || !Array.isArray(r.body?.pendingInteractions))
		return;
	for (const p of r.body.pendingInteractions)
		st.hist.interaction(p, answerPermission);
}

// The "Load older" bar at the top: pages of the transcript before the
// oldest record shown, HISTORY_PAGE records at a time.
function olderFrom(id, anchor) {
	let before = anchor;
	st.hist.olderBar(async () => {
		const cur = st.cur;
		const r = await api('GET', `/session/${sid(id)}/transcript?beforeRecordId=` +
		    `${encodeURIComponent(before)}&limit=${HISTORY_PAGE}`,
		    { timeoutMs: OTHER_REQUEST_MS });
		if (st.cur !== cur)
			return;
		if (r.status !== 200 || !Array.isArray(r.body?.events)) {
			st.hist.olderDone(true);
			if (r.status !== 401)
				showError(failure(r, 'Older history'), null);
			return;
		}
		const evs = r.body.events;
		st.hist.prepend(() => {
			for (const env of evs)
				renderEvent({ type: 'session_update', data: { update: env.data } }, true);
		});
		const first = evs[0]?.data?._meta?.['qwen.session.recordId'];
		if (typeof first === 'string')
			before = first;
		st.hist.olderDone(Boolean(r.body.hasMore) && typeof first === 'string');
	});
}

// ---- history ---------------------------------------------------------------

const PICK = 'Pick a session on the left: Load replays its history, Resume ' +
    'reattaches without it.';

// One event envelope {id?, type, data, promptId?}, replayed or live.
function renderEvent(env, replayed) {
	const d = env.data || {};
	switch (env.type) {
	case 'session_update':
		if (d.update)
			st.hist.update(d.update, env.promptId || null, replayed);
		break;
	case 'history_truncated':
		st.hist.note('Older history was truncated from this replay.');
		break;
	case 'permission_request':
		st.hist.permission(d, answerPermission);
		break;
	case 'permission_resolved':
		st.hist.resolved(d.requestId, d.outcome);
		break;
	case 'turn_complete':
		settled(env, d);
		turnDone(`turn complete (${d.stopReason || 'done'})`, 'complete');
		break;
	case 'turn_error':
		settled(env, d);
		turnDone(`turn failed: ${d.message || d.code || 'error'}`, 'error');
		break;
	case 'prompt_cancelled':
		settled(env, d);
		turnDone('prompt cancelled', 'cancelled');
		break;
	case 'session_closed':
	case 'session_died':
		st.hist.note(`Session ${env.type === 'session_closed' ? 'closed' : 'died'}` +
		    ` (${d.reason || 'unknown'}).`);
		turnDone('', 'idle');
		break;
	default:
		break;
	}
}

// The end of a prompt can arrive on the stream before its 202 is read.
function settled(env, d) {
	const id = env.promptId || d.promptId;
	if (!id)
		return;
	st.settled.add(id);
	if (st.settled.size > 64)
		st.settled.delete(st.settled.values().next().value);
}

function turnDone(text, state) {
	st.hist.unfollow();
	if (state !== 'idle')
		pollStatus();
	$('turn').textContent = text;
	$('turn').dataset.state = state;
	$('cancel').disabled = true;
}

// ---- the event stream (SSE over fetch) -------------------------------------

function setStream(state, text) {
	const s = $('stream');
	s.dataset.state = state;
	s.textContent = text;
}

function closeStream() {
	if (st.stream) {
		st.stream.closed = true;
		st.stream.ctrl.abort();
	}
	st.stream = null;
	setStream('none', 'no stream');
}

// Open the stream of st.cur from its cursor; resolves once it is live (or
// failed).  The attach watchdog (30 s) covers the wait for the headers.
function openStream() {
	closeStream();
	const cur = st.cur, ctrl = new AbortController();
	const s = { ctrl, cur, closed: false };
	st.stream = s;
	return new Promise((resolve) => runStream(s, resolve));
}

async function runStream(s, ready) {
	const cur = s.cur;
	const headers = { Accept: 'text/event-stream' };
	if (st.token)
		headers.Authorization = `Bearer ${st.token}`;
	if (cur.lastEventId !== null)
		headers['Last-Event-ID'] = String(cur.lastEventId);
	if (cur.epoch)
		headers['X-Qwen-Event-Epoch'] = cur.epoch;
	if (cur.clientId)
		headers['X-Qwen-Client-Id'] = cur.clientId;
	setStream('connecting', 'connecting…');
	const wd = armTimer(() => s.ctrl.abort(), ATTACH_WATCHDOG_MS);
	let r;
	try {
		r = await fetch(`/session/${sid(cur.id)}/events`, { headers,
		    cache: 'no-store', credentials: 'omit', signal: s.ctrl.signal });
	} catch {
		clearTimeout(wd);
		return streamEnded(s, ready, 'transport_error');
	}
	clearTimeout(wd);
	if (s.closed || st.stream !== s) {
		ready(false);
		return;
	}
	if (!r.ok) {
		const body = await r.json().catch(() => null);
		if (r.status === 401)
			needToken();
		setStream('error', r.status === 404 ? 'not live' : `HTTP ${r.status}`);
		if (r.status !== 404 && r.status !== 401)
			log(`event stream: ${describeError(r.status, body, null).detail}`);
		ready(false);
		return;
	}
	setStream('live', 'live');
	ready(true);
	let retryMs = 3000, terminal = false;
	try {
		terminal = await readFrames(r.body.getReader(), s, (ms) => { retryMs = ms; });
	} catch {
		/* transport error: reconnect below */
	}
	if (s.closed || st.stream !== s)
		return;
	if (terminal) {
		setStream('closed', 'closed');
		return;
	}
	streamEnded(s, null, 'stream_end', retryMs);
}

// Reconnect with Last-Event-ID after the server's retry delay.
function streamEnded(s, ready, why, retryMs = 3000) {
	if (ready)
		ready(false);
	if (s.closed || st.stream !== s)
		return;
	setStream('reconnecting', 'reconnecting…');
	log(`event stream ended (${why}); reconnecting`);
	setTimeout(() => {
		if (!s.closed && st.stream === s)
			runStream(s, () => {});
	}, retryMs);
}

// Read events until the end; true when a terminal event closed it.
async function readFrames(reader, s, setRetry) {
	const dec = new TextDecoder(), parser = new SseParser();
	for (;;) {
		const { value, done } = await reader.read();
		if (done)
			return false;
		for (const ev of parser.push(dec.decode(value, { stream: true }))) {
			if (ev.retry !== undefined)
				setRetry(ev.retry);
			else if (onEvent(ev, s))
				return true;
		}
	}
}

// One event; true for a terminal one (session_closed, session_died,
// client_evicted) or a resync (which reloads the session).
function onEvent(ev, s) {
	if (s.closed)
		return true;
	let env;
	try {
		env = JSON.parse(ev.data);
	} catch {
		return false;
	}
	if (Number.isSafeInteger(env.id))
		s.cur.lastEventId = env.id;
	if (env.type === 'state_resync_required') {
		log('stream asks for a resync; loading again');
		restore('load', s.cur.id);
		return true;
	}
	renderEvent(env, false);
	return ['session_closed', 'session_died', 'client_evicted'].includes(env.type);
}

// ---- prompts, with the clientId self-heal of seed 001 -----------------------

// Reattach once for every prompt that saw invalid_client_id: resume with
// the workspace cwd and no client id; only the id changes, unless the
// stream is gone, then it reopens from the resume's cursor.
function reattach(cur) {
	if (st.healing)
		return st.healing;
	st.healing = (async () => {
		const r = await api('POST', `/session/${sid(cur.id)}/resume`, {
		    body: { cwd: cur.workspaceCwd || st.caps?.workspaceCwd },
		    timeoutMs: st.plan.requestMs });
		if (r.status !== 200 || !r.body?.clientId)
			return r;
		cur.clientId = r.body.clientId;
		setCurrent(cur);
		log(`client id renewed: ${cur.clientId}`);
		if (!st.stream || $('stream').dataset.state !== 'live') {
			cur.lastEventId = r.body.lastEventId ?? null;
			cur.epoch = r.body.eventEpoch ?? null;
			await openStream();
		}
		return null;
	})().finally(() => { st.healing = null; });
	return st.healing;
}

async function admit(cur, body) {
	const send = () => api('POST', `/session/${sid(cur.id)}/prompt`,
	    { body, clientId: cur.clientId });
	const r = await send();
	if (!isInvalidClientId(r.status, r.body))
		return r;
	log('prompt: stale client id; reattaching');
	const fail = await reattach(cur);
	return fail ?? send();
}

async function onPrompt(ev) {
	ev.preventDefault();
	const cur = st.cur, text = $('prompt-input').value;
	if (!cur || text.trim() === '' || st.busy)
		return;
	$('prompt-input').value = '';
	st.hist.cut();
	st.hist.chunk('user_message_chunk', text, null, false);
	st.hist.cut();
	st.hist.follow();
	$('turn').textContent = 'sending…';
	$('turn').dataset.state = 'sending';
	const r = await admit(cur, { prompt: [{ type: 'text', text }] });
	if (r.status === 202) {
		if (st.settled.has(r.body?.promptId))
			return;
		$('turn').textContent = 'agent is working…';
		$('turn').dataset.state = 'running';
		$('cancel').disabled = false;
		return;
	}
	turnDone('', 'idle');
	if (r.status !== 401)
		showError(failure(r, 'Prompt'), null);
}

// A click on Allow / Deny: the first answer wins; a late one shows why.
async function answerPermission(requestId, outcome) {
	const cur = st.cur;
	if (!cur)
		return;
	const r = await api('POST', `/session/${sid(cur.id)}/permission/${sid(requestId)}`,
	    { body: { outcome }, clientId: cur.clientId });
	if (r.status === 404)
		log('permission: already answered or cancelled');
	else if (r.status >= 300)
		showError(failure(r, 'Permission'), null);
}

async function onCancel() {
	const cur = st.cur;
	if (!cur)
		return;
	const r = await api('POST', `/session/${sid(cur.id)}/cancel`, { body: {},
	    clientId: cur.clientId });
	if (r.status >= 300)
		showError(failure(r, 'Cancel'), null);
}

// ---- start -----------------------------------------------------------------

async function start() {
	document.body.dataset.state = 'starting';
	const r = await loadCaps();
	if (r.status === 401)
		return;
	if (r.status !== 200)
		showError(failure(r, 'Capabilities'), start);
	await Promise.all([loadSessions(), pollStatus()]);
	document.body.dataset.state = st.cur ? 'ready' : 'idle';
}

function init() {
	$('token-form').addEventListener('submit', onToken);
	$('token-change').addEventListener('click', () => { st.token = ''; needToken(); });
	$('token-change').hidden = !st.token;
	$('refresh').addEventListener('click', loadSessions);
	$('workspace-pick').addEventListener('change', onWorkspacePick);
	$('attach').addEventListener('click', () => restore('attach', null));
	$('error-dismiss').addEventListener('click', clearError);
	$('prompt-form').addEventListener('submit', onPrompt);
	$('prompt-input').addEventListener('keydown', (e) => {
		if (e.key === 'Enter' && (e.ctrlKey || e.metaKey))
			$('prompt-form').requestSubmit();
	});
	$('cancel').addEventListener('click', onCancel);
	window.addEventListener('pagehide', leaveCurrent);
	showTimers();
	st.hist = new History($('history'));
	st.bars = new RestoreBars($('restores'));
	st.chart = new LiveChart($('live-chart'));
	st.hist.placeholder(PICK);
	setInterval(() => { if (!$('token-form').hidden) return; pollStatus(); },
	    STATUS_POLL_MS);
	start();
}

init();
