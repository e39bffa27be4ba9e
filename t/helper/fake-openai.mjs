// SPDX-License-Identifier: ISC
// fake-openai.mjs: a scriptable OpenAI-compatible chat-completions server
// for the tests, on loopback.  Usage: node fake-openai.mjs SCRIPT LOGDIR
// It listens on 127.0.0.1:0, writes the port to LOGDIR/port, and writes
// each request body to LOGDIR/req-N.json.  SCRIPT is a JSON array of
// answers, used in order ("once": true entries once each); each answer
//   { "when": "substring of the last message", "text": "...",
//     "reasoning": "...", "tool_calls": [{ "name": "...", "arguments": {...} }],
//     "usage": { "prompt_tokens": N, "completion_tokens": N },
//     "hold": "FILE" }
// is streamed as SSE chunks (stream: true) or returned whole; with "hold"
// the answer waits until FILE exists (the test releases it).
// A request that no answer matches gets the text "(no scripted answer)".
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const [scriptPath, logDir] = process.argv.slice(2);
const script = JSON.parse(fs.readFileSync(scriptPath, 'utf8'));
const used = new Set();
let n = 0;

function lastMessage(body) {
	const m = body.messages ?? [];
	return m.length ? JSON.stringify(m[m.length - 1]) : '';
}

function pick(body) {
	const last = lastMessage(body);
	for (let i = 0; i < script.length; i++) {
		const a = script[i];
		if (used.has(i))
			continue;
		if (a.when !== undefined && !last.includes(a.when))
			continue;
		if (a.once !== false)
			used.add(i);
		return a;
	}
	return { text: '(no scripted answer)' };
}

// The answer as the list of deltas a streaming model sends.
function deltas(a) {
	const out = [{ role: 'assistant', content: '' }];
	if (a.reasoning)
		out.push({ reasoning_content: a.reasoning });
	for (const piece of (a.text ?? '').match(/[\s\S]{1,8}/g) ?? [])
		out.push({ content: piece });
	(a.tool_calls ?? []).forEach((t, i) => {
		const args = JSON.stringify(t.arguments ?? {});
		out.push({ tool_calls: [{ index: i, id: t.id ?? `call_${n}_${i}`,
		    type: 'function', function: { name: t.name, arguments: '' } }] });
		out.push({ tool_calls: [{ index: i, function: { arguments: args } }] });
	});
	return out;
}

function usage(a) {
	const u = a.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
	return { ...u, total_tokens: u.prompt_tokens + u.completion_tokens };
}

function stream(res, a) {
	const id = `chatcmpl-${n}`, created = Math.floor(Date.now() / 1000);
	const frame = (choice, extra) => `data: ${JSON.stringify({ id,
	    object: 'chat.completion.chunk', created, model: 'fake',
	    choices: choice ? [choice] : [], ...extra })}\n\n`;
	res.writeHead(200, { 'content-type': 'text/event-stream' });
	for (const d of deltas(a))
		res.write(frame({ index: 0, delta: d, finish_reason: null }));
	res.write(frame({ index: 0, delta: {}, finish_reason:
	    a.tool_calls ? 'tool_calls' : 'stop' }));
	res.write(frame(null, { usage: usage(a) }));
	res.end('data: [DONE]\n\n');
}

function whole(res, a) {
	const message = { role: 'assistant', content: a.text ?? '' };
	if (a.tool_calls)
		message.tool_calls = a.tool_calls.map((t, i) => ({ id: t.id ?? `call_${n}_${i}`,
		    type: 'function', function: { name: t.name,
		    arguments: JSON.stringify(t.arguments ?? {}) } }));
	res.writeHead(200, { 'content-type': 'application/json' });
	res.end(JSON.stringify({ id: `chatcmpl-${n}`, object: 'chat.completion',
	    created: Math.floor(Date.now() / 1000), model: 'fake',
	    choices: [{ index: 0, message, finish_reason: a.tool_calls ? 'tool_calls' : 'stop' }],
	    usage: usage(a) }));
}

const server = http.createServer((req, res) => {
	let raw = '';
	req.setEncoding('utf8');
	req.on('data', (c) => { raw += c; });
	req.on('end', () => {
		if (req.method === 'GET' && req.url.endsWith('/models')) {
			res.writeHead(200, { 'content-type': 'application/json' });
			res.end(JSON.stringify({ object: 'list', data: [{ id: 'fake', object: 'model' }] }));
			return;
		}
		if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
			res.writeHead(404, { 'content-type': 'application/json' });
			res.end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
			return;
		}
		let body;
		try {
			body = JSON.parse(raw);
		} catch {
			res.writeHead(400).end();
			return;
		}
		n++;
		// Whole or not at all: the tests read these while we run.
		fs.writeFileSync(path.join(logDir, `.req-${n}.tmp`), raw);
		fs.renameSync(path.join(logDir, `.req-${n}.tmp`), path.join(logDir, `req-${n}.json`));
		const a = pick(body);
		fs.appendFileSync(path.join(logDir, 'answers.log'),
		    `${n} ${a.text !== undefined ? 'text' : ''}${a.tool_calls ? ' tools' : ''}\n`);
		const answer = () => (body.stream ? stream : whole)(res, a);
		if (!a.hold)
			return answer();
		const t = setInterval(() => {
			if (fs.existsSync(a.hold)) {
				clearInterval(t);
				answer();
			}
		}, 20);
		res.on('close', () => clearInterval(t));
	});
});
server.listen(0, '127.0.0.1', () => {
	fs.writeFileSync(path.join(logDir, 'port.tmp'), String(server.address().port));
	fs.renameSync(path.join(logDir, 'port.tmp'), path.join(logDir, 'port'));
});
process.on('SIGTERM', () => process.exit(0));
