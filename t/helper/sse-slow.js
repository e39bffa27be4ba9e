// SPDX-License-Identifier: ISC
// sse-slow.js SOCKET SESSION OUT: a subscriber that stops reading after the
// stream starts (maxQueued=16), writes a marker file "OUT.ready", resumes
// reading when "OUT.go" appears, and writes everything it got to OUT.
'use strict';
const fs = require('fs');
const http = require('http');
const [sock, sid, out] = process.argv.slice(2);
let got = '';
const req = http.request({ socketPath: sock, path: `/session/${sid}/events?maxQueued=16`,
    headers: { Accept: 'text/event-stream' } }, (res) => {
	res.setEncoding('utf8');
	res.once('data', (d) => {
		got += d;
		res.pause();
		req.socket.setRecvBufferSize?.(4096);
		fs.writeFileSync(out + '.ready', '');
		const t = setInterval(() => {
			if (!fs.existsSync(out + '.go')) return;
			clearInterval(t);
			res.on('data', (x) => { got += x; });
			res.resume();
		}, 20);
	});
	res.on('end', () => { fs.writeFileSync(out, got); process.exit(0); });
});
req.end();
setTimeout(() => { fs.writeFileSync(out, got); process.exit(3); }, 30000);
