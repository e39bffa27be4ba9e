// SPDX-License-Identifier: ISC
// markdown.mjs: the agent's markdown as DOM nodes.  A small subset (fenced
// code, headings, lists, quotes, paragraphs; inline code, bold, italics,
// links) built with createElement and textContent only: no text ever
// becomes markup, so an answer cannot inject HTML or script.  Links keep
// only http(s) and mailto targets and open in a new tab without opener.

const SAFE_HREF = /^(https?:|mailto:)/i;

// Inline spans of one line of text into parent.
function inline(parent, text) {
	const re = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))/g;
	let at = 0, m;
	while ((m = re.exec(text)) !== null) {
		if (m.index > at)
			parent.append(document.createTextNode(text.slice(at, m.index)));
		const t = m[0];
		let e;
		if (m[1]) {
			e = document.createElement('code');
			e.textContent = t.slice(1, -1);
		} else if (m[2]) {
			e = document.createElement('strong');
			inline(e, t.slice(2, -2));
		} else if (m[3]) {
			e = document.createElement('em');
			inline(e, t.slice(1, -1));
		} else {
			const mid = t.indexOf('](');
			const href = t.slice(mid + 2, -1);
			if (SAFE_HREF.test(href)) {
				e = document.createElement('a');
				e.href = href;
				e.target = '_blank';
				e.rel = 'noopener noreferrer';
				e.textContent = t.slice(1, mid);
			} else {
				e = document.createTextNode(t);
			}
		}
		parent.append(e);
		at = m.index + t.length;
	}
	if (at < text.length)
		parent.append(document.createTextNode(text.slice(at)));
}

// The lines of a list starting at i (same marker kind): [element, next i].
function list(lines, i) {
	const ordered = /^\s*\d+[.)]\s/.test(lines[i]);
	const mark = ordered ? /^\s*\d+[.)]\s+/ : /^\s*[-*+]\s+/;
	const e = document.createElement(ordered ? 'ol' : 'ul');
	while (i < lines.length && mark.test(lines[i])) {
		const li = document.createElement('li');
		inline(li, lines[i].replace(mark, ''));
		e.append(li);
		i++;
	}
	return [e, i];
}

// Render text (markdown) as the children of box, replacing what was there.
export function renderMarkdown(box, text) {
	box.replaceChildren();
	const lines = text.split('\n');
	let i = 0, para = [];
	const flush = () => {
		if (para.length === 0)
			return;
		const p = document.createElement('p');
		para.forEach((l, k) => {
			if (k > 0)
				p.append(document.createElement('br'));
			inline(p, l);
		});
		box.append(p);
		para = [];
	};
	while (i < lines.length) {
		const l = lines[i];
		let m;
		if ((m = /^\s*(```|~~~)\s*([\w+-]*)\s*$/.exec(l)) !== null) {
			flush();
			const pre = document.createElement('pre');
			const code = document.createElement('code');
			if (m[2])
				code.dataset.lang = m[2];
			const body = [];
			for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++)
				body.push(lines[i]);
			code.textContent = body.join('\n');
			pre.append(code);
			box.append(pre);
			i++;
		} else if ((m = /^(#{1,6})\s+(.*)$/.exec(l)) !== null) {
			flush();
			const h = document.createElement(`h${Math.min(6, m[1].length + 2)}`);
			inline(h, m[2]);
			box.append(h);
			i++;
		} else if (/^\s*([-*+]|\d+[.)])\s+/.test(l)) {
			flush();
			const [e, next] = list(lines, i);
			box.append(e);
			i = next;
		} else if (/^>\s?/.test(l)) {
			flush();
			const q = document.createElement('blockquote');
			const body = [];
			for (; i < lines.length && /^>\s?/.test(lines[i]); i++)
				body.push(lines[i].replace(/^>\s?/, ''));
			renderMarkdown(q, body.join('\n'));
			box.append(q);
		} else if (l.trim() === '') {
			flush();
			i++;
		} else {
			para.push(l);
			i++;
		}
	}
	flush();
}
