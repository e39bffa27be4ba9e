/* SPDX-License-Identifier: ISC */
/*
 * fake-child.c: a scriptable stand-in for qwen-acp-child, for the daemon's
 * tests.  Speaks the ACP subset qwen-serve uses (NDJSON JSON-RPC 2.0 on
 * stdin/stdout): initialize, session/new, session/load (bulk or streamed
 * replay), session/resume, session/prompt (N streamed chunks, then
 * end_turn), session/cancel, qwen/control/session/close, transcript pages
 * (empty) and branches (of a persisted session; side tasks are the same
 * copy), forks of a live one
 * (qwen/control/session/fork_agent), session/set_model
 * (the advertised fake-a and fake-b only), qwen/control/session/approval_mode
 * and session/set_mode (upstream's modes; current_mode_update first), with
 * an in-memory session table.
 *
 * Faults and knobs come from the FAKE_CHILD environment variable (the
 * daemon starts the child with fixed arguments), comma-separated:
 *   delay=METHOD:MS    answer METHOD after MS milliseconds
 *   hang=METHOD        never answer METHOD
 *   hold=METHOD        answer METHOD only after a SIGUSR1 (the test decides
 *                      when: a held answer is late because it was held)
 *   model=ID           advertise and take model ID too (after fake-a, fake-b)
 *   poke=ID            on each SIGUSR1 send one session/update for ID
 *                      (text "poke"), whether or not ID is a session here
 *   bg-turn=ID         on each SIGUSR1 ask the daemon to start a turn of
 *                      its own for session ID (_qwencode/start_turn,
 *                      turnId bg-N, as the agent answers a background task
 *                      of its): accepted, a chunk "bg work N" and its
 *                      _qwencode/end_turn (reason end_turn); refused, a
 *                      chunk "bg deferred N" (the ask goes before what the
 *                      same signal releases of a hold)
 *   bg-kind=KIND       ... the turn's kind (default agent)
 *   bg-open            ... an accepted turn says its chunk and never ends
 *                      (an agent that dies in it)
 *   bg-goal            ... a goal turn instead: no ask, the start_turn
 *                      and end_turn notifications (source goal, promptId
 *                      goal-N) around a chunk "goal work N"
 *   fail=METHOD:CODE   answer METHOD with JSON-RPC error CODE (after its
 *                      delay=, if any: a late failure)
 *   fail-first=METHOD:CODE  ... the first METHOD only
 *   append             a prompt first appends a user and an assistant
 *                      record (the user's text, "fake answer") to its
 *                      session's transcript under $QWEN_RUNTIME_DIR (else
 *                      $QWEN_HOME) for its cwd, hanging from the file's
 *                      last record, as the real agent does
 *   append-torn        ... then half a record, and SIGKILLs itself
 *   full=METHOD        answer METHOD as a child at its session cap does
 *                      (-32603, data {errorKind, limit 4096, scope})
 *   crash-after=N      exit(3) after reading N lines
 *   crash-on=METHOD    SIGKILL itself when METHOD arrives
 *   close-stdout-after=N   close stdout after reading N lines
 *   close-stdout-on=METHOD close stdout when METHOD arrives (and go on)
 *   close-held=ID      qwen/control/session/close of ID answers closed:false
 *   prompts=PATH       append each session/prompt's prompt (the content
 *                      blocks as the agent got them) to PATH, one JSON line,
 *                      and each drain's answer {"drained": items}
 *   log=PATH           append "<pid> <method> <sessionId|-> <traceparent|->"
 *                      per message read (_meta["qwen.telemetry.traceparent"])
 *   ignore-term        ignore SIGTERM (only SIGKILL ends it)
 *   load-only          initialize offers session/load and not
 *                      session/resume, which is then not a method here
 *   early-update       load/resume send one session/update for the id at
 *                      once, before their (possibly delayed) answer
 *   late-update=MS     ... and one MS after their answer
 *   linger             do not exit when stdin closes (with ignore-term: a
 *                      child that only SIGKILL ends)
 *   fail-detail=TEXT   a fail= answer carries data {details: TEXT, errorKind?}
 *                      as the real agent's errors do (no commas in TEXT)
 *   echo-ext           a request for a method it does not know is answered
 *                      {method, params} (the agent-level calls passed
 *                      through, as an agent that knows them would)
 *   source-error=CODE  ... and one for a qwen/session/sources/ method is
 *                      {sourceError: {code: CODE, message}} instead
 *   ask                a prompt first sends session/request_permission
 *                      (allow_once, allow_always, reject_once) and holds
 *                      its chunks and answer until the daemon answers it;
 *                      a chunk "permission <optionId|cancelled>" comes first
 * METHOD in delay, hang, hold, fail, crash-on and close-stdout-on may carry
 * "@ID": the knob then applies to messages for session ID only
 * (params.sessionId; for session/new the id asked for in
 * _meta["qwen-code/sessionId"]), e.g. hang=session/load@<id>.
 *   wrong-id           session/new answers a different id than asked
 *   chunks=N           prompt streams N agent_message_chunk (default 2)
 *   turn-status=FILE   qwen/control/session/turn_status answers
 *                      {turnResult: FILE's JSON object, null while FILE
 *                      is absent} (else the method is not known here)
 *   generate           qwen/control/session/generation/start sends the
 *                      prompt and "!" as delta events (a stray one for
 *                      another request between), then answers model
 *                      fake-fast (else the method is not known here)
 *   drain=MS           a prompt asks the daemon craft/drainMidTurnQueue
 *                      MS in, streams "drained <text|text...>" from its
 *                      answer, and ends MS after that
 *   answer=METHOD:FILE a request for METHOD is answered FILE's JSON as
 *                      its result (read at the request; before the table)
 *   updates=FILE       prompt first sends each line of FILE (one JSON
 *                      SessionUpdate object a line) as a session/update
 *   chunk-delay=MS     between chunks (default 0)
 *   replay=N           updates in a load replay (default 3)
 *   replay-bytes=N     text bytes per replay update (default 16)
 *   known=ID           a persisted session id (repeatable)
 *   garble=METHOD:N    the answer to METHOD is a line the daemon's framer
 *                      rejects: N=1 invalid UTF-8 (its id still readable),
 *                      N=2 a broken line naming no id
 * Transcripts under --data-dir (<dir>/projects/<ws>/chats/<id>.jsonl) also
 * count as persisted.  Methods are a table: a new behaviour is a row and a knob.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "approval.h"
#include "clock.h"
#include "json.h"
#include "rpc-frame.h"

#define MAX_KNOB	32
#define MAX_SESS	1024
#define MAX_OUT		65536

/* METHOD[@ID] and a value. */
struct knob { char method[64]; char id[132]; long val; };

static struct {
	struct knob	 delay[MAX_KNOB], fail[MAX_KNOB], hang[MAX_KNOB];
	struct knob	 full[MAX_KNOB];
	size_t		 nfull;
	struct knob	 crash_on[MAX_KNOB], close_on[MAX_KNOB], hold[MAX_KNOB];
	struct knob	 garble[MAX_KNOB], fail_first[MAX_KNOB];
	size_t		 nfail_first;
	int		 append;
	size_t		 ndelay, nfail, nhang, ncrash, nclose_on, nhold, ngarble;
	char		*poke[MAX_KNOB];
	size_t		 npoke;
	char		*bg_turn, *bg_kind;
	long		 bg_turns;
	int		 bg_open, bg_goal;
	long		 crash_after, close_after, chunks, chunk_delay, replay, replay_bytes;
	int		 wrong_id, linger, early_update, ask, echo_ext, load_only;
	char		*fail_detail, *source_error;
	long		 late_update;
	char		*known[MAX_KNOB], *held[MAX_KNOB];
	size_t		 nknown, nheld;
	char		*data_dir, *workspace, *updates, *turn_status;
	char		*answer_m[MAX_KNOB], *answer_f[MAX_KNOB];
	size_t		 nanswer;
	int		 generate;
	long		 drain;
	FILE		*log, *prompts;
} cf = { .crash_after = -1, .close_after = -1, .chunks = 2, .replay = 3,
    .replay_bytes = 16 };

/* Output lines due at a time; tag names the session for cancel. */
struct out {
	uint64_t	 due;
	char		*line;
	char		 tag[130];
	int		 final;		/* the answer to a prompt */
	json_object	*id;
};
static struct out outs[MAX_OUT];
/* A held answer's delay: due only after a SIGUSR1 releases it. */
#define HOLD_MS		(1L << 40)
static volatile sig_atomic_t usr1;
static size_t nouts;
static char *sessions[MAX_SESS];
static char modes[MAX_SESS][16];	/* each session's approval mode */

/* What session/new advertises (upstream's approval modes as the modes). */
static const char *fake_models[] = { "fake-a", "fake-b", NULL, NULL };
static int stdout_open = 1;

/* Fill k from "METHOD[@ID]" (len bytes of s) and val. */
static void
knob_set(struct knob *k, const char *s, size_t len, long val)
{
	const char *at = memchr(s, '@', len);

	snprintf(k->method, sizeof(k->method), "%.*s", (int)(at ? (size_t)(at - s) : len), s);
	snprintf(k->id, sizeof(k->id), "%.*s", at ? (int)(len - (size_t)(at - s) - 1) : 0,
	    at ? at + 1 : "");
	k->val = val;
}

static void
parse_knobs(const char *env)
{
	char *dup = strdup(env), *save = NULL, *tok, *colon;

	for (tok = strtok_r(dup, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		const char *v = eq != NULL ? eq + 1 : "";

		if (eq != NULL)
			*eq = '\0';
		colon = strrchr(v, ':');
		if (strcmp(tok, "delay") == 0 && colon && cf.ndelay < MAX_KNOB)
			knob_set(&cf.delay[cf.ndelay++], v, (size_t)(colon - v), atol(colon + 1));
		else if (strcmp(tok, "fail") == 0 && colon && cf.nfail < MAX_KNOB)
			knob_set(&cf.fail[cf.nfail++], v, (size_t)(colon - v), atol(colon + 1));
		else if (strcmp(tok, "fail-first") == 0 && colon && cf.nfail_first < MAX_KNOB)
			knob_set(&cf.fail_first[cf.nfail_first++], v, (size_t)(colon - v),
			    atol(colon + 1));
		else if (strcmp(tok, "append") == 0)
			cf.append = 1;
		else if (strcmp(tok, "bg-open") == 0)
			cf.bg_open = 1;
		else if (strcmp(tok, "bg-goal") == 0)
			cf.bg_goal = 1;
		else if (strcmp(tok, "append-torn") == 0)
			cf.append = 2;
		else if (strcmp(tok, "garble") == 0 && colon && cf.ngarble < MAX_KNOB)
			knob_set(&cf.garble[cf.ngarble++], v, (size_t)(colon - v), atol(colon + 1));
		else if (strcmp(tok, "full") == 0 && cf.nfull < MAX_KNOB)
			knob_set(&cf.full[cf.nfull++], v, strlen(v), 1);
		else if (strcmp(tok, "hold") == 0 && cf.nhold < MAX_KNOB)
			knob_set(&cf.hold[cf.nhold++], v, strlen(v), 1);
		else if (strcmp(tok, "model") == 0 && fake_models[2] == NULL)
			fake_models[2] = strdup(v);
		else if (strcmp(tok, "poke") == 0 && cf.npoke < MAX_KNOB)
			cf.poke[cf.npoke++] = strdup(v);
		else if (strcmp(tok, "bg-turn") == 0)
			cf.bg_turn = strdup(v);
		else if (strcmp(tok, "bg-kind") == 0)
			cf.bg_kind = strdup(v);
		else if (strcmp(tok, "hang") == 0 && cf.nhang < MAX_KNOB)
			knob_set(&cf.hang[cf.nhang++], v, strlen(v), 1);
		else if (strcmp(tok, "crash-on") == 0 && cf.ncrash < MAX_KNOB)
			knob_set(&cf.crash_on[cf.ncrash++], v, strlen(v), 1);
		else if (strcmp(tok, "close-stdout-on") == 0 && cf.nclose_on < MAX_KNOB)
			knob_set(&cf.close_on[cf.nclose_on++], v, strlen(v), 1);
		else if (strcmp(tok, "close-held") == 0 && cf.nheld < MAX_KNOB)
			cf.held[cf.nheld++] = strdup(v);
		else if (strcmp(tok, "log") == 0 && cf.log == NULL) {
			if ((cf.log = fopen(v, "a")) != NULL)
				setvbuf(cf.log, NULL, _IOLBF, 0);
		} else if (strcmp(tok, "prompts") == 0 && cf.prompts == NULL) {
			if ((cf.prompts = fopen(v, "a")) != NULL)
				setvbuf(cf.prompts, NULL, _IOFBF, 1 << 16);
		} else if (strcmp(tok, "crash-after") == 0)
			cf.crash_after = atol(v);
		else if (strcmp(tok, "close-stdout-after") == 0)
			cf.close_after = atol(v);
		else if (strcmp(tok, "early-update") == 0)
			cf.early_update = 1;
		else if (strcmp(tok, "load-only") == 0)
			cf.load_only = 1;
		else if (strcmp(tok, "ask") == 0)
			cf.ask = 1;
		else if (strcmp(tok, "echo-ext") == 0)
			cf.echo_ext = 1;
		else if (strcmp(tok, "source-error") == 0)
			cf.source_error = strdup(v);
		else if (strcmp(tok, "generate") == 0)
			cf.generate = 1;
		else if (strcmp(tok, "drain") == 0)
			cf.drain = atol(v);
		else if (strcmp(tok, "fail-detail") == 0)
			cf.fail_detail = strdup(v);
		else if (strcmp(tok, "late-update") == 0)
			cf.late_update = atol(v);
		else if (strcmp(tok, "linger") == 0)
			cf.linger = 1;
		else if (strcmp(tok, "ignore-term") == 0)
			signal(SIGTERM, SIG_IGN);
		else if (strcmp(tok, "wrong-id") == 0)
			cf.wrong_id = 1;
		else if (strcmp(tok, "chunks") == 0)
			cf.chunks = atol(v);
		else if (strcmp(tok, "updates") == 0)
			cf.updates = strdup(v);
		else if (strcmp(tok, "turn-status") == 0)
			cf.turn_status = strdup(v);
		else if (strcmp(tok, "answer") == 0 && colon && cf.nanswer < MAX_KNOB) {
			cf.answer_m[cf.nanswer] = strndup(v, (size_t)(colon - v));
			cf.answer_f[cf.nanswer++] = strdup(colon + 1);
		}
		else if (strcmp(tok, "chunk-delay") == 0)
			cf.chunk_delay = atol(v);
		else if (strcmp(tok, "replay") == 0)
			cf.replay = atol(v);
		else if (strcmp(tok, "replay-bytes") == 0)
			cf.replay_bytes = atol(v);
		else if (strcmp(tok, "known") == 0 && cf.nknown < MAX_KNOB)
			cf.known[cf.nknown++] = strdup(v);
	}
	free(dup);
}

/* The value of the first knob for method (and sid, when it is scoped). */
static long
knob_of(struct knob *k, size_t n, const char *method, const char *sid, long dflt)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(k[i].method, method) == 0 &&
		    (k[i].id[0] == '\0' || (sid != NULL && strcmp(k[i].id, sid) == 0)))
			return k[i].val;
	return dflt;
}

/* Spoil an encoded answer (garble=): 1 puts a byte that is not UTF-8 in
   its first string after the id, 2 makes it a broken line with no id. */
static char *
garble_line(char *line, long how)
{
	char *q;

	if (how == 2) {
		free(line);
		return strdup("{\"jsonrpc\":\"2.0\",\"result\":{\"x\":\"\xff\"\n");
	}
	if ((q = strstr(line, "\"result\"")) != NULL &&
	    (q = strchr(q + 9, '"')) != NULL && q[1] != '"')
		q[1] = (char)0xff;
	return line;
}

/* Queue msg (taken) to be written at now + delay_ms. */
static void
emit_garbled(json_object *msg, long delay_ms, const char *tag, int final,
    json_object *id, long garble)
{
	size_t len;
	char *line = rpc_encode(msg, &len);

	json_object_put(msg);
	if (line != NULL && garble > 0)
		line = garble_line(line, garble);
	if (line == NULL || nouts == MAX_OUT) {
		free(line);
		return;
	}
	outs[nouts].due = clock_mono_ms() + (uint64_t)(delay_ms > 0 ? delay_ms : 0);
	outs[nouts].line = line;
	snprintf(outs[nouts].tag, sizeof(outs[nouts].tag), "%s", tag ? tag : "");
	outs[nouts].final = final;
	outs[nouts].id = id != NULL ? json_object_get(id) : NULL;
	nouts++;
}

static void
emit(json_object *msg, long delay_ms, const char *tag, int final, json_object *id)
{
	emit_garbled(msg, delay_ms, tag, final, id, 0);
}

static json_object *
obj(const char *k1, json_object *v1)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, k1, v1);
	return o;
}

static int
sess_find(const char *id)
{
	for (int i = 0; i < MAX_SESS; i++)
		if (sessions[i] != NULL && strcmp(sessions[i], id) == 0)
			return i;
	return -1;
}

static void
sess_add(const char *id)
{
	if (sess_find(id) >= 0)
		return;
	for (int i = 0; i < MAX_SESS; i++)
		if (sessions[i] == NULL) {
			sessions[i] = strdup(id);
			snprintf(modes[i], sizeof(modes[i]), "default");
			return;
		}
}

/* The transcript path of id under --data-dir: 0, or -1 without one. */
static int
transcript_path(const char *id, char *path, size_t size)
{
	char *san;

	if (cf.data_dir == NULL || cf.workspace == NULL || strchr(id, '/') != NULL)
		return -1;
	san = strdup(cf.workspace);
	for (char *p = san; *p; p++)
		if (!isalnum((unsigned char)*p))
			*p = '-';
	snprintf(path, size, "%s/projects/%s/chats/%s.jsonl", cf.data_dir, san, id);
	free(san);
	return 0;
}

/* Persisted: a known= id or a transcript under --data-dir. */
static int
persisted(const char *id)
{
	char path[4096];
	struct stat st;

	for (size_t i = 0; i < cf.nknown; i++)
		if (strcmp(cf.known[i], id) == 0)
			return 1;
	return transcript_path(id, path, sizeof(path)) == 0 && stat(path, &st) == 0;
}

static json_object *
not_found(json_object *id, const char *sid)
{
	char uri[300];

	snprintf(uri, sizeof(uri), "session:%s", sid ? sid : "");
	return rpc_new_error(json_object_get(id), RPC_RESOURCE_NOT_FOUND,
	    "Resource not found", obj("uri", json_object_new_string(uri)));
}

static json_object *
update(const char *sid, const char *kind, const char *text)
{
	json_object *u = json_object_new_object(), *c = json_object_new_object();
	json_object *p = json_object_new_object();

	json_object_object_add(c, "type", json_object_new_string("text"));
	json_object_object_add(c, "text", json_object_new_string(text));
	json_object_object_add(u, "sessionUpdate", json_object_new_string(kind));
	json_object_object_add(u, "content", c);
	json_object_object_add(p, "sessionId", json_object_new_string(sid));
	json_object_object_add(p, "update", u);
	return p;
}

/* ---- methods ------------------------------------------------------------ */

/* {LIST: [{KEY: id, name: id}...], CURRENT: the first}. */
static json_object *
advertised(const char *const *ids, const char *list, const char *key, const char *current)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array(), *e;

	for (size_t i = 0; ids[i] != NULL; i++) {
		e = obj(key, json_object_new_string(ids[i]));
		json_object_object_add(e, "name", json_object_new_string(ids[i]));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, list, a);
	json_object_object_add(o, current, json_object_new_string(
	    strcmp(list, "availableModes") == 0 ? "default" : ids[0]));
	return o;
}

static int
listed(const char *const *ids, const char *v)
{
	for (size_t i = 0; v != NULL && ids[i] != NULL; i++)
		if (strcmp(ids[i], v) == 0)
			return 1;
	return 0;
}

/* session/set_model: the advertised ids only. */
static json_object *
m_set_model(struct rpc_msg *m, long delay)
{
	const char *sid = json_get_str(m->params, "sessionId");
	const char *model = json_get_str(m->params, "modelId");
	char msg[160];

	(void)delay;
	if (sid == NULL || sess_find(sid) < 0)
		return rpc_new_error(json_object_get(m->id), -32002, "Session not found", NULL);
	if (!listed(fake_models, model)) {
		snprintf(msg, sizeof(msg), "Invalid model: %.100s", model ? model : "(none)");
		return rpc_new_error(json_object_get(m->id), RPC_INVALID_PARAMS, msg, NULL);
	}
	return rpc_new_result(json_object_get(m->id), json_object_new_object());
}

/*
 * qwen/control/session/approval_mode {mode} (→ {previous, current}) and
 * ACP session/set_mode {modeId} (→ {}): current_mode_update, then the answer.
 */
static json_object *
m_mode(struct rpc_msg *m, long delay)
{
	int acp = strcmp(m->method, "session/set_mode") == 0;
	const char *sid = json_get_str(m->params, "sessionId");
	const char *mode = json_get_str(m->params, acp ? "modeId" : "mode");
	json_object *u, *p, *r;
	int i;

	if (sid == NULL || (i = sess_find(sid)) < 0)
		return rpc_new_error(json_object_get(m->id), -32002, "Session not found", NULL);
	if (!listed(approval_modes, mode))
		return rpc_new_error(json_object_get(m->id), RPC_INVALID_PARAMS,
		    "Invalid approval mode", NULL);
	u = obj("sessionUpdate", json_object_new_string("current_mode_update"));
	json_object_object_add(u, "currentModeId", json_object_new_string(mode));
	p = obj("sessionId", json_object_new_string(sid));
	json_object_object_add(p, "update", u);
	emit(rpc_new_notification("session/update", p), delay, NULL, 0, NULL);
	r = json_object_new_object();
	if (!acp) {
		json_object_object_add(r, "previous", json_object_new_string(modes[i]));
		json_object_object_add(r, "current", json_object_new_string(mode));
	}
	snprintf(modes[i], sizeof(modes[i]), "%s", mode);
	return rpc_new_result(json_object_get(m->id), r);
}


static json_object *
m_initialize(struct rpc_msg *m, long delay)
{
	const char *want = getenv("QWEN_ACP_PARENT_CAPABILITY"), *got = NULL;
	json_object *r, *caps, *meta;

	(void)delay;
	if (m->params != NULL && json_object_object_get_ex(m->params, "_meta", &meta))
		got = json_get_str(meta, "qwen-code/private-parent-capability");
	if (want != NULL && (got == NULL || strcmp(want, got) != 0))
		return rpc_new_error(json_object_get(m->id), RPC_INVALID_PARAMS,
		    "Invalid private ACP parent capability", NULL);
	r = json_object_new_object();
	caps = json_object_new_object();
	json_object_object_add(r, "protocolVersion", json_object_new_int(1));
	json_object_object_add(r, "agentInfo", obj("name", json_object_new_string("fake-child")));
	json_object_object_add(caps, "loadSession", json_object_new_boolean(1));
	if (!cf.load_only)
		json_object_object_add(caps, "sessionCapabilities",
		    obj("resume", json_object_new_object()));
	json_object_object_add(r, "agentCapabilities", caps);
	return rpc_new_result(json_object_get(m->id), r);
}

static json_object *
m_new(struct rpc_msg *m, long delay)
{
	json_object *meta, *r;
	const char *want = NULL;
	char id[64];
	unsigned char b[16];

	(void)delay;
	if (m->params != NULL && json_object_object_get_ex(m->params, "_meta", &meta))
		want = json_get_str(meta, "qwen-code/sessionId");
	if (want != NULL && !cf.wrong_id)
		snprintf(id, sizeof(id), "%s", want);
	else {
		arc4random_buf(b, sizeof(b));
		snprintf(id, sizeof(id), "%02x%02x%02x%02x-%02x%02x-4%x%02x-8%x%02x-%02x%02x%02x%02x%02x%02x",
		    b[0], b[1], b[2], b[3], b[4], b[5], b[6] & 15, b[7], b[8] & 15, b[9],
		    b[10], b[11], b[12], b[13], b[14], b[15]);
	}
	sess_add(id);
	r = obj("sessionId", json_object_new_string(id));
	json_object_object_add(r, "models", advertised(fake_models, "availableModels",
	    "modelId", "currentModelId"));
	json_object_object_add(r, "modes", advertised(approval_modes, "availableModes", "id",
	    "currentModeId"));
	return rpc_new_result(json_object_get(m->id), r);
}

/* load and resume; load replays (bulk in the result, or as notifications). */
static json_object *
restore(struct rpc_msg *m, long delay, int load)
{
	const char *sid = json_get_str(m->params, "sessionId"), *mode = NULL;
	json_object *meta, *r, *ups, *lr;
	char *text;

	if (sid == NULL || (sess_find(sid) < 0 && !persisted(sid)))
		return not_found(m->id, sid);
	sess_add(sid);
	r = json_object_new_object();
	json_object_object_add(r, "modes", obj("currentModeId", json_object_new_string("default")));
	if (!load)
		return rpc_new_result(json_object_get(m->id), r);
	if (json_object_object_get_ex(m->params, "_meta", &meta))
		mode = json_get_str(meta, "qwen.session.loadReplayMode");
	text = malloc((size_t)cf.replay_bytes + 1);
	memset(text, 'x', (size_t)cf.replay_bytes);
	text[cf.replay_bytes] = '\0';
	ups = json_object_new_array();
	for (long i = 0; i < cf.replay; i++) {
		json_object *p = update(sid, i % 2 ? "agent_message_chunk" :
		    "user_message_chunk", text);

		if (mode != NULL && strcmp(mode, "bulk") == 0) {
			json_object *u = NULL;

			json_object_object_get_ex(p, "update", &u);
			json_object_array_add(ups, json_object_get(u));
			json_object_put(p);
		} else
			emit(rpc_new_notification("session/update", p), delay, sid, 0, NULL);
	}
	free(text);
	lr = json_object_new_object();
	json_object_object_add(lr, "v", json_object_new_int(1));
	json_object_object_add(lr, "updates", ups);
	json_object_object_add(r, "_meta", obj("qwen.session.loadReplay", lr));
	return rpc_new_result(json_object_get(m->id), r);
}

static json_object *
m_load(struct rpc_msg *m, long delay)
{
	return restore(m, delay, 1);
}

static json_object *
m_resume(struct rpc_msg *m, long delay)
{
	if (cf.load_only)
		return rpc_new_error(json_object_get(m->id), RPC_METHOD_NOT_FOUND,
		    "Method not found", NULL);
	return restore(m, delay, 0);
}

/* The updates= file's lines as session/update notifications for sid. */
static void
send_updates(const char *sid, long delay)
{
	char line[65536];
	json_object *u, *p;
	FILE *f;

	if (cf.updates == NULL || (f = fopen(cf.updates, "r")) == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		if ((u = json_tokener_parse(line)) == NULL)
			continue;
		p = json_object_new_object();
		json_object_object_add(p, "sessionId", json_object_new_string(sid));
		json_object_object_add(p, "update", u);
		emit(rpc_new_notification("session/update", p), delay, sid, 0, NULL);
	}
	fclose(f);
}

/* ask: session/request_permission for sid, with the request id "ask-SID". */
static void
ask_permission(const char *sid)
{
	static const char *const opts[][2] = {
		{ "proceed_once", "allow_once" }, { "proceed_always", "allow_always" },
		{ "cancel", "reject_once" },
	};
	json_object *p = obj("sessionId", json_object_new_string(sid));
	json_object *tool = obj("toolCallId", json_object_new_string("ask-call"));
	json_object *a = json_object_new_array(), *o;
	char id[160];

	json_object_object_add(tool, "title", json_object_new_string("write the marker"));
	json_object_object_add(tool, "kind", json_object_new_string("edit"));
	json_object_object_add(tool, "rawInput", obj("file_path",
	    json_object_new_string("marker.txt")));
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		o = obj("optionId", json_object_new_string(opts[i][0]));
		json_object_object_add(o, "name", json_object_new_string(opts[i][0]));
		json_object_object_add(o, "kind", json_object_new_string(opts[i][1]));
		json_object_array_add(a, o);
	}
	json_object_object_add(p, "toolCall", tool);
	json_object_object_add(p, "options", a);
	snprintf(id, sizeof(id), "ask-%s", sid);
	emit(rpc_new_request(json_object_new_string(id), "session/request_permission", p),
	    0, NULL, 0, NULL);
}

/* A goal turn: said to start, worked, said to end (unless bg-open). */
static void
goal_turn_run(void)
{
	json_object *p = obj("sessionId", json_object_new_string(cf.bg_turn));
	char id[32], text[64];

	snprintf(id, sizeof(id), "goal-%ld", ++cf.bg_turns);
	json_object_object_add(p, "source", json_object_new_string("goal"));
	json_object_object_add(p, "promptId", json_object_new_string(id));
	emit(rpc_new_notification("_qwencode/start_turn", json_object_get(p)),
	    0, NULL, 0, NULL);
	snprintf(text, sizeof(text), "goal work %ld", cf.bg_turns);
	emit(rpc_new_notification("session/update",
	    update(cf.bg_turn, "agent_message_chunk", text)), 0, NULL, 0, NULL);
	if (cf.bg_open) {
		json_object_put(p);
		return;
	}
	json_object_object_add(p, "reason", json_object_new_string("end_turn"));
	emit(rpc_new_notification("_qwencode/end_turn", p), 0, NULL, 0, NULL);
}

/* A background task finished: ask to start the turn that answers it. */
static void
bg_turn_ask(void)
{
	json_object *p;
	char id[32];

	if (cf.bg_goal) {
		goal_turn_run();
		return;
	}
	p = obj("sessionId", json_object_new_string(cf.bg_turn));
	snprintf(id, sizeof(id), "bg-%ld", ++cf.bg_turns);
	json_object_object_add(p, "source",
	    json_object_new_string("background_notification"));
	json_object_object_add(p, "turnId", json_object_new_string(id));
	json_object_object_add(p, "taskId", json_object_new_string("task-1"));
	json_object_object_add(p, "kind", json_object_new_string(cf.bg_kind != NULL ?
	    cf.bg_kind : "agent"));
	json_object_object_add(p, "startedAt", json_object_new_int64(1700000000000));
	json_object_object_add(p, "label", json_object_new_string("Task done"));
	emit(rpc_new_request(json_object_new_string(id), "_qwencode/start_turn", p),
	    0, NULL, 0, NULL);
}

/* The daemon's answer to a start_turn: the turn, or word that it waits. */
static void
bg_turn_answered(struct rpc_msg *m)
{
	const char *id = json_object_get_string(m->id);
	json_object *a = json_object_object_get(m->result, "accepted"), *p;
	char text[64];

	if (a == NULL || !json_object_get_boolean(a)) {
		snprintf(text, sizeof(text), "bg deferred %s", id + 3);
		emit(rpc_new_notification("session/update",
		    update(cf.bg_turn, "agent_message_chunk", text)), 0, NULL, 0, NULL);
		return;
	}
	snprintf(text, sizeof(text), "bg work %s", id + 3);
	emit(rpc_new_notification("session/update",
	    update(cf.bg_turn, "agent_message_chunk", text)), 0, NULL, 0, NULL);
	if (cf.bg_open)
		return;
	p = obj("sessionId", json_object_new_string(cf.bg_turn));
	json_object_object_add(p, "reason", json_object_new_string("end_turn"));
	json_object_object_add(p, "turnId", json_object_new_string(id));
	json_object_object_add(p, "source",
	    json_object_new_string("background_notification"));
	emit(rpc_new_notification("_qwencode/end_turn", p), 0, NULL, 0, NULL);
}

/* The daemon's answer to an ask: say the outcome, release the prompt. */
/* The daemon's answer to a drain: its messages as a chunk. */
static void
drain_answered(struct rpc_msg *m)
{
	const char *id = json_object_get_string(m->id);
	json_object *msgs = NULL;
	char text[1024];
	size_t i, n, at;

	if (!json_object_object_get_ex(m->result, "messages", &msgs) ||
	    !json_object_is_type(msgs, json_type_array))
		return;
	if (cf.prompts != NULL) {
		fprintf(cf.prompts, "{\"drained\":%s}\n",
		    json_object_to_json_string_ext(json_object_object_get(m->result,
		    "items"), JSON_C_TO_STRING_PLAIN));
		fflush(cf.prompts);
	}
	at = (size_t)snprintf(text, sizeof(text), "drained ");
	for (i = 0, n = json_object_array_length(msgs); i < n && at < sizeof(text); i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, "%s%s", i ? "|" : "",
		    json_object_get_string(json_object_array_get_idx(msgs, i)));
	emit(rpc_new_notification("session/update",
	    update(id + 6, "agent_message_chunk", text)), 0, NULL, 0, NULL);
}

static void
ask_answered(struct rpc_msg *m)
{
	const char *id = json_object_get_string(m->id), *sid, *opt;
	json_object *outcome = json_get_obj(m->result, "outcome");
	uint64_t now = clock_mono_ms();
	char text[96];

	if (id != NULL && strncmp(id, "drain-", 6) == 0) {
		drain_answered(m);
		return;
	}
	if (id != NULL && strncmp(id, "bg-", 3) == 0 && cf.bg_turn != NULL &&
	    m->kind == RPC_RESULT) {
		bg_turn_answered(m);
		return;
	}
	if (id == NULL || strncmp(id, "ask-", 4) != 0)
		return;
	sid = id + 4;
	opt = json_get_str(outcome, "optionId");
	snprintf(text, sizeof(text), "permission %s", opt != NULL ? opt : "cancelled");
	emit(rpc_new_notification("session/update",
	    update(sid, "agent_message_chunk", text)), 0, NULL, 0, NULL);
	for (size_t i = 0; i < nouts; i++)
		if (strcmp(outs[i].tag, sid) == 0 && outs[i].due >= now + (uint64_t)HOLD_MS / 2)
			outs[i].due = now + 1;
}

/* The uuid of the last record of the file at path into out (empty: none). */
static void
last_uuid(const char *path, char out[64])
{
	char line[65536], *p;
	FILE *f;

	out[0] = '\0';
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
		if ((p = strstr(line, "\"uuid\":\"")) != NULL)
			snprintf(out, 64, "%.36s", p + 8);
	fclose(f);
}

/* append: the turn's records in sid's transcript, as the agent writes them. */
static void
append_turn(const char *sid, const char *text)
{
	const char *base = getenv("QWEN_RUNTIME_DIR");
	char cwd[4096], path[8192], parent[64], u1[40], u2[40], *san;
	FILE *f;

	if (base == NULL && (base = getenv("QWEN_HOME")) == NULL)
		return;
	if (getcwd(cwd, sizeof(cwd)) == NULL || (san = strdup(cwd)) == NULL)
		return;
	for (char *p = san; *p; p++)
		if (!isalnum((unsigned char)*p))
			*p = '-';
	snprintf(path, sizeof(path), "%s/projects/%s/chats/%s.jsonl", base, san, sid);
	free(san);
	last_uuid(path, parent);
	snprintf(u1, sizeof(u1), "fa%06ld-0000-4000-8000-%012ld", (long)getpid() % 1000000,
	    (long)clock_mono_ms() % 1000000000000L);
	snprintf(u2, sizeof(u2), "fb%06ld-0000-4000-8000-%012ld", (long)getpid() % 1000000,
	    (long)clock_mono_ms() % 1000000000000L);
	if ((f = fopen(path, "a")) == NULL)
		return;
	fprintf(f, "{\"uuid\":\"%s\",\"parentUuid\":%s%s%s,\"sessionId\":\"%s\","
	    "\"timestamp\":\"2026-08-01T15:01:13.619Z\",\"type\":\"user\",\"cwd\":\"%s\","
	    "\"version\":\"fake\",\"message\":{\"role\":\"user\",\"parts\":[{\"text\":\"%s\"}]}}\n",
	    u1, parent[0] ? "\"" : "", parent[0] ? parent : "null", parent[0] ? "\"" : "",
	    sid, cwd, text);
	fflush(f);
	fprintf(f, "{\"uuid\":\"%s\",\"parentUuid\":\"%s\",\"sessionId\":\"%s\","
	    "\"timestamp\":\"2026-08-01T15:01:14.619Z\",\"type\":\"assistant\",\"cwd\":\"%s\","
	    "\"version\":\"fake\",\"message\":{\"role\":\"model\",\"parts\":[{\"text\":\"fake answer\"}]}}\n",
	    u2, u1, sid, cwd);
	fflush(f);
	if (cf.append == 2) {
		fprintf(f, "{\"uuid\":\"torn-record\",\"parentUuid\":\"%s\",\"sess", u2);
		fflush(f);
		raise(SIGKILL);
	}
	fclose(f);
}

/* The text of a prompt's first text block, when it is plain ([A-Za-z0-9 ]). */
static const char *
prompt_text(json_object *params, char *buf, size_t size)
{
	json_object *a = json_object_object_get(params, "prompt"), *b;
	const char *t = NULL;

	snprintf(buf, size, "fake question");
	if (a != NULL && json_object_is_type(a, json_type_array) &&
	    json_object_array_length(a) > 0 && (b = json_object_array_get_idx(a, 0)) != NULL)
		t = json_get_str(b, "text");
	if (t != NULL && strlen(t) < size && strspn(t, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ") == strlen(t))
		snprintf(buf, size, "%s", t);
	return buf;
}

static json_object *
m_prompt(struct rpc_msg *m, long delay)
{
	const char *sid = json_get_str(m->params, "sessionId");
	char text[64];
	long i;

	if (sid == NULL || sess_find(sid) < 0)
		return not_found(m->id, sid);
	if (cf.prompts != NULL) {
		fprintf(cf.prompts, "%s\n", json_object_to_json_string_ext(
		    json_object_object_get(m->params, "prompt"),
		    JSON_C_TO_STRING_PLAIN));
		fflush(cf.prompts);
	}
	if (cf.append) {
		char buf[256];
		append_turn(sid, prompt_text(m->params, buf, sizeof(buf)));
	}
	if (cf.ask) {
		ask_permission(sid);
		delay = HOLD_MS;
	}
	if (cf.drain > 0) {
		char rid[96];
		json_object *q = obj("sessionId", json_object_new_string(sid));

		snprintf(rid, sizeof(rid), "drain-%s", sid);
		emit(rpc_new_request(json_object_new_string(rid),
		    "craft/drainMidTurnQueue", q), delay + cf.drain, NULL, 0, NULL);
		delay += 2 * cf.drain;
	}
	send_updates(sid, delay);
	for (i = 0; i < cf.chunks; i++) {
		snprintf(text, sizeof(text), "chunk %ld", i + 1);
		emit(rpc_new_notification("session/update",
		    update(sid, "agent_message_chunk", text)),
		    delay + i * cf.chunk_delay, sid, 0, NULL);
	}
	emit(rpc_new_result(json_object_get(m->id),
	    obj("stopReason", json_object_new_string("end_turn"))),
	    delay + i * cf.chunk_delay, sid, 1, m->id);
	return NULL;
}

/* Drop the session's queued chunks and answer its prompt "cancelled". */
static json_object *
m_cancel(struct rpc_msg *m, long delay)
{
	const char *sid = json_get_str(m->params, "sessionId");
	json_object *ids[64];
	size_t j = 0, nid = 0;

	(void)delay;
	for (size_t i = 0; i < nouts; i++) {
		if (sid != NULL && strcmp(outs[i].tag, sid) == 0) {
			if (outs[i].final && nid < 64)
				ids[nid++] = outs[i].id;
			else
				json_object_put(outs[i].id);
			free(outs[i].line);
			continue;
		}
		outs[j++] = outs[i];
	}
	nouts = j;
	for (size_t k = 0; k < nid; k++) {
		emit(rpc_new_result(json_object_get(ids[k]),
		    obj("stopReason", json_object_new_string("cancelled"))), 0, NULL, 0, NULL);
		json_object_put(ids[k]);
	}
	return NULL;
}

static json_object *
m_close(struct rpc_msg *m, long delay)
{
	const char *sid = json_get_str(m->params, "sessionId");
	json_object *r;
	int i;

	(void)delay;
	if (sid == NULL || (i = sess_find(sid)) < 0)
		return not_found(m->id, sid);
	for (size_t k = 0; k < cf.nheld; k++)
		if (strcmp(cf.held[k], sid) == 0) {
			r = obj("sessionId", json_object_new_string(sid));
			json_object_object_add(r, "closed", json_object_new_boolean(0));
			json_object_object_add(r, "holds", json_object_new_array());
			return rpc_new_result(json_object_get(m->id), r);
		}
	free(sessions[i]);
	sessions[i] = NULL;
	r = obj("sessionId", json_object_new_string(sid));
	json_object_object_add(r, "closed", json_object_new_boolean(1));
	return rpc_new_result(json_object_get(m->id), r);
}

/* qwen/status/session/transcript: an empty page of a persisted session. */
static json_object *
m_transcript(struct rpc_msg *m, long delay)
{
	const char *sid = json_get_str(m->params, "sessionId");
	json_object *r;

	(void)delay;
	if (sid == NULL || !persisted(sid))
		return not_found(m->id, sid);
	r = obj("events", json_object_new_array());
	json_object_object_add(r, "hasMore", json_object_new_boolean(0));
	json_object_object_add(r, "records", json_object_new_int(0));
	return rpc_new_result(json_object_get(m->id), r);
}

/* Copy the transcript of sid to nid's (a branch as the child writes it). */
static void
branch_copy(const char *sid, const char *nid)
{
	char from[4096], to[4096], buf[8192];
	FILE *in, *out;
	size_t n;

	if (strchr(nid, '/') != NULL || transcript_path(sid, from, sizeof(from)) == -1 ||
	    transcript_path(nid, to, sizeof(to)) == -1 || (in = fopen(from, "r")) == NULL)
		return;
	if ((out = fopen(to, "wx")) != NULL) {
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
			fwrite(buf, 1, n, out);
		fclose(out);
	}
	fclose(in);
}

/* qwen/control/session/branch: {sessionId: newSessionId, records: 0}; a
   persisted source's transcript is copied at once (the answer may wait). */
static json_object *
m_branch(struct rpc_msg *m, long delay)
{
	const char *sid = json_get_str(m->params, "sessionId");
	const char *nid = json_get_str(m->params, "newSessionId");
	json_object *r;

	(void)delay;
	if (sid == NULL || nid == NULL || !persisted(sid))
		return not_found(m->id, sid);
	branch_copy(sid, nid);
	r = obj("sessionId", json_object_new_string(nid));
	json_object_object_add(r, "records", json_object_new_int(0));
	return rpc_new_result(json_object_get(m->id), r);
}

/* qwen/control/session/fork_agent of a live session: {sessionId, description, launched}. */
static json_object *
m_fork(struct rpc_msg *m, long delay)
{
	const char *sid = json_get_str(m->params, "sessionId");
	const char *d = json_get_str(m->params, "directive");
	json_object *r;

	(void)delay;
	if (sid == NULL || sess_find(sid) < 0)
		return not_found(m->id, sid);
	r = obj("sessionId", json_object_new_string("33333333-3333-4333-8333-333333333333"));
	json_object_object_add(r, "description", json_object_new_string(d != NULL ? d : ""));
	json_object_object_add(r, "launched", json_object_new_boolean(1));
	return rpc_new_result(json_object_get(m->id), r);
}

/* One generation event for params' request (a stray one when other). */
static void
gen_event(struct rpc_msg *m, const char *text, int other, long delay)
{
	json_object *p = json_object_new_object(), *ev = obj("type",
	    json_object_new_string("delta"));

	json_object_object_add(ev, "text", json_object_new_string(text));
	json_object_object_add(p, "v", json_object_new_int(1));
	json_object_object_add(p, "sessionId", json_object_new_string(
	    json_get_str(m->params, "sessionId")));
	json_object_object_add(p, "requestId", json_object_new_string(other ?
	    "someone-else" : json_get_str(m->params, "requestId")));
	json_object_object_add(p, "event", ev);
	emit(rpc_new_notification("qwen/notify/session/generation/event", p),
	    delay, NULL, 0, NULL);
}

/*
 * With generate: the prompt back as a delta event, "!" as another (and one
 * for another request between them), then the generation's completion.
 */
static json_object *
m_generate(struct rpc_msg *m, long delay)
{
	json_object *r;

	if (!cf.generate || json_get_str(m->params, "requestId") == NULL ||
	    json_get_str(m->params, "sessionId") == NULL)
		return rpc_new_error(json_object_get(m->id), RPC_METHOD_NOT_FOUND,
		    "Method not found", NULL);
	gen_event(m, json_get_str(m->params, "prompt") ?
	    json_get_str(m->params, "prompt") : "", 0, delay);
	gen_event(m, "stray", 1, delay);
	gen_event(m, "!", 0, delay);
	r = obj("model", json_object_new_string("fake-fast"));
	json_object_object_add(r, "modelSource", json_object_new_string("fast"));
	json_object_object_add(r, "inputTokens", json_object_new_int(3));
	json_object_object_add(r, "outputTokens", json_object_new_int(2));
	return rpc_new_result(json_object_get(m->id), r);
}

/* The persisted turn_result the test put in the turn-status= file. */
static json_object *
m_turn_status(struct rpc_msg *m, long delay)
{
	json_object *rec;

	(void)delay;
	if (cf.turn_status == NULL)
		return rpc_new_error(json_object_get(m->id), RPC_METHOD_NOT_FOUND,
		    "Method not found", NULL);
	rec = access(cf.turn_status, F_OK) == 0 ?
	    json_object_from_file(cf.turn_status) : NULL;
	return rpc_new_result(json_object_get(m->id), obj("turnResult", rec));
}

static const struct method {
	const char	*name;
	json_object	*(*fn)(struct rpc_msg *, long delay);
} methods[] = {
	{ "initialize", m_initialize },
	{ "session/new", m_new },
	{ "session/load", m_load },
	{ "session/resume", m_resume },
	{ "qwen/status/session/transcript", m_transcript },
	{ "qwen/control/session/branch", m_branch },
	{ "qwen/control/session/side_task", m_branch },
	{ "qwen/control/session/fork_agent", m_fork },
	{ "unstable_resumeSession", m_resume },
	{ "session/prompt", m_prompt },
	{ "session/cancel", m_cancel },
	{ "qwen/control/session/close", m_close },
	{ "session/set_model", m_set_model },
	{ "qwen/control/session/approval_mode", m_mode },
	{ "session/set_mode", m_mode },
	{ "qwen/control/session/turn_status", m_turn_status },
	{ "qwen/control/session/generation/start", m_generate },
};

/* ---- loop --------------------------------------------------------------- */

/* The session a message is for: params.sessionId, or session/new's asked id. */
static const char *
msg_session(struct rpc_msg *m)
{
	const char *sid = json_get_str(m->params, "sessionId");
	json_object *meta;

	if (sid == NULL && strcmp(m->method, "session/new") == 0 &&
	    m->params != NULL && json_object_object_get_ex(m->params, "_meta", &meta))
		sid = json_get_str(meta, "qwen-code/sessionId");
	return sid;
}

static void
dispatch(struct rpc_msg *m)
{
	const char *sid;
	long delay, code;
	json_object *reply = NULL;
	size_t i;

	if (m->method == NULL) {
		ask_answered(m);	/* our requests: asks, drains, turns */
		return;
	}
	sid = msg_session(m);
	delay = knob_of(cf.delay, cf.ndelay, m->method, sid, 0);
	if (knob_of(cf.hold, cf.nhold, m->method, sid, 0))
		delay = HOLD_MS;
	code = knob_of(cf.fail, cf.nfail, m->method, sid, 0);
	for (i = 0; code == 0 && i < cf.nfail_first; i++)
		if (strcmp(cf.fail_first[i].method, m->method) == 0 && cf.fail_first[i].val) {
			code = cf.fail_first[i].val;
			cf.fail_first[i].val = 0;	/* once */
		}
	if (cf.log != NULL) {
		json_object *meta = NULL;
		const char *tp = NULL;

		if (m->params != NULL && json_object_object_get_ex(m->params, "_meta", &meta))
			tp = json_get_str(meta, "qwen.telemetry.traceparent");
		fprintf(cf.log, "%ld %s %s %s\n", (long)getpid(), m->method,
		    sid ? sid : "-", tp ? tp : "-");
	}
	if (knob_of(cf.crash_on, cf.ncrash, m->method, sid, 0))
		raise(SIGKILL);
	if (knob_of(cf.close_on, cf.nclose_on, m->method, sid, 0) && stdout_open) {
		close(1);
		stdout_open = 0;
	}
	if (knob_of(cf.hang, cf.nhang, m->method, sid, 0))
		return;
	if (sid != NULL && (strcmp(m->method, "session/load") == 0 ||
	    strcmp(m->method, "session/resume") == 0)) {
		if (cf.early_update)
			emit(rpc_new_notification("session/update",
			    update(sid, "agent_message_chunk", "early")), 0, NULL, 0, NULL);
		if (cf.late_update > 0)
			emit(rpc_new_notification("session/update",
			    update(sid, "agent_message_chunk", "late")),
			    delay + cf.late_update, NULL, 0, NULL);
	}
	if (code != 0 && m->kind == RPC_REQUEST) {
		emit(rpc_new_error(json_object_get(m->id), (int)code, "Injected failure",
		    cf.fail_detail != NULL ? obj("details",
		    json_object_new_string(cf.fail_detail)) : NULL), delay, NULL, 0, NULL);
		return;
	}
	if (knob_of(cf.full, cf.nfull, m->method, sid, 0) && m->kind == RPC_REQUEST) {
		json_object *data = json_object_new_object();

		json_object_object_add(data, "errorKind",
		    json_object_new_string("session_limit_exceeded"));
		json_object_object_add(data, "limit", json_object_new_int(4096));
		json_object_object_add(data, "scope",
		    json_object_new_string("workspace child"));
		emit(rpc_new_error(json_object_get(m->id), RPC_INTERNAL_ERROR,
		    "too many sessions in this process", data), delay, NULL, 0, NULL);
		return;
	}
	for (i = 0; i < cf.nanswer && m->kind == RPC_REQUEST; i++)
		if (strcmp(cf.answer_m[i], m->method) == 0) {
			emit(rpc_new_result(json_object_get(m->id),
			    json_object_from_file(cf.answer_f[i])), delay, NULL, 0, NULL);
			return;
		}
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(methods[i].name, m->method) == 0) {
			reply = methods[i].fn(m, delay);
			break;
		}
	if (i == sizeof(methods) / sizeof(methods[0]) && m->kind == RPC_REQUEST &&
	    cf.echo_ext) {
		json_object *r = obj("method", json_object_new_string(m->method));

		json_object_object_add(r, "params", json_object_get(m->params));
		if (cf.source_error != NULL &&
		    strncmp(m->method, "qwen/session/sources/", 21) == 0) {
			json_object *e = obj("code",
			    json_object_new_string(cf.source_error));

			json_object_object_add(e, "message",
			    json_object_new_string("the agent's source error"));
			json_object_put(r);
			r = obj("sourceError", e);
		}
		reply = rpc_new_result(json_object_get(m->id), r);
	} else if (i == sizeof(methods) / sizeof(methods[0]) && m->kind == RPC_REQUEST)
		reply = rpc_new_error(json_object_get(m->id), RPC_METHOD_NOT_FOUND,
		    "Method not found", NULL);
	if (reply != NULL && m->kind == RPC_REQUEST)
		emit_garbled(reply, delay, json_get_str(m->params, "sessionId"), 0, NULL,
		    knob_of(cf.garble, cf.ngarble, m->method, sid, 0));
	else
		json_object_put(reply);
}

/* Write every due line, in order of due time (stable). */
static void
flush_due(void)
{
	uint64_t now = clock_mono_ms();
	size_t i, j;

	for (;;) {
		size_t best = nouts;

		for (i = 0; i < nouts; i++)
			if (outs[i].due <= now && (best == nouts || outs[i].due < outs[best].due))
				best = i;
		if (best == nouts)
			return;
		if (stdout_open) {
			const char *p = outs[best].line;
			size_t left = strlen(p);

			while (left > 0) {
				ssize_t n = write(1, p, left);

				if (n <= 0)
					break;
				p += n;
				left -= (size_t)n;
			}
		}
		free(outs[best].line);
		json_object_put(outs[best].id);
		for (j = best; j + 1 < nouts; j++)
			outs[j] = outs[j + 1];
		nouts--;
	}
}

static void
on_usr1(int sig)
{
	(void)sig;
	usr1 = 1;
}

/* SIGUSR1: held answers are due now, and each poke id gets an update. */
static void
release_held(void)
{
	uint64_t now;
	size_t i;

	usr1 = 0;
	/* The ask of a bg-turn goes first: a held prompt is still running.
	   The clock is read after it, so what it releases is due later than
	   the ask however long the ask took to build. */
	if (cf.bg_turn != NULL)
		bg_turn_ask();
	now = clock_mono_ms();
	for (i = 0; i < nouts; i++)
		if (outs[i].due >= now + (uint64_t)HOLD_MS / 2)
			outs[i].due = now + (cf.bg_turn != NULL);
	for (i = 0; i < cf.npoke; i++)
		emit(rpc_new_notification("session/update",
		    update(cf.poke[i], "agent_message_chunk", "poke")), 0, NULL, 0, NULL);
}

static int
next_timeout(void)
{
	uint64_t now = clock_mono_ms(), best = UINT64_MAX;

	for (size_t i = 0; i < nouts; i++)
		if (outs[i].due < best)
			best = outs[i].due;
	if (best == UINT64_MAX || best >= now + (uint64_t)HOLD_MS / 2)
		return -1;
	return best <= now ? 0 : (int)(best - now);
}

int
main(int argc, char **argv)
{
	struct rpc_reader *rd = rpc_reader_new(0);
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	struct rpc_msg m;
	struct rpc_bad bad;
	char buf[65536];
	long lines = 0;
	int eof = 0;

	signal(SIGPIPE, SIG_IGN);
	/* No SA_RESTART: poll returns early with EINTR. */
	sigaction(SIGUSR1, &(struct sigaction){ .sa_handler = on_usr1 }, NULL);
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--data-dir") == 0)
			cf.data_dir = argv[++i];
		else if (strcmp(argv[i], "--workspace") == 0)
			cf.workspace = argv[++i];
	}
	if (getenv("FAKE_CHILD") != NULL)
		parse_knobs(getenv("FAKE_CHILD"));
	fprintf(stderr, "fake-child: started\n");
	while (!eof || nouts > 0 || cf.linger) {
		int to = next_timeout();

		if (eof && to < 0 && !cf.linger)
			break;
		if (eof && to < 0)
			to = 1000;
		/* A SIGUSR1 between the check and poll waits at most 50 ms. */
		if ((cf.nhold > 0 || cf.npoke > 0 || cf.bg_turn != NULL) && (to < 0 || to > 50))
			to = 50;
		if (poll(&pfd, eof ? 0 : 1, to) > 0 && (pfd.revents & (POLLIN | POLLHUP))) {
			ssize_t n = read(0, buf, sizeof(buf));

			if (n <= 0)
				eof = 1;
			else
				rpc_reader_feed(rd, buf, (size_t)n);
			for (;;) {
				enum rpc_read_status st = eof ? rpc_reader_finish(rd, &m, &bad) :
				    rpc_reader_next(rd, &m, &bad);

				if (st == RPC_READ_MORE)
					break;
				lines++;
				if (st == RPC_READ_MSG) {
					dispatch(&m);
					rpc_msg_clear(&m);
				} else {
					emit(rpc_new_bad_error(&bad), 0, NULL, 0, NULL);
					rpc_bad_clear(&bad);
				}
				if (cf.crash_after >= 0 && lines >= cf.crash_after)
					_exit(3);
				if (cf.close_after >= 0 && lines >= cf.close_after && stdout_open) {
					close(1);
					stdout_open = 0;
				}
				if (eof)
					break;
			}
		}
		if (usr1)
			release_held();
		flush_due();
	}
	rpc_reader_free(rd);
	return 0;
}
