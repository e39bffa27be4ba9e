/* SPDX-License-Identifier: ISC */
/*
 * bus.c: one event bus per session.  Events get per-session ids from 1
 * within a bus epoch and are kept in a ring for Last-Event-ID replay; the
 * ring knows nothing of HTTP: sse.c writes the events to its subscribers.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-int.h"
#include "clock.h"
#include "serve.h"
#include "xmalloc.h"

/* sse.c's subscribers, set by main.c before any bus exists. */
static const struct bus_subscribers *subscribers;

void
bus_set_subscribers(const struct bus_subscribers *subs)
{
	subscribers = subs;
}

/* An in-process listener (an ACP connection holding the session). */
struct bus_listener {
	TAILQ_ENTRY(bus_listener) entry;
	struct bus		*bus;
	bus_listen_fn		 fn;
	void			*arg;
};

/*
 * Grow a circular array of n used elements of size sz from head (room
 * for *cap) to twice the room, at most max, unwrapped: -1 when it cannot.
 */
int
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
	struct bus_listener *l;

	if (b == NULL)
		return;
	subscribers->end_all(b);
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
json_object *
bus_envelope(uint64_t id, const char *type, json_object *data, const char *prompt_id,
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
char *
bus_frame(json_object *env, uint64_t id, const char *type, size_t *lenp)
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
	ring_push(b, id, f, len);
	if (b->nsubs > 0)
		b->delivered = id;
	subscribers->fan_out(b, f, len, terminal);
}

void
bus_publish(struct bus *b, const char *type, json_object *data,
    const char *prompt_id, const char *client_id, int terminal)
{
	uint64_t id = b->next_id++;
	json_object *env = bus_envelope(id, type, data, prompt_id, client_id);
	struct bus_listener *l, *lnext;
	size_t len;
	char *f = bus_frame(env, id, type, &len);

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
	return bus_envelope(bus_seed_id(b), type, data, NULL, NULL);
}
