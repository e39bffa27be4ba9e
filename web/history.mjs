// SPDX-License-Identifier: ISC
// history.mjs: the conversation view of the console.  Replayed and live
// session/update payloads become message blocks; adjacent chunks of one
// kind (and one prompt) join one message; tool calls update in place by
// toolCallId, with their input and output; the agent's text is markdown
// (markdown.mjs, DOM nodes only); thinking folds.  Every text goes in
// through textContent.

import { renderMarkdown } from './markdown.mjs';

// One element with a class and a text.
export function el(tag, cls, text) {
	const e = document.createElement(tag);
	if (cls)
		e.className = cls;
	if (text !== undefined)
		e.textContent = text;
	return e;
}

const ROLE = {
	user_message_chunk: ['user', 'You'],
	agent_message_chunk: ['agent', 'Agent'],
	agent_thought_chunk: ['thought', 'Thinking'],
};

// Labels for permission options whose agent gave no name.
const OPTION_LABEL = {
	allow_once: 'Allow', allow_always: 'Always allow',
	reject_once: 'Deny', reject_always: 'Always deny',
};

// A <time> for ms since the epoch (the record's, or now for live ones).
function stamp(ms) {
	const d = new Date(Number.isFinite(ms) ? ms : Date.now());
	const t = el('time', 'msg-time', d.toLocaleTimeString([], { hour: '2-digit',
	    minute: '2-digit' }));
	t.dateTime = d.toISOString();
	t.title = d.toLocaleString();
	return t;
}

// A message's label line: its role and its time.
function label(text, ms) {
	const l = el('div', 'msg-label', text);
	l.append(stamp(ms));
	return l;
}

// A tool call's text output: its content blocks (text, diffs), else rawOutput.
function toolOutput(u) {
	const parts = [];
	for (const c of Array.isArray(u.content) ? u.content : []) {
		if (c?.type === 'content' && typeof c.content?.text === 'string')
			parts.push(c.content.text);
		else if (c?.type === 'diff' && typeof c.path === 'string')
			parts.push(`--- ${c.path}\n${c.newText ?? ''}`);
	}
	if (parts.length === 0 && u.rawOutput !== undefined && u.rawOutput !== null)
		parts.push(typeof u.rawOutput === 'string' ? u.rawOutput :
		    JSON.stringify(u.rawOutput, null, 2));
	return parts.length ? parts.join('\n') : null;
}

// A folded section (<details>) of a tool block: summary and a <pre>.
function fold(cls, summary) {
	const d = el('details', cls);
	const pre = el('pre', 'mono');
	d.append(el('summary', null, summary), pre);
	d.hidden = true;
	return { d, pre };
}

export class History {
	// box: the scrolling container; its data-count is the message count.
	constructor(box) {
		this.box = box;
		this.reset();
	}

	reset() {
		this.box.replaceChildren();
		this.box.dataset.count = '0';
		this.last = null;
		this.tools = new Map();
		this.perms = new Map();
		this.following = false;
		this.older = null;
		if (!this.box.dataset.wired) {
			// A user who scrolls up stops following the answer.
			const stop = () => { this.following = false; };
			this.box.addEventListener('wheel', (e) => { if (e.deltaY < 0) stop(); });
			this.box.addEventListener('touchmove', stop);
			this.box.dataset.wired = '1';
		}
	}

	// Send follows the answer: to the bottom now and while it streams.
	follow() {
		this.following = true;
		this.box.scrollTop = this.box.scrollHeight;
	}

	// The answer is done: scrolling is the user's again.
	unfollow() {
		this.following = false;
	}

	// The top of the history says older records exist; more() loads them.
	olderBar(more) {
		const bar = el('div', 'older');
		const b = el('button', 'older-load ghost', 'Load older');
		b.type = 'button';
		b.addEventListener('click', () => {
			b.disabled = true;
			more();
		});
		bar.append(el('span', 'hint', 'Older history was left out.'), b);
		this.box.prepend(bar);
		this.older = { bar, b };
	}

	// After a page of older history: more left (the button again) or none.
	olderDone(hasMore) {
		if (!this.older)
			return;
		if (hasMore) {
			this.older.b.disabled = false;
			return;
		}
		this.older.bar.replaceChildren(el('span', 'hint', 'Start of the session.'));
		this.older.bar.dataset.done = '1';
	}

	// Run fn with what it adds collected, then put it all above the
	// present history (below the older bar), keeping the view in place.
	prepend(fn) {
		const real = this.box, last = this.last;
		const holder = document.createElement('div');
		this.box = holder;
		this.last = null;
		try {
			fn();
		} finally {
			this.box = real;
			this.last = last;
		}
		const before = real.scrollHeight;
		const at = this.older ? this.older.bar.nextSibling : real.firstChild;
		const frag = document.createDocumentFragment();
		frag.append(...holder.childNodes);
		real.insertBefore(frag, at);
		real.scrollTop += real.scrollHeight - before;
		real.dataset.count = String(real.querySelectorAll('.msg').length);
	}

	// Only a centered hint, no messages.
	placeholder(text) {
		this.reset();
		this.box.append(el('p', 'placeholder', text));
	}

	note(text) {
		this.add(el('div', 'note', text));
		this.last = null;
	}

	// A new message starts: the next chunk does not join the previous one.
	cut() {
		this.last = null;
	}

	add(node) {
		const h = this.box;
		const stick = this.following ||
		    h.scrollHeight - h.scrollTop - h.clientHeight < 40;
		h.append(node);
		h.dataset.count = String(h.querySelectorAll('.msg').length);
		if (stick)
			h.scrollTop = h.scrollHeight;
	}

	scrollIfNear() {
		const h = this.box;
		if (this.following || h.scrollHeight - h.scrollTop - h.clientHeight < 120)
			h.scrollTop = h.scrollHeight;
	}

	// The text of a message body: markdown for the agent, plain otherwise.
	static fill(kind, body, text) {
		if (kind === 'agent_message_chunk')
			renderMarkdown(body, text);
		else
			body.textContent = text;
	}

	// A text chunk of kind (user/agent message, thought); ms: its time.
	chunk(kind, text, promptId, replayed, ms) {
		if (this.last && this.last.kind === kind && this.last.promptId === promptId) {
			this.last.text += text;
			History.fill(kind, this.last.body, this.last.text);
			this.scrollIfNear();
			return;
		}
		const [cls, name] = ROLE[kind];
		const box = el('div', `msg msg-${cls}`);
		box.dataset.kind = cls;
		if (promptId)
			box.dataset.promptId = promptId;
		if (replayed)
			box.dataset.replayed = '1';
		const body = el('div', 'msg-body');
		History.fill(kind, body, text);
		if (kind === 'agent_thought_chunk') {
			// Thinking is folded: its summary is the label line.
			const d = el('details', 'thought-fold');
			const sum = el('summary', 'msg-label', name);
			sum.append(stamp(ms));
			d.append(sum, body);
			box.append(d);
		} else {
			box.append(label(name, ms), body);
		}
		this.add(box);
		this.last = { kind, promptId, body, text };
	}

	// tool_call / tool_call_update: one block per toolCallId, with its
	// input and output folded below the title.
	tool(u, replayed, ms) {
		let t = this.tools.get(u.toolCallId);
		if (!t) {
			const box = el('div', 'msg msg-tool');
			box.dataset.kind = 'tool';
			if (replayed)
				box.dataset.replayed = '1';
			const line = el('div', 'tool-line');
			const title = el('span', 'tool-title mono', u.title || u.toolCallId || 'tool');
			const status = el('span', 'badge tool-status', '');
			line.append(title, status);
			const input = fold('tool-input', 'Input');
			const output = fold('tool-output', 'Output');
			box.append(label(u.kind ? `Tool · ${u.kind}` : 'Tool', ms), line,
			    input.d, output.d);
			this.add(box);
			t = { box, title, status, input, output };
			if (u.toolCallId)
				this.tools.set(u.toolCallId, t);
		}
		if (u.title)
			t.title.textContent = u.title;
		if (u.status) {
			t.status.textContent = u.status;
			t.status.dataset.status = u.status;
		}
		if (u.rawInput !== undefined && u.rawInput !== null) {
			t.input.pre.textContent = typeof u.rawInput === 'string' ? u.rawInput :
			    JSON.stringify(u.rawInput, null, 2);
			t.input.d.hidden = false;
		}
		const out = toolOutput(u);
		if (out !== null) {
			t.output.pre.textContent = out;
			t.output.d.hidden = false;
		}
		this.last = null;
	}

	// A permission_request {requestId, toolCall, options}: the tool call,
	// its input, and one button per option the agent offers (the first
	// allow and the first reject also answer to .perm-allow / .perm-deny);
	// answer(requestId, outcome) sends the choice.
	permission(d, answer) {
		if (!d.requestId || this.perms.has(d.requestId))
			return;
		const tc = d.toolCall || {};
		const box = el('div', 'msg msg-permission');
		box.dataset.kind = 'permission';
		box.dataset.requestId = d.requestId;
		const row = el('div', 'perm-buttons');
		const opts = (Array.isArray(d.options) ? d.options : [])
		    .filter((o) => typeof o?.optionId === 'string');
		const first = (kinds) => kinds.map((k) => opts.find((o) => o.kind === k))
		    .find(Boolean);
		const allow = first(['allow_once', 'allow_always']);
		const deny = first(['reject_once', 'reject_always']);
		for (const o of opts) {
			let cls = `perm-option perm-${String(o.kind || 'other').replace(/[^a-z_]/g, '')}`;
			if (o === allow)
				cls += ' perm-allow';
			if (o === deny)
				cls += ' perm-deny';
			const b = el('button', cls, o.name || OPTION_LABEL[o.kind] || o.optionId);
			b.type = 'button';
			b.dataset.optionId = o.optionId;
			b.addEventListener('click', () => {
				for (const x of row.querySelectorAll('button'))
					x.disabled = true;
				answer(d.requestId, { outcome: 'selected', optionId: o.optionId });
			});
			row.append(b);
		}
		box.append(label('Permission'),
		    el('div', 'tool-title mono', tc.title || tc.kind || 'a tool call'));
		if (tc.rawInput !== undefined && tc.rawInput !== null) {
			const input = fold('tool-input', 'Input');
			input.pre.textContent = JSON.stringify(tc.rawInput, null, 2);
			input.d.hidden = false;
			box.append(input.d);
		}
		box.append(row);
		this.add(box);
		this.perms.set(d.requestId, { box, row });
		this.last = null;
	}

	// A pending interaction from the session's status (upstream's shape
	// {requestId, kind, title?, action: {type, title, input}, options}):
	// the same block as the permission_request a late client missed.
	interaction(p, answer) {
		const a = p.action || {};
		this.permission({ requestId: p.requestId, options: p.options,
		    toolCall: { title: a.title || p.title, kind: a.type || p.kind,
		    rawInput: a.input } }, answer);
	}

	// permission_resolved: the buttons go, the outcome shows.
	resolved(requestId, outcome) {
		const p = this.perms.get(requestId);
		if (!p)
			return;
		const chosen = outcome?.outcome === 'selected' ? outcome.optionId : 'cancelled';
		for (const b of p.row.querySelectorAll('button'))
			b.disabled = true;
		p.box.dataset.outcome = chosen;
		p.row.append(el('span', 'badge perm-outcome',
		    chosen === 'cancelled' ? 'cancelled' : `answered: ${chosen}`));
	}

	// The update of a session_update envelope; unknown kinds are skipped.
	// Its time: the record's (replayed) or now.
	update(u, promptId, replayed) {
		const ms = Number.isFinite(u.timestamp) ? u.timestamp : undefined;
		switch (u.sessionUpdate) {
		case 'user_message_chunk':
		case 'agent_message_chunk':
		case 'agent_thought_chunk':
			if (u.content?.type === 'text' && typeof u.content.text === 'string')
				this.chunk(u.sessionUpdate, u.content.text, promptId, replayed, ms);
			break;
		case 'tool_call':
		case 'tool_call_update':
			this.tool(u, replayed, ms);
			break;
		case 'plan':
			this.note(`Plan: ${(u.entries || []).map((e) => e.content).join(' · ')}`);
			break;
		default:
			break;
		}
	}
}
