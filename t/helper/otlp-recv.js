// SPDX-License-Identifier: ISC
// otlp-recv.js: a stand-in OpenTelemetry Collector for the OTLP export tests.
//
//   node otlp-recv.js --modules DIR --port-file F --log F [--hold FILE]
//
// Listens on 127.0.0.1 (an ephemeral port, written to --port-file) for
// POST /v1/traces with an OTLP/JSON ExportTraceServiceRequest, and checks
// each body against the OTLP protobuf schema: the generated protobufjs
// module that @opentelemetry/otlp-proto-exporter-base ships (under
// --modules, an npm prefix's node_modules).  A body is valid when every
// key is a field of its message type, protobufjs' verify() accepts the
// types, the ids are lowercase hex of the right length (OTLP/JSON's rule)
// and 64-bit integers are decimal.  Each request appends one JSON line to
// --log: {ok, error, headers, spans: [{service, name, traceId, spanId,
// parentSpanId, attrs}]}.  Valid bodies get 200 {}, others 400.
// With --hold, answers wait until FILE exists (a slow collector the test
// releases).  Runs until killed.
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');

const args = {};
for (let i = 2; i < process.argv.length; i += 2)
	args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];

const root = require(path.join(args.modules,
    '@opentelemetry/otlp-proto-exporter-base/build/src/generated/root.js'));
const Long = require(path.join(args.modules, 'long'));
const Req = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const HEX = { traceId: 32, spanId: 16, parentSpanId: 16 };

// OTLP/JSON to protobufjs' plain-object form, checking the JSON-only rules.
function norm(v, key) {
	if (Array.isArray(v))
		return v.map((x) => norm(x, key));
	if (v !== null && typeof v === 'object') {
		const o = {};
		for (const k of Object.keys(v))
			o[k] = norm(v[k], k);
		return o;
	}
	if (key in HEX) {
		if (typeof v !== 'string' || !(new RegExp(`^[0-9a-f]{${HEX[key]}}$`).test(v) ||
		    (key === 'parentSpanId' && v === '')))
			throw new Error(`${key}: not ${HEX[key]} lowercase hex digits: ${v}`);
		return Buffer.from(v, 'hex');
	}
	if (/UnixNano$/.test(key) || key === 'intValue') {
		if (typeof v === 'string') {
			if (!/^-?[0-9]+$/.test(v))
				throw new Error(`${key}: not a decimal integer: ${v}`);
			return Long.fromString(v, key !== 'intValue');
		}
		if (!Number.isInteger(v))
			throw new Error(`${key}: not an integer: ${v}`);
	}
	return v;
}

// Every key of the JSON must be a field of the message protobufjs built.
function known(json, msg, where) {
	if (Array.isArray(json)) {
		if (!Array.isArray(msg))
			throw new Error(`${where}: an array where the schema has none`);
		json.forEach((x, i) => known(x, msg[i], `${where}[${i}]`));
		return;
	}
	if (json === null || typeof json !== 'object' || Buffer.isBuffer(json) ||
	    Long.isLong(json))
		return;
	if (msg === null || typeof msg !== 'object')
		throw new Error(`${where}: an object where the schema has a scalar`);
	const proto = Object.getPrototypeOf(msg);
	for (const k of Object.keys(json)) {
		if (!(k in proto))
			throw new Error(`${where}.${k}: not a field of ${proto.constructor.name}`);
		known(json[k], msg[k], `${where}.${k}`);
	}
}

// Check one body; returns the spans it carries.  Throws on a schema error.
function check(text) {
	const json = JSON.parse(text);
	const plain = norm(json, '');
	const bad = Req.verify(plain);
	if (bad)
		throw new Error(`verify: ${bad}`);
	known(plain, Req.fromObject(plain), 'ExportTraceServiceRequest');
	const spans = [];
	if (!Array.isArray(json.resourceSpans) || json.resourceSpans.length === 0)
		throw new Error('no resourceSpans');
	for (const rs of json.resourceSpans) {
		const attrs = (rs.resource && rs.resource.attributes) || [];
		const svc = attrs.find((a) => a.key === 'service.name');
		if (!svc)
			throw new Error('a resource without service.name');
		for (const ss of rs.scopeSpans || [])
			for (const s of ss.spans || []) {
				for (const f of ['traceId', 'spanId', 'name', 'startTimeUnixNano', 'endTimeUnixNano'])
					if (!(f in s))
						throw new Error(`a span without ${f}`);
				spans.push({
					service: svc.value.stringValue,
					resource: Object.fromEntries(attrs.map((a) => [a.key, a.value.stringValue])),
					name: s.name, traceId: s.traceId, spanId: s.spanId,
					parentSpanId: s.parentSpanId || '',
					attrs: Object.fromEntries((s.attributes || []).map((a) =>
					    [a.key, Object.values(a.value)[0]])),
				});
			}
	}
	return spans;
}

function answer(res, code, body) {
	const send = () => {
		res.writeHead(code, { 'Content-Type': 'application/json' });
		res.end(body);
	};
	if (!args.hold)
		return send();
	const poll = () => (fs.existsSync(args.hold) ? send() : setTimeout(poll, 20));
	poll();
}

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', () => {
		const rec = { ok: false, method: req.method, path: req.url,
		    contentType: req.headers['content-type'] || null,
		    headers: req.headers, spans: [] };
		try {
			if (req.method !== 'POST' || req.url !== '/v1/traces')
				throw new Error(`not POST /v1/traces: ${req.method} ${req.url}`);
			if (!/^application\/json/.test(rec.contentType || ''))
				throw new Error(`Content-Type ${rec.contentType}`);
			rec.spans = check(Buffer.concat(chunks).toString('utf8'));
			rec.ok = true;
		} catch (e) {
			rec.error = String(e.message || e);
		}
		fs.appendFileSync(args.log, JSON.stringify(rec) + '\n');
		answer(res, rec.ok ? 200 : 400, rec.ok ? '{}' :
		    JSON.stringify({ code: 3, message: rec.error }));
	});
});
server.listen(0, '127.0.0.1', () => {
	fs.writeFileSync(args['port-file'] + '.tmp', String(server.address().port));
	fs.renameSync(args['port-file'] + '.tmp', args['port-file']);
});
