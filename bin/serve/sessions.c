/* SPDX-License-Identifier: ISC */
/*
 * sessions.c: the session map.  A live session owns its event bus, its
 * client registry and its prompt FIFO (prompts.c).  Sessions leave the map by close, idle reaping,
 * last detach or the death of their channel; their ids are then
 * tombstoned for 60 s so that late child notifications are dropped.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

struct tombstone {
	TAILQ_ENTRY(tombstone)	 entry;
	char			 id[SERVE_SESSION_ID_MAX + 1];
	uint64_t		 expires_ms;
};

static TAILQ_HEAD(, session) sessions = TAILQ_HEAD_INITIALIZER(sessions);
/*
 * The same sessions by id: every request and every update from a child
 * finds its session, and with ten thousand sessions a walk of the list
 * was most of the daemon's time.
 */
RB_HEAD(session_tree, session);
int	session_cmp(const struct session *, const struct session *);
RB_PROTOTYPE(session_tree, session, by_id, session_cmp)
static struct session_tree sessions_by_id = RB_INITIALIZER(&sessions_by_id);
static TAILQ_HEAD(, tombstone) tombstones = TAILQ_HEAD_INITIALIZER(tombstones);
static size_t nsessions;
static int inflight;
static struct event *reaper;

static void	tombstone_add(const char *);

/* ---- map and tombstones ------------------------------------------------- */

/* The map's order: the id. */
int
session_cmp(const struct session *a, const struct session *b)
{
	return strcmp(a->id, b->id);
}
RB_GENERATE(session_tree, session, by_id, session_cmp)

struct session *
sessions_find(const char *id)
{
	struct session key;

	if (strlcpy(key.id, id, sizeof(key.id)) >= sizeof(key.id))
		return NULL;	/* longer than any id */
	return RB_FIND(session_tree, &sessions_by_id, &key);
}

/*
 * The log's session lookup (reqid_init()): the request and trace ids a
 * session last knew, or its restore's before it is registered.
 */
void
sessions_log_lookup(const char *id, size_t len, const char **rid, const char **tid)
{
	char buf[SERVE_SESSION_ID_MAX + 1];
	struct session *s;

	if (len >= sizeof(buf))
		return;
	memcpy(buf, id, len);
	buf[len] = '\0';
	if ((s = sessions_find(buf)) != NULL && s->log_rid[0] != '\0') {
		*rid = s->log_rid;
		*tid = s->log_tid;
		return;
	}
	inflight_log_ids(buf, rid, tid);	/* not registered yet */
}

/* The live sessions in order, for the routes that walk them. */
struct session *
sessions_first(void)
{
	return TAILQ_FIRST(&sessions);
}

struct session *
sessions_next(struct session *s)
{
	return TAILQ_NEXT(s, entry);
}

size_t
sessions_count(void)
{
	return nsessions;
}

size_t
sessions_active_prompts(void)
{
	struct session *s;
	size_t n = 0;

	TAILQ_FOREACH(s, &sessions, entry)
		n += s->active != NULL;
	return n;
}

size_t
sessions_subscribers(void)
{
	struct session *s;
	size_t n = 0;

	TAILQ_FOREACH(s, &sessions, entry)
		n += bus_subscriber_count(s->bus);
	return n;
}

void
sessions_totals(size_t *queued, size_t *perms)
{
	struct session *s;

	*queued = *perms = 0;
	TAILQ_FOREACH(s, &sessions, entry) {
		*queued += s->queued;
		*perms += permission_pending(s);
	}
}

struct session *
sessions_default(const char *workspace)
{
	struct session *s;

	TAILQ_FOREACH(s, &sessions, entry)
		if (s->is_default && strcmp(channel_workspace(s->channel), workspace) == 0)
			return s;
	return NULL;
}

/*
 * The tombstones' clock.  Test hook: with QWEN_SERVE_TEST_CLOCK_FILE set,
 * the clock is the number of milliseconds in that file (read at each
 * call), so a test steps to 60 s exactly instead of waiting for them.
 */
static uint64_t
tomb_now_ms(void)
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

static void
tombstones_prune(void)
{
	struct tombstone *t, *next;
	uint64_t now = tomb_now_ms();

	TAILQ_FOREACH_SAFE(t, &tombstones, entry, next)
		if (t->expires_ms <= now) {
			TAILQ_REMOVE(&tombstones, t, entry);
			free(t);
		}
}

int
session_tombstoned(const char *id)
{
	struct tombstone *t;

	tombstones_prune();
	TAILQ_FOREACH(t, &tombstones, entry)
		if (strcmp(t->id, id) == 0)
			return 1;
	return 0;
}

void
session_tombstone(const char *id)
{
	struct tombstone *t;

	TAILQ_FOREACH(t, &tombstones, entry)
		if (strcmp(t->id, id) == 0) {
			t->expires_ms = tomb_now_ms() + SERVE_TOMBSTONE_MS;
			return;
		}
	tombstone_add(id);
}

static void
tombstone_add(const char *id)
{
	struct tombstone *t;

	tombstones_prune();
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return;
	strlcpy(t->id, id, sizeof(t->id));
	t->expires_ms = tomb_now_ms() + SERVE_TOMBSTONE_MS;
	TAILQ_INSERT_TAIL(&tombstones, t, entry);
}

int
sessions_capacity_left(const char *workspace, int *total)
{
	long used = (long)nsessions + inflight, here = 0, left = INT_MAX;
	struct session *s;

	TAILQ_FOREACH(s, &sessions, entry)
		here += strcmp(channel_workspace(s->channel), workspace) == 0;
	here += (long)inflight_count_ws(workspace);
	if (total != NULL)
		*total = 0;
	if (conf.max_sessions > 0)
		left = conf.max_sessions - here;
	if (conf.max_total_sessions > 0 && conf.max_total_sessions - used < left) {
		left = conf.max_total_sessions - used;
		if (total != NULL)
			*total = 1;
	}
	return left <= 0 ? 0 : (int)left;
}

void
sessions_inflight_add(int delta)
{
	inflight += delta;
}

struct session *
session_new(const char *id, struct channel *ch)
{
	struct session *s;

	if (sessions_find(id) != NULL) {
		log_warnx("session %s: registered already", id);
		errno = EEXIST;		/* the map holds one session an id */
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	strlcpy(s->id, id, sizeof(s->id));
	if ((s->bus = bus_new(id, conf.event_ring_size)) == NULL ||
	    prompts_init(s) == -1) {
		bus_free(s->bus);
		free(s);
		return NULL;
	}
	s->channel = ch;
	TAILQ_INIT(&s->clients);
	s->created_wall_ms = s->last_seen_wall_ms = clock_wall_ms();
	s->last_active_mono_ms = clock_mono_ms();
	TAILQ_INSERT_TAIL(&sessions, s, entry);
	RB_INSERT(session_tree, &sessions_by_id, s);
	nsessions++;
	reqid_session(s);
	channel_session_added(ch);
	log_info("session %s: registered", id);
	return s;
}

/* Remove from the map and free; the bus ends its streams. */
static void
session_remove(struct session *s)
{
	permission_forget_session(s);
	TAILQ_REMOVE(&sessions, s, entry);
	RB_REMOVE(session_tree, &sessions_by_id, s);
	nsessions--;
	tombstone_add(s->id);
	prompts_clear(s);
	bus_free(s->bus);
	clients_clear(&s->clients);
	json_object_put(s->state);
	json_object_put(s->replay);
	json_object_put(s->replay_flags);
	json_object_put(s->turn_error);
	json_object_put(s->turns);
	json_object_put(s->midturn);
	autoturn_clear(s);
	channel_session_removed(s->channel);
	free(s);
}

void
session_close(struct session *s, const char *reason, const char *closed_by)
{
	json_object *d = xjson_object_new_object(), *p;

	log_info("session %s: closed (%s)", s->id, reason);
	permission_cancel_session(s, 1);
	if (s->active != NULL) {
		p = xjson_object_new_object();
		json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
		channel_notify(s->channel, "session/cancel", p);
	}
	if (channel_alive(s->channel))
		channel_close_session(s->channel, s->id);
	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "reason", xjson_object_new_string(reason));
	if (closed_by != NULL)
		json_object_object_add(d, "closedBy", xjson_object_new_string(closed_by));
	bus_publish(s->bus, "session_closed", d, NULL, NULL, 1);
	session_remove(s);
}

void
sessions_close_all(const char *reason)
{
	struct session *s;

	while ((s = TAILQ_FIRST(&sessions)) != NULL)
		session_close(s, reason, NULL);
}

void
sessions_channel_died(struct channel *ch, int exit_code, int signal_code, int killed)
{
	struct session *s, *next;
	json_object *d;
	char sig[32];

	TAILQ_FOREACH_SAFE(s, &sessions, entry, next) {
		if (s->channel != ch)
			continue;
		d = xjson_object_new_object();
		json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
		json_object_object_add(d, "reason", xjson_object_new_string(
		    killed ? "killed" : "channel_closed"));
		json_object_object_add(d, "exitCode", exit_code >= 0 ?
		    xjson_object_new_int(exit_code) : NULL);
		if (signal_code > 0) {
			snprintf(sig, sizeof(sig), "SIG%s", sigabbrev_np(signal_code) ?
			    sigabbrev_np(signal_code) : "UNKNOWN");
			json_object_object_add(d, "signalCode", xjson_object_new_string(sig));
		} else
			json_object_object_add(d, "signalCode", NULL);
		log_warnx("session %s died with its child", s->id);
		permission_cancel_session(s, 0);
		bus_publish(s->bus, "session_died", d, NULL, NULL, 1);
		session_remove(s);
	}
}

void
sessions_route_update(struct channel *ch, json_object *params)
{
	json_object *v;
	struct session *s;
	const char *id;

	if (!json_object_object_get_ex(params, "sessionId", &v) ||
	    (id = json_object_get_string(v)) == NULL)
		return;
	if ((s = sessions_find(id)) == NULL || s->channel != ch) {
		if (inflight_route_early(ch, id, params))
			return;
		log_debug("update for %s session %s dropped",
		    session_tombstoned(id) ? "closed" : "unknown", id);
		return;
	}
	prompts_update(s, params);
}

int
session_held(const struct session *s)
{
	return clients_count(&s->clients) > 0 || bus_subscriber_count(s->bus) > 0 ||
	    s->active != NULL || s->queued > 0 ||
	    s->expired != NULL;
}

/* ---- idle reaping ------------------------------------------------------- */

static void
on_reap(evutil_socket_t fd, short what, void *arg)
{
	struct session *s, *next;
	uint64_t now = clock_mono_ms();

	(void)fd; (void)what; (void)arg;
	if (conf.session_idle_timeout_ms <= 0)
		return;
	TAILQ_FOREACH_SAFE(s, &sessions, entry, next) {
		if (bus_subscriber_count(s->bus) > 0 || s->active != NULL ||
		    s->queued > 0 || s->expired != NULL)
			continue;
		if (now - s->last_active_mono_ms >= (uint64_t)conf.session_idle_timeout_ms)
			session_close(s, "idle_timeout", NULL);
	}
}

void
sessions_start_reaper(void)
{
	struct timeval tv;

	if (conf.session_reap_interval_ms <= 0)
		return;
	tv.tv_sec = conf.session_reap_interval_ms / 1000;
	tv.tv_usec = (conf.session_reap_interval_ms % 1000) * 1000;
	reaper = event_new(serve_base, -1, EV_PERSIST, on_reap, NULL);
	event_add(reaper, &tv);
}

void
sessions_free(void)
{
	struct tombstone *t;

	if (reaper != NULL)
		event_free(reaper);
	reaper = NULL;
	while ((t = TAILQ_FIRST(&tombstones)) != NULL) {
		TAILQ_REMOVE(&tombstones, t, entry);
		free(t);
	}
}
