/* SPDX-License-Identifier: ISC */
/*
 * prompt.c: the prompt command.
 *
 * prompt subscribes to the session's events first (a thread reading the
 * SSE stream into a queue), then admits the prompt(s) through heal.c, then
 * prints the agent_message_chunk text of its promptId as it arrives until
 * turn_complete / turn_error for that promptId.  When the subscription
 * could not be opened (the session was not live and the admission resumed
 * it), it subscribes after the admission from the 202's lastEventId, so no
 * event of the prompt is missed.  With --parallel every stdin line is a
 * prompt; all are admitted concurrently (one thread each) and share one
 * subscription and one reattach.  --no-wait prints the promptIds.  While
 * it waits, ^C (or --max-time) cancels the turn and waits for its end a
 * while; a second ^C leaves it running.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "restore.h"
#include "xmalloc.h"

#define PR_CANCEL_GRACE_MS	10000	/* for the cancelled turn to end */

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
	const char		*label;		/* the prompt text (borrowed) */
	char			*text;		/* buffered (--parallel) */
	size_t			 text_len;
	char			 error[512];
	int			 printed;	/* direct text was printed */
	int			 ends_nl;	/* and it ended in a newline */
	pthread_t		 thread;
	int			 joinable;	/* thread was started */
};

/* The promptId an envelope belongs to (data's first, then the envelope's). */
static const char *
env_prompt_id(json_object *env)
{
	const char	*id;

	if ((id = json_get_str(json_get_obj(env, "data"), "promptId")) != NULL)
		return id;
	return json_get_str(env, "promptId");
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
	const char	*type = json_get_str(env, "type"), *id, *t, *code;
	json_object	*data = json_get_obj(env, "data"), *upd, *content;
	char		 cid[RESTORE_ID_MAX + 1];
	size_t		 i;

	if ((id = env_prompt_id(env)) == NULL)
		return;
	for (i = 0; i < n && strcmp(ps[i].prompt_id, id) != 0; i++)
		;
	if (i == n || ps[i].done)
		return;
	if (ps[i].ctx->json) {
		/* NDJSON: the prompt's own events as they come. */
		puts(json_object_to_json_string_ext(env, JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE));
		fflush(stdout);
		direct = -1;	/* no text of its own */
	}
	if (strcmp(type, "session_update") == 0 && direct != -1) {
		upd = json_get_obj(data, "update");
		content = json_get_obj(upd, "content");
		approve_show_update(ps[i].ctx, upd);
		t = json_get_str(upd, "sessionUpdate");
		if (t != NULL && strcmp(t, "agent_message_chunk") == 0 &&
		    (t = json_get_str(content, "text")) != NULL)
			pr_text(&ps[i], t, direct);
	} else if (strcmp(type, "permission_request") == 0) {
		heal_client_id(ps[i].heal, cid, sizeof(cid));
		approve_request(ps[i].ctx, cid, env);
	} else if (strcmp(type, "turn_complete") == 0) {
		ps[i].done = 1;
		output_verbose(ps[i].ctx, "turn complete: %s",
		    json_get_str(data, "stopReason") ? json_get_str(data, "stopReason") :
		    "end_turn");
	} else if (strcmp(type, "turn_error") == 0) {
		ps[i].done = ps[i].failed = 1;
		t = json_get_str(data, "message");
		code = json_get_str(data, "code");
		snprintf(ps[i].error, sizeof(ps[i].error), "turn failed: %s (%s)",
		    t != NULL ? t : "Prompt failed",
		    code != NULL ? code : "turn_error");
	}
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

/*
 * One answer of --parallel under a head(1)-style label naming the prompt:
 * "==> [2/3] the prompt text <==", a blank line between blocks.
 */
static void
pr_block(struct pr *p, size_t i, size_t n)
{
	const char	*c;
	int		 cut;

	if (i > 0)
		fputc('\n', stdout);
	printf("==> [%zu/%zu] ", i + 1, n);
	for (c = p->label, cut = 0; *c != '\0'; c++) {
		/* At most 60 bytes, not inside a UTF-8 character. */
		if (c - p->label >= 60 && ((unsigned char)*c & 0xc0) != 0x80) {
			cut = 1;
			break;
		}
		putchar((unsigned char)*c < 0x20 ? ' ' : *c);
	}
	printf("%s <==\n", cut ? "\xe2\x80\xa6" : "");
	if (p->text != NULL) {
		fputs(p->text, stdout);
		if (p->text_len > 0 && p->text[p->text_len - 1] != '\n')
			fputc('\n', stdout);
	}
}

/* ^C presses while a prompt waits (prompt_on_int). */
static volatile sig_atomic_t pr_interrupts;

/*
 * SIGINT while waiting: the first is seen by pr_wait, which cancels the
 * turn; a second leaves the turn running and exits at once.
 */
static void
pr_on_int(int sig)
{
	static const char msg[] = "\nqwen-restore: the turn is left running "
	    "(qwen-restore cancel ID ends it)\n";

	(void)sig;
	if (pr_interrupts++ > 0) {
		(void)write(STDERR_FILENO, msg, sizeof(msg) - 1);
		_exit(EXIT_INTERRUPT);
	}
}

/*
 * ^C or --max-time: cancel the session's turn and say so; the turn's end
 * is then waited for PR_CANCEL_GRACE_MS at most.  Returns the new
 * deadline.
 */
static uint64_t
pr_stop_turn(struct rctx *ctx, int why)
{
	if (why == EXIT_INTERRUPT)
		fprintf(stderr, "\n%s: ^C: cancelling the turn (^C again "
		    "leaves it running)\n", getprogname());
	else
		fprintf(stderr, "\n%s: --max-time %.3g s passed: cancelling "
		    "the turn\n", getprogname(), (double)ctx->max_time_ms / 1000);
	(void)commands_cancel(ctx);
	return clock_mono_ms() + PR_CANCEL_GRACE_MS;
}

/* Catch ^C from now on (the prompts are in: a turn is there to cancel). */
static void
pr_catch_int(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pr_on_int;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
}

/* Wait for the turns of all admitted prompts; returns the exit code. */
static int
pr_wait(struct rctx *ctx, struct sub *s, struct pr *ps, size_t n)
{
	json_object	*env;
	struct rerr	 e;
	size_t		 i, left;
	uint64_t	 deadline = 0;
	int		 direct = n == 1, rc = EXIT_OK, stopped = 0;
	size_t		 left_at_stop = 0;

	if (ctx->max_time_ms > 0)
		deadline = clock_mono_ms() + (uint64_t)ctx->max_time_ms;
	for (;;) {
		for (i = 0, left = 0; i < n; i++)
			left += !ps[i].done;
		if (left == 0 || (stopped && left < left_at_stop))
			break;
		env = events_next_until(s, deadline, &pr_interrupts, stopped ?
		    pr_interrupts : 0);
		if (env == NULL && !s->ended && !stopped) {
			stopped = pr_interrupts > 0 ? EXIT_INTERRUPT :
			    EXIT_MAXTIME;
			left_at_stop = left;
			deadline = pr_stop_turn(ctx, stopped);
			continue;
		}
		if (env == NULL)
			break;
		if (events_session_end(env)) {
			output_verbose(ctx, "session ended: %s",
			    json_get_str(env, "type"));
			json_object_put(env);
			break;
		}
		pr_event(ps, n, env, direct);
		json_object_put(env);
	}
	for (i = 0; i < n; i++) {
		if (!direct && !ctx->json)
			pr_block(&ps[i], i, n);
		if (ps[i].failed) {
			output_local(&e, "turn_error", EXIT_FAIL, "%s",
			    ps[i].error);
			rc = output_fail(ctx, &e);
		} else if (!ps[i].done && !stopped) {
			output_local(&e, "protocol_error", EXIT_FAIL,
			    "event stream ended before the turn finished");
			rc = output_fail(ctx, &e);
		}
	}
	if (direct && !ctx->json && ps[0].printed && !ps[0].ends_nl)
		fputc('\n', stdout);
	return stopped ? stopped : rc;
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
pr_body(const struct rctx *ctx, const char *text)
{
	json_object	*body, *arr, *block;

	body = xjson_object_new_object();
	arr = xjson_object_new_array();
	block = xjson_object_new_object();
	json_object_object_add(block, "type", xjson_object_new_string("text"));
	json_object_object_add(block, "text", xjson_object_new_string(text));
	json_object_array_add(arr, block);
	json_object_object_add(body, "prompt", arr);
	if (ctx->deadline_ms > 0)
		json_object_object_add(body, "deadlineMs",
		    xjson_object_new_int64(ctx->deadline_ms));
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
	events_stop(s);
	heal_client_id(h, id, sizeof(id));
	output_verbose(ctx, "subscribing after admission from event %lld",
	    (long long)(from < 0 ? 0 : from));
	return events_start(s, ctx, ctx->session_id, id, from < 0 ? 0 : from);
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

	if (ctx->no_wait && ctx->max_time_ms >= 0) {
		output_local(&e, "bad_request", EXIT_USAGE,
		    "--max-time: not with --no-wait (nothing is waited for)");
		return output_fail(ctx, &e);
	}
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
		ps[i].body = pr_body(ctx, texts[i]);
		ps[i].label = texts[i];
	}
	memset(&s, 0, sizeof(s));
	if (!ctx->no_wait) {
		heal_client_id(&h, id, sizeof(id));
		live = events_start(&s, ctx, ctx->session_id, id, -1) == 0;
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
		for (i = 0; i < n; i++) {
			if (!ps[i].admitted)
				continue;
			if (ctx->json) {
				json_object *b = http_resp_json(&ps[i].resp);

				if (b != NULL)
					puts(json_object_to_json_string_ext(b,
					    JSON_C_TO_STRING_PLAIN));
				json_object_put(b);
			} else if (!ps[i].legacy)
				printf("%s\n", ps[i].prompt_id);
		}
	} else if (admitted > 0) {
		pr_catch_int();
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
		events_stop(&s);
	output_verbose(ctx, "resumes sent: %d", h.resumes);
	heal_destroy(&h);
	pr_free(ps, texts, n);
	return rc;
}
