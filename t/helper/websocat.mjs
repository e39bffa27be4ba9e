// SPDX-License-Identifier: ISC
// websocat.mjs [--protocol NAME]... URL: a stand-in for websocat(1), for
// the man page's WebSocket example (websocat is not packaged in Debian
// 12).  Needs Node 22's global WebSocket, which fails the handshake as
// browsers do when the server selects none of the offered subprotocols.
// --protocol is the Sec-WebSocket-Protocol value as websocat sends it, a
// comma-separated list.  Like websocat in its default
// text mode: each line of standard input goes out as one text message,
// each message received is printed as one line.  At the end of input it
// waits for the answers to the requests it sent (JSON-RPC messages with
// a method and an id), as a user reads the answer before typing ^D, then
// closes.  Exits 0 on a normal close, 1 on an error or a bad usage.
import { createInterface } from "node:readline";

function usage() {
	process.stderr.write("usage: websocat [--protocol NAME]... URL\n");
	process.exit(1);
}

// A header's comma-separated list.
function list(value) {
	return value.split(",").map((p) => p.trim()).filter((p) => p !== "");
}

function parse(argv) {
	const protocols = [];
	let url = null;
	for (let i = 0; i < argv.length; i++) {
		if (argv[i] === "--protocol" && i + 1 < argv.length)
			protocols.push(...list(argv[++i]));
		else if (argv[i].startsWith("--protocol="))
			protocols.push(...list(argv[i].slice("--protocol=".length)));
		else if (!argv[i].startsWith("-") && url === null)
			url = argv[i];
		else
			usage();
	}
	if (url === null)
		usage();
	return { url, protocols };
}

// The id of a request (a method and an id), else null.
function requestId(line) {
	try {
		const m = JSON.parse(line);
		return m && m.method !== undefined && m.id !== undefined ?
		    JSON.stringify(m.id) : null;
	} catch {
		return null;
	}
}

// The id an answer (an id, no method) settles, else null.
function answerId(text) {
	try {
		const m = JSON.parse(text);
		return m && m.method === undefined && m.id !== undefined ?
		    JSON.stringify(m.id) : null;
	} catch {
		return null;
	}
}

const { url, protocols } = parse(process.argv.slice(2));
const ws = new WebSocket(url, protocols);
const pending = new Set();
let eof = false;

function maybeClose() {
	if (eof && pending.size === 0)
		ws.close(1000);
}

ws.addEventListener("open", () => {
	const rl = createInterface({ input: process.stdin });
	rl.on("line", (line) => {
		if (line === "")
			return;
		const id = requestId(line);
		if (id !== null)
			pending.add(id);
		ws.send(line);
	});
	rl.on("close", () => {
		eof = true;
		maybeClose();
	});
});
ws.addEventListener("message", (ev) => {
	process.stdout.write(String(ev.data) + "\n");
	const id = answerId(String(ev.data));
	if (id !== null)
		pending.delete(id);
	maybeClose();
});
ws.addEventListener("error", (ev) => {
	process.stderr.write(`websocat: ${ev.message || "connection failed"}\n`);
	process.exit(1);
});
ws.addEventListener("close", (ev) => {
	process.exit(ev.code === 1000 || ev.code === 1005 ? 0 : 1);
});
