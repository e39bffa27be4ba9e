// SPDX-License-Identifier: ISC
// sdk-drive.mjs SDK_DIR BASE_URL WORKSPACE SESSION STEP
// Drives the real @qwen-code/sdk 0.1.14 (DaemonClient, DaemonSessionClient)
// against qwen-serve.  STEP "main" runs the whole session surface; STEP
// "before-restart" loads SESSION and writes the stale clientId to stdout;
// STEP "after-restart CLIENT_ID" proves the self-heal path; STEP "list"
// pages SESSION's workspace (three transcripts); STEP "manage" its
// management calls (search, info, export, archive, delete); STEP
// "groups" session groups and organization; STEP "turns" the turn
// index; STEP
// "transcript" pages SESSION's history both ways through
// getSessionTranscriptPage and prints EVENTS=<n> for the caller to compare.  Each check
// prints "ok - <what>"; the first failure throws (exit 1).
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [sdkDir, baseUrl, workspaceCwd, sessionId, step, staleId] = process.argv.slice(2);
const sdk = await import(pathToFileURL(path.join(sdkDir,
    'node_modules/@qwen-code/sdk/dist/daemon/index.js')).href);
const { DaemonClient, DaemonSessionClient } = sdk;

const traffic = [];
const recFetch = async (url, init = {}) => {
	const res = await fetch(url, init);
	traffic.push(`${init.method ?? 'GET'} ${new URL(url).pathname} ${res.status}`);
	return res;
};
const client = new DaemonClient({ baseUrl, fetch: recFetch });

function check(cond, what) {
	if (!cond)
		throw new Error(`not ok - ${what}\ntraffic:\n${traffic.join('\n')}`);
	console.log(`ok - ${what}`);
}

// Read events until pred matches or the timeout passes.
async function until(iter, pred, ms = 10000) {
	const seen = [];
	const deadline = Date.now() + ms;
	while (Date.now() < deadline) {
		const r = await Promise.race([iter.next(),
		    new Promise((res) => setTimeout(() => res({ timeout: true }), deadline - Date.now()))]);
		if (r.timeout || r.done)
			break;
		seen.push(r.value);
		if (pred(r.value))
			return seen;
	}
	throw new Error(`event not seen; got ${JSON.stringify(seen.map((e) => e.type))}`);
}

async function main() {
	const health = await client.health();
	check(health.status === 'ok', 'health');
	const caps = await client.capabilities();
	check(caps.v === 1 && caps.features.includes('session_load'), 'capabilities');
	check(caps.limits.sessionRestoreTimeoutMs === 60000, 'restore budget advertised');

	// createOrAttach, events, prompt to turn_complete.
	const s = await DaemonSessionClient.createOrAttach(client, { workspaceCwd });
	check(s.attached === false && s.clientId.startsWith('client_'), 'createOrAttach');
	const again = await DaemonSessionClient.createOrAttach(client, { workspaceCwd });
	check(again.attached === true && again.sessionId === s.sessionId, 'createOrAttach attaches');
	const r1 = await s.prompt({ prompt: [{ type: 'text', text: 'hello' }] });
	check(r1.stopReason === 'end_turn', 'prompt (temporary SSE) to turn_complete');
	const ac = new AbortController();
	const it = s.events({ signal: ac.signal });
	const p2 = s.prompt({ prompt: [{ type: 'text', text: 'again' }] });
	const seen = await until(it, (e) => e.type === 'turn_complete');
	check(seen.some((e) => e.type === 'session_update'), 'events stream session_update');
	check((await p2).stopReason === 'end_turn', 'prompt (live iterator) to turn_complete');
	const hb = await s.heartbeat();
	check(hb.sessionId === s.sessionId && typeof hb.lastSeenAt === 'number', 'heartbeat');
	ac.abort();
	await again.detach();
	check(true, 'detach');
	await s.close();
	check(true, 'close');
	let gone = false;
	try { await client.heartbeat(s.sessionId); } catch (e) { gone = e.status === 404; }
	check(gone, 'closed session is gone (404)');

	// load and resume of a persisted transcript.
	const l = await DaemonSessionClient.load(client, sessionId, { workspaceCwd });
	const snap = l.consumeReplaySnapshot();
	check(l.sessionId === sessionId && l.clientId.startsWith('client_'), 'load');
	check(snap.compactedReplay.length >= 2 && snap.compactedReplay.every((e) => e.v === 1), 'load replay snapshot');
	const lr = await l.prompt({ prompt: [{ type: 'text', text: 'after load' }] });
	check(lr.stopReason === 'end_turn', 'prompt after load');
	await l.close();
	const r = await DaemonSessionClient.resume(client, sessionId, { workspaceCwd });
	check(r.sessionId === sessionId && r.attached === false, 'resume');
	check((await r.prompt({ prompt: [{ type: 'text', text: 'after resume' }] })).stopReason === 'end_turn',
	    'prompt after resume');
	await r.detach();
	check(true, 'last detach');
}

async function beforeRestart() {
	const l = await DaemonSessionClient.load(client, sessionId, { workspaceCwd });
	process.stdout.write(`CLIENT_ID=${l.clientId}\n`);
}

async function afterRestart() {
	// The daemon restarted: reload the session (a fresh registration), then
	// a session client that still holds the old id prompts.
	const fresh = await client.loadSession(sessionId, { workspaceCwd });
	check(fresh.clientId !== staleId, 'session restored after restart');
	const s = new DaemonSessionClient({ client, session: { sessionId, workspaceCwd,
	    attached: true, clientId: staleId } });
	const res = await s.prompt({ prompt: [{ type: 'text', text: 'heal' }] });
	check(res.stopReason === 'end_turn', 'prompt with a stale clientId self-heals');
	const order = traffic.filter((t) => /prompt|resume/.test(t));
	check(order[0].endsWith('/prompt 400') && /\/resume 200$/.test(order[1]) &&
	    order[2].endsWith('/prompt 202'), `400 invalid_client_id -> resume -> 202 (${order.join(', ')})`);
	check(s.clientId !== staleId && s.clientId.startsWith('client_'), 'new clientId adopted');
	await s.close();
	check(true, 'close with the healed id');
}

// Every page of the history in one direction: the events, oldest first.
async function allPages(opts) {
	const events = [];
	let page = await client.getSessionTranscriptPage(sessionId, opts);
	for (;;) {
		check(page.v === 1 && page.sessionId === sessionId && Array.isArray(page.events),
		    `page of ${page.events.length} events`);
		if (opts.direction)
			events.unshift(...page.events);
		else
			events.push(...page.events);
		if (!page.hasMore)
			return events;
		check(typeof page.nextCursor === 'string', 'nextCursor while hasMore');
		page = await client.getSessionTranscriptPage(sessionId,
		    { limit: opts.limit, cursor: page.nextCursor });
	}
}

async function transcript() {
	const caps = await client.capabilities();
	check(caps.features.includes('session_transcript'), 'session_transcript advertised');
	const fwd = await allPages({ limit: 100 });
	const back = await allPages({ limit: 100, direction: 'backward' });
	check(fwd.length > 0 && JSON.stringify(fwd) === JSON.stringify(back),
	    'forward and backward pages give the same history');
	check(fwd.every((e) => e.v === 1 && e.type === 'session_update' && e.id === undefined &&
	    typeof e.data.sessionUpdate === 'string'), 'id-less session_update frames, flat data');
	try {
		await client.getSessionTranscriptPage(sessionId, { limit: 501 });
		check(false, 'limit 501 refused');
	} catch (e) {
		check(e.status === 400 && e.body.code === 'invalid_transcript_limit' &&
		    e.body.maxLimit === 500, 'limit 501: 400 invalid_transcript_limit');
	}
	process.stdout.write(`EVENTS=${fwd.length}\n`);
}

// Capability fields and GET /daemon/status through the SDK.
async function status() {
	const caps = await client.capabilities();
	check(caps.sessionLiveStatePollIntervalMs === 5000 &&
	    Array.isArray(caps.supportedLanguages) && caps.policy.permission === 'first-responder' &&
	    caps.workspaces[0].cwd === workspaceCwd && caps.workspaces[0].primary === true,
	    'capability fields');
	const st = await client.daemonStatus();
	check(st.v === 1 && st.detail === 'summary' && st.status === 'ok' &&
	    st.daemon.workspaceCwd === workspaceCwd && st.daemon.uptimeMs >= 0 &&
	    st.capabilities.features.includes('session_transcript') &&
	    st.runtime.sessions.active === 0, 'daemonStatus()');
	const full = await client.daemonStatus('full');
	check(full.detail === 'full', "daemonStatus('full')");
}

// branchSession at a record (STALE_ID here carries the record id).
async function branch() {
	const b = await client.branchSession(sessionId, { name: 'sdk branch', atRecordId: staleId });
	check(typeof b.sessionId === 'string' && b.sessionId !== sessionId &&
	    b.displayName === 'sdk branch' && b.forkedFrom.sessionId === sessionId,
	    'branchSession answer');
	const l = await client.loadSession(b.sessionId, { workspaceCwd });
	check(l.sessionId === b.sessionId && Array.isArray(l.compactedReplay), 'the branch loads at once');
	try {
		await client.branchSession(sessionId, { atRecordId: 'no-such-record' });
		check(false, 'a bad record refused');
	} catch (e) {
		check(e.status === 409 && e.body.code === 'branch_point_invalid',
		    'bad record: 409 branch_point_invalid');
	}
	process.stdout.write(`NEW=${b.sessionId}\n`);
}

// Two workspaces through cwd (STALE_ID here carries the second one).
async function workspaces() {
	const caps = await client.capabilities();
	check(caps.features.includes('multi_workspace_sessions') && caps.workspaces.length === 2 &&
	    caps.workspaces[1].cwd === staleId, 'two workspaces advertised');
	const a = await DaemonSessionClient.createOrAttach(client, { workspaceCwd });
	const b = await DaemonSessionClient.createOrAttach(client, { workspaceCwd: staleId });
	check(a.sessionId !== b.sessionId && b.workspaceCwd === staleId &&
	    a.workspaceCwd === workspaceCwd, 'one default session per workspace');
	const r = await b.prompt({ prompt: [{ type: 'text', text: 'in b' }] });
	check(r.stopReason === 'end_turn', 'prompt in the second workspace');
	try {
		await client.createOrAttachSession({ workspaceCwd: '/nonexistent-ws' });
		check(false, 'unknown workspace refused');
	} catch (e) {
		check(e.status === 400 && e.body.code === 'workspace_mismatch', '400 workspace_mismatch');
	}
}

// listWorkspaceSessionsPage / listWorkspaceSessions over SESSION's
// workspace holding three transcripts, pages of two.
async function list() {
	const caps = await client.capabilities();
	check(caps.features.includes('session_list'), 'session_list advertised');
	const p1 = await client.listWorkspaceSessionsPage(workspaceCwd, { pageSize: 2 });
	check(p1.sessions.length === 2 && typeof p1.nextCursor === 'string' &&
	    p1.sessions.every((x) => x.workspaceCwd === workspaceCwd &&
	    typeof x.updatedAt === 'string'), 'first page of two, with a cursor');
	const p2 = await client.listWorkspaceSessionsPage(workspaceCwd,
	    { pageSize: 2, cursor: p1.nextCursor });
	check(p2.sessions.length === 1 && p2.nextCursor === undefined,
	    'last page, no cursor');
	const ids = new Set([...p1.sessions, ...p2.sessions].map((x) => x.sessionId));
	check(ids.size === 3 && ids.has(sessionId), 'every session once across the pages');
	const all = await client.listWorkspaceSessions(workspaceCwd);
	check(all.length === 3 && all.find((x) => x.sessionId === sessionId).displayName ===
	    'Why is loading slow?', 'listWorkspaceSessions with the first prompt as displayName');
	const arch = await client.listWorkspaceSessions(workspaceCwd, { archiveState: 'archived' });
	check(arch.length === 0, 'no archived sessions');
}

// The management calls over SESSION's workspace (three transcripts, the
// fixture of t/2047): search, info, live state, export, archive,
// unarchive, delete; a live session is refused.
async function manage() {
	const caps = await client.capabilities();
	check(['session_info', 'session_archive', 'session_export',
	    'workspace_session_live_state', 'session_metadata'].every((t) =>
	    caps.features.includes(t)),
	    'management tags advertised');
	const found = await client.searchWorkspaceSessions(workspaceCwd, 'profiling');
	check(found.results.length === 1 && found.results[0].session.sessionId === sessionId &&
	    found.results[0].snippet.includes('Profiling'), 'searchWorkspaceSessions');
	const ws = client.workspaceByCwd(workspaceCwd);
	const info = await ws.getWorkspaceSessionInfo();
	check(info.active === 3 && info.archived === 0 && info.total === 3 &&
	    info.cost === 'disk_scan', 'getWorkspaceSessionInfo');
	const ex = await client.exportSession(sessionId, { format: 'jsonl' });
	check(ex.format === 'jsonl' && /^qwen-code-export-.*\.jsonl$/.test(ex.filename) &&
	    JSON.parse(ex.content.split('\n')[0]).type === 'session_metadata' &&
	    ex.content.split('\n').every((l) => JSON.parse(l).sessionId === sessionId),
	    'exportSession jsonl');
	const meta = await client.updateSessionMetadata(sessionId, { displayName: 'From the SDK' });
	check(meta.displayName === 'From the SDK', 'updateSessionMetadata');
	const named = await client.listWorkspaceSessions(workspaceCwd);
	check(named.find((x) => x.sessionId === sessionId).displayName === 'From the SDK',
	    'the new title is the listed displayName');
	const a = await client.archiveSessionsData([sessionId]);
	check(a.archived.length === 1 && a.archived[0] === sessionId, 'archiveSessionsData');
	const arch = await client.listWorkspaceSessions(workspaceCwd, { archiveState: 'archived' });
	check(arch.length === 1 && arch[0].isArchived === true, 'archived listing');
	const u = await client.unarchiveSessionsData([sessionId]);
	check(u.unarchived[0] === sessionId && u.errors.length === 0, 'unarchiveSessionsData');
	const live = await client.loadSession(sessionId, { workspaceCwd });
	const state = await client.getWorkspaceSessionLiveState(workspaceCwd);
	check(state.v === 1 && state.sessions.some((x) => x.sessionId === sessionId),
	    'getWorkspaceSessionLiveState lists the live session');
	const refused = await client.deleteSessionsData([sessionId]);
	check(refused.removed.length === 0 && refused.errors[0].sessionId === sessionId,
	    'deleteSessionsData refuses a live session');
	await client.closeSession(sessionId, live.clientId);
	const d = await client.deleteSessionsData([sessionId]);
	check(d.removed[0] === sessionId, 'deleteSessionsData removes it');
}

// Session groups and a session's organization (t/2049's fixture).
async function groups() {
	const none = await client.listSessionGroups(workspaceCwd);
	check(none.groups.length === 0 && none.colorOptions.includes('blue'), 'listSessionGroups');
	const g = await client.createSessionGroup(workspaceCwd, { name: 'Work', color: 'green' });
	check(g.name === 'Work' && typeof g.id === 'string', 'createSessionGroup');
	const u = await client.updateSessionGroup(workspaceCwd, g.id, { name: 'Job' });
	check(u.id === g.id && u.name === 'Job', 'updateSessionGroup');
	const o = await client.updateSessionOrganization(sessionId, { isPinned: true, groupId: g.id });
	check(o.sessionId === sessionId && o.isPinned === true && o.groupId === g.id,
	    'updateSessionOrganization');
	const all = await client.listWorkspaceSessions(workspaceCwd);
	check(all.find((x) => x.sessionId === sessionId).groupId === g.id, 'listed with its group');
	const d = await client.deleteSessionGroup(workspaceCwd, g.id);
	check(d.deleted === true, 'deleteSessionGroup');
}

// getSessionTurnIndexPage over t/2047's three-turn fixture.
async function turns() {
	const all = await client.getSessionTurnIndexPage(sessionId);
	check(all.v === 1 && all.totalTurns === 3 && all.turns.length === 3 &&
	    all.turns[1].turnId === 'u2' && all.turns[2].kind === 'scheduled',
	    'getSessionTurnIndexPage');
	const p = await client.getSessionTurnIndexPage(sessionId,
	    { start: 2, limit: 1, snapshot: all.snapshot });
	check(p.start === 2 && p.turns.length === 1 && p.turns[0].label === 'nightly',
	    'getSessionTurnIndexPage pages');
}

if (step === 'main')
	await main();
else if (step === 'turns')
	await turns();
else if (step === 'groups')
	await groups();
else if (step === 'manage')
	await manage();
else if (step === 'list')
	await list();
else if (step === 'workspaces')
	await workspaces();
else if (step === 'branch')
	await branch();
else if (step === 'status')
	await status();
else if (step === 'transcript')
	await transcript();
else if (step === 'before-restart')
	await beforeRestart();
else
	await afterRestart();
process.exit(0);
