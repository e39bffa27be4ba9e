// SPDX-License-Identifier: ISC
// sse-order.js SOCKET SESSION N: one SSE stream, N prompts in turn.  Fails
// when an event of a prompt arrives before that prompt's 202 response has
// arrived, or when its turn_complete is seen before the 202 body has been
// read (the SDK drops such a terminal event and its prompt() then hangs).
'use strict';
const http = require('http');
const [sock, sid, nStr] = process.argv.slice(2);
const n = Number(nStr);
const acked = new Set();
let early = 0, completed = 0, buf = '', waiting = null, outstanding = false;

function post() {
	const req = http.request({ socketPath: sock, method: 'POST',
	    path: `/session/${sid}/prompt`, headers: { 'Content-Type': 'application/json' } },
	    (res) => {
		outstanding = false;
		let body = '';
		res.on('data', (d) => { body += d; });
		res.on('end', () => {
			if (res.statusCode !== 202) { console.error('prompt', res.statusCode, body); process.exit(2); }
			const id = JSON.parse(body).promptId;
			acked.add(id);
			waiting = id;
		});
	});
	outstanding = true;
	req.end(JSON.stringify({ prompt: [{ type: 'text', text: 'go' }] }));
}

const sse = http.request({ socketPath: sock, path: `/session/${sid}/events`,
    headers: { Accept: 'text/event-stream' } }, (res) => {
	res.setEncoding('utf8');
	res.on('data', (d) => {
		buf += d;
		let i;
		while ((i = buf.indexOf('\n\n')) >= 0) {
			const frame = buf.slice(0, i);
			buf = buf.slice(i + 2);
			for (const line of frame.split('\n')) {
				if (!line.startsWith('data: ')) continue;
				const e = JSON.parse(line.slice(6));
				if (!e.promptId) continue;
				if (!acked.has(e.promptId) && (outstanding || e.type === 'turn_complete')) early++;
				if (e.type === 'turn_complete' && ++completed < n) post();
				if (completed === n) { console.log(`early=${early} completed=${completed}`); process.exit(early ? 1 : 0); }
			}
		}
	});
	setTimeout(post, 50);
});
sse.end();
setTimeout(() => { console.error('timeout', completed, waiting); process.exit(3); }, 20000);
