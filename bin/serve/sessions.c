/*
 * sessions.c: the session map.  A live session owns its event bus, its
 * client registry and its prompt FIFO (one prompt runs at a time on the
 * child, the rest wait).  Sessions leave the map by close, idle reaping,
 * last detach or the death of their channel; their ids are then
 * tombstoned for 60 s so that late child notifications are dropped.
 */
#include "config.h"

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

struct prompt {
	TAILQ_ENTRY(prompt)	 entry;
	char			 id[UUID_LEN + 1];
	char			 client_id[SERVE_CLIENT_ID_MAX + 1];
	json_object		*params;
	struct chan_req		*req;
	struct session		*s;
	int64_t			 deadline_ms;	/* 0: none */
	struct event		*deadline_ev;
};

struct tombstone {
	TAILQ_ENTRY(tombstone)	 entry;
	char			 id[SERVE_SESSION_ID_MAX + 1];
	uint64_t		 expires_ms;
};

struct session_ext {
	struct session		 pub;
	struct event		*pump_ev;
	/*
	 * A prompt past its deadline that the child was told to cancel: until
	 * the child answers it (or the grace ends) the next prompt waits and
	 * the session's updates, late output of the expired one, are dropped.
	 */
	struct prompt		*expired;
	struct event		*grace_ev;
};

static TAILQ_HEAD(, session) sessions = TAILQ_HEAD_INITIALIZER(sessions);
static TAILQ_HEAD(, tombstone) tombstones = TAILQ_HEAD_INITIALIZER(tombstones);
static size_t nsessions;
static int inflight;
static struct event *reaper;

static void	session_pump(struct session *);
static void	tombstone_add(const char *);
static void	on_expired_grace(evutil_socket_t, short, void *);

/* ---- map and tombstones ------------------------------------------------- */

struct session *
sessions_find(const char *id)
{
	struct session *s;

	TAILQ_FOREACH(s, &sessions, entry)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
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

struct session *
sessions_default(const char *workspace)
{
	struct session *s;

	TAILQ_FOREACH(s, &sessions, entry)
		if (s->is_default && strcmp(channel_workspace(s->channel), workspace) == 0)
			return s;
	return NULL;
}

static void
tombstones_prune(void)
{
	struct tombstone *t, *next;
	uint64_t now = clock_mono_ms();

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
			t->expires_ms = clock_mono_ms() + SERVE_TOMBSTONE_MS;
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
	t->expires_ms = clock_mono_ms() + SERVE_TOMBSTONE_MS;
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

static void
on_pump(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what;
	session_pump(arg);
}

struct session *
session_new(const char *id, struct channel *ch)
{
	struct session_ext *x;
	struct session *s;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	s = &x->pub;
	strlcpy(s->id, id, sizeof(s->id));
	if ((s->bus = bus_new(id, conf.event_ring_size)) == NULL ||
	    (x->pump_ev = evtimer_new(serve_base, on_pump, s)) == NULL ||
	    (x->grace_ev = evtimer_new(serve_base, on_expired_grace, s)) == NULL) {
		if (x->pump_ev != NULL)
			event_free(x->pump_ev);
		bus_free(s->bus);
		free(x);
		return NULL;
	}
	s->channel = ch;
	TAILQ_INIT(&s->clients);
	TAILQ_INIT(&s->queue);
	s->created_wall_ms = s->last_seen_wall_ms = clock_wall_ms();
	s->last_active_mono_ms = clock_mono_ms();
	TAILQ_INSERT_TAIL(&sessions, s, entry);
	nsessions++;
	channel_session_added(ch);
	log_info("session %s registered", id);
	return s;
}

static void
prompt_free(struct prompt *p)
{
	if (p == NULL)
		return;
	channel_forget(p->req);
	if (p->deadline_ev != NULL)
		event_free(p->deadline_ev);
	json_object_put(p->params);
	free(p);
}

/* Remove from the map and free; the bus ends its streams. */
static void
session_remove(struct session *s)
{
	struct session_ext *x = (struct session_ext *)s;
	struct prompt *p;

	TAILQ_REMOVE(&sessions, s, entry);
	nsessions--;
	tombstone_add(s->id);
	prompt_free(s->active);
	prompt_free(x->expired);
	while ((p = TAILQ_FIRST(&s->queue)) != NULL) {
		TAILQ_REMOVE(&s->queue, p, entry);
		prompt_free(p);
	}
	event_free(x->pump_ev);
	event_free(x->grace_ev);
	bus_free(s->bus);
	clients_clear(&s->clients);
	json_object_put(s->state);
	json_object_put(s->replay);
	json_object_put(s->replay_flags);
	channel_session_removed(s->channel);
	free(x);
}

void
session_close(struct session *s, const char *reason, const char *closed_by)
{
	json_object *d = xjson_object_new_object(), *p;

	log_info("session %s closed (%s)", s->id, reason);
	if (s->active != NULL) {
		p = xjson_object_new_object();
		json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
		channel_notify(s->channel, "session/cancel", p);
	}
	if (channel_alive(s->channel)) {
		p = xjson_object_new_object();
		json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
		(void)channel_request(s->channel, "qwen/control/session/close", p,
		    (uint64_t)conf.init_timeout_ms, NULL, NULL);
	}
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
	if (((struct session_ext *)s)->expired != NULL) {
		log_debug("session %s: late output of an expired prompt dropped", id);
		return;
	}
	s->last_active_mono_ms = clock_mono_ms();
	bus_publish(s->bus, "session_update", json_object_get(params),
	    s->active != NULL ? s->active->id : NULL,
	    s->active != NULL && s->active->client_id[0] ? s->active->client_id : NULL, 0);
}

/* ---- prompts ------------------------------------------------------------ */

size_t
session_pending_prompts(const struct session *s)
{
	return s->queued + (s->active != NULL);
}

/* turn_error for p; extra: more data fields (takes ownership, NULL-safe). */
static void
turn_error_ex(struct session *s, struct prompt *p, const char *message,
    const char *code, const char *kind, json_object *extra)
{
	json_object *d = extra != NULL ? extra : xjson_object_new_object();

	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "message", xjson_object_new_string(message));
	if (code != NULL)
		json_object_object_add(d, "code", xjson_object_new_string(code));
	if (kind != NULL)
		json_object_object_add(d, "errorKind", xjson_object_new_string(kind));
	json_object_object_add(d, "promptId", xjson_object_new_string(p->id));
	bus_publish(s->bus, "turn_error", d, p->id,
	    p->client_id[0] ? p->client_id : NULL, 0);
}

static void
turn_error(struct session *s, struct prompt *p, const char *message,
    const char *code, const char *kind)
{
	turn_error_ex(s, p, message, code, kind, NULL);
}

/* The expired prompt is over (answered or given up on): take the next. */
static void
expired_settled(struct session *s, int may_close)
{
	struct session_ext *x = (struct session_ext *)s;

	evtimer_del(x->grace_ev);
	prompt_free(x->expired);
	x->expired = NULL;
	s->last_active_mono_ms = clock_mono_ms();
	session_pump(s);
	if (may_close && clients_count(&s->clients) == 0 && !session_held(s))
		session_close(s, "last_client_detached", NULL);
}

/* The child never answered the cancel of an expired prompt. */
static void
on_expired_grace(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)fd; (void)what;
	log_warnx("session %s: the agent did not end an expired prompt; "
	    "its answer will be dropped", s->id);
	expired_settled(s, 1);
}

/*
 * The running prompt is past its absolute deadline: every subscriber gets
 * turn_error prompt_deadline_exceeded, the child is told to cancel, and
 * the session moves on once the child lets go of it (or after a grace).
 */
static void
on_prompt_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct prompt *p = arg;
	struct session *s = p->s;
	struct session_ext *x = (struct session_ext *)s;
	struct timeval tv = { SERVE_PROMPT_CANCEL_GRACE_MS / 1000,
	    (SERVE_PROMPT_CANCEL_GRACE_MS % 1000) * 1000 };
	json_object *c, *d;
	char msg[128];

	(void)fd; (void)what;
	if (s->active != p)
		return;
	log_warnx("session %s: a prompt exceeded its %lld ms deadline", s->id,
	    (long long)p->deadline_ms);
	snprintf(msg, sizeof(msg), "Prompt exceeded its deadline of %lld ms",
	    (long long)p->deadline_ms);
	d = xjson_object_new_object();
	json_object_object_add(d, "deadlineMs", xjson_object_new_int64(p->deadline_ms));
	turn_error_ex(s, p, msg, "prompt_deadline_exceeded",
	    "prompt_deadline_exceeded", d);
	c = xjson_object_new_object();
	json_object_object_add(c, "sessionId", xjson_object_new_string(s->id));
	channel_notify(s->channel, "session/cancel", c);
	s->active = NULL;
	x->expired = p;
	evtimer_add(x->grace_ev, &tv);
}

/* The child answered session/prompt (or could not). */
static void
on_prompt_done(void *arg, enum chan_outcome o, json_object *payload)
{
	struct prompt *p = arg;
	struct session *s = p->s;
	json_object *d, *v;
	const char *stop = "end_turn", *msg = "Prompt failed", *code = NULL;

	p->req = NULL;
	if (p == ((struct session_ext *)s)->expired) {
		expired_settled(s, o != CHAN_CLOSED);	/* its turn_error is out */
		return;
	}
	s->active = NULL;
	s->last_active_mono_ms = clock_mono_ms();
	if (o == CHAN_RESULT) {
		if (json_object_object_get_ex(payload, "stopReason", &v) &&
		    json_object_is_type(v, json_type_string))
			stop = json_object_get_string(v);
		d = xjson_object_new_object();
		json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
		json_object_object_add(d, "stopReason", xjson_object_new_string(stop));
		json_object_object_add(d, "promptId", xjson_object_new_string(p->id));
		bus_publish(s->bus, "turn_complete", d, p->id,
		    p->client_id[0] ? p->client_id : NULL, 0);
	} else if (o == CHAN_ERROR) {
		if (json_object_object_get_ex(payload, "message", &v))
			msg = json_object_get_string(v);
		if (json_object_object_get_ex(payload, "data", &v) &&
		    json_object_object_get_ex(v, "code", &v) &&
		    json_object_is_type(v, json_type_string))
			code = json_object_get_string(v);
		turn_error(s, p, msg, code != NULL ? code : "acp_error", NULL);
	} else
		turn_error(s, p, "The agent process exited during the prompt",
		    "channel_closed", "acp_channel_unavailable");
	prompt_free(p);
	session_pump(s);
	/*
	 * Its last client detached while the prompt ran (a REST detach, an
	 * ACP connection that went away): once nothing holds it, it goes, as
	 * it does on a detach with nothing running.  (A dead child removes its
	 * sessions itself, with session_died.)
	 */
	if (o != CHAN_CLOSED && clients_count(&s->clients) == 0 && !session_held(s))
		session_close(s, "last_client_detached", NULL);
}

/* Arm p's absolute deadline as it goes to the child. */
static void
prompt_arm_deadline(struct prompt *p)
{
	struct timeval tv;

	if (p->deadline_ms <= 0 ||
	    (p->deadline_ev = evtimer_new(serve_base, on_prompt_deadline, p)) == NULL)
		return;
	tv.tv_sec = p->deadline_ms / 1000;
	tv.tv_usec = (p->deadline_ms % 1000) * 1000;
	evtimer_add(p->deadline_ev, &tv);
}

/* Start the next queued prompt when none runs (nor an expired one). */
static void
session_pump(struct session *s)
{
	struct prompt *p;

	while (s->active == NULL && ((struct session_ext *)s)->expired == NULL &&
	    (p = TAILQ_FIRST(&s->queue)) != NULL) {
		TAILQ_REMOVE(&s->queue, p, entry);
		s->queued--;
		s->active = p;
		p->req = channel_request(s->channel, "session/prompt", p->params, 0,
		    on_prompt_done, p);
		p->params = NULL;
		if (p->req == NULL) {
			s->active = NULL;
			turn_error(s, p, "The agent process is not available",
			    "acp_channel_unavailable", "acp_channel_unavailable");
			prompt_free(p);
		} else
			prompt_arm_deadline(p);
	}
}

/* prompt must be a non-empty array of objects. */
static int
prompt_valid(json_object *body)
{
	json_object *v;
	size_t n;

	if (!json_object_object_get_ex(body, "prompt", &v) ||
	    !json_object_is_type(v, json_type_array) ||
	    (n = json_object_array_length(v)) == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(v, i),
		    json_type_object))
			return 0;
	return 1;
}

const char *
session_prompt_admit(struct session *s, json_object *body, const char *client_id,
    const char **err)
{
	struct session_ext *x = (struct session_ext *)s;
	struct timeval now = { 0, SERVE_PROMPT_DISPATCH_MS * 1000 };
	struct prompt *p;
	json_object *params = NULL, *v;

	if (!prompt_valid(body)) {
		*err = "bad_prompt";
		return NULL;
	}
	if (conf.max_pending_prompts > 0 &&
	    session_pending_prompts(s) >= (size_t)conf.max_pending_prompts) {
		*err = "prompt_queue_full";
		return NULL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    json_object_deep_copy(body, &params, NULL) != 0) {
		free(p);
		*err = "internal";
		return NULL;
	}
	json_object_object_del(params, "deadlineMs");
	json_object_object_del(params, "eventDetailMode");
	json_object_object_del(params, "delivery");
	json_object_object_add(params, "sessionId", xjson_object_new_string(s->id));
	uuid_new(p->id);
	if (client_id != NULL)
		strlcpy(p->client_id, client_id, sizeof(p->client_id));
	p->params = params;
	p->s = s;
	/* deadlineMs (checked by the route) can only shorten the flag's. */
	p->deadline_ms = conf.prompt_deadline_ms;
	if (json_object_object_get_ex(body, "deadlineMs", &v) && v != NULL &&
	    (p->deadline_ms <= 0 || json_object_get_int64(v) < p->deadline_ms))
		p->deadline_ms = json_object_get_int64(v);
	TAILQ_INSERT_TAIL(&s->queue, p, entry);
	s->queued++;
	s->last_active_mono_ms = clock_mono_ms();
	/* Start it from the loop, after the 202 has been queued. */
	event_add(x->pump_ev, &now);
	return p->id;
}

void
session_cancel(struct session *s, const char *client_id)
{
	json_object *p, *d;

	if (s->active == NULL)
		return;
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	channel_notify(s->channel, "session/cancel", p);
	d = xjson_object_new_object();
	json_object_object_add(d, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(d, "promptId", xjson_object_new_string(s->active->id));
	bus_publish(s->bus, "prompt_cancelled", d, s->active->id, client_id, 0);
}

int
session_held(const struct session *s)
{
	return clients_count(&s->clients) > 0 || bus_subscriber_count(s->bus) > 0 ||
	    s->active != NULL || s->queued > 0 ||
	    ((const struct session_ext *)s)->expired != NULL;
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
		    s->queued > 0 || ((struct session_ext *)s)->expired != NULL)
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
