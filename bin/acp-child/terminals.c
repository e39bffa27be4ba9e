/* SPDX-License-Identifier: ISC */
/*
 * terminals.c: how the daemon's prompts of a loaded session ended, read
 * back from the transcript for load's promptTerminals.  A prompt a daemon
 * sent carries its id on the user record (daemonPromptId); it ended if
 * the transcript has its turn_result, or anything of the agent or a
 * later prompt after it ({terminal: "completed", stopReason:
 * "reconstructed_from_transcript"}); the last one with nothing after it
 * was cut off with the daemon that ran it ({terminal: "interrupted",
 * code: "daemon_lost"}).  Only the replayed window is read, and only the
 * records whose bytes name a prompt id are parsed.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonw.h"
#include "load.h"
#include "transcript.h"
#include "xmalloc.h"

#define TERMINALS_MAX	256	/* the newest prompts of the window */

struct term {
	char	 id[TERMINAL_ID_MAX + 1];
	int	 ended;
};

/* Whether record rec's bytes mention key (a cheap look before a parse). */
static int
mentions(struct transcript *tx, uint32_t rec, const char *key)
{
	const char *bytes;
	size_t len;

	switch (transcript_record_bytes(tx, rec, &bytes, &len, NULL)) {
	case 1:
		return memmem(bytes, len, key, strlen(key)) != NULL;
	case 0:
		return 1;	/* in several fragments: parse it to know */
	default:
		return 0;
	}
}

/* The string member key of record rec (or of its systemPayload), copied. */
static int
record_str(struct transcript *tx, uint32_t rec, int payload, const char *key,
    char *out, size_t size)
{
	json_object *r, *o;
	const char *s;
	int ok = 0;

	if ((r = transcript_load_record(tx, rec, NULL)) == NULL)
		return 0;
	o = payload ? json_get_obj(r, "systemPayload") : r;
	if ((s = json_get_str(o, key)) != NULL && *s != '\0' && strlen(s) < size) {
		memcpy(out, s, strlen(s) + 1);
		ok = 1;
	}
	json_object_put(r);
	return ok;
}

/* Mark prompt id ended (it had a turn_result). */
static void
mark_ended(struct term *t, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].id, id) == 0)
			t[i].ended = 1;
}

/* Record rec of the window, read into t[0..*n). */
static void
terminals_record(struct transcript *tx, uint32_t rec, struct term *t, size_t *n)
{
	enum tx_type ty = transcript_type(tx, rec);
	char id[TERMINAL_ID_MAX + 1];

	if (ty == TX_USER && mentions(tx, rec, "\"daemonPromptId\"") &&
	    record_str(tx, rec, 0, "daemonPromptId", id, sizeof(id))) {
		if (*n > 0)
			t[*n - 1].ended = 1;	/* a later prompt: that one is over */
		if (*n == TERMINALS_MAX) {
			memmove(t, t + 1, (TERMINALS_MAX - 1) * sizeof(*t));
			(*n)--;
		}
		memcpy(t[*n].id, id, sizeof(id));
		t[(*n)++].ended = 0;
	} else if (ty == TX_SYSTEM && strcmp(transcript_subtype(tx, rec), "turn_result") == 0 &&
	    record_str(tx, rec, 1, "promptId", id, sizeof(id)))
		mark_ended(t, *n, id);
	else if (*n > 0 && (ty == TX_ASSISTANT || ty == TX_TOOL_RESULT))
		t[*n - 1].ended = 1;	/* the agent answered it */
}

void
terminals_write(struct transcript *tx, const struct tx_chain *ch, size_t from,
    struct jbuf *b)
{
	struct term *t;
	size_t n = 0;

	if (tx == NULL)
		return;
	t = xcalloc(TERMINALS_MAX, sizeof(*t));
	for (size_t i = from; i < ch->len; i++)
		terminals_record(tx, ch->rec[i], t, &n);
	if (n == 0) {
		free(t);
		return;
	}
	jbuf_puts(b, ",\"promptTerminals\":[");
	for (size_t i = 0; i < n; i++) {
		jbuf_puts(b, i > 0 ? ",{\"promptId\":" : "{\"promptId\":");
		jsonw_string(b, t[i].id, strlen(t[i].id));
		jbuf_puts(b, t[i].ended ?
		    ",\"terminal\":\"completed\",\"stopReason\":\"reconstructed_from_transcript\"}" :
		    ",\"terminal\":\"interrupted\",\"code\":\"daemon_lost\"}");
	}
	jbuf_puts(b, "]");
	free(t);
}
