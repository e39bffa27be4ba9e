#!/usr/bin/env python3
"""Write the hand-made trace-dump fixtures (fixed ids and times).

The lines follow the OTLP/JSON shape lib/trace.c writes: one
ExportTraceServiceRequest per line, ids in lowercase hex, times and
intValue as decimal strings.  Run from this directory; the output is
committed, so this only documents how it was made.
"""
import json

T0 = 1780000000_000000000  # 2026-05-28T20:26:40Z
P = "qwen-code.daemon.session_restore."
STAGES = ["settings_load", "existence_check", "transcript_read",
          "chain_reconstruct", "config_setup", "auth", "file_system_setup",
          "session_register", "history_replay", "response_build"]


def attr(k, v):
    if isinstance(v, bool):
        return {"key": k, "value": {"boolValue": v}}
    if isinstance(v, int):
        return {"key": k, "value": {"intValue": str(v)}}
    if isinstance(v, float):
        return {"key": k, "value": {"doubleValue": v}}
    return {"key": k, "value": {"stringValue": v}}


def line(service, span):
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", service)]},
        "scopeSpans": [{"scope": {"name": service}, "spans": [span]}]}]},
        separators=(",", ":"))


def span(tid, sid, parent, name, start_ms, end_ms, attrs, events=(),
         status=None):
    s = {"traceId": tid, "spanId": sid, "name": name, "kind": 1,
         "startTimeUnixNano": str(T0 + int(start_ms * 1e6)),
         "endTimeUnixNano": str(T0 + int(end_ms * 1e6)),
         "attributes": [attr(k, v) for k, v in attrs]}
    if parent:
        s["parentSpanId"] = parent
    if events:
        s["events"] = [{"timeUnixNano": str(T0 + int(t * 1e6)), "name": n,
                        "attributes": [attr(k, v) for k, v in a]}
                       for t, n, a in events]
    if status:
        s["status"] = {"code": status[0], "message": status[1]}
    else:
        s["status"] = {"code": 1}
    return s


def daemon(n, action, sess, budget, start, end, events, status=None):
    tid = "%032x" % (0xa0000000000000000000000000000000 + n)
    sid = "%016x" % (0xd000000000000000 + n)
    a = [("qwen-code.daemon.operation", "session.restore"),
         ("qwen-code.daemon.bridge.operation", "session." + action),
         (P + "timeout_ms", budget), ("session.id", sess),
         ("qwen-code.daemon.channel.id", "ch-%d" % n)]
    return tid, sid, line("qwen-serve", span(tid, sid, None,
                          "qwen-code.daemon.bridge", start, end, a,
                          events, status))


def child(tid, parent, n, action, sess, start, stages, extra=(),
          failed=None):
    sid = "%016x" % (0xc000000000000000 + n)
    a = [("qwen-code.daemon.operation", "acp_session_" + action),
         (P + "action", action), ("session.id", sess)]
    end = start
    for k, v in stages:
        a.append((P + k + "_ms", v))
        end += v
    a += list(extra)
    status = None
    if failed:
        a.append((P + "failed_stage", failed))
        status = (2, "stage %s failed" % failed)
    return line("qwen-acp-child", span(tid, sid, parent,
                "qwen-code.daemon.session_restore", start, end + 0.5, a,
                status=status))


def sizes(tb, cr, rr, rb, ml):
    return [(P + "transcript_bytes", tb), (P + "chain_records", cr),
            (P + "replay_records", rr), (P + "replay_bytes", rb),
            (P + "malformed_lines", ml),
            ("qwen-code.daemon.loop_lag.mean_ms", 0.8),
            ("qwen-code.daemon.loop_lag.p50_ms", 0.5),
            ("qwen-code.daemon.loop_lag.p99_ms", 4.25),
            ("qwen-code.daemon.loop_lag.max_ms", 12.0)]


def fast(n, sess, scale=1):
    st = list(zip(STAGES, [1.5 * scale, 0.25, 40 * scale, 12 * scale,
                           30 * scale, 2, 1, 0.5, 20 * scale, 0.75]))
    tid = "%032x" % (0xa0000000000000000000000000000000 + n)
    dsid = "%016x" % (0xd000000000000000 + n)
    start = n * 10000
    c = child(tid, dsid, n, "load", sess, start + 2, st,
              sizes(1048576 * scale, 900 * scale, 800, 65536, 0))
    dur = sum(v for _, v in st) + 4
    _, _, d = daemon(n, "load", sess, 60000, start, start + dur,
                     [(start + dur - 1, "session.restore.public_result",
                       [("result", "success")])])
    return [c, d]


out = {}
# 1: fast load; 2: timed-out resume (late success, closed);
# 3: quarantined (late failure, cleanup failed) and overdue;
# 4: child killed mid-restore (no child span); 5: child driven directly.
out["fast.jsonl"] = fast(1, "5e7d0f2a-0001-4000-8000-000000000001")
n, sess = 2, "5e7d0f2a-0002-4000-8000-000000000002"
tid, dsid, d = daemon(n, "resume", sess, 1000, 20000, 21800, [
    (21000, "session.restore.public_result", [("result", "timeout")]),
    (21700, "session.restore.late_result", [("result", "success")]),
    (21790, "session.restore.cleanup", [("cleanup_result", "closed")])])
c = child(tid, dsid, n, "resume", sess, 20001, list(zip(
    STAGES, [2, 0.5, 900, 300, 450, 3, 1, 1, 0, 1])),
    sizes(83886080, 120000, 0, 0, 2) + [(P + "partial_replay", True)])
out["timeout.jsonl"] = [c, d]
n, sess = 3, "5e7d0f2a-0003-4000-8000-000000000003"
tid, dsid, d = daemon(n, "load", sess, 500, 30000, 31600, [
    (30500, "session.restore.public_result", [("result", "timeout")]),
    (31000, "session.restore.settlement_overdue", []),
    (31200, "session.restore.late_result", [("result", "failure")]),
    (31500, "session.restore.cleanup", [("cleanup_result", "quarantined")])],
    status=(2, "restore cleanup failed"))
c = child(tid, dsid, n, "load", sess, 30001, list(zip(
    STAGES[:6], [1, 0.5, 400, 100, 650, 40])),
    sizes(41943040, 60000, 0, 0, 0), failed="auth")
out["quarantined.jsonl"] = [c, d]
n, sess = 4, "5e7d0f2a-0004-4000-8000-000000000004"
_, _, d = daemon(n, "load", sess, 800, 40000, 41000, [
    (40800, "session.restore.public_result", [("result", "timeout")]),
    (40990, "session.restore.cleanup", [("cleanup_result",
                                         "transport_closed")])])
out["killed.jsonl"] = [d]
n, sess = 5, "5e7d0f2a-0005-4000-8000-000000000005"
out["direct.jsonl"] = [child("%032x" % (0xb0 + n), None, n, "resume", sess,
                             50000, list(zip(STAGES[:4], [1, 0.5, 30, 8])),
                             failed="chain_reconstruct")]
g = span("%032x" % 0xe1, "%016x" % 0xe2, None, "qwen-code.daemon.session_start",
         60000, 60012.25, [("session.id", "5e7d0f2a-0006-4000-8000-000000000006"),
                           ("qwen-code.daemon.fresh", True),
                           ("qwen-code.daemon.ratio", 0.5)],
         [(60010, "session.registered", [("clients", 1)])])
out["generic.jsonl"] = [line("qwen-serve", g)]
out["malformed.jsonl"] = (
    out["fast.jsonl"][:1] +
    ['{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}',
     'this is not json',
     '{"hello":"world"}',
     '',
     '{"resourceSpans":[{"scopeSpans":[{"spans":[',
     '{"resourceSpans":[]} trailing'] + out["fast.jsonl"][1:])
everything = []
for k in ["fast.jsonl", "timeout.jsonl", "quarantined.jsonl", "killed.jsonl",
          "direct.jsonl", "generic.jsonl"]:
    everything += out[k]
out["all.jsonl"] = everything
# A known set for percentiles: 10 fast loads with scale 1..10.
known = []
for i in range(1, 11):
    known += fast(100 + i, "5e7d0f2a-0100-4000-8000-%012d" % i, i)
out["known.jsonl"] = known
for name, lines in out.items():
    with open(name, "w") as f:
        f.write("\n".join(lines) + "\n")
