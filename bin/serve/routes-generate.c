/* SPDX-License-Identifier: ISC */
/*
 * routes-generate.c: POST /session/:id/generate, upstream's stateless
 * generation in a live session, streamed as server-sent events.
 *
 * {prompt} (trimmed non-empty, at most 32 KiB: else 400 invalid_prompt)
 * is asked of the session's agent as upstream's daemon asks it:
 * qwen/control/session/generation/start {sessionId, requestId, prompt},
 * a fresh requestId per request.  The answer is 200 text/event-stream
 * at once: ": connected", then each qwen/notify/session/generation/event
 * {sessionId, requestId, event} of the agent for this request as "event:
 * <event.type>" with data {v: 1, ...event}, then, when the start is
 * answered, "done" {v, type, requestId, model, modelSource, inputTokens?,
 * outputTokens?}, and the stream ends.  An agent that fails, lacks the
 * method, answers malformed or not in 65 s (upstream's
 * SESSION_GENERATION_TIMEOUT_MS) ends it with "error" {v, type "error",
 * code "generation_failed", message "Generation failed"}, as upstream's
 * daemon does.  ": heartbeat" every 15 s; a client that goes away, or
 * falls 1 MiB behind, has the generation cancelled at the agent
 * (qwen/control/session/generation/cancel {sessionId, requestId}).  At
 * most 16 run at once (429 generation_limit_exceeded).
 */
#include "config.h"

#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "errors.h"
#include "json.h"
#include "serve.h"
#include "uuid.h"
#include "xmalloc.h"

#define GEN_PROMPT_MAX		(32 * 1024)	/* upstream's GENERATION_MAX_PROMPT_BYTES */
#define GEN_TIMEOUT_MS		65000		/* upstream's SESSION_GENERATION_TIMEOUT_MS */
#define GEN_HEARTBEAT_S		15		/* upstream's GENERATION_HEARTBEAT_MS */
#define GEN_BACKLOG_MAX		(1024 * 1024)
#define GEN_RUNNING_MAX		16
#define GEN_TYPE_MAX		64

struct gen_req {
	LIST_ENTRY(gen_req)	 entry;
	struct evhttp_request	*req;
	struct channel		*ch;
	struct channel_req	*start;
	struct event		*beat;
	char			 id[SERVE_SESSION_ID_MAX + 1];
	char			 request_id[UUID_LEN + 1];
};

static LIST_HEAD(, gen_req) gen_reqs = LIST_HEAD_INITIALIZER(gen_reqs);
static size_t gen_running;

static void
gen_free(struct gen_req *g)
{
	LIST_REMOVE(g, entry);
	gen_running--;
	if (g->start != NULL)
		channel_forget(g->start);
	if (g->beat != NULL)
		event_free(g->beat);
	channel_control_end(g->ch);
	free(g);
}

/* The stream's end, and the request's. */
static void
gen_end(struct gen_req *g)
{
	http_stream_end(g->req);
	gen_free(g);
}

/* The agent's answer to a cancel: nothing to do with it. */
static void
gen_on_cancelled(void *arg, enum channel_outcome o, json_object *payload)
{
	(void)arg; (void)o; (void)payload;
}

/* Tell the agent to stop this generation. */
static void
gen_cancel(struct gen_req *g)
{
	json_object *p = xjson_object_new_object();

	json_object_object_add(p, "sessionId", xjson_object_new_string(g->id));
	json_object_object_add(p, "requestId", xjson_object_new_string(g->request_id));
	(void)channel_request(g->ch, "qwen/control/session/generation/cancel",
	    p, (uint64_t)conf.init_timeout_ms, gen_on_cancelled, NULL);
}

/* Write raw SSE text; -1 when the client is gone or too far behind. */
static int
gen_write(struct gen_req *g, const char *text, size_t len)
{
	struct evbuffer *b;
	ssize_t backlog = http_stream_backlog(g->req);

	if (backlog == -1 || backlog > GEN_BACKLOG_MAX)
		return -1;
	if ((b = evbuffer_new()) == NULL)
		return 0;
	evbuffer_add(b, text, len);
	http_stream_chunk(g->req, b);
	evbuffer_free(b);
	return 0;
}

/* One event: "event: type" and data {v: 1, ...data}; data taken. */
static int
gen_event(struct gen_req *g, const char *type, json_object *data)
{
	json_object *o = xjson_object_new_object();
	const char *js;
	char *frame;
	int r, n;

	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_foreach(data, k, v)
		if (strcmp(k, "v") != 0)
			json_object_object_add(o, k, json_object_get(v));
	json_object_put(data);
	js = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	n = asprintf(&frame, "event: %s\ndata: %s\n\n", type, js);
	json_object_put(o);
	if (n < 0)
		return 0;
	r = gen_write(g, frame, (size_t)n);
	free(frame);
	return r;
}

/* upstream's in-stream failure, then the end. */
static void
gen_fail(struct gen_req *g)
{
	json_object *d = xjson_object_new_object();

	json_object_object_add(d, "type", xjson_object_new_string("error"));
	json_object_object_add(d, "code", xjson_object_new_string("generation_failed"));
	json_object_object_add(d, "message", xjson_object_new_string("Generation failed"));
	(void)gen_event(g, "error", d);
	gen_end(g);
}

/* The client went away or fell behind: the agent stops, the stream ends. */
static void
gen_abandon(struct gen_req *g)
{
	gen_cancel(g);
	gen_end(g);
}

/* The start's answer {model, modelSource, inputTokens?, outputTokens?}: done. */
static json_object *
gen_done(struct gen_req *g, json_object *r)
{
	const char *model = json_get_str(r, "model");
	const char *src = json_get_str(r, "modelSource");
	static const char *const counts[] = { "inputTokens", "outputTokens", NULL };
	json_object *d, *v;
	size_t i;

	if (model == NULL || src == NULL || (strcmp(src, "fast") != 0 &&
	    strcmp(src, "main") != 0))
		return NULL;
	d = xjson_object_new_object();
	json_object_object_add(d, "type", xjson_object_new_string("done"));
	json_object_object_add(d, "requestId", xjson_object_new_string(g->request_id));
	json_object_object_add(d, "model", xjson_object_new_string(model));
	json_object_object_add(d, "modelSource", xjson_object_new_string(src));
	for (i = 0; counts[i] != NULL; i++)
		if (json_object_object_get_ex(r, counts[i], &v) &&
		    (json_object_is_type(v, json_type_int) ||
		    json_object_is_type(v, json_type_double)))
			json_object_object_add(d, counts[i], json_object_get(v));
	return d;
}

static void
gen_on_start(void *arg, enum channel_outcome o, json_object *payload)
{
	struct gen_req *g = arg;
	json_object *d;

	g->start = NULL;
	if (o != CHANNEL_RESULT || (d = gen_done(g, payload)) == NULL) {
		gen_fail(g);
		return;
	}
	(void)gen_event(g, "done", d);
	gen_end(g);
}

static void
gen_on_beat(evutil_socket_t fd, short what, void *arg)
{
	struct gen_req *g = arg;

	(void)fd; (void)what;
	if (gen_write(g, ": heartbeat\n\n", 13) == -1)
		gen_abandon(g);
}

/* Whether t is an event name SSE can carry: [A-Za-z0-9_-], 1 to 64. */
static int
gen_type_ok(const char *t)
{
	size_t n = t != NULL ? strlen(t) : 0;

	if (n == 0 || n > GEN_TYPE_MAX)
		return 0;
	return strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_-") == n;
}

/*
 * A qwen/notify/... notification of the child's: a generation event goes
 * to its request's stream (the session's own request only).
 */
void
route_generate_notify(struct channel *ch, const char *method, json_object *params)
{
	const char *rid = json_get_str(params, "requestId");
	const char *sid = json_get_str(params, "sessionId");
	json_object *ev;
	struct gen_req *g;

	if (strcmp(method, "qwen/notify/session/generation/event") != 0 ||
	    rid == NULL || sid == NULL ||
	    !json_object_object_get_ex(params, "event", &ev) ||
	    !json_object_is_type(ev, json_type_object) ||
	    !gen_type_ok(json_get_str(ev, "type")))
		return;
	LIST_FOREACH(g, &gen_reqs, entry)
		if (g->ch == ch && strcmp(g->request_id, rid) == 0 &&
		    strcmp(g->id, sid) == 0)
			break;
	if (g == NULL)
		return;
	if (gen_event(g, json_get_str(ev, "type"), json_object_get(ev)) == -1)
		gen_abandon(g);
}

/* The request's prompt, checked; NULL after upstream's 400. */
static const char *
gen_prompt(struct http_ctx *ctx)
{
	const char *p = json_get_str(ctx->body, "prompt"), *c;

	for (c = p; c != NULL && (*c == ' ' || (*c >= '\t' && *c <= '\r')); c++)
		;
	if (p != NULL && *c != '\0' && strlen(p) <= GEN_PROMPT_MAX)
		return p;
	http_error(ctx->req, "invalid_prompt", NULL);
	return NULL;
}

static struct gen_req *
gen_new(struct http_ctx *ctx, struct session *s)
{
	struct gen_req *g = xcalloc(1, sizeof(*g));

	g->req = ctx->req;
	g->ch = s->channel;
	strlcpy(g->id, s->id, sizeof(g->id));
	uuid_new(g->request_id);
	channel_control_begin(g->ch);
	LIST_INSERT_HEAD(&gen_reqs, g, entry);
	gen_running++;
	return g;
}

/* POST /session/:id/generate {prompt}: the agent's generation, streamed. */
void
route_session_generate(struct http_ctx *ctx)
{
	struct timeval tv = { GEN_HEARTBEAT_S, 0 };
	struct session *s;
	struct gen_req *g;
	const char *prompt;
	json_object *p;

	if ((s = routes_session(ctx)) == NULL || (prompt = gen_prompt(ctx)) == NULL)
		return;
	if (gen_running >= GEN_RUNNING_MAX) {
		http_error(ctx->req, "generation_limit_exceeded", NULL);
		return;
	}
	g = gen_new(ctx, s);
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(g->id));
	json_object_object_add(p, "requestId", xjson_object_new_string(g->request_id));
	json_object_object_add(p, "prompt", xjson_object_new_string(prompt));
	if ((g->start = channel_request(g->ch,
	    "qwen/control/session/generation/start", p, GEN_TIMEOUT_MS,
	    gen_on_start, g)) == NULL) {
		gen_free(g);
		http_error(ctx->req, "acp_channel_unavailable", s->id);
		return;
	}
	http_set_header(ctx->req, "Content-Type", "text/event-stream");
	http_set_header(ctx->req, "Cache-Control", "no-cache, no-transform");
	http_set_header(ctx->req, "X-Accel-Buffering", "no");
	http_stream_start(ctx->req, 200);
	(void)gen_write(g, ": connected\n\n", 13);
	if ((g->beat = event_new(serve_base, -1, EV_PERSIST, gen_on_beat, g)) != NULL)
		event_add(g->beat, &tv);
}

/* At exit: every stream dropped, its start forgotten. */
void
route_generate_free_all(void)
{
	while (!LIST_EMPTY(&gen_reqs))
		gen_free(LIST_FIRST(&gen_reqs));
}
