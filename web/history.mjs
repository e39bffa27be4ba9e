// SPDX-License-Identifier: ISC
// history.mjs: the conversation view of the console.  Replayed and live
// session/update payloads become message blocks; adjacent chunks of one
// kind (and one prompt) join one message; tool calls update in place by
// toolCallId.  Every text goes in through textContent.

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
		const stick = h.scrollHeight - h.scrollTop - h.clientHeight < 40;
		h.append(node);
		h.dataset.count = String(h.querySelectorAll('.msg').length);
		if (stick)
			h.scrollTop = h.scrollHeight;
	}

	scrollIfNear() {
		const h = this.box;
		if (h.scrollHeight - h.scrollTop - h.clientHeight < 120)
			h.scrollTop = h.scrollHeight;
	}

	// A text chunk of kind (user/agent message, thought).
	chunk(kind, text, promptId, replayed) {
		if (this.last && this.last.kind === kind && this.last.promptId === promptId) {
			this.last.body.textContent += text;
			this.scrollIfNear();
			return;
		}
		const [cls, label] = ROLE[kind];
		const box = el('div', `msg msg-${cls}`);
		box.dataset.kind = cls;
		if (promptId)
			box.dataset.promptId = promptId;
		if (replayed)
			box.dataset.replayed = '1';
		const body = el('div', 'msg-body', text);
		box.append(el('div', 'msg-label', label), body);
		this.add(box);
		this.last = { kind, promptId, body };
	}

	// tool_call / tool_call_update: one block per toolCallId.
	tool(u, replayed) {
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
			box.append(el('div', 'msg-label', u.kind ? `Tool · ${u.kind}` : 'Tool'), line);
			this.add(box);
			t = { box, title, status };
			if (u.toolCallId)
				this.tools.set(u.toolCallId, t);
		}
		if (u.title)
			t.title.textContent = u.title;
		if (u.status) {
			t.status.textContent = u.status;
			t.status.dataset.status = u.status;
		}
		this.last = null;
	}

	// A permission_request {requestId, toolCall, options}: the tool call and
	// Allow / Deny buttons; answer(requestId, outcome) sends the choice.
	permission(d, answer) {
		if (!d.requestId || this.perms.has(d.requestId))
			return;
		const tc = d.toolCall || {};
		const box = el('div', 'msg msg-permission');
		box.dataset.kind = 'permission';
		box.dataset.requestId = d.requestId;
		const row = el('div', 'perm-buttons');
		const pick = (kinds) => kinds.map((k) => (d.options || []).find((o) => o.kind === k))
		    .find(Boolean);
		for (const [label, kinds] of [['Allow', ['allow_once', 'allow_always']],
		    ['Deny', ['reject_once', 'reject_always']]]) {
			const opt = pick(kinds);
			const b = el('button', `perm-${label.toLowerCase()}`, label);
			b.type = 'button';
			b.disabled = !opt;
			b.addEventListener('click', () => {
				for (const x of row.querySelectorAll('button'))
					x.disabled = true;
				answer(d.requestId, { outcome: 'selected', optionId: opt.optionId });
			});
			row.append(b);
		}
		box.append(el('div', 'msg-label', 'Permission'),
		    el('div', 'tool-title mono', tc.title || tc.kind || 'a tool call'), row);
		this.add(box);
		this.perms.set(d.requestId, { box, row });
		this.last = null;
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
	update(u, promptId, replayed) {
		switch (u.sessionUpdate) {
		case 'user_message_chunk':
		case 'agent_message_chunk':
		case 'agent_thought_chunk':
			if (u.content?.type === 'text' && typeof u.content.text === 'string')
				this.chunk(u.sessionUpdate, u.content.text, promptId, replayed);
			break;
		case 'tool_call':
		case 'tool_call_update':
			this.tool(u, replayed);
			break;
		case 'plan':
			this.note(`Plan: ${(u.entries || []).map((e) => e.content).join(' · ')}`);
			break;
		default:
			break;
		}
	}
}
