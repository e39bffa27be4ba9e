/*
 * prompt.c: the prompt and events commands (streams).
 *
 * prompt subscribes to the session's events first (a thread reading the
 * SSE stream into a queue), then admits the prompt(s) through heal.c, then
 * prints the agent_message_chunk text of its promptId as it arrives until
 * turn_complete / turn_error for that promptId.  When the subscription
 * could not be opened (the session was not live and the admission resumed
 * it), it subscribes after the admission from the 202's lastEventId, so no
 * event of the prompt is missed.  With --parallel every stdin line is a
 * prompt; all are admitted concurrently (one thread each) and share one
 * subscription and one reattach.  --no-wait prints the promptIds.
 */
#include "config.h"

#include <sys/queue.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "restore.h"

struct qev {
	TAILQ_ENTRY(qev)	 entry;
	json_object		*env;	/* the envelope, owned */
};

/* The subscription: a thread filling a queue of envelopes. */
struct sub {
	struct rctx		*ctx;
	const char		*sid;
	char			 client_id[RESTORE_ID_MAX + 1];
	int64_t			 cursor;	/* Last-Event-ID, -1 none */
	pthread_t		 thread;
	int			 started;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	TAILQ_HEAD(, qev)	 q;
	int			 opened, ended, stop;
	struct http_resp	 resp;		/* the answer when not opened */
	int64_t			 last_id;	/* highest envelope id seen */
	struct sse_parser	*parser;
	json_tokener		*tok;
	int			 bad;		/* framing error */
};

/* One prompt of this invocation. */
struct pr {
	struct heal		*heal;
	struct rctx		*ctx;
	json_object		*body;
	char			 prompt_id[RESTORE_ID_MAX + 1];
	int64_t			 watermark;	/* the 202's lastEventId */
	int			 legacy;	/* a 200 answer: already done */
	struct http_resp	 resp;
	int			 admitted;
	int			 done;
	int			 failed;
	char			*text;		/* buffered (--parallel) */
	size_t			 text_len;
	char			 error[512];
	int			 printed;	/* direct text was printed */
	int			 ends_nl;	/* and it ended in a newline */
	pthread_t		 thread;
	int			 joinable;	/* thread was started */
};

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

static void
sub_open(void *arg)
{
	struct sub	*s = arg;

	pthread_mutex_lock(&s->mu);
	s->opened = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

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

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	if ((path = http_session_path(s->sid, "/events")) != NULL) {
		req.method = "GET";
		req.path = path;
		req.client_id = s->client_id;
		req.last_event_id = s->cursor;
		req.timeout_ms = timeout_fetch_ms(s->ctx, &src);
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
static int
sub_start(struct sub *s, struct rctx *ctx, const char *sid,
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
static void
sub_stop(struct sub *s)
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
static json_object *
sub_next(struct sub *s)
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

/* A string member of obj, or NULL. */
static const char *
get_str(json_object *obj, const char *key)
{
	json_object	*v;

	if (obj == NULL || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static json_object *
get_obj(json_object *obj, const char *key)
{
	json_object	*v;

	if (obj == NULL || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

/* The promptId an envelope belongs to (data's first, then the envelope's). */
static const char *
env_prompt_id(json_object *env)
{
	const char	*id;

	if ((id = get_str(get_obj(env, "data"), "promptId")) != NULL)
		return id;
	return get_str(env, "promptId");
}

/* Append chunk text to p (direct: print it now). */
static void
pr_text(struct pr *p, const char *text, int direct)
{
	size_t	 len = strlen(text);
	char	*nt;

	if (direct) {
		fputs(text, stdout);
		fflush(stdout);
		if (len > 0)
			p->ends_nl = text[len - 1] == '\n';
		p->printed |= len > 0;
		return;
	}
	if ((nt = realloc(p->text, p->text_len + len + 1)) == NULL)
		return;
	memcpy(nt + p->text_len, text, len + 1);
	p->text = nt;
	p->text_len += len;
}

/* Apply one envelope to the prompt it belongs to. */
static void
pr_event(struct pr *ps, size_t n, json_object *env, int direct)
{
	const char	*type = get_str(env, "type"), *id, *t, *code;
	json_object	*data = get_obj(env, "data"), *upd, *content;
	size_t		 i;

	if ((id = env_prompt_id(env)) == NULL)
		return;
	for (i = 0; i < n && strcmp(ps[i].prompt_id, id) != 0; i++)
		;
	if (i == n || ps[i].done)
		return;
	if (strcmp(type, "session_update") == 0) {
		upd = get_obj(data, "update");
		content = get_obj(upd, "content");
		t = get_str(upd, "sessionUpdate");
		if (t != NULL && strcmp(t, "agent_message_chunk") == 0 &&
		    (t = get_str(content, "text")) != NULL)
			pr_text(&ps[i], t, direct);
	} else if (strcmp(type, "turn_complete") == 0) {
		ps[i].done = 1;
		output_verbose(ps[i].ctx, "turn complete: %s",
		    get_str(data, "stopReason") ? get_str(data, "stopReason") :
		    "end_turn");
	} else if (strcmp(type, "turn_error") == 0) {
		ps[i].done = ps[i].failed = 1;
		t = get_str(data, "message");
		code = get_str(data, "code");
		snprintf(ps[i].error, sizeof(ps[i].error), "turn failed: %s (%s)",
		    t != NULL ? t : "Prompt failed",
		    code != NULL ? code : "turn_error");
	}
}

/* Whether a terminal session frame ends every prompt. */
static int
env_session_end(json_object *env)
{
	const char	*type = get_str(env, "type");

	return strcmp(type, "session_closed") == 0 ||
	    strcmp(type, "session_died") == 0 ||
	    strcmp(type, "client_evicted") == 0;
}

/* Admit one prompt (a thread with --parallel), honouring --retry. */
static void *
pr_admit(void *arg)
{
	struct pr	*p = arg;
	struct rerr	 e;
	json_object	*body, *v;
	int		 attempt = 0;

	for (;;) {
		http_resp_clear(&p->resp);
		if (heal_prompt(p->heal, p->body, &p->resp) == 0)
			break;
		output_classify(&p->resp, &e);
		if (!restore_retry_wait(p->ctx, &e, &attempt))
			return NULL;
	}
	if ((body = http_resp_json(&p->resp)) == NULL)
		return NULL;
	if (p->resp.status == 200 && !json_object_object_get_ex(body,
	    "promptId", NULL)) {
		/* A legacy blocking daemon: the turn already ran. */
		p->legacy = p->admitted = p->done = 1;
	} else if ((v = json_object_object_get(body, "promptId")) != NULL &&
	    json_object_is_type(v, json_type_string) &&
	    strlen(json_object_get_string(v)) <= RESTORE_ID_MAX) {
		strlcpy(p->prompt_id, json_object_get_string(v),
		    sizeof(p->prompt_id));
		p->admitted = 1;
		p->watermark = -1;
		if ((v = json_object_object_get(body, "lastEventId")) != NULL &&
		    json_object_is_type(v, json_type_int))
			p->watermark = json_object_get_int64(v);
	}
	json_object_put(body);
	return NULL;
}

/* Admit every prompt, concurrently when there are several. */
static void
pr_admit_all(struct pr *ps, size_t n)
{
	size_t	i;

	if (n == 1) {
		pr_admit(&ps[0]);
		return;
	}
	for (i = 0; i < n; i++)
		if (pthread_create(&ps[i].thread, NULL, pr_admit, &ps[i]) != 0)
			pr_admit(&ps[i]);
		else
			ps[i].joinable = 1;
	for (i = 0; i < n; i++)
		if (ps[i].joinable) {
			pthread_join(ps[i].thread, NULL);
			ps[i].joinable = 0;
		}
}

/* The error of a prompt that was not admitted; returns the exit code. */
static int
pr_admit_error(struct rctx *ctx, struct pr *p)
{
	struct rerr	e;

	if (p->resp.status != 0 && http_ok(&p->resp)) {
		output_local(&e, "protocol_error", -1,
		    "the daemon accepted the prompt without a promptId");
		return output_fail(ctx, &e);
	}
	output_classify(&p->resp, &e);
	return output_error(ctx, &p->resp, &e);
}

/* Wait for the turns of all admitted prompts; returns the exit code. */
static int
pr_wait(struct rctx *ctx, struct sub *s, struct pr *ps, size_t n)
{
	json_object	*env;
	struct rerr	 e;
	size_t		 i, left;
	int		 direct = n == 1, rc = EXIT_OK;

	for (;;) {
		for (i = 0, left = 0; i < n; i++)
			left += !ps[i].done;
		if (left == 0)
			break;
		if ((env = sub_next(s)) == NULL)
			break;
		if (env_session_end(env)) {
			output_verbose(ctx, "session ended: %s",
			    get_str(env, "type"));
			json_object_put(env);
			break;
		}
		pr_event(ps, n, env, direct);
		json_object_put(env);
	}
	for (i = 0; i < n; i++) {
		if (!direct && ps[i].text != NULL) {
			fputs(ps[i].text, stdout);
			if (ps[i].text_len > 0 && ps[i].text[ps[i].text_len - 1]
			    != '\n')
				fputc('\n', stdout);
		}
		if (ps[i].failed) {
			output_local(&e, "turn_error", EXIT_FAIL, "%s",
			    ps[i].error);
			rc = output_fail(ctx, &e);
		} else if (!ps[i].done) {
			output_local(&e, "protocol_error", EXIT_FAIL,
			    "event stream ended before the turn finished");
			rc = output_fail(ctx, &e);
		}
	}
	if (direct && ps[0].printed && !ps[0].ends_nl)
		fputc('\n', stdout);
	return rc;
}

/* Read the prompts: text, or stdin (whole, or one per line). */
static int
pr_read(struct rctx *ctx, const char *text, char ***out, size_t *n)
{
	char	*buf = NULL, *line, *save, **v = NULL;
	size_t	 cap = 0, len = 0, got;
	char	 chunk[4096];

	*n = 0;
	if (text != NULL && strcmp(text, "-") != 0) {
		if ((v = calloc(1, sizeof(*v))) == NULL ||
		    (v[0] = strdup(text)) == NULL) {
			free(v);
			return -1;
		}
		*out = v;
		*n = 1;
		return 0;
	}
	while ((got = fread(chunk, 1, sizeof(chunk), stdin)) > 0) {
		if (len + got + 1 > cap) {
			cap = (len + got + 1) * 2;
			if ((line = realloc(buf, cap)) == NULL)
				goto fail;
			buf = line;
		}
		memcpy(buf + len, chunk, got);
		len += got;
	}
	if (buf == NULL)
		return 0;
	buf[len] = '\0';
	if (!ctx->parallel) {
		while (len > 0 && buf[len - 1] == '\n')
			buf[--len] = '\0';
		if (len == 0 || (v = calloc(1, sizeof(*v))) == NULL)
			goto fail;
		v[0] = buf;
		*out = v;
		*n = 1;
		return 0;
	}
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '\0')
			continue;
		if ((v = reallocarray(*out, *n + 1, sizeof(*v))) == NULL)
			goto fail;
		*out = v;
		if ((v[*n] = strdup(line)) == NULL)
			goto fail;
		(*n)++;
	}
	free(buf);
	return 0;
fail:
	free(buf);
	return -1;
}

/* The prompt body {"prompt":[{"type":"text","text":...}]}; caller puts. */
static json_object *
pr_body(const char *text)
{
	json_object	*body, *arr, *block;

	body = json_object_new_object();
	arr = json_object_new_array();
	block = json_object_new_object();
	json_object_object_add(block, "type", json_object_new_string("text"));
	json_object_object_add(block, "text", json_object_new_string(text));
	json_object_array_add(arr, block);
	json_object_object_add(body, "prompt", arr);
	return body;
}

/* Free the prompts. */
static void
pr_free(struct pr *ps, char **texts, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		json_object_put(ps[i].body);
		http_resp_clear(&ps[i].resp);
		free(ps[i].text);
		free(texts[i]);
	}
	free(ps);
	free(texts);
}

/* After admission: subscribe late (from the earliest watermark) if needed. */
static int
pr_late_sub(struct rctx *ctx, struct heal *h, struct sub *s, struct pr *ps,
    size_t n)
{
	char	 id[RESTORE_ID_MAX + 1];
	int64_t	 from = -1;
	size_t	 i;

	for (i = 0; i < n; i++)
		if (ps[i].admitted && !ps[i].done && ps[i].watermark >= 0 &&
		    (from == -1 || ps[i].watermark < from))
			from = ps[i].watermark;
	sub_stop(s);
	heal_client_id(h, id, sizeof(id));
	output_verbose(ctx, "subscribing after admission from event %lld",
	    (long long)(from < 0 ? 0 : from));
	return sub_start(s, ctx, ctx->session_id, id, from < 0 ? 0 : from);
}

/* prompt ID [TEXT|-]: returns the exit code. */
int
cmd_prompt(struct rctx *ctx, const char *text)
{
	struct heal	 h;
	struct sub	 s;
	struct pr	*ps;
	struct rerr	 e;
	char		**texts = NULL, id[RESTORE_ID_MAX + 1];
	size_t		 n, i, admitted = 0;
	int		 rc = EXIT_OK, live = 0, wrc;

	if (pr_read(ctx, text, &texts, &n) == -1 || n == 0) {
		free(texts);
		output_local(&e, "bad_request", EXIT_USAGE, "no prompt text");
		return output_fail(ctx, &e);
	}
	if ((ps = calloc(n, sizeof(*ps))) == NULL) {
		pr_free(NULL, texts, n);
		return EXIT_FAIL;
	}
	heal_init(&h, ctx, ctx->session_id);
	for (i = 0; i < n; i++) {
		ps[i].heal = &h;
		ps[i].ctx = ctx;
		ps[i].body = pr_body(texts[i]);
	}
	memset(&s, 0, sizeof(s));
	if (!ctx->no_wait) {
		heal_client_id(&h, id, sizeof(id));
		live = sub_start(&s, ctx, ctx->session_id, id, -1) == 0;
		if (!live)
			output_verbose(ctx, "events not open before the "
			    "prompt (HTTP %ld)", s.resp.status);
	}
	pr_admit_all(ps, n);
	for (i = 0; i < n; i++)
		if (!ps[i].admitted) {
			rc = pr_admit_error(ctx, &ps[i]);
			ps[i].done = 1;
		} else
			admitted++;
	if (ctx->no_wait) {
		for (i = 0; i < n; i++)
			if (ps[i].admitted && !ps[i].legacy)
				printf("%s\n", ps[i].prompt_id);
	} else if (admitted > 0) {
		if (!live && pr_late_sub(ctx, &h, &s, ps, n) == -1) {
			output_classify(&s.resp, &e);
			wrc = output_error(ctx, &s.resp, &e);
		} else
			wrc = pr_wait(ctx, &s, ps, n);
		if (rc == EXIT_OK)
			rc = wrc;
	}
	fflush(stdout);
	if (s.parser != NULL || s.started)
		sub_stop(&s);
	output_verbose(ctx, "resumes sent: %d", h.resumes);
	heal_destroy(&h);
	pr_free(ps, texts, n);
	return rc;
}

/* Print one envelope as a JSON line. */
static void
ev_print(json_object *env)
{
	puts(json_object_to_json_string_ext(env, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
}

/* events ID [--last-event-id N]: returns the exit code. */
int
cmd_events(struct rctx *ctx)
{
	struct sub	 s;
	struct rerr	 e;
	json_object	*env;
	char		 id[RESTORE_ID_MAX + 1];
	int		 rc = EXIT_OK, end;

	state_client_get(ctx->state, ctx->session_id, id, sizeof(id));
	if (sub_start(&s, ctx, ctx->session_id, id, ctx->last_event_id) == -1) {
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
		sub_stop(&s);
		return rc;
	}
	while ((env = sub_next(&s)) != NULL) {
		ev_print(env);
		end = env_session_end(env);
		json_object_put(env);
		if (end)
			break;
	}
	if (s.bad) {
		output_local(&e, "protocol_error", EXIT_FAIL,
		    "event frame larger than %u bytes", SSE_MAX_BUFFER);
		rc = output_fail(ctx, &e);
	}
	output_verbose(ctx, "last event id %" PRId64 ", %lu comments",
	    s.last_id, sse_comments(s.parser));
	sub_stop(&s);
	return rc;
}
