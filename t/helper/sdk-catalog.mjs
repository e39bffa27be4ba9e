// SPDX-License-Identifier: ISC
// sdk-catalog.mjs QWEN_CODE_DIR BASE_URL WORKSPACE SESSION
// Drives DaemonClient.listSessionsCatalog of the client bundled in the
// real @qwen-code/qwen-code 0.24.4 (the SDK 0.1.14 has no such method)
// against qwen-serve: the capability it preflights, then a page of
// WORKSPACE (by cwd, its pageSize sent as options.size) and a member of
// no workspace.  Prints "ok - <what>" or "not ok - <what>: <why>" a
// check; exit 1 if any is not ok.
import { readdirSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [pkgDir, baseUrl, workspaceCwd, sessionId] = process.argv.slice(2);
const chunks = path.join(pkgDir, 'chunks');
// The chunk that holds the client (its name is a build hash).
const file = readdirSync(chunks).find((f) => f.endsWith('.js') &&
    readFileSync(path.join(chunks, f), 'utf8').includes('async listSessionsCatalog('));
if (file === undefined) {
	console.log('not ok - no chunk holds DaemonClient.listSessionsCatalog');
	process.exit(1);
}
const { DaemonClient } = await import(pathToFileURL(path.join(chunks, file)).href);
const client = new DaemonClient({ baseUrl, fetchTimeoutMs: 10000 });
let bad = 0;
const check = (what, ok, why) => {
	console.log(ok ? `ok - ${what}` : `not ok - ${what}: ${why}`);
	if (!ok)
		bad++;
};
const caps = await client.capabilities();
check('capabilities has session_catalog_batch',
    caps.features.includes('session_catalog_batch'), JSON.stringify(caps.features));
const r = await client.listSessionsCatalog({
	workspaces: [{ workspace: workspaceCwd }, { workspace: '/nonexistent' }],
	options: { pageSize: 1 },
});
const [m, none] = r.workspaces ?? [];
check('a page of the workspace', m?.cwd === workspaceCwd &&
    m.workspaceId === 'primary' && m.sessions?.length === 1 &&
    typeof m.nextCursor === 'string', JSON.stringify(m));
const next = await client.listSessionsCatalog({
	workspaces: [{ workspace: 'primary', cursor: m?.nextCursor }],
	options: { pageSize: 1 },
});
check('its next page by its cursor', next.workspaces?.[0]?.sessions?.length === 1 &&
    next.workspaces[0].sessions[0].sessionId !== m?.sessions?.[0]?.sessionId &&
    [m?.sessions?.[0]?.sessionId, next.workspaces[0].sessions[0].sessionId].includes(sessionId),
    JSON.stringify(next));
check('a member of no workspace', none?.error?.code === 'workspace_not_found' &&
    none.error.status === 404, JSON.stringify(none));
let refused;
try {
	await client.listSessionsCatalog({ workspaces: [] });
} catch (e) {
	refused = e;
}
check('an empty selection refused', refused?.status === 400 &&
    JSON.stringify(refused?.body ?? '').includes('invalid_session_catalog_request'),
    String(refused));
process.exit(bad > 0 ? 1 : 0);
