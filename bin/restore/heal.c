/* SPDX-License-Identifier: ISC */
/*
 * heal.c: prompt admission with the clientId self-heal of seed 001.
 *
 * Only the admission (POST /session/:id/prompt) heals.  On 400 with body
 * code invalid_client_id the stored id is stale: reattach by resume with
 * the workspace cwd and NO client id, store the new id, retry the prompt
 * exactly once.  Any other error propagates at once; a failed reattach
 * propagates; a second invalid_client_id propagates (no loop).  A 404
 * session_not_found (the session is not live: daemon restart, idle reap)
 * takes the same path unless --no-auto-resume; a session without a
 * persisted transcript then fails the resume with 404, which propagates.
 * Either retry is safe because a rejected admission never ran the prompt.
 *
 * Reattach is single-flight.  In one process the prompts of --parallel
 * share one (a mutex, an in-flight flag and a generation: a prompt that
 * failed with an id that has since changed just retries with the new one;
 * one that joins a running reattach shares its result).  Across processes
 * a flock on the session's lock file does the same: a process that waited
 * for the lock re-reads the stored id and, if it changed since its prompt
 * failed, uses it without a second resume.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "restore.h"

/* Start with the clientId stored for sid ("" when none). */
void
heal_init(struct heal *h, struct rctx *ctx, const char *sid)
{
	memset(h, 0, sizeof(*h));
	h->ctx = ctx;
	h->sid = sid;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	state_client_get(ctx->state, sid, h->client_id, sizeof(h->client_id));
}

/* Free what heal_init() and failed reattaches left. */
void
heal_destroy(struct heal *h)
{
	http_resp_clear(&h->fail_resp);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
}

/* The current clientId (threads read it under the mutex). */
void
heal_client_id(struct heal *h, char *buf, size_t len)
{
	pthread_mutex_lock(&h->mu);
	strlcpy(buf, h->client_id, len);
	pthread_mutex_unlock(&h->mu);
}

/* Whether resp is a 400 whose object body has code invalid_client_id. */
static int
is_code(const struct http_resp *resp, long status, const char *code)
{
	json_object	*body, *v;
	int		 yes = 0;

	if (resp->status != status || (body = http_resp_json(resp)) == NULL)
		return 0;
	if (json_object_object_get_ex(body, "code", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    strcmp(json_object_get_string(v), code) == 0)
		yes = 1;
	json_object_put(body);
	return yes;
}

/* Deep-copy an answer (for the waiters of a failed reattach). */
static void
resp_copy(struct http_resp *dst, const struct http_resp *src)
{
	*dst = *src;
	dst->body = src->body != NULL ? strndup(src->body, src->len) : NULL;
	dst->len = dst->body != NULL ? src->len : 0;
	dst->retry_after = src->retry_after ? strdup(src->retry_after) : NULL;
	dst->content_type = src->content_type ?
	    strdup(src->content_type) : NULL;
}

/*
 * The reattach itself, under the process-wide lock: either adopt an id
 * another process stored after ours failed, or resume without a client id.
 */
static int
heal_reattach_locked(struct heal *h, const char *failed_id,
    struct http_resp *resp, char *new_id, size_t len)
{
	char	 stored[RESTORE_ID_MAX + 1];
	int	 fd, rc;

	if ((fd = state_lock(h->ctx->state, h->sid)) == -1) {
		output_verbose(h->ctx, "cannot lock the session state: %s",
		    strerror(errno));
		return -1;
	}
	state_client_get(h->ctx->state, h->sid, stored, sizeof(stored));
	if (stored[0] != '\0' && strcmp(stored, failed_id) != 0) {
		output_verbose(h->ctx, "reattach: using the clientId stored "
		    "by another process");
		strlcpy(new_id, stored, len);
		state_unlock(fd);
		return 0;
	}
	output_verbose(h->ctx, "reattach: resume without a client id");
	pthread_mutex_lock(&h->mu);
	h->resumes++;
	pthread_mutex_unlock(&h->mu);
	rc = commands_restore_session(h->ctx, "resume", h->sid, NULL, resp, new_id, len);
	state_unlock(fd);
	return rc;
}

/*
 * Reattach after a prompt with failed_id was rejected: single-flight.
 * 0 when the caller should retry with h->client_id; -1 with *resp set.
 */
static int
heal_reattach(struct heal *h, const char *failed_id, struct http_resp *resp)
{
	char		 new_id[RESTORE_ID_MAX + 1] = "";
	unsigned	 joined;
	int		 rc;

	pthread_mutex_lock(&h->mu);
	if (strcmp(h->client_id, failed_id) != 0) {
		/* Another prompt of ours already healed. */
		pthread_mutex_unlock(&h->mu);
		return 0;
	}
	if (h->inflight) {
		joined = h->gen;
		while (h->inflight)
			pthread_cond_wait(&h->cv, &h->mu);
		rc = 0;
		if (h->fail_gen == joined) {
			resp_copy(resp, &h->fail_resp);
			rc = -1;
		}
		pthread_mutex_unlock(&h->mu);
		return rc;
	}
	h->inflight = 1;
	h->gen++;
	pthread_mutex_unlock(&h->mu);

	rc = heal_reattach_locked(h, failed_id, resp, new_id, sizeof(new_id));

	pthread_mutex_lock(&h->mu);
	if (rc == 0)
		strlcpy(h->client_id, new_id, sizeof(h->client_id));
	else {
		h->fail_gen = h->gen;
		http_resp_clear(&h->fail_resp);
		resp_copy(&h->fail_resp, resp);
	}
	h->inflight = 0;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

/* One admission attempt with the current clientId (copied to used). */
static int
heal_post(struct heal *h, json_object *body, struct http_resp *resp,
    char *used, size_t len)
{
	struct http_req	 req;
	char		*path;
	int		 rc;

	heal_client_id(h, used, len);
	if ((path = http_session_path(h->sid, "/prompt")) == NULL)
		return -1;
	/* The SDK puts no timer on the admission; --timeout-ms may. */
	http_req_init(&req, "POST", path, body, used,
	    h->ctx->timeout_ms > 0 ? h->ctx->timeout_ms : 0);
	rc = http_do(h->ctx, &req, resp);
	free(path);
	return rc;
}

/* Admission under the self-heal rules. */
int
heal_prompt(struct heal *h, json_object *body, struct http_resp *resp)
{
	char	used[RESTORE_ID_MAX + 1];
	int	stale, gone;

	if (heal_post(h, body, resp, used, sizeof(used)) == 0)
		return 0;
	stale = is_code(resp, 400, "invalid_client_id");
	gone = !h->ctx->no_auto_resume &&
	    is_code(resp, 404, "session_not_found");
	if (!stale && !gone)
		return -1;
	output_verbose(h->ctx, "prompt rejected (%s): reattaching",
	    stale ? "invalid_client_id" : "session_not_found");
	http_resp_clear(resp);
	if (heal_reattach(h, used, resp) == -1)
		return -1;
	http_resp_clear(resp);
	/* Exactly one retry; whatever it answers propagates. */
	return heal_post(h, body, resp, used, sizeof(used));
}
