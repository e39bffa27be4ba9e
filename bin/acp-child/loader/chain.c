/* SPDX-License-Identifier: ISC */
/*
 * chain.c: the active chain of a transcript (upstream-transcript.md 3.5,
 * 3.7): walk parentUuid from the leaf, stop at a root, a gap or a cycle
 * (never reconnect), reverse; find the last chat_compression checkpoint and
 * count turn starts and model-history entries.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "transcript-int.h"

/* Does a user record with this subtype start a turn? */
int
chain_is_turn_start(const struct transcript *t, uint32_t rec)
{
	static const char *const not_start[] = {
		"goal_runtime", "notification", "cron", "mid_turn_user_message",
		"realtime_message", NULL
	};
	const char *sub;
	int i;

	if (transcript_type(t, rec) != TX_USER)
		return 0;
	sub = transcript_subtype(t, rec);
	for (i = 0; not_start[i] != NULL; i++)
		if (strcmp(sub, not_start[i]) == 0)
			return 0;
	return 1;
}

/* Python truthiness of a JSON value. */
static int
truthy(json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return 0;
	case json_type_boolean:
		return json_object_get_boolean(v);
	case json_type_int:
		return json_object_get_int64(v) != 0;
	case json_type_double:
		return json_object_get_double(v) != 0.0;
	case json_type_string:
		return json_object_get_string_len(v) > 0;
	case json_type_array:
		return json_object_array_length(v) > 0;
	case json_type_object:
		return json_object_object_length(v) > 0;
	}
	return 0;
}

/* The truthy compressedHistory of a checkpoint record (borrowed from obj), or NULL. */
static json_object *
checkpoint_history(json_object *obj)
{
	json_object *sp, *h;

	if (!json_object_object_get_ex(obj, "systemPayload", &sp) ||
	    !json_object_is_type(sp, json_type_object) ||
	    !json_object_object_get_ex(sp, "compressedHistory", &h) || !truthy(h))
		return NULL;
	return h;
}

/* Is rec a chat_compression system record? */
static int
is_compression(const struct transcript *t, uint32_t rec)
{
	return transcript_type(t, rec) == TX_SYSTEM &&
	    strcmp(transcript_subtype(t, rec), "chat_compression") == 0;
}

int
chain_is_checkpoint(struct transcript *t, uint32_t rec, char **cause)
{
	json_object *obj;
	int found;

	if (!is_compression(t, rec))
		return 0;
	if ((obj = transcript_load_record(t, rec, cause)) == NULL)
		return errno == EBADMSG ? 0 : -1;	/* unparsable: no checkpoint */
	found = checkpoint_history(obj) != NULL;
	json_object_put(obj);
	return found;
}

/* Find the last checkpoint on the chain, newest first (parses compressions only). */
static int
find_checkpoint(struct transcript *t, struct tx_chain *c, char **cause)
{
	size_t i;
	int found;

	for (i = c->len; i-- > 0;) {
		if ((found = chain_is_checkpoint(t, c->rec[i], cause)) == -1)
			return -1;
		if (found) {
			c->last_compression = (int64_t)i;
			break;
		}
	}
	return 0;
}

/* Append rec to the growing chain. */
static int
push(struct tx_chain *c, size_t *cap, uint32_t rec)
{
	uint32_t *n;

	if (c->len == *cap) {
		*cap = *cap ? *cap * 2 : 1024;
		if ((n = reallocarray(c->rec, *cap, sizeof *n)) == NULL)
			return -1;
		c->rec = n;
	}
	c->rec[c->len++] = rec;
	return 0;
}

/* The chain the index cache has for these very bytes (transcript-cache.c). */
static int
kept(const struct transcript *t, struct tx_chain *c, char **cause)
{
	const struct tx_kept_chain *k = t->kc;
	const uint32_t *rec;

	if ((c->rec = reallocarray(NULL, k->len + 1, sizeof *c->rec)) == NULL) {
		transcript_cause(cause, "chain: out of memory");
		return -1;
	}
	/* Damaged: an empty chain, and the caller sees the index damaged. */
	if ((rec = transcript_cache_chain(t)) == NULL)
		return 0;
	memcpy(c->rec, rec, k->len * sizeof *c->rec);
	c->len = k->len;
	c->last_compression = k->last_compression;
	c->model_history = k->model_history;
	c->gaps = k->gaps;
	c->cycles = k->cycles;
	c->turn_starts = k->turn_starts;
	return 0;
}

int
chain_build(struct transcript *t, struct tx_chain *c, char **cause)
{
	size_t cap = 0, i, n = transcript_count(t);
	uint8_t *seen;
	uint32_t cur, tmp;
	int rc;

	memset(c, 0, sizeof *c);
	c->leaf = transcript_leaf(t);
	c->last_compression = -1;
	c->model_history = -1;
	if (t->kc != NULL)
		return kept(t, c, cause);
	if (c->leaf < 0)
		return 0;
	if ((seen = calloc(n / 8 + 1, 1)) == NULL)
		goto nomem;
	cur = (uint32_t)c->leaf;
	for (;;) {
		if (seen[cur / 8] & (1u << (cur % 8))) {
			c->cycles = 1;
			break;
		}
		seen[cur / 8] |= 1u << (cur % 8);
		if (push(c, &cap, cur) == -1)
			goto nomem;
		if ((rc = transcript_parent(t, cur, &cur)) == 0)
			break;
		if (rc < 0) {
			c->gaps = 1;
			break;
		}
	}
	free(seen);
	seen = NULL;
	for (i = 0; i < c->len / 2; i++) {
		tmp = c->rec[i];
		c->rec[i] = c->rec[c->len - 1 - i];
		c->rec[c->len - 1 - i] = tmp;
	}
	for (i = 0; i < c->len; i++)
		c->turn_starts += chain_is_turn_start(t, c->rec[i]);
	if (find_checkpoint(t, c, cause) == -1) {
		chain_clear(c);
		return -1;
	}
	return 0;
nomem:
	free(seen);
	chain_clear(c);
	transcript_cause(cause, "chain: out of memory");
	return -1;
}

void
chain_clear(struct tx_chain *c)
{
	if (c == NULL)
		return;
	free(c->rec);
	memset(c, 0, sizeof *c);
	c->leaf = -1;
	c->last_compression = -1;
	c->model_history = -1;
}

/* Entries of the checkpoint; *last_user set from the last one's role. */
static int64_t
checkpoint_entries(struct transcript *t, uint32_t rec, int *last_user, char **cause)
{
	json_object *obj, *h, *e, *role;
	int64_t n;

	if ((obj = transcript_load_record(t, rec, cause)) == NULL)
		return -1;
	if ((h = checkpoint_history(obj)) == NULL ||
	    !json_object_is_type(h, json_type_array)) {
		json_object_put(obj);
		transcript_cause(cause, "%s: malformed compressedHistory", transcript_path(t));
		return -1;
	}
	n = (int64_t)json_object_array_length(h);
	e = n > 0 ? json_object_array_get_idx(h, n - 1) : NULL;
	*last_user = e != NULL && json_object_object_get_ex(e, "role", &role) &&
	    json_object_is_type(role, json_type_string) &&
	    strcmp(json_object_get_string(role), "user") == 0;
	json_object_put(obj);
	return n;
}

int64_t
chain_model_history(struct transcript *t, const struct tx_chain *c, char **cause)
{
	int64_t n = 0;
	size_t i = 0;
	int last_user = 0;
	unsigned fl;
	const char *sub;

	if (c->model_history >= 0)
		return c->model_history;
	if (c->last_compression >= 0) {
		n = checkpoint_entries(t, c->rec[c->last_compression], &last_user,
		    cause);
		if (n < 0)
			return -1;
		i = (size_t)c->last_compression + 1;
	}
	for (; i < c->len; i++) {
		fl = transcript_flags(t, c->rec[i]);
		if (transcript_type(t, c->rec[i]) == TX_SYSTEM || !(fl & TX_F_MESSAGE))
			continue;
		sub = transcript_subtype(t, c->rec[i]);
		if (strcmp(sub, "realtime_message") == 0)
			continue;
		if (strcmp(sub, "mid_turn_user_message") == 0 && n > 0 && last_user)
			continue;		/* merged into the previous user entry */
		n++;
		last_user = (fl & TX_F_ROLE_USER) != 0;
	}
	return n;
}
