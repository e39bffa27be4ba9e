// SPDX-License-Identifier: ISC
// sdk-methods.mjs SDK_DIR BASE_URL WORKSPACE SESSION SPARE | table
// Drives every session-level method of the real @qwen-code/sdk 0.1.14
// DaemonClient and DaemonSessionClient against qwen-serve (started with
// the real qwen-acp-child, SESSION and SPARE persisted in WORKSPACE, both
// with the prompt "Why is loading slow?"; SPARE is archived, unarchived
// and deleted on the way) and checks
// each against the table below: "works" must resolve (and pass its
// check), "agent-only" must reach the agent (qwen-acp-child, which has
// none of them: 500 with its -32601, or the row's check of what
// upstream's daemon makes of that), "not served" must be refused as a
// route this daemon does not have (404 not_found, 405 or 501, or the
// row's own refusal for a variant it does not serve); never a
// hang, never HTML (a method the SDK turns a 404 into a value for is judged
// by the answer; one the SDK refuses because /capabilities lacks its
// feature counts as refused).  Prints "ok - <method>" or "not ok - <method>: <why>" a
// method; exit 1 if any is not ok.  With "table" it prints the table as
// tab-separated lines (method, status, why) instead.
//
// agent-only: the method belongs to the agent, and qwen-serve passes it
// to the session's agent under upstream's qwen/control/* or
// qwen/status/* name (routes-pass.c, routes-fork.c); the agent's own
// methods it does not pass yet are "not served".  not served:
// qwen-serve has no such route (or not that variant of it).
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [sdkDir, baseUrl, workspaceCwd, sessionId, spare] = process.argv.slice(2);
const mode = spare === 'table' ? 'table' : 'run';
const sdk = await import(pathToFileURL(path.join(sdkDir,
    'node_modules/@qwen-code/sdk/dist/daemon/index.js')).href);
const { DaemonClient, DaemonSessionClient } = sdk;
// The last answer, for methods that turn a 404 into a value (false).
let last = null;
const recFetch = async (url, init = {}) => {
	const res = await fetch(url, init);
	last = { status: res.status, code: undefined };
	if ((res.headers.get('content-type') ?? '').includes('application/json'))
		last.code = (await res.clone().json().catch(() => ({}))).code;
	return res;
};
const client = new DaemonClient({ baseUrl, fetch: recFetch, fetchTimeoutMs: 10000 });
const ctx = {};
const text = (t) => ({ prompt: [{ type: 'text', text: t }] });
const cancelled = { outcome: { outcome: 'cancelled' } };
const blob = () => new Blob(['x'], { type: 'text/plain' });
const ws = () => client.workspaceByCwd(workspaceCwd);
// A well-formed session id no workspace holds.
const NOSUCH = '33333333-3333-4333-8333-333333333333';
const isObj = (r) => r !== null && typeof r === 'object';
// An async generator's whole output (its first request is at next()).
const drain = async (it) => { const out = []; for await (const v of it) out.push(v); return out; };

const PASSED = 'the agent\'s own: passed to the session\'s agent under upstream\'s name; qwen-acp-child has none (500 -32601)';
const NOSNAP = 'GET /session/:id/artifacts/:artifactId/content: upstream\'s 404 artifact_snapshot_unavailable; saved webpage snapshots are upstream\'s agent\'s, never a client\'s artifact';
const ARTIFACT = { title: 'Site', url: 'https://example.com/' };
const UPLOAD = 'POST /session/:id/attachments?name= (the raw body), 201 its reference';
const SOURCES = 'the agent keeps them: passed to it as qwen/session/sources/*; qwen-acp-child has none (500 -32601)';
const SOURCE = { title: 't', locator: { type: 'url', url: 'https://example.com/' } };
const NOWT = 'no worktree sessions in qwen-serve';
const SA_OPTIONS = 'GET /standalone/session-options: qwen-serve keeps no model providers\' status (standalone_session_options_v1 absent)';
const FORK = 'POST /session/:id/fork, passed to the agent as qwen/control/session/fork_agent; qwen-acp-child has none (500 -32601)';
const SUBAGENT = 'GET /session/:id/subagents/:subagentRef (and its cancel), resolved among the agent\'s qwen/status/session/tasks; qwen-acp-child has none (500 -32601)';
const SHELL = 'POST /session/:id/shell with --enable-session-shell (the test\'s daemon has it; without, 403 session_shell_disabled)';
const GEN = 'POST /session/:id/generate, streamed from the agent\'s qwen/control/session/generation/start; qwen-acp-child has none (the stream\'s error generation_failed, as upstream\'s)';
// The stream of an agent without generation: upstream's in-stream error.
const genFailed = (r) => r.length === 1 && r[0].type === 'error' && r[0].code === 'generation_failed';
const MIDTURN = 'the daemon\'s mid-turn queue (POST /session/:id/mid-turn-message, GET .../mid-turn-messages, DELETE .../:messageId), drained by the agent (craft/drainMidTurnQueue)';
const SIDE = 'POST /session/:id/side-task, a branch asked of the agent as qwen/control/session/side_task; qwen-acp-child has none (500 -32601)';

// [method, status, why, call(ctx), check(result), refused(outcome)] in the
// order they run; refused, for a "not served" row, is its own refusal.
const T = [
	// DaemonClient, the session core.
	['DaemonClient.createOrAttachSession', 'works', 'POST /session',
	    (c) => client.createOrAttachSession({ workspaceCwd }),
	    (r) => { ctx.fresh = r; return r.attached === false && r.clientId.startsWith('client_'); }],
	['DaemonClient.loadSession', 'works', 'POST /session/:id/load',
	    (c) => client.loadSession(sessionId, { workspaceCwd }),
	    (r) => { ctx.cid = r.clientId; return r.sessionId === sessionId && Array.isArray(r.compactedReplay); }],
	['DaemonClient.resumeSession', 'works', 'POST /session/:id/resume (attaches when live)',
	    (c) => client.resumeSession(sessionId, { workspaceCwd }),
	    (r) => r.sessionId === sessionId && r.attached === true],
	['DaemonClient.reservePromptSlot', 'works', 'local admission count',
	    (c) => client.reservePromptSlot(sessionId)(), () => true],
	['DaemonClient.prompt', 'works', 'POST /session/:id/prompt, then turn_complete on SSE',
	    (c) => client.prompt(sessionId, text('one'), undefined, ctx.cid),
	    (r) => r.stopReason === 'end_turn'],
	['DaemonClient.promptNonBlocking', 'works', '202 {promptId, lastEventId}',
	    (c) => client.promptNonBlocking(sessionId, text('two'), undefined, ctx.cid),
	    (r) => typeof r.promptId === 'string' && typeof r.lastEventId === 'number'],
	['DaemonClient.subscribeEvents', 'works', 'GET /session/:id/events (SSE)',
	    async (c) => {
		const ac = new AbortController();
		const it = client.subscribeEvents(sessionId, { signal: ac.signal, lastEventId: 0 });
		const first = await it.next();
		ac.abort();
		return first.value;
	    }, (r) => isObj(r) && r.v === 1],
	['DaemonClient.heartbeat', 'works', 'POST /session/:id/heartbeat',
	    (c) => client.heartbeat(sessionId, ctx.cid), (r) => r.sessionId === sessionId],
	['DaemonClient.cancel', 'works', 'POST /session/:id/cancel',
	    (c) => client.cancel(sessionId, ctx.cid), () => true],
	['DaemonClient.sessionStatus', 'works', 'GET /session/:id/status',
	    (c) => client.sessionStatus(sessionId, ctx.cid),
	    (r) => r.sessionId === sessionId && typeof r.activeWorkState === 'string' &&
	    Array.isArray(r.pendingInteractions)],
	['DaemonClient.getPendingPrompts', 'works', 'GET /session/:id/pending-prompts',
	    (c) => client.getPendingPrompts(sessionId, { clientId: ctx.cid }),
	    (r) => Array.isArray(r.pendingPrompts)],
	['DaemonClient.removePendingPrompt', 'works', 'DELETE /session/:id/pending-prompts/:promptId',
	    (c) => client.removePendingPrompt(sessionId, '00000000-0000-4000-8000-000000000000',
	    { clientId: ctx.cid }), (r) => r.removed === false],
	['DaemonClient.respondToSessionPermission', 'works', 'POST /session/:id/permission/:requestId (first responder)',
	    (c) => client.respondToSessionPermission(sessionId, 'no-such-request', cancelled, ctx.cid),
	    (r) => r === false],
	['DaemonClient.setSessionModel', 'works', 'POST /session/:id/model (the agent switches)',
	    (c) => client.setSessionModel(sessionId, 'echo', ctx.cid), (r) => isObj(r)],
	['DaemonClient.setSessionApprovalMode', 'works', 'POST /session/:id/approval-mode',
	    (c) => client.setSessionApprovalMode(sessionId, 'default', { clientId: ctx.cid }),
	    (r) => isObj(r)],
	['DaemonClient.getSessionTranscriptPage', 'works', 'GET /session/:id/transcript',
	    (c) => client.getSessionTranscriptPage(sessionId, { limit: 10 }),
	    (r) => r.sessionId === sessionId && Array.isArray(r.events)],
	['DaemonClient.listWorkspaceSessions', 'works', 'GET /workspace/:id/sessions',
	    (c) => client.listWorkspaceSessions(workspaceCwd), (r) => Array.isArray(r)],
	['DaemonClient.listWorkspaceSessionsPage', 'works', 'GET /workspace/:id/sessions (a page)',
	    (c) => client.listWorkspaceSessionsPage(workspaceCwd, { limit: 5 }),
	    (r) => Array.isArray(r.sessions)],
	['DaemonClient.branchSession', 'works', 'POST /session/:id/branch: 201, live without atRecordId',
	    (c) => client.branchSession(sessionId, { name: 'sdk' }),
	    (r) => { ctx.branch = r; return r.forkedFrom.sessionId === sessionId &&
	    typeof r.clientId === 'string'; }],
	// Session management: the workspace's catalog, search, export,
	// organization, and the batch routes (on SPARE, a second persisted
	// session that is never live; the live session is refused).
	['DaemonClient.searchWorkspaceSessions', 'works', 'GET /workspace/:id/sessions/search (titles, user and assistant text)',
	    (c) => client.searchWorkspaceSessions(workspaceCwd, 'because', { maxResults: 5 }),
	    (r) => Array.isArray(r.results) && r.results.some((m) => m.session?.sessionId === spare &&
	    /because/i.test(m.snippet))],
	['WorkspaceDaemonClient.getWorkspaceSessionInfo', 'works', 'GET /workspaces/:ws/session-info (a disk scan)',
	    (c) => client.workspaceByCwd(workspaceCwd).getWorkspaceSessionInfo(),
	    (r) => r.active >= 2 && r.archived === 0 && r.total === r.active + r.archived && r.live >= 1],
	['DaemonClient.getWorkspaceSessionLiveState', 'works', 'GET /workspaces/:ws/sessions/live-state',
	    (c) => client.getWorkspaceSessionLiveState(workspaceCwd),
	    (r) => r.v === 1 && typeof r.catalogVersion?.generation === 'string' &&
	    r.sessions.some((x) => x.sessionId === sessionId) && !r.sessions.some((x) => x.sessionId === spare)],
	['WorkspaceDaemonClient.getSessionLiveState', 'works', 'GET /workspaces/:ws/sessions/live-state',
	    (c) => client.workspaceByCwd(workspaceCwd).getSessionLiveState(),
	    (r) => r.sessions.some((x) => x.sessionId === sessionId)],
	['DaemonClient.exportSession', 'works', 'GET /session/:id/export?format=jsonl (a session_metadata line, then the active chain\'s messages)',
	    (c) => client.exportSession(spare, { format: 'jsonl' }),
	    (r) => r.format === 'jsonl' && /^qwen-code-export-.*\.jsonl$/.test(r.filename) &&
	    r.mimeType === 'application/jsonl; charset=utf-8' &&
	    JSON.parse(r.content.split('\n')[0]).type === 'session_metadata' &&
	    r.content.split('\n').every((l) => JSON.parse(l).sessionId === spare)],
	['DaemonClient.exportSession format=html', 'works', 'GET /session/:id/export (html, the SDK\'s default: a static page with the json document)',
	    (c) => client.exportSession(spare),
	    (r) => r.format === 'html' && /^qwen-code-export-.*\.html$/.test(r.filename) &&
	    r.mimeType === 'text/html; charset=utf-8' && r.content.startsWith('<!doctype html>') &&
	    r.content.includes('Why is loading slow?') && r.content.includes('id="transcript-document"')],
	['DaemonClient.exportSession format=md', 'works', 'GET /session/:id/export?format=md (upstream\'s Markdown layout)',
	    (c) => client.exportSession(spare, { format: 'md' }),
	    (r) => r.format === 'md' && r.mimeType === 'text/markdown; charset=utf-8' &&
	    r.content.startsWith('# Chat Session Export') && r.content.includes('## User\n\nWhy is loading slow?')],
	['DaemonClient.exportSession format=json', 'works', 'GET /session/:id/export?format=json (upstream\'s session-export document)',
	    (c) => client.exportSession(spare, { format: 'json' }),
	    (r) => { const d = JSON.parse(r.content); return r.format === 'json' &&
	    r.mimeType === 'application/json; charset=utf-8' && d.sessionId === spare &&
	    d.messages.length === 2 && d.messages[0].message.parts[0].text === 'Why is loading slow?' &&
	    d.metadata.promptCount === 1; }],
	['DaemonClient.updateSessionMetadata', 'works', 'PATCH /session/:id/metadata {displayName} (a live session\'s by its agent)',
	    (c) => client.updateSessionMetadata(sessionId, { displayName: 'sdk title' }),
	    (r) => r.displayName === 'sdk title'],
	['DaemonClient.listSessionGroups', 'works', 'GET /workspace/:id/session-groups',
	    (c) => client.listSessionGroups(workspaceCwd),
	    (r) => Array.isArray(r.groups) && r.groups.length === 0 && r.colorOptions.includes('blue')],
	['DaemonClient.createSessionGroup', 'works', 'POST /workspace/:id/session-groups: 201 {group}',
	    (c) => client.createSessionGroup(workspaceCwd, { name: 'g', color: 'blue' }),
	    (r) => { ctx.group = r.id; return typeof r.id === 'string' && r.name === 'g' && r.color === 'blue'; }],
	['DaemonClient.updateSessionOrganization', 'works', 'PATCH /session/:id/organization (pinned, group, color)',
	    (c) => client.updateSessionOrganization(spare, { isPinned: true, groupId: ctx.group }),
	    (r) => r.sessionId === spare && r.isPinned === true && r.groupId === ctx.group],
	['DaemonClient.updateSessionGroup', 'works', 'PATCH /workspace/:id/session-groups/:groupId',
	    (c) => client.updateSessionGroup(workspaceCwd, ctx.group, { name: 'h' }),
	    (r) => r.id === ctx.group && r.name === 'h'],
	['DaemonClient.deleteSessionGroup', 'works', 'DELETE /workspace/:id/session-groups/:groupId (its sessions ungrouped)',
	    async (c) => ({ del: await client.deleteSessionGroup(workspaceCwd, ctx.group),
	    list: await client.listSessionGroups(workspaceCwd) }),
	    (r) => r.del.deleted === true && r.list.groups.length === 0],
	['DaemonClient.listWorkspaceSessionsPage view=organized', 'works', 'GET /workspace/:id/sessions?view=organized&group= (pinned first; all, pinned, ungrouped or a group)',
	    (c) => client.listWorkspaceSessionsPage(workspaceCwd, { view: 'organized', group: 'pinned' }),
	    (r) => r.sessions.length === 1 && r.sessions[0].sessionId === spare && r.sessions[0].isPinned === true],
	['DaemonClient.getSessionTurnIndexPage', 'works', 'GET /session/:id/turn-index (the agent\'s index cache)',
	    (c) => client.getSessionTurnIndexPage(sessionId, { limit: 50 }),
	    (r) => r.sessionId === sessionId && typeof r.snapshot === 'string' &&
	    r.totalTurns >= 1 && Array.isArray(r.turns) && r.turns.length === r.totalTurns],
	['DaemonClient.archiveSessionsData', 'works', 'POST /sessions/archive (a live session refused)',
	    (c) => client.archiveSessionsData([spare, sessionId]),
	    (r) => r.archived.length === 1 && r.archived[0] === spare &&
	    r.errors.length === 1 && r.errors[0].sessionId === sessionId],
	['DaemonClient.archiveSessionsData resolveConflicts', 'works', 'POST /sessions/archive {resolveConflicts} (a copy on both sides: the archived one kept)',
	    (c) => client.archiveSessionsData([NOSUCH], { resolveConflicts: true }),
	    (r) => Array.isArray(r.resolvedConflicts) && r.notFound.length === 1 && r.notFound[0] === NOSUCH],
	['WorkspaceDaemonClient.exportArchivedSession', 'works', 'GET /workspaces/:ws/session/:id/archive/export (from the archive only)',
	    async (c) => ({ arch: await ws().exportArchivedSession(spare, { format: 'json' }),
	    live: await ws().exportArchivedSession(sessionId, { format: 'json' }).catch((e) => e) }),
	    (r) => JSON.parse(r.arch.content).sessionId === spare &&
	    r.live.status === 404 && r.live.body?.code === 'session_not_found'],
	['DaemonClient.unarchiveSessionsData', 'works', 'POST /sessions/unarchive',
	    async (c) => ({ un: await client.unarchiveSessionsData([spare]),
	    info: await client.workspaceByCwd(workspaceCwd).getWorkspaceSessionInfo() }),
	    (r) => r.un.unarchived.length === 1 && r.un.unarchived[0] === spare &&
	    r.un.errors.length === 0 && r.info.archived === 0],
	['DaemonClient.deleteSessionsData', 'works', 'POST /sessions/delete (a live session refused; whole or nothing)',
	    async (c) => ({ del: await client.deleteSessionsData([spare, sessionId]),
	    gone: await client.exportSession(spare, { format: 'jsonl' }).catch((e) => e) }),
	    (r) => r.del.removed.length === 1 && r.del.removed[0] === spare &&
	    r.del.errors.length === 1 && r.del.errors[0].sessionId === sessionId &&
	    r.gone.status === 404 && r.gone.body?.code === 'session_not_found'],
	// The same through WorkspaceDaemonClient (/workspaces/:ws/...).
	['WorkspaceDaemonClient.listWorkspaceSessionsPage', 'works', 'GET /workspaces/:ws/sessions',
	    (c) => ws().listWorkspaceSessionsPage({ pageSize: 50 }),
	    (r) => r.sessions.some((x) => x.sessionId === sessionId) && !r.sessions.some((x) => x.sessionId === spare)],
	['WorkspaceDaemonClient.listWorkspaceSessions', 'works', 'GET /workspaces/:ws/sessions',
	    (c) => ws().listWorkspaceSessions(), (r) => r.some((x) => x.sessionId === sessionId)],
	['WorkspaceDaemonClient.getSessionTranscriptPage', 'works', 'GET /workspaces/:ws/session/:id/transcript',
	    (c) => ws().getSessionTranscriptPage(sessionId, { limit: 5 }),
	    (r) => r.sessionId === sessionId && Array.isArray(r.events)],
	['WorkspaceDaemonClient.getSessionTurnIndexPage', 'works', 'GET /workspaces/:ws/session/:id/turn-index',
	    (c) => ws().getSessionTurnIndexPage(sessionId),
	    (r) => r.sessionId === sessionId && r.totalTurns >= 1 && Array.isArray(r.turns)],
	['WorkspaceDaemonClient.exportSession', 'works', 'GET /workspaces/:ws/session/:id/export (the workspace must hold it)',
	    (c) => ws().exportSession(sessionId, { format: 'jsonl' }),
	    (r) => r.format === 'jsonl' && r.content.trim().split('\n').every((l) => JSON.parse(l).sessionId === sessionId)],
	['WorkspaceDaemonClient.updateSessionMetadata', 'works', 'PATCH /workspaces/:ws/session/:id/metadata (an archived session\'s too)',
	    (c) => ws().updateSessionMetadata(sessionId, { displayName: 'ws title' }),
	    (r) => r.displayName === 'ws title'],
	['WorkspaceDaemonClient.listSessionGroups', 'works', 'GET /workspaces/:ws/session-groups',
	    (c) => ws().listSessionGroups(), (r) => Array.isArray(r.groups) && r.groups.length === 0],
	['WorkspaceDaemonClient.createSessionGroup', 'works', 'POST /workspaces/:ws/session-groups: 201 {group}',
	    (c) => ws().createSessionGroup({ name: 'w', color: 'red' }),
	    (r) => { ctx.wgroup = r.id; return typeof r.id === 'string' && r.name === 'w'; }],
	['WorkspaceDaemonClient.updateSessionOrganization', 'works', 'PATCH /workspaces/:ws/session/:id/organization',
	    (c) => ws().updateSessionOrganization(sessionId, { groupId: ctx.wgroup }),
	    (r) => r.sessionId === sessionId && r.groupId === ctx.wgroup],
	['WorkspaceDaemonClient.updateSessionGroup', 'works', 'PATCH /workspaces/:ws/session-groups/:groupId',
	    (c) => ws().updateSessionGroup(ctx.wgroup, { color: 'green' }),
	    (r) => r.id === ctx.wgroup && r.color === 'green'],
	['WorkspaceDaemonClient.deleteSessionGroup', 'works', 'DELETE /workspaces/:ws/session-groups/:groupId',
	    (c) => ws().deleteSessionGroup(ctx.wgroup), (r) => r.deleted === true],
	['WorkspaceDaemonClient.archiveSessionsData', 'works', 'POST /workspaces/:ws/sessions/archive',
	    (c) => ws().archiveSessionsData([NOSUCH, sessionId]),
	    (r) => r.notFound.length === 1 && r.notFound[0] === NOSUCH && r.errors[0]?.sessionId === sessionId],
	['WorkspaceDaemonClient.unarchiveSessionsData', 'works', 'POST /workspaces/:ws/sessions/unarchive',
	    (c) => ws().unarchiveSessionsData([NOSUCH]),
	    (r) => r.notFound.length === 1 && r.notFound[0] === NOSUCH],
	['WorkspaceDaemonClient.deleteSessionsData', 'works', 'POST /workspaces/:ws/sessions/delete',
	    (c) => ws().deleteSessionsData([NOSUCH, sessionId]),
	    (r) => r.notFound.length === 1 && r.notFound[0] === NOSUCH && r.errors[0]?.sessionId === sessionId],
	// The agent's own state and work.
	['DaemonClient.continueSession', 'works', 'POST /session/:id/continue (the agent\'s qwen/control/session/continue pre-check)',
	    (c) => client.continueSession(sessionId, { clientId: ctx.cid }),
	    (r) => r.accepted === false && r.interruption === 'none'],
	['DaemonClient.forkSession', 'agent-only', FORK,
	    (c) => client.forkSession(sessionId, { directive: 'd' }, ctx.cid)],
	['DaemonClient.createSideTaskSession', 'agent-only', SIDE,
	    (c) => client.createSideTaskSession(sessionId, {}, ctx.cid)],
	['DaemonClient.sessionContext', 'agent-only', PASSED,
	    (c) => client.sessionContext(sessionId, ctx.cid)],
	['DaemonClient.sessionContextUsage', 'agent-only', PASSED,
	    (c) => client.sessionContextUsage(sessionId)],
	['DaemonClient.sessionStats', 'agent-only', PASSED,
	    (c) => client.sessionStats(sessionId, ctx.cid)],
	['DaemonClient.sessionSupportedCommands', 'agent-only', PASSED,
	    (c) => client.sessionSupportedCommands(sessionId, ctx.cid)],
	['DaemonClient.sessionTasks', 'agent-only', PASSED,
	    (c) => client.sessionTasks(sessionId, ctx.cid)],
	['DaemonClient.sessionTaskCancel', 'agent-only', PASSED,
	    (c) => client.sessionTaskCancel(sessionId, 't1', 'agent')],
	['DaemonClient.sessionAgents', 'agent-only', PASSED,
	    (c) => client.sessionAgents(sessionId, ctx.cid)],
	['DaemonClient.sessionAgentTrace', 'agent-only', PASSED,
	    (c) => client.sessionAgentTrace(sessionId)],
	['DaemonClient.sessionWorkflowTasks', 'agent-only', PASSED,
	    (c) => client.sessionWorkflowTasks(sessionId, ctx.cid)],
	['DaemonClient.sessionSavedWorkflow', 'agent-only', PASSED,
	    (c) => client.sessionSavedWorkflow(sessionId, 'w', ctx.cid)],
	['DaemonClient.sessionWorkflowTaskAction', 'agent-only', PASSED,
	    (c) => client.sessionWorkflowTaskAction(sessionId, 't1', 'pause')],
	['DaemonClient.sessionLspStatus', 'agent-only', PASSED,
	    (c) => client.sessionLspStatus(sessionId, ctx.cid)],
	['DaemonClient.sessionHooks', 'agent-only', PASSED,
	    (c) => client.sessionHooks(sessionId)],
	['DaemonClient.sessionResources', 'agent-only', PASSED,
	    (c) => client.sessionResources(sessionId, ctx.cid)],
	['DaemonClient.sessionGoal', 'agent-only', PASSED,
	    (c) => client.sessionGoal(sessionId, ctx.cid)],
	['DaemonClient.sessionGoalControl', 'agent-only', PASSED,
	    (c) => client.sessionGoalControl(sessionId, { action: 'pause' }, ctx.cid)],
	['DaemonClient.sessionGoalClear', 'agent-only', PASSED,
	    (c) => client.sessionGoalClear(sessionId, ctx.cid)],
	['DaemonClient.setSessionConfigOption', 'agent-only', PASSED,
	    (c) => client.setSessionConfigOption(sessionId, 'reasoning_effort', 'low')],
	['DaemonClient.setSessionLanguage', 'agent-only', PASSED,
	    (c) => client.setSessionLanguage(sessionId, 'en')],
	['DaemonClient.getRewindSnapshots', 'agent-only', PASSED,
	    (c) => client.getRewindSnapshots(sessionId)],
	['DaemonClient.rewindSession', 'agent-only', PASSED,
	    (c) => client.rewindSession(sessionId, 'p1')],
	['DaemonClient.recapSession', 'agent-only', PASSED,
	    (c) => client.recapSession(sessionId)],
	['DaemonClient.generateSessionContent', 'agent-only', GEN,
	    (c) => drain(client.generateSessionContent(sessionId, 'x')), genFailed],
	['DaemonClient.btwSession', 'agent-only', PASSED,
	    (c) => client.btwSession(sessionId, 'q')],
	// No turn runs: upstream's idle refusal, an empty queue, nothing to remove.
	['DaemonClient.enqueueMidTurnMessage', 'works', MIDTURN,
	    (c) => client.enqueueMidTurnMessage(sessionId, 'm', { clientId: ctx.cid }),
	    (r) => r.accepted === false && r.reason === 'session_idle'],
	['DaemonClient.getMidTurnMessages', 'works', MIDTURN,
	    (c) => client.getMidTurnMessages(sessionId, { clientId: ctx.cid }),
	    (r) => Array.isArray(r.messages) && r.messages.length === 0 && Array.isArray(r.settledMessageIds)],
	['DaemonClient.removeMidTurnMessage', 'works', MIDTURN,
	    (c) => client.removeMidTurnMessage(sessionId, 'm1', { clientId: ctx.cid }),
	    (r) => r.removed === false],
	['DaemonClient.shellCommand', 'works', SHELL,
	    (c) => client.shellCommand(sessionId, 'echo one; exit 3', { clientId: ctx.cid }),
	    (r) => r.exitCode === 3 && r.output === 'one\n' && r.aborted === false],
	['DaemonClient.resolveSubagentSession', 'agent-only', SUBAGENT,
	    (c) => client.resolveSubagentSession(sessionId, 'a1', ctx.cid)],
	['DaemonClient.cancelSubagentSession', 'agent-only', SUBAGENT,
	    (c) => client.cancelSubagentSession(sessionId, 'a1', ctx.cid)],
	// Not a session server's.
	['DaemonClient.respondToPermission', 'works', 'legacy POST /permission/:requestId (the session holding it; 404 taken as false)',
	    (c) => client.respondToPermission('no-such-request', cancelled, ctx.cid),
	    (r) => r === false && last.status === 404 && last.code === undefined],
	['DaemonClient.uploadSessionAttachment', 'works', UPLOAD,
	    (c) => client.uploadSessionAttachment(sessionId, blob(), 'a.txt', 'text/plain', { clientId: ctx.cid }),
	    (r) => r.attachmentId === 'a.txt' && r.type === 'resource' && r.mimeType === 'text/plain' && r.size === 1],
	['DaemonClient.readSessionAttachment', 'works', 'GET /session/:id/attachments/:attachmentId (the file as it is)',
	    (c) => client.readSessionAttachment(sessionId, 'a.txt'),
	    (r) => r.data === btoa('x') && r.mimeType === 'text/plain'],
	['DaemonClient.listSessionAttachments', 'works', 'GET /session/:id/attachments',
	    (c) => client.listSessionAttachments(sessionId),
	    (r) => Array.isArray(r) && r.some((a) => a.attachmentId === 'a.txt' && a.size === 1)],
	['DaemonClient.removeSessionAttachment', 'works', 'DELETE /session/:id/attachments/:attachmentId',
	    (c) => client.removeSessionAttachment(sessionId, 'a.txt'), (r) => r === true],
	['DaemonClient.addSessionArtifact', 'works', 'POST /session/:id/artifacts (checked as upstream; the client owns it)',
	    (c) => client.addSessionArtifact(sessionId, ARTIFACT, ctx.cid),
	    (r) => { ctx.art = r.changes?.[0]?.artifactId; return r.v === 1 && r.changes[0].action === 'created' &&
	    r.changes[0].artifact.kind === 'link' && r.changes[0].artifact.storage === 'external_url'; }],
	['DaemonClient.listSessionArtifacts', 'works', 'GET /session/:id/artifacts',
	    (c) => client.listSessionArtifacts(sessionId, ctx.cid),
	    (r) => r.v === 1 && r.artifacts.some((a) => a.id === ctx.art) && r.limits.maxArtifacts === 200],
	['DaemonClient.removeSessionArtifact', 'works', 'DELETE /session/:id/artifacts/:artifactId',
	    (c) => client.removeSessionArtifact(sessionId, ctx.art, ctx.cid),
	    (r) => r.changes[0].action === 'removed' && r.changes[0].artifactId === ctx.art],
	['DaemonClient.readSessionArtifactContent', 'not served', NOSNAP,
	    (c) => client.readSessionArtifactContent(sessionId, 'a1'), undefined,
	    (o) => o.error?.status === 404 && o.error.body?.error === 'artifact_snapshot_unavailable'],
	['DaemonClient.listSessionSources', 'agent-only', SOURCES,
	    (c) => client.listSessionSources(sessionId, ctx.cid)],
	['DaemonClient.upsertSessionSource', 'agent-only', SOURCES,
	    (c) => client.upsertSessionSource(sessionId, SOURCE, ctx.cid)],
	['DaemonClient.removeSessionSource', 'agent-only', SOURCES,
	    (c) => client.removeSessionSource(sessionId, 's1', ctx.cid)],
	['DaemonClient.resetWorktreeSession', 'not served', NOWT,
	    (c) => client.resetWorktreeSession(sessionId)],
	// Standalone sessions: each in its own private directory.  The first
	// is prompted (so that it has a transcript), then closed for the
	// batch routes; the session-client rows use a second one.
	['DaemonClient.getStandaloneSessionOptions', 'not served', SA_OPTIONS,
	    (c) => client.getStandaloneSessionOptions()],
	['DaemonClient.createStandaloneSession', 'works', 'POST /standalone/sessions (a new private directory <data-dir>/standalone/<id>)',
	    async (c) => { const r = await client.createStandaloneSession();
		ctx.sa = r.sessionId;
		await client.prompt(r.sessionId, text('alone'), undefined, r.clientId);
		return r; },
	    (r) => r.sourceType === 'standalone' && r.context.kind === 'standalone' &&
	    r.workingDirectory.state === 'ready' && r.workspaceCwd === r.projectlessOutputDirectory &&
	    r.projectlessOutputDirectory.endsWith(`/standalone/${r.sessionId}`)],
	['DaemonClient.listStandaloneSessions', 'works', 'GET /standalone/sessions',
	    (c) => client.listStandaloneSessions(),
	    (r) => r.length === 1 && r[0].sessionId === ctx.sa && r[0].sourceType === 'standalone'],
	['DaemonClient.listStandaloneSessionsPage', 'works', 'GET /standalone/sessions?size= (a page, newest first)',
	    (c) => client.listStandaloneSessionsPage({ pageSize: 1 }),
	    (r) => r.sessions.length === 1 && r.nextCursor === undefined],
	['DaemonClient.getStandaloneSession', 'works', 'GET /standalone/sessions/:id (the listing\'s summary)',
	    (c) => client.getStandaloneSession(ctx.sa),
	    (r) => r.sessionId === ctx.sa && r.context.kind === 'standalone' && r.firstPrompt === 'alone'],
	['DaemonClient.loadStandaloneSession', 'works', 'POST /standalone/sessions/:id/load (attaches when live)',
	    (c) => client.loadStandaloneSession(ctx.sa),
	    (r) => r.sessionId === ctx.sa && r.attached === true && r.workingDirectory.state === 'ready'],
	['DaemonClient.resumeStandaloneSession', 'works', 'POST /standalone/sessions/:id/resume',
	    (c) => client.resumeStandaloneSession(ctx.sa),
	    (r) => r.sessionId === ctx.sa && r.sourceType === 'standalone'],
	['DaemonClient.repairStandaloneSessionDirectory', 'works', 'POST /standalone/sessions/:id/repair-directory (remade when missing)',
	    (c) => client.repairStandaloneSessionDirectory(ctx.sa),
	    (r) => r.sessionId === ctx.sa && r.workingDirectory.state === 'ready'],
	['DaemonClient.renameStandaloneSession', 'works', 'PATCH /standalone/sessions/:id/metadata {displayName}',
	    (c) => client.renameStandaloneSession(ctx.sa, 'alone title'),
	    (r) => r.sessionId === ctx.sa && r.displayName === 'alone title'],
	['DaemonClient.exportStandaloneSession', 'works', 'GET /standalone/sessions/:id/export (the session export)',
	    (c) => client.exportStandaloneSession(ctx.sa, { format: 'md' }),
	    (r) => r.format === 'md' && r.content.includes('alone')],
	['DaemonClient.archiveStandaloneSessions', 'works', 'POST /standalone/sessions/archive (through the catalog)',
	    async (c) => { await client.closeSession(ctx.sa);
		return client.archiveStandaloneSessions([ctx.sa, NOSUCH]); },
	    (r) => r.archived[0] === ctx.sa && r.notFound[0] === NOSUCH && r.errors.length === 0],
	['DaemonClient.unarchiveStandaloneSessions', 'works', 'POST /standalone/sessions/unarchive',
	    (c) => client.unarchiveStandaloneSessions([ctx.sa]),
	    (r) => r.unarchived[0] === ctx.sa],
	['DaemonClient.deleteStandaloneSessions', 'works', 'POST /standalone/sessions/delete (live ones refused; the directory removed)',
	    (c) => client.deleteStandaloneSessions([ctx.sa]),
	    (r) => r.removed[0] === ctx.sa && r.fileCleanupPending.length === 0],

	// DaemonSessionClient: the session core.
	['DaemonSessionClient.createOrAttach', 'works', 'POST /session',
	    (c) => DaemonSessionClient.createOrAttach(client, { workspaceCwd }),
	    (r) => { ctx.other = r; return typeof r.sessionId === 'string' && r.sessionId !== sessionId; }],
	['DaemonSessionClient.load', 'works', 'POST /session/:id/load (attaches)',
	    (c) => DaemonSessionClient.load(client, sessionId, { workspaceCwd }),
	    (r) => { ctx.s = r; return r.sessionId === sessionId; }],
	['DaemonSessionClient.resume', 'works', 'POST /session/:id/resume (attaches)',
	    (c) => DaemonSessionClient.resume(client, sessionId, { workspaceCwd }),
	    (r) => { ctx.r = r; return r.sessionId === sessionId; }],
	['DaemonSessionClient.consumeReplaySnapshot', 'works', 'the load\'s replay',
	    (c) => ctx.s.consumeReplaySnapshot(), (r) => Array.isArray(r.compactedReplay)],
	['DaemonSessionClient.setLastEventId', 'works', 'local cursor',
	    (c) => ctx.r.setLastEventId(0), () => true],
	['DaemonSessionClient.prompt', 'works', 'prompt to turn_complete',
	    (c) => ctx.s.prompt(text('three')), (r) => r.stopReason === 'end_turn'],
	['DaemonSessionClient.submitPrompt', 'works', '202 envelope',
	    (c) => ctx.s.submitPrompt(text('four')), (r) => typeof r.promptId === 'string'],
	['DaemonSessionClient.events', 'works', 'SSE with the session\'s cursor',
	    async (c) => {
		const ac = new AbortController();
		const it = ctx.r.events({ signal: ac.signal });
		const first = await it.next();
		ac.abort();
		return first.value;
	    }, (r) => isObj(r) && r.v === 1],
	['DaemonSessionClient.subscribeEvents', 'works', 'SSE (the same as events)',
	    async (c) => {
		const ac = new AbortController();
		const it = ctx.other.subscribeEvents({ signal: ac.signal });
		const p = it.next();
		await client.promptNonBlocking(ctx.other.sessionId, text('five'));
		const first = await p;
		ac.abort();
		return first.value;
	    }, (r) => isObj(r) && r.v === 1],
	['DaemonSessionClient.heartbeat', 'works', 'POST /session/:id/heartbeat',
	    (c) => ctx.s.heartbeat(), (r) => r.sessionId === sessionId],
	['DaemonSessionClient.cancel', 'works', 'POST /session/:id/cancel',
	    (c) => ctx.s.cancel(), () => true],
	['DaemonSessionClient.status', 'works', 'GET /session/:id/status',
	    (c) => ctx.s.status(), (r) => r.sessionId === sessionId && typeof r.hasTurnError === 'boolean'],
	['DaemonSessionClient.setModel', 'works', 'POST /session/:id/model',
	    (c) => ctx.s.setModel('echo'), (r) => isObj(r)],
	['DaemonSessionClient.getPendingPrompts', 'works', 'GET /session/:id/pending-prompts',
	    (c) => ctx.s.getPendingPrompts(), (r) => Array.isArray(r.pendingPrompts)],
	['DaemonSessionClient.removePendingPrompt', 'works', 'DELETE /session/:id/pending-prompts/:promptId',
	    (c) => ctx.s.removePendingPrompt('00000000-0000-4000-8000-000000000000'),
	    (r) => r.removed === false],
	['DaemonSessionClient.getTranscriptPage', 'works', 'GET /session/:id/transcript',
	    (c) => ctx.s.getTranscriptPage({ limit: 5 }), (r) => Array.isArray(r.events)],
	['DaemonSessionClient.respondToSessionPermission', 'works', 'POST /session/:id/permission/:requestId',
	    (c) => ctx.s.respondToSessionPermission('no-such-request', cancelled), (r) => r === false],
	['DaemonSessionClient.respondToPermission', 'works', 'legacy POST /permission/:requestId',
	    (c) => ctx.s.respondToPermission('no-such-request', cancelled),
	    (r) => r === false && last.status === 404 && last.code === undefined],
	['DaemonSessionClient.updateMetadata', 'works', 'PATCH /session/:id/metadata {displayName}',
	    (c) => ctx.s.updateMetadata({ displayName: 'session title' }),
	    (r) => r.displayName === 'session title'],
	['DaemonSessionClient.getTurnIndexPage', 'works', 'GET /session/:id/turn-index',
	    (c) => ctx.s.getTurnIndexPage({ limit: 1 }),
	    (r) => r.sessionId === sessionId && r.turns.length === 1 && r.totalTurns >= 1],
	['DaemonSessionClient.continueSession', 'works', 'POST /session/:id/continue',
	    (c) => ctx.s.continueSession(), (r) => r.accepted === false],
	['DaemonSessionClient.fork', 'agent-only', FORK,
	    (c) => ctx.s.fork('d')],
	['DaemonSessionClient.context', 'agent-only', PASSED, (c) => ctx.s.context()],
	['DaemonSessionClient.contextUsage', 'agent-only', PASSED, (c) => ctx.s.contextUsage()],
	['DaemonSessionClient.stats', 'agent-only', PASSED, (c) => ctx.s.stats()],
	['DaemonSessionClient.supportedCommands', 'agent-only', PASSED, (c) => ctx.s.supportedCommands()],
	['DaemonSessionClient.tasks', 'agent-only', PASSED, (c) => ctx.s.tasks()],
	['DaemonSessionClient.cancelTask', 'agent-only', PASSED, (c) => ctx.s.cancelTask('t1', 'agent')],
	['DaemonSessionClient.agents', 'agent-only', PASSED, (c) => ctx.s.agents()],
	['DaemonSessionClient.agentTrace', 'agent-only', PASSED, (c) => ctx.s.agentTrace()],
	['DaemonSessionClient.workflowTasks', 'agent-only', PASSED, (c) => ctx.s.workflowTasks()],
	['DaemonSessionClient.savedWorkflow', 'agent-only', PASSED, (c) => ctx.s.savedWorkflow('w')],
	['DaemonSessionClient.controlWorkflowTask', 'agent-only', PASSED,
	    (c) => ctx.s.controlWorkflowTask('t1', 'pause')],
	['DaemonSessionClient.lspStatus', 'agent-only', PASSED, (c) => ctx.s.lspStatus()],
	['DaemonSessionClient.resources', 'agent-only', PASSED, (c) => ctx.s.resources()],
	['DaemonSessionClient.goal', 'agent-only', PASSED, (c) => ctx.s.goal()],
	['DaemonSessionClient.controlGoal', 'agent-only', PASSED, (c) => ctx.s.controlGoal({ action: 'pause' })],
	['DaemonSessionClient.clearGoal', 'agent-only', PASSED, (c) => ctx.s.clearGoal()],
	['DaemonSessionClient.setConfigOption', 'agent-only', PASSED,
	    (c) => ctx.s.setConfigOption('reasoning_effort', 'low')],
	['DaemonSessionClient.getRewindSnapshots', 'agent-only', PASSED, (c) => ctx.s.getRewindSnapshots()],
	['DaemonSessionClient.rewind', 'agent-only', PASSED, (c) => ctx.s.rewind('p1')],
	['DaemonSessionClient.recap', 'agent-only', PASSED, (c) => ctx.s.recap()],
	['DaemonSessionClient.generateContent', 'agent-only', GEN,
	    (c) => drain(ctx.s.generateContent('x')), genFailed],
	['DaemonSessionClient.btw', 'agent-only', PASSED, (c) => ctx.s.btw('q')],
	['DaemonSessionClient.enqueueMidTurnMessage', 'works', MIDTURN,
	    (c) => ctx.s.enqueueMidTurnMessage('m', { messageId: 'm-1' }),
	    (r) => r.accepted === false && r.reason === 'session_idle'],
	['DaemonSessionClient.getMidTurnMessages', 'works', MIDTURN, (c) => ctx.s.getMidTurnMessages(),
	    (r) => Array.isArray(r.messages) && Array.isArray(r.promotedMessageIds)],
	['DaemonSessionClient.removeMidTurnMessage', 'works', MIDTURN,
	    (c) => ctx.s.removeMidTurnMessage('m1'), (r) => r.removed === false],
	['DaemonSessionClient.shellCommand', 'works', SHELL, (c) => ctx.s.shellCommand('pwd'),
	    (r) => r.exitCode === 0 && r.output === `${workspaceCwd}\n`],
	['DaemonSessionClient.uploadAttachment', 'works', UPLOAD,
	    (c) => ctx.s.uploadAttachment(blob(), 'b.txt', 'text/plain'),
	    (r) => r.attachmentId === 'b.txt' && r.size === 1],
	['DaemonSessionClient.readAttachment', 'works', 'GET /session/:id/attachments/:attachmentId (the file as it is)',
	    (c) => ctx.s.readAttachment('b.txt'), (r) => r.data === btoa('x')],
	['DaemonSessionClient.listAttachments', 'works', 'GET /session/:id/attachments',
	    (c) => ctx.s.listAttachments(), (r) => Array.isArray(r) && r.some((a) => a.attachmentId === 'b.txt')],
	['DaemonSessionClient.removeAttachment', 'works', 'DELETE /session/:id/attachments/:attachmentId',
	    (c) => ctx.s.removeAttachment('b.txt'), (r) => r === true],
	['DaemonSessionClient.addArtifact', 'works', 'POST /session/:id/artifacts (checked as upstream; the client owns it)',
	    (c) => ctx.s.addArtifact({ title: 'Spec', workspacePath: 'spec.md' }),
	    (r) => { ctx.art2 = r.changes?.[0]?.artifactId; return r.changes[0].artifact.storage === 'workspace' &&
	    r.changes[0].artifact.status === 'missing'; }],
	['DaemonSessionClient.artifacts', 'works', 'GET /session/:id/artifacts',
	    (c) => ctx.s.artifacts(), (r) => r.artifacts.some((a) => a.id === ctx.art2)],
	['DaemonSessionClient.removeArtifact', 'works', 'DELETE /session/:id/artifacts/:artifactId',
	    (c) => ctx.s.removeArtifact(ctx.art2), (r) => r.changes[0].action === 'removed'],
	['DaemonSessionClient.listSources', 'agent-only', SOURCES, (c) => ctx.s.listSources()],
	['DaemonSessionClient.upsertSource', 'agent-only', SOURCES, (c) => ctx.s.upsertSource(SOURCE)],
	['DaemonSessionClient.removeSource', 'agent-only', SOURCES, (c) => ctx.s.removeSource('s1')],
	['DaemonSessionClient.resetWorktree', 'not served', NOWT,
	    (c) => DaemonSessionClient.resetWorktree(client, sessionId)],
	['DaemonSessionClient.createStandalone', 'works', 'POST /standalone/sessions',
	    async (c) => { const r = await DaemonSessionClient.createStandalone(client);
		ctx.sb = r.sessionId; return r; },
	    (r) => typeof r.sessionId === 'string'],
	['DaemonSessionClient.loadStandalone', 'works', 'POST /standalone/sessions/:id/load',
	    (c) => DaemonSessionClient.loadStandalone(client, ctx.sb),
	    (r) => r.sessionId === ctx.sb],
	['DaemonSessionClient.resumeStandalone', 'works', 'POST /standalone/sessions/:id/resume',
	    (c) => DaemonSessionClient.resumeStandalone(client, ctx.sb),
	    (r) => r.sessionId === ctx.sb],

	// Last: the ones that let go of sessions.
	['DaemonSessionClient.detach', 'works', 'POST /session/:id/detach',
	    (c) => ctx.r.detach(), () => true],
	['DaemonSessionClient.close', 'works', 'DELETE /session/:id',
	    (c) => ctx.other.close(), () => true],
	['DaemonClient.detachSession', 'works', 'POST /session/:id/detach',
	    (c) => client.detachSession(ctx.branch.sessionId, ctx.branch.clientId), () => true],
	['DaemonClient.closeSession', 'works', 'DELETE /session/:id (204, 404 taken as closed)',
	    (c) => client.closeSession(sessionId), () => true],
];

// The refusal of a route this daemon does not serve: the route table's
// JSON 404 not_found or 405, or 501 (a method evhttp does not take).
function unserved(status, code) {
	return (status === 404 && code === 'not_found') || status === 405 || status === 501;
}

// Refused as a route we do not serve: by the daemon, or by the SDK itself
// because /capabilities does not advertise the feature the method needs.
function refusedAsUnserved(o) {
	if (o.hang)
		return false;
	if (o.error === undefined)	/* a 404 the SDK turned into a value */
		return last !== null && unserved(last.status, last.code);
	if (o.error.name === 'TimeoutError')
		return false;
	if (/does not advertise the \S+ feature/.test(o.error.message ?? ''))
		return true;
	return unserved(o.error.status, o.error.body?.code);
}

// Passed to the agent, which (qwen-acp-child) has no such method: its
// JSON-RPC -32601 as upstream's daemon answers it, a 500.
function answeredByAgent(o) {
	if (o.hang)
		return false;
	if (o.error === undefined)
		return last !== null && last.status === 500 && last.code === -32601;
	return o.error.status === 500 && o.error.body?.code === -32601;
}

// One call under a deadline: its result, or its error, or 'hang'.
async function settle(fn) {
	let timer;
	const hang = new Promise((res) => { timer = setTimeout(() => res({ hang: true }), 15000); });
	try {
		return await Promise.race([Promise.resolve().then(fn).then((value) => ({ value }),
		    (error) => ({ error })), hang]);
	} finally {
		clearTimeout(timer);
	}
}

function describe(o) {
	if (o.hang)
		return 'no answer in 15 s';
	if (o.error)
		return `rejected: ${o.error.status ?? ''} ${JSON.stringify(o.error.body ?? o.error.message)}`.slice(0, 300);
	return `resolved: ${JSON.stringify(o.value)}`.slice(0, 300);
}

if (mode === 'table') {
	for (const [name, status, why] of T)
		console.log(`${name}\t${status}\t${why}`);
	process.exit(0);
}
let bad = 0;
for (const [name, status, , call, check, refused] of T) {
	last = null;
	const o = await settle(() => call(ctx));
	let good;
	if (status === 'works')
		good = !o.hang && !o.error && (check === undefined || check(o.value));
	else if (status === 'agent-only')
		good = check !== undefined ? !o.hang && !o.error && check(o.value) :
		    answeredByAgent(o);
	else if (refused !== undefined)
		good = !o.hang && refused(o);
	else
		good = refusedAsUnserved(o);
	if (!good)
		bad++;
	console.log(good ? `ok - ${name} (${status})` : `not ok - ${name} (${status}): ${describe(o)}`);
}
const counts = {};
for (const [, status] of T)
	counts[status] = (counts[status] ?? 0) + 1;
console.log(`METHODS=${T.length} ${Object.entries(counts).map(([k, v]) => `${k}=${v}`).join(' ')}`);
process.exit(bad > 0 ? 1 : 0);
