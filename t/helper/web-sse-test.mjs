// SPDX-License-Identifier: ISC
// web-sse-test.mjs: the console's SSE parser (web/sse.mjs) in node.
// usage: node web-sse-test.mjs WEB_DIR.  TAP output.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const { SseParser } = await import(pathToFileURL(path.join(process.argv[2], 'sse.mjs')).href);
let n = 0, failed = 0;

function is(got, want, what) {
	n++;
	const g = JSON.stringify(got), w = JSON.stringify(want);
	if (g !== w)
		failed++;
	console.log(`${g === w ? 'ok' : 'not ok'} ${n} - ${what}` + (g === w ? '' : ` (got ${g}, want ${w})`));
}

// Feed pieces one by one; all events in order.
function feed(...pieces) {
	const p = new SseParser(), out = [];
	for (const s of pieces)
		out.push(...p.push(s));
	return out;
}

const daemon = 'retry: 3000\n\nid: 28\nevent: session_update\ndata: {"id":28}\n\n' +
    ': heartbeat\n\nid: 29\nevent: turn_complete\ndata: {"id":29}\n\n';
is(feed(daemon), [{ retry: 3000 }, { event: 'session_update', data: '{"id":28}', id: '28' },
    { event: 'turn_complete', data: '{"id":29}', id: '29' }], "the daemon's frames");
is(feed(...daemon.split('')), feed(daemon), 'one character at a time: the same events');
is(feed(daemon.replace(/\n/g, '\r\n')), feed(daemon), 'CRLF line ends');
is(feed(...daemon.replace(/\n/g, '\r\n').split('')), feed(daemon),
    'CRLF split between chunks');
is(feed(daemon.replace(/\n/g, '\r')), feed(daemon), 'CR line ends');
is(feed('data: a\ndata: b\n\n'), [{ event: 'message', data: 'a\nb', id: null }],
    'data lines join with a newline');
is(feed('data:x\n\n'), [{ event: 'message', data: 'x', id: null }], 'no space after the colon');
is(feed('data:  x\n\n'), [{ event: 'message', data: ' x', id: null }], 'only one space dropped');
is(feed('event: e\n\n'), [], 'an event without data is not dispatched');
is(feed('data: x\n'), [], 'nothing before the blank line');
is(feed('retry: soon\n\n'), [], 'retry takes digits only');
is(feed(': only a comment\n\n'), [], 'comments');
is(feed('data\n\n'), [{ event: 'message', data: '', id: null }], 'a field without a colon');
is(feed('event: a\ndata: 1\n\ndata: 2\n\n'), [{ event: 'a', data: '1', id: null },
    { event: 'message', data: '2', id: null }], 'the event type does not carry over');
is(feed('data: é\n', '\n'), [{ event: 'message', data: 'é', id: null }], 'text across pushes');
is(feed('data: x\r', '', '\n\n'), [{ event: 'message', data: 'x', id: null }],
    'an empty push between CR and LF');

console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
