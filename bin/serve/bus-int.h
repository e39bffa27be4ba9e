/* SPDX-License-Identifier: ISC */
/*
 * bus-int.h: the bus's ring, shared by bus.c (the ring) and sse.c (its
 * SSE subscribers).
 */
#ifndef QWEN_SERVE_BUS_INT_H
#define QWEN_SERVE_BUS_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "serve.h"

struct ring_ev {
	uint64_t	 id;
	char		*frame;
	size_t		 len;
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


/* ---- bus.c ------------------------------------------------------------- */
/* The envelope {id?, v, type, data, promptId?, ...}; data: takes ownership. */
json_object	*bus_envelope(uint64_t id, const char *type, json_object *data,
		    const char *prompt_id, const char *client_id);
/* The SSE frame of env (no id line for id 0); caller frees; NULL: no memory. */
char		*bus_frame(json_object *env, uint64_t id, const char *type,
		    size_t *lenp);

/* What a ring or a subscriber's queue starts with, before it grows. */
#define BUS_FIRST_ROOM	8

/* ---- bus.c ---- */
/* Double a circular array's room (at most max), unwrapped; -1: cannot. */
int	bus_grow(void **, size_t, size_t *, size_t *, size_t, size_t);

#endif
