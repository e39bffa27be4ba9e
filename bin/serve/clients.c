/* SPDX-License-Identifier: ISC */
/*
 * clients.c: the client registry of a session (seed 001).  Registration
 * never fails: an unknown or absent id gets a fresh client_<uuid>, a
 * registered one is reused and ref-counted.  Only the admission checks
 * (prompt, heartbeat, close) reject an unregistered id.  A session keeps
 * at most SERVE_MAX_CLIENTS: a new one pushes out the least recently seen,
 * which heals itself as any stale client does (seed 001).
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>


#include "clock.h"
#include "serve.h"

/* ^[A-Za-z0-9._:-]+$, at most 128 characters. */
int
client_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > SERVE_CLIENT_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)id[i]) && strchr("._:-", id[i]) == NULL)
			return 0;
	return 1;
}

struct client *
clients_find(struct client_list *l, const char *id)
{
	struct client *c;

	if (id == NULL)
		return NULL;
	TAILQ_FOREACH(c, l, entry)
		if (strcmp(c->id, id) == 0)
			return c;
	return NULL;
}

/* Make room for one more client: drop the least recently seen. */
static void
clients_make_room(struct client_list *l)
{
	struct client *c, *oldest = NULL;
	size_t n = 0;

	TAILQ_FOREACH(c, l, entry) {
		n++;
		if (oldest == NULL || c->last_seen_ms < oldest->last_seen_ms)
			oldest = c;
	}
	if (n >= SERVE_MAX_CLIENTS && oldest != NULL) {
		TAILQ_REMOVE(l, oldest, entry);
		free(oldest);
	}
}

const char *
clients_register(struct client_list *l, const char *requested)
{
	struct client *c;
	char uuid[UUID_LEN + 1];

	if ((c = clients_find(l, requested)) != NULL) {
		c->refs++;
		c->last_seen_ms = clock_wall_ms();
		return c->id;
	}
	clients_make_room(l);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	uuid_new(uuid);
	strlcpy(c->id, "client_", sizeof(c->id));
	strlcat(c->id, uuid, sizeof(c->id));
	c->refs = 1;
	c->last_seen_ms = clock_wall_ms();
	TAILQ_INSERT_TAIL(l, c, entry);
	return c->id;
}

int
clients_release(struct client_list *l, const char *id)
{
	struct client *c = clients_find(l, id);

	if (c == NULL)
		return 0;
	if (--c->refs == 0) {
		TAILQ_REMOVE(l, c, entry);
		free(c);
	}
	return 1;
}

size_t
clients_count(const struct client_list *l)
{
	const struct client *c;
	size_t n = 0;

	TAILQ_FOREACH(c, l, entry)
		n++;
	return n;
}

void
clients_clear(struct client_list *l)
{
	struct client *c;

	while ((c = TAILQ_FIRST(l)) != NULL) {
		TAILQ_REMOVE(l, c, entry);
		free(c);
	}
}
