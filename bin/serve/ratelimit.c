/* SPDX-License-Identifier: ISC */
/*
 * ratelimit.c: --rate-limit, upstream's limiter: a fixed window per
 * client identity and route class (prompt, mutation, read), so that one
 * greedy client is refused 429 rate_limit_exceeded with Retry-After while
 * the others go on.  Every admitted or refused request carries
 * X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (seconds
 * until the window ends).  The identity is the Unix peer's uid (the
 * daemon's own uid is exempt unless --rate-limit-own-uid) or the TCP
 * peer's address (the client's, from X-Forwarded-For, behind a
 * --trusted-proxy).  The table is bounded: the least recently seen
 * identity makes room.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/http.h>

#include "clock.h"
#include "errors.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

#define RL_MAX_KEYS	4096

struct rl_entry {
	TAILQ_ENTRY(rl_entry)	 entry;
	char			 key[PEER_ADDR_MAX + 8];
	int			 cls;
	uint64_t		 window_start;
	int			 count;
	int			 logged;	/* this window's refusal logged */
};

static TAILQ_HEAD(rl_head, rl_entry) lru = TAILQ_HEAD_INITIALIZER(lru);
static size_t nkeys;
static uint64_t rejected[RL_NCLASSES];

static const char *const class_names[RL_NCLASSES] = { "prompt", "mutation",
    "read" };

/*
 * The limiter's clock.  Test hook: with QWEN_SERVE_TEST_CLOCK_FILE set it
 * is the number of milliseconds in that file, so that a test steps past a
 * window instead of waiting for it.
 */
static uint64_t
rl_now_ms(void)
{
	const char *path = getenv("QWEN_SERVE_TEST_CLOCK_FILE");
	unsigned long long ms;
	FILE *f;

	if (path == NULL || *path == '\0')
		return clock_mono_ms();
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	if (fscanf(f, "%llu", &ms) != 1)
		ms = 0;
	fclose(f);
	return (uint64_t)ms;
}

static int
class_limit(int cls)
{
	switch (cls) {
	case RL_PROMPT:
		return conf.rate_limit_prompt;
	case RL_MUTATION:
		return conf.rate_limit_mutation;
	default:
		return conf.rate_limit_read;
	}
}

/* The entry of key and cls, made (or recycled from the oldest) if new. */
static struct rl_entry *
rl_lookup(const char *key, int cls, uint64_t now)
{
	struct rl_entry *e;

	TAILQ_FOREACH(e, &lru, entry)
		if (e->cls == cls && strcmp(e->key, key) == 0) {
			TAILQ_REMOVE(&lru, e, entry);
			TAILQ_INSERT_HEAD(&lru, e, entry);
			return e;
		}
	if (nkeys >= RL_MAX_KEYS) {
		e = TAILQ_LAST(&lru, rl_head);
		TAILQ_REMOVE(&lru, e, entry);
	} else {
		e = xcalloc(1, sizeof(*e));
		nkeys++;
	}
	strlcpy(e->key, key, sizeof(e->key));
	e->cls = cls;
	e->window_start = now;
	e->count = 0;
	e->logged = 0;
	TAILQ_INSERT_HEAD(&lru, e, entry);
	return e;
}

/* Who is asking, as the limiter counts it; 1 when exempt. */
static int
rl_identity(struct evhttp_request *req, char *key, size_t len)
{
	char addr[PEER_ADDR_MAX];
	long uid;

	if ((uid = peer_unix_uid(req)) >= 0) {
		snprintf(key, len, "uid:%ld", uid);
		return (uid_t)uid == geteuid() && !conf.rate_limit_own_uid;
	}
	peer_client_addr(req, addr, sizeof(addr));
	snprintf(key, len, "addr:%s", addr);
	return 0;
}

static void
rl_headers(struct evhttp_request *req, int limit, int remaining, int reset_s)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	char v[24];

	snprintf(v, sizeof(v), "%d", limit);
	evhttp_add_header(out, "X-RateLimit-Limit", v);
	snprintf(v, sizeof(v), "%d", remaining);
	evhttp_add_header(out, "X-RateLimit-Remaining", v);
	snprintf(v, sizeof(v), "%d", reset_s);
	evhttp_add_header(out, "X-RateLimit-Reset", v);
}

int
ratelimit_admit(struct evhttp_request *req, int cls)
{
	char key[PEER_ADDR_MAX + 8];
	struct rl_entry *e;
	struct qerr *err;
	uint64_t now, window = (uint64_t)conf.rate_limit_window_ms;
	int limit, reset_s;

	if (!conf.rate_limit || cls < 0 || cls >= RL_NCLASSES ||
	    rl_identity(req, key, sizeof(key)))
		return 0;
	now = rl_now_ms();
	e = rl_lookup(key, cls, now);
	if (now < e->window_start || now - e->window_start >= window) {
		e->window_start = now;
		e->count = 0;
		e->logged = 0;
	}
	limit = class_limit(cls);
	reset_s = (int)((e->window_start + window - now + 999) / 1000);
	if (e->count < limit) {
		e->count++;
		rl_headers(req, limit, limit - e->count, reset_s);
		return 0;
	}
	rejected[cls]++;
	if (!e->logged)		/* once a window: a flood is not a log flood */
		log_info("rate limit: %s over %d %s requests a window", key,
		    limit, class_names[cls]);
	e->logged = 1;
	rl_headers(req, limit, 0, reset_s);
	metrics_refusal(peer_unix_uid(req) >= 0, "rate_limited");
	if ((err = qerr_new("rate_limit_exceeded", NULL)) != NULL) {
		qerr_set_str(err, "routeClass", class_names[cls]);
		qerr_set_int(err, "limit", limit);
		qerr_set_retry_after(err, reset_s > 0 ? reset_s : 1);
	}
	http_send_qerr(req, err);
	return -1;
}

json_object *
ratelimit_rejected_json(void)
{
	json_object *o = xjson_object_new_object();

	for (int i = 0; i < RL_NCLASSES; i++)
		json_object_object_add(o, class_names[i],
		    xjson_object_new_int64((int64_t)rejected[i]));
	return o;
}

void
ratelimit_free(void)
{
	struct rl_entry *e;

	while ((e = TAILQ_FIRST(&lru)) != NULL) {
		TAILQ_REMOVE(&lru, e, entry);
		free(e);
	}
	nkeys = 0;
}
