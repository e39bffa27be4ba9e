// SPDX-License-Identifier: ISC
// sse.mjs: a Server-Sent Events parser for a fetch() body (the console
// reads the stream with fetch so that it can send the bearer; EventSource
// cannot).  No DOM: node tests it (t/helper/web-sse-test.mjs).
// Lines end in CRLF, LF or CR; a blank line ends an event; ':' lines are
// comments; one leading space after the colon is dropped; data lines join
// with '\n'; retry takes digits only.

export class SseParser {
	constructor() {
		this.buf = '';
		this.cr = false;	// the last chunk ended in CR (maybe half a CRLF)
		this.reset();
	}

	reset() {
		this.data = [];
		this.event = '';
		this.id = null;
	}

	// Feed decoded text; returns the complete events
	// [{event, data, id, retry}] (retry alone when only a retry: came).
	push(text) {
		const out = [];
		if (text === '')
			return out;
		if (this.cr && text.startsWith('\n'))
			text = text.slice(1);
		this.buf += text;
		this.cr = this.buf.endsWith('\r');
		let m;
		// A CR at the very end ends its line; a LF that follows is skipped.
		while ((m = /\r\n|\r|\n/.exec(this.buf)) !== null) {
			const line = this.buf.slice(0, m.index);
			this.buf = this.buf.slice(m.index + m[0].length);
			this.line(line, out);
		}
		return out;
	}

	line(line, out) {
		if (line === '') {
			if (this.data.length > 0)
				out.push({ event: this.event || 'message', data: this.data.join('\n'),
				    id: this.id });
			this.reset();
			return;
		}
		if (line.startsWith(':'))
			return;
		const c = line.indexOf(':');
		const f = c === -1 ? line : line.slice(0, c);
		let v = c === -1 ? '' : line.slice(c + 1);
		if (v.startsWith(' '))
			v = v.slice(1);
		if (f === 'data')
			this.data.push(v);
		else if (f === 'event')
			this.event = v;
		else if (f === 'id' && !v.includes('\0'))
			this.id = v;
		else if (f === 'retry' && /^\d+$/.test(v))
			out.push({ retry: parseInt(v, 10) });
	}
}
