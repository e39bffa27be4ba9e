/* SPDX-License-Identifier: ISC */
/*
 * events.c: the event subscription and the events command.
 *
 * A subscription is a thread that reads GET /session/:id/events through
 * http_stream(), parses the SSE frames incrementally (sse.c), keeps the
 * JSON envelopes that are v1 objects with a string type (others are
 * dropped, as the SDK does) and queues them for the reader.  It tracks the
 * highest envelope id seen, the cursor a reconnect would send.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "restore.h"

/* Parse one SSE data payload into a v1 envelope and queue it. */
static int
sub_event(void *arg, const struct sse_event *ev)
{
	struct sub	*s = arg;
	json_object	*env, *v;
	struct qev	*e;
	size_t		 len = strlen(ev->data);

	json_tokener_reset(s->tok);
	env = json_tokener_parse_ex(s->tok, ev->data, (int)len);
	if (env == NULL || json_tokener_get_parse_end(s->tok) != len ||
	    !json_object_is_type(env, json_type_object) ||
	    !json_object_object_get_ex(env, "v", &v) ||
	    json_object_get_int(v) != 1 ||
	    !json_object_object_get_ex(env, "type", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		json_object_put(env);	/* dropped, as the SDK does */
		return 0;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		json_object_put(env);
		return 1;
	}
	e->env = env;
	pthread_mutex_lock(&s->mu);
	if (json_object_object_get_ex(env, "id", &v) &&
	    json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) > s->last_id)
		s->last_id = json_object_get_int64(v);
	TAILQ_INSERT_TAIL(&s->q, e, entry);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* http_stream: the stream is open; wake events_start(). */
static void
sub_open(void *arg)
{
	struct sub	*s = arg;

	pthread_mutex_lock(&s->mu);
	s->opened = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* http_stream: bytes of the stream, to the SSE parser. */
static int
sub_data(void *arg, const char *buf, size_t len)
{
	struct sub	*s = arg;
	int		 rc;

	rc = sse_feed(s->parser, buf, len);
	if (rc == -1)
		s->bad = 1;
	return rc == 0 ? 0 : -1;
}

/* http_stream: polled; events_stop() asked the thread to end. */
static int
sub_should_stop(void *arg)
{
	struct sub	*s = arg;
	int		 stop;

	pthread_mutex_lock(&s->mu);
	stop = s->stop;
	pthread_mutex_unlock(&s->mu);
	return stop;
}

/* The subscription thread. */
static void *
sub_main(void *arg)
{
	struct sub		*s = arg;
	struct http_stream_cb	 cb = { sub_open, sub_data, sub_should_stop, s };
	struct http_req		 req;
	struct http_resp	 resp;
	enum timeout_source	 src;
	char			*path;

	memset(&resp, 0, sizeof(resp));
	if ((path = http_session_path(s->sid, "/events")) != NULL) {
		http_req_init(&req, "GET", path, NULL, s->client_id,
		    timeout_fetch_ms(s->ctx, &src));
		req.last_event_id = s->cursor;
		http_stream(s->ctx, &req, &cb, &resp);
		free(path);
	} else
		strlcpy(resp.errbuf, "out of memory", sizeof(resp.errbuf));
	pthread_mutex_lock(&s->mu);
	s->ended = 1;
	s->resp = resp;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Start a subscription from cursor and wait until it opened or failed. */
int
events_start(struct sub *s, struct rctx *ctx, const char *sid,
    const char *client_id, int64_t cursor)
{
	int	opened;

	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	s->sid = sid;
	s->cursor = cursor;
	s->last_id = cursor;
	strlcpy(s->client_id, client_id, sizeof(s->client_id));
	TAILQ_INIT(&s->q);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->parser = sse_new(sub_event, s);
	s->tok = json_tokener_new_ex(64);
	if (s->parser == NULL || s->tok == NULL)
		return -1;
	json_tokener_set_flags(s->tok, JSON_TOKENER_STRICT);
	if (pthread_create(&s->thread, NULL, sub_main, s) != 0)
		return -1;
	s->started = 1;
	pthread_mutex_lock(&s->mu);
	while (!s->opened && !s->ended)
		pthread_cond_wait(&s->cv, &s->mu);
	opened = s->opened;
	pthread_mutex_unlock(&s->mu);
	return opened ? 0 : -1;
}

/* Stop the thread and free everything. */
void
events_stop(struct sub *s)
{
	struct qev	*e;

	if (s->started) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
		s->started = 0;
	}
	while ((e = TAILQ_FIRST(&s->q)) != NULL) {
		TAILQ_REMOVE(&s->q, e, entry);
		json_object_put(e->env);
		free(e);
	}
	http_resp_clear(&s->resp);
	sse_free(s->parser);
	s->parser = NULL;
	if (s->tok != NULL)
		json_tokener_free(s->tok);
	s->tok = NULL;
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
}

/* Next envelope (caller puts), or NULL when the stream ended. */
json_object *
events_next(struct sub *s)
{
	struct qev	*e;
	json_object	*env = NULL;

	pthread_mutex_lock(&s->mu);
	while (TAILQ_EMPTY(&s->q) && !s->ended)
		pthread_cond_wait(&s->cv, &s->mu);
	if ((e = TAILQ_FIRST(&s->q)) != NULL) {
		TAILQ_REMOVE(&s->q, e, entry);
		env = e->env;
		free(e);
	}
	pthread_mutex_unlock(&s->mu);
	return env;
}

/*
 * events_next() that also gives up (NULL, the stream still open) once *flag
 * is no longer seen or the monotonic deadline (ms, 0: none) has passed;
 * both are looked at every SUB_TICK_MS, since a signal handler cannot
 * signal a condition variable.
 */
json_object *
events_next_until(struct sub *s, uint64_t deadline,
    volatile sig_atomic_t *flag, sig_atomic_t seen)
{
	struct qev	*e;
	struct timespec	 ts;
	json_object	*env = NULL;

	pthread_mutex_lock(&s->mu);
	while (TAILQ_EMPTY(&s->q) && !s->ended && *flag == seen &&
	    (deadline == 0 || clock_mono_ms() < deadline)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += SUB_TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	if ((e = TAILQ_FIRST(&s->q)) != NULL) {
		TAILQ_REMOVE(&s->q, e, entry);
		env = e->env;
		free(e);
	}
	pthread_mutex_unlock(&s->mu);
	return env;
}

/* Whether a terminal session frame ends every prompt. */
int
events_session_end(json_object *env)
{
	const char	*type = json_get_str(env, "type");

	return strcmp(type, "session_closed") == 0 ||
	    strcmp(type, "session_died") == 0 ||
	    strcmp(type, "client_evicted") == 0;
}

/* Print one envelope: a JSON line (--json), else as text. */
static void
ev_print(const struct rctx *ctx, struct render *r, json_object *env)
{
	if (ctx->json)
		puts(json_object_to_json_string_ext(env, JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE));
	else
		render_event(r, env);
	fflush(stdout);
}

/*
 * follow on a session that is not live: resume it (as prompt does) and
 * subscribe again, so that following a persisted session just works.
 * 0 when the new stream is open, -1 otherwise (s->resp holds why).
 */
static int
follow_resume(struct rctx *ctx, struct sub *s, char *id, size_t len)
{
	struct http_resp	resp;

	if (s->started)
		pthread_join(s->thread, NULL);
	s->started = 0;
	events_stop(s);
	memset(s, 0, sizeof(*s));
	if (commands_restore_session(ctx, "resume", ctx->session_id, id, &resp, id,
	    len) == -1) {
		s->resp = resp;
		return -1;
	}
	output_verbose(ctx, "resumed %s to follow it", ctx->session_id);
	http_resp_clear(&resp);
	return events_start(s, ctx, ctx->session_id, id, ctx->last_event_id);
}

/* events ID [--last-event-id N]: returns the exit code. */
int
cmd_events(struct rctx *ctx)
{
	struct sub	 s;
	struct rerr	 e;
	struct render	 r;
	json_object	*env;
	char		 id[RESTORE_ID_MAX + 1];
	int		 rc = EXIT_OK, end = 0;

	render_init(&r);
	state_client_get(ctx->state, ctx->session_id, id, sizeof(id));
	if (events_start(&s, ctx, ctx->session_id, id, ctx->last_event_id) == -1 &&
	    ctx->follow && s.resp.status == 404 && follow_resume(ctx, &s, id,
	    sizeof(id)) == 0)
		;	/* resumed, and the stream is open */
	else if (!s.opened) {
		if (s.started)
			pthread_join(s.thread, NULL);
		s.started = 0;
		if (s.resp.status != 0 && http_ok(&s.resp))
			output_local(&e, "protocol_error", EXIT_FAIL,
			    "not an event stream (Content-Type %s)",
			    s.resp.content_type ? s.resp.content_type : "none");
		else
			output_classify(&s.resp, &e);
		rc = output_error(ctx, &s.resp, &e);
		events_stop(&s);
		return rc;
	}
	while ((env = events_next(&s)) != NULL) {
		ev_print(ctx, &r, env);
		end = events_session_end(env);
		json_object_put(env);
		if (end)
			break;
	}
	if (s.bad) {
		output_local(&e, "protocol_error", EXIT_FAIL,
		    "event frame larger than %u bytes", SSE_MAX_BUFFER);
		rc = output_fail(ctx, &e);
	} else if (!end && s.resp.cerr != 0) {
		/* The thread has ended: s.resp is final. */
		output_local(&e, "protocol_error", EXIT_FAIL,
		    "event stream broken: %s", s.resp.errbuf);
		rc = output_fail(ctx, &e);
	}
	if (!ctx->json)
		render_end(&r);
	output_verbose(ctx, "last event id %" PRId64 ", %lu comments",
	    s.last_id, sse_comments(s.parser));
	events_stop(&s);
	return rc;
}
