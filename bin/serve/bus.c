/*
 * bus.c: one event bus per session.  Events get per-session ids from 1
 * within a bus epoch and are kept in a ring for Last-Event-ID replay;
 * subscribers are chunked evhttp replies with a queue cap (warning at 75%,
 * eviction on overflow) and a heartbeat comment.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "clock.h"
#include "errors.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

struct ring_ev {
	uint64_t	 id;
	char		*frame;
	size_t		 len;
};

struct sse_sub {
	TAILQ_ENTRY(sse_sub)	 entry;
	struct bus		*bus;
	struct evhttp_request	*req;
	struct event		*hb;
	/*
	 * --writer-idle-timeout-ms: the output buffer's length when last
	 * seen, and when the socket last took bytes (or had none to take).
	 */
	struct event		*idle;
	size_t			 idle_out;
	uint64_t		 idle_since_ms;
	size_t			 max_queued;
	int			 warned;
	/*
	 * Sizes of the live frames still in the output buffer, oldest first:
	 * room for fcap, grown on demand up to fmax (max_queued and a margin).
	 */
	size_t			*fifo;
	size_t			 fcap, fmax, fhead, fcount, fbytes;
};

/* An in-process listener (an ACP connection holding the session). */
struct bus_listener {
	TAILQ_ENTRY(bus_listener) entry;
	struct bus		*bus;
	bus_listen_fn		 fn;
	void			*arg;
};

struct bus {
	char			 session_id[SERVE_SESSION_ID_MAX + 1];
	char			 epoch[UUID_LEN + 1];
	uint64_t		 next_id;
	uint64_t		 seeded_hi;	/* highest id handed out by bus_seed */
	int			 raw;		/* bus_new_raw(): a message stream */
	uint64_t		 delivered;	/* raw: highest id written to a stream */
	/*
	 * Room for cap frames, grown on demand up to limit (the ring size):
	 * most sessions never see enough events to need the whole of it.
	 */
	struct ring_ev		*ring;
	size_t			 cap, limit, head, count;
	size_t			 bytes;		/* frames in the ring */
	TAILQ_HEAD(, sse_sub)	 subs;
	size_t			 nsubs;
	TAILQ_HEAD(, bus_listener) listeners;
};

static void	sub_end(struct sse_sub *);

/* What a ring or a subscriber's queue starts with, before it grows. */
#define BUS_FIRST_ROOM	8

/*
 * Grow a circular array of n used elements of size sz from head (room
 * for *cap) to twice the room, at most max, unwrapped: -1 when it cannot.
 */
static int
bus_grow(void **arr, size_t sz, size_t *cap, size_t *head, size_t n,
    size_t max)
{
	size_t ncap = *cap * 2 > max ? max : *cap * 2, first;
	char *na, *old = *arr;

	if (ncap <= *cap || (na = reallocarray(NULL, ncap, sz)) == NULL)
		return -1;
	first = *cap - *head < n ? *cap - *head : n;
	memcpy(na, old + *head * sz, first * sz);
	memcpy(na + first * sz, old, (n - first) * sz);
	free(old);
	*arr = na;
	*cap = ncap;
	*head = 0;
	return 0;
}

struct bus *
bus_new(const char *session_id, size_t ring_size)
{
	struct bus *b;

	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	b->limit = ring_size;
	b->cap = ring_size < BUS_FIRST_ROOM ? ring_size : BUS_FIRST_ROOM;
	if ((b->ring = calloc(b->cap, sizeof(*b->ring))) == NULL) {
		free(b);
		return NULL;
	}
	strlcpy(b->session_id, session_id, sizeof(b->session_id));
	uuid_new(b->epoch);
	b->next_id = 1;
	TAILQ_INIT(&b->subs);
	TAILQ_INIT(&b->listeners);
	return b;
}

struct bus *
bus_new_raw(const char *name, size_t ring_size)
{
	struct bus *b = bus_new(name, ring_size);

	if (b != NULL)
		b->raw = 1;
	return b;
}

void
bus_free(struct bus *b)
{
	struct sse_sub *s = NULL;
	struct bus_listener *l;

	if (b == NULL)
		return;
	while ((s = TAILQ_FIRST(&b->subs)) != NULL)
		sub_end(s);
	while ((l = TAILQ_FIRST(&b->listeners)) != NULL) {
		TAILQ_REMOVE(&b->listeners, l, entry);
		l->fn(l->arg, NULL, 1);	/* the bus is gone */
		free(l);
	}
	for (size_t i = 0; i < b->count; i++)
		free(b->ring[(b->head + i) % b->cap].frame);
	free(b->ring);
	free(b);
}

const char *
bus_epoch(const struct bus *b)
{
	return b->epoch;
}

uint64_t
bus_last_id(const struct bus *b)
{
	return b->next_id - 1;
}

size_t
bus_subscriber_count(const struct bus *b)
{
	return b->nsubs;
}

/* The envelope {id?, v, type, data, promptId?, originatorClientId?, _meta}. */
static json_object *
envelope(uint64_t id, const char *type, json_object *data, const char *prompt_id,
    const char *client_id)
{
	json_object *o = xjson_object_new_object(), *meta = xjson_object_new_object();

	if (id != 0)
		json_object_object_add(o, "id", xjson_object_new_int64((int64_t)id));
	json_object_object_add(o, "v", xjson_object_new_int(1));
	json_object_object_add(o, "type", xjson_object_new_string(type));
	json_object_object_add(o, "data", data != NULL ? data : xjson_object_new_object());
	if (prompt_id != NULL)
		json_object_object_add(o, "promptId", xjson_object_new_string(prompt_id));
	if (client_id != NULL)
		json_object_object_add(o, "originatorClientId",
		    xjson_object_new_string(client_id));
	json_object_object_add(meta, "serverTimestamp",
	    xjson_object_new_int64((int64_t)clock_wall_ms()));
	json_object_object_add(o, "_meta", meta);
	return o;
}

/* "id: N\nevent: T\ndata: JSON\n\n" (no id line for id 0); caller frees. */
static char *
frame_of(json_object *env, uint64_t id, const char *type, size_t *lenp)
{
	const char *js = json_object_to_json_string_ext(env,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	char *f = NULL;
	int n;

	if (id != 0)
		n = asprintf(&f, "id: %llu\nevent: %s\ndata: %s\n\n",
		    (unsigned long long)id, type, js);
	else
		n = asprintf(&f, "event: %s\ndata: %s\n\n", type, js);
	if (n < 0)
		return NULL;
	*lenp = (size_t)n;
	return f;
}

static size_t
sub_out_bytes(struct sse_sub *s)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(s->req);

	if (evcon == NULL)
		return 0;
	return evbuffer_get_length(bufferevent_get_output(
	    evhttp_connection_get_bufferevent(evcon)));
}

/*
 * Forget the frames the kernel has taken: the output buffer holds the
 * newest out bytes, so a front frame is gone when the rest still cover
 * them.  What remains is the subscriber's queue.
 */
static void
sub_account(struct sse_sub *s)
{
	size_t out = sub_out_bytes(s);

	while (s->fcount > 0 && s->fbytes - s->fifo[s->fhead] >= out) {
		s->fbytes -= s->fifo[s->fhead];
		s->fhead = (s->fhead + 1) % s->fcap;
		s->fcount--;
	}
}

/*
 * Only we add to a stream's output buffer, so between two looks it can
 * only shrink: a smaller (or empty) buffer means the socket took bytes.
 */
static void
sub_idle_look(struct sse_sub *s)
{
	size_t out = sub_out_bytes(s);

	if (out == 0 || out < s->idle_out)
		s->idle_since_ms = clock_mono_ms();
	s->idle_out = out;
}

static void
sub_write(struct sse_sub *s, const char *frame, size_t len, int live)
{
	struct evbuffer *buf = evbuffer_new();
	size_t sz = len + 12;	/* chunk size line and CRLF */

	if (buf == NULL)
		return;
	sub_idle_look(s);
	evbuffer_add(buf, frame, len);
	evhttp_send_reply_chunk(s->req, buf);
	s->idle_out = sub_out_bytes(s);
	evbuffer_free(buf);
	if (!live)
		return;
	sub_account(s);
	if (s->fcount == s->fcap)
		(void)bus_grow((void **)&s->fifo, sizeof(*s->fifo), &s->fcap,
		    &s->fhead, s->fcount, s->fmax);
	if (s->fcount < s->fcap) {
		s->fifo[(s->fhead + s->fcount) % s->fcap] = sz;
		s->fcount++;
		s->fbytes += sz;
	} else
		s->fcount = s->fcap + 1;	/* overflow: evicted by the check */
}

/* A synthetic (id-less) event to one subscriber. */
static void
sub_synthetic(struct sse_sub *s, const char *type, json_object *data)
{
	json_object *env;
	size_t len;
	char *f;

	if (s->bus->raw) {	/* a message stream carries messages only */
		json_object_put(data);
		return;
	}
	env = envelope(0, type, data, NULL, NULL);
	f = frame_of(env, 0, type, &len);

	if (f != NULL)
		sub_write(s, f, len, 0);
	free(f);
	json_object_put(env);
}

/*
 * The byte cap of a subscriber's queue.  An ACP stream (a raw bus) gets a
 * load's whole bounded snapshot in one burst, the replay before the
 * answer, when it was opened while the load ran: its queue holds that
 * burst on top of the ordinary cap, or the answer would be evicted with it.
 */
static size_t
sub_max_bytes(const struct sse_sub *s)
{
	return s->bus->raw ? SERVE_SSE_QUEUE_BYTES + conf.compacted_replay_max_bytes :
	    SERVE_SSE_QUEUE_BYTES;
}

/* Queue caps: warn at 75%, evict on overflow.  Returns -1 when evicted. */
static int
sub_check_queue(struct sse_sub *s)
{
	size_t queued, bytes, out, max_bytes = sub_max_bytes(s);
	json_object *d;

	sub_account(s);
	queued = s->fcount;
	out = sub_out_bytes(s);
	bytes = out < s->fbytes ? out : s->fbytes;
	if (queued > s->max_queued || bytes > max_bytes) {
		d = xjson_object_new_object();
		json_object_object_add(d, "reason", xjson_object_new_string(
		    queued > s->max_queued ? "queue_overflow" : "queue_bytes_overflow"));
		json_object_object_add(d, "droppedAfter",
		    xjson_object_new_int64((int64_t)bus_last_id(s->bus)));
		json_object_object_add(d, "queueSize", xjson_object_new_int64((int64_t)queued));
		json_object_object_add(d, "maxQueued", xjson_object_new_int64((int64_t)s->max_queued));
		json_object_object_add(d, "queuedBytes", xjson_object_new_int64((int64_t)bytes));
		json_object_object_add(d, "maxQueuedBytes", xjson_object_new_int64((int64_t)max_bytes));
		log_info("session %s: evicting a slow SSE client (%zu frames, %zu bytes)",
		    s->bus->session_id, queued, bytes);
		sub_synthetic(s, "client_evicted", d);
		sub_end(s);
		return -1;
	}
	if (s->warned && queued * 8 < s->max_queued * 3 && bytes * 8 < max_bytes * 3)
		s->warned = 0;
	if (!s->warned && (queued * 4 >= s->max_queued * 3 ||
	    bytes * 4 >= max_bytes * 3)) {
		s->warned = 1;
		d = xjson_object_new_object();
		json_object_object_add(d, "queueSize", xjson_object_new_int64((int64_t)queued));
		json_object_object_add(d, "maxQueued", xjson_object_new_int64((int64_t)s->max_queued));
		json_object_object_add(d, "queuedBytes", xjson_object_new_int64((int64_t)bytes));
		json_object_object_add(d, "lastEventId",
		    xjson_object_new_int64((int64_t)bus_last_id(s->bus)));
		sub_synthetic(s, "slow_client_warning", d);
	}
	return 0;
}

/* End the stream and forget the subscriber (the connection may live on). */
static void
sub_end(struct sse_sub *s)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(s->req);

	TAILQ_REMOVE(&s->bus->subs, s, entry);
	s->bus->nsubs--;
	if (s->hb != NULL)
		event_free(s->hb);
	if (s->idle != NULL)
		event_free(s->idle);
	free(s->fifo);
	http_conn_set_sub(s->req, NULL);
	if (evcon != NULL)
		evhttp_connection_set_timeout(evcon, 30);
	evhttp_send_reply_end(s->req);
	free(s);
}

void
sse_sub_closed(struct sse_sub *s)
{
	log_debug("session %s: SSE client went away", s->bus->session_id);
	sub_end(s);
}

static void
sub_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	struct sse_sub *s = arg;
	static const char hb[] = ": heartbeat\n\n";

	(void)fd; (void)what;
	sub_write(s, hb, sizeof(hb) - 1, 1);
	(void)sub_check_queue(s);
}

/*
 * A stream whose socket took nothing for --writer-idle-timeout-ms while
 * bytes waited (a peer gone without a FIN, a client that stopped reading)
 * is evicted: client_evicted writer_idle_timeout, then the end.
 */
static void
sub_idle_check(evutil_socket_t fd, short what, void *arg)
{
	struct sse_sub *s = arg;
	uint64_t idle;
	json_object *d;

	(void)fd; (void)what;
	sub_idle_look(s);
	idle = clock_mono_ms() - s->idle_since_ms;
	if (s->idle_out == 0 || idle < (uint64_t)conf.writer_idle_timeout_ms)
		return;
	d = xjson_object_new_object();
	json_object_object_add(d, "reason", xjson_object_new_string("writer_idle_timeout"));
	json_object_object_add(d, "errorKind", xjson_object_new_string("writer_idle_timeout"));
	json_object_object_add(d, "idleForMs", xjson_object_new_int64((int64_t)idle));
	json_object_object_add(d, "timeoutMs", xjson_object_new_int64(conf.writer_idle_timeout_ms));
	log_info("session %s: evicting an SSE client whose socket took nothing "
	    "for %llu ms", s->bus->session_id, (unsigned long long)idle);
	sub_synthetic(s, "client_evicted", d);
	sub_end(s);
}

/* Look at the stream four times per timeout (at most once a second). */
static void
sub_idle_start(struct sse_sub *s)
{
	int64_t every = conf.writer_idle_timeout_ms / 4;
	struct timeval tv;

	if (conf.writer_idle_timeout_ms <= 0)
		return;
	if (every < 10)
		every = 10;
	if (every > 1000)
		every = 1000;
	tv.tv_sec = every / 1000;
	tv.tv_usec = (every % 1000) * 1000;
	s->idle_since_ms = clock_mono_ms();
	if ((s->idle = event_new(serve_base, -1, EV_PERSIST, sub_idle_check, s)) != NULL)
		event_add(s->idle, &tv);
}

/* Drop the oldest frame of the ring. */
static void
ring_evict(struct bus *b)
{
	b->bytes -= b->ring[b->head].len;
	free(b->ring[b->head].frame);
	b->ring[b->head].frame = NULL;
	b->head = (b->head + 1) % b->cap;
	b->count--;
}

/*
 * Keep a copy of the frame in the ring, evicting the oldest when it is
 * full in events or in bytes (the newest frame always stays): a session
 * nobody streams, or an ACP stream nobody holds open, keeps what a
 * reconnect may replay, never more.
 */
static void
ring_push(struct bus *b, uint64_t id, const char *frame, size_t len)
{
	struct ring_ev *slot;
	char *copy;

	if ((copy = malloc(len)) == NULL)
		return;
	memcpy(copy, frame, len);
	if (b->count == b->cap)
		(void)bus_grow((void **)&b->ring, sizeof(*b->ring), &b->cap,
		    &b->head, b->count, b->limit);
	while (b->count > 0 && (b->count == b->cap ||
	    b->bytes + len > SERVE_RING_BYTES))
		ring_evict(b);
	slot = &b->ring[(b->head + b->count) % b->cap];
	slot->id = id;
	slot->frame = copy;
	slot->len = len;
	b->count++;
	b->bytes += len;
}

/* Keep frame f (event id) in the ring and write it to every stream. */
static void
fan_out(struct bus *b, uint64_t id, const char *f, size_t len, int terminal)
{
	struct sse_sub *s, *next;

	ring_push(b, id, f, len);
	if (b->nsubs > 0)
		b->delivered = id;
	TAILQ_FOREACH_SAFE(s, &b->subs, entry, next) {
		sub_write(s, f, len, 1);
		if (terminal)
			sub_end(s);
		else
			(void)sub_check_queue(s);
	}
}

void
bus_publish(struct bus *b, const char *type, json_object *data,
    const char *prompt_id, const char *client_id, int terminal)
{
	uint64_t id = b->next_id++;
	json_object *env = envelope(id, type, data, prompt_id, client_id);
	struct bus_listener *l, *lnext;
	size_t len;
	char *f = frame_of(env, id, type, &len);

	TAILQ_FOREACH_SAFE(l, &b->listeners, entry, lnext)
		l->fn(l->arg, env, terminal);
	json_object_put(env);
	if (f == NULL)
		return;
	fan_out(b, id, f, len, terminal);
	free(f);
}

void
bus_publish_raw(struct bus *b, const char *json, size_t len)
{
	uint64_t id = b->next_id++;
	char *f = NULL;
	int n;

	n = asprintf(&f, "id: %llu\nevent: message\ndata: %.*s\n\n",
	    (unsigned long long)id, (int)len, json);
	if (n < 0)
		return;
	fan_out(b, id, f, (size_t)n, 0);
	free(f);
}

struct bus_listener *
bus_listen(struct bus *b, bus_listen_fn fn, void *arg)
{
	struct bus_listener *l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	l->bus = b;
	l->fn = fn;
	l->arg = arg;
	TAILQ_INSERT_TAIL(&b->listeners, l, entry);
	return l;
}

void
bus_unlisten(struct bus_listener *l)
{
	if (l == NULL)
		return;
	TAILQ_REMOVE(&l->bus->listeners, l, entry);
	free(l);
}

uint64_t
bus_seed_id(struct bus *b)
{
	b->seeded_hi = b->next_id++;
	return b->seeded_hi;
}

json_object *
bus_seed(struct bus *b, const char *type, json_object *data)
{
	return envelope(bus_seed_id(b), type, data, NULL, NULL);
}

/* state_resync_required {reason, detail?, lastDeliveredId, earliestAvailableId}. */
static void
sub_resync(struct sse_sub *s, const char *reason, const char *detail,
    int64_t last, uint64_t earliest)
{
	json_object *d = xjson_object_new_object();

	json_object_object_add(d, "reason", xjson_object_new_string(reason));
	if (detail != NULL)
		json_object_object_add(d, "detail", xjson_object_new_string(detail));
	json_object_object_add(d, "lastDeliveredId", xjson_object_new_int64(last));
	json_object_object_add(d, "earliestAvailableId",
	    xjson_object_new_int64((int64_t)earliest));
	sub_synthetic(s, "state_resync_required", d);
}

/* Replay ring events after last, then replay_complete. */
static void
sub_replay(struct sse_sub *s, int64_t last, const char *epoch)
{
	struct bus *b = s->bus;
	uint64_t earliest = b->count > 0 ? b->ring[b->head].id : b->next_id;
	uint64_t last_replayed = 0;
	size_t n = 0, bytes = 0;
	json_object *d;

	if (b->raw && (uint64_t)last + 1 < earliest)
		last = (int64_t)earliest - 1;	/* a message stream: what is left */
	if (epoch != NULL && strcmp(epoch, b->epoch) != 0) {
		sub_resync(s, "epoch_reset", "epoch_mismatch", last, earliest);
		return;
	}
	if ((uint64_t)last > bus_last_id(b)) {
		sub_resync(s, "epoch_reset", NULL, last, earliest);
		return;
	}
	if ((uint64_t)last + 1 < earliest) {
		sub_resync(s, b->count == 0 && b->seeded_hi > (uint64_t)last ?
		    "seeded_replay_not_in_ring" : "ring_evicted", NULL, last, earliest);
		return;
	}
	for (size_t i = 0; i < b->count; i++) {
		struct ring_ev *e = &b->ring[(b->head + i) % b->cap];

		if (e->id <= (uint64_t)last)
			continue;
		if (bytes + e->len > SERVE_SSE_REPLAY_BYTES) {
			sub_resync(s, "replay_budget_exceeded", NULL, last, earliest);
			return;
		}
		bytes += e->len;
		sub_write(s, e->frame, e->len, 0);
		last_replayed = e->id;
		n++;
	}
	if (last_replayed > b->delivered)
		b->delivered = last_replayed;
	d = xjson_object_new_object();
	if (n > 0)
		json_object_object_add(d, "lastReplayedEventId",
		    xjson_object_new_int64((int64_t)last_replayed));
	json_object_object_add(d, "lastEventId",
	    xjson_object_new_int64((int64_t)bus_last_id(b)));
	json_object_object_add(d, "replayedCount", xjson_object_new_int64((int64_t)n));
	sub_synthetic(s, "replay_complete", d);
}

static void
sse_headers(struct evhttp_request *req, const char *epoch)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	char stream_id[UUID_LEN + 1];

	uuid_new(stream_id);
	listen_cors_headers(req);
	evhttp_add_header(h, "Content-Type", "text/event-stream");
	evhttp_add_header(h, "Cache-Control", "no-cache, no-transform");
	evhttp_add_header(h, "Connection", "keep-alive");
	evhttp_add_header(h, "X-Accel-Buffering", "no");
	evhttp_add_header(h, "X-Qwen-Event-Epoch", epoch);
	evhttp_add_header(h, "X-Qwen-SSE-Stream-Id", stream_id);
}

void
bus_subscribe(struct bus *b, struct evhttp_request *req, int64_t last_event_id,
    const char *epoch, int max_queued)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct timeval tv;
	struct sse_sub *s = NULL;
	char retry[32];
	struct qerr *e;

	if (b->nsubs >= SERVE_MAX_SUBSCRIBERS) {
		if ((e = qerr_new("subscriber_limit_exceeded", NULL)) != NULL) {
			qerr_set_str(e, "sessionId", b->session_id);
			qerr_set_int(e, "limit", SERVE_MAX_SUBSCRIBERS);
		}
		http_send_qerr(req, e);
		return;
	}
	if (evcon == NULL || (s = calloc(1, sizeof(*s))) == NULL ||
	    (s->fifo = calloc(BUS_FIRST_ROOM, sizeof(*s->fifo))) == NULL) {
		free(s);
		http_error(req, "internal", NULL);
		return;
	}
	s->fcap = BUS_FIRST_ROOM;
	s->fmax = (size_t)max_queued + 8;
	s->bus = b;
	s->req = req;
	s->max_queued = (size_t)max_queued;
	TAILQ_INSERT_TAIL(&b->subs, s, entry);
	b->nsubs++;
	/* The server-wide timeout would kill a quiet stream. */
	evhttp_connection_set_timeout(evcon, 24 * 3600);
	sse_headers(req, b->epoch);
	evhttp_send_reply_start(req, 200, "OK");
	http_conn_set_sub(req, s);
	snprintf(retry, sizeof(retry), "retry: %d\n\n", SERVE_SSE_RETRY_MS);
	sub_write(s, retry, strlen(retry), 0);
	if (b->raw && last_event_id < 0)
		last_event_id = (int64_t)b->delivered;	/* what nobody got yet */
	if (last_event_id >= 0)
		sub_replay(s, last_event_id, epoch);
	sub_idle_start(s);
	if (conf.sse_heartbeat_ms > 0) {
		tv.tv_sec = conf.sse_heartbeat_ms / 1000;
		tv.tv_usec = (conf.sse_heartbeat_ms % 1000) * 1000;
		s->hb = event_new(serve_base, -1, EV_PERSIST, sub_heartbeat, s);
		if (s->hb != NULL)
			event_add(s->hb, &tv);
	}
}
