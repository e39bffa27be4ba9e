/* SPDX-License-Identifier: ISC */
/*
 * turns.c: what GET /session/:id/turns/current and /turns/:promptId say
 * of a turn, as upstream's turn-status objects: {sessionId, state,
 * promptId, promptText, queuedAt, startedAt, endedAt, stopReason, error,
 * originatorClientId}, optional members omitted.  A live session keeps
 * the statuses of its last SERVE_TURNS_KEPT settled turns (upstream's
 * terminal overlay), so a prompt that ended is still found by its id.  A
 * prompt settles once (a prompt past its deadline is an error then, its
 * late answer dropped by prompts.c), so its first status is its last.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "json.h"
#include "serve.h"
#include "xmalloc.h"

/*
 * The length in bytes of s's longest prefix of at most max UTF-16 code
 * units (upstream caps in code units: a 4-byte sequence counts 2); *cut
 * set when that is not all of s.
 */
static size_t
utf16_prefix(const char *s, size_t max, int *cut)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, units = 0, w, n;

	*cut = 0;
	while (u[i] != '\0') {
		w = u[i] >= 0xf0 ? 2 : 1;
		n = u[i] >= 0xf0 ? 4 : u[i] >= 0xe0 ? 3 : u[i] >= 0xc0 ? 2 : 1;
		if (units + w > max) {
			*cut = 1;
			break;
		}
		units += w;
		/* A sequence cut short by the NUL ends where the NUL is. */
		while (n-- > 0 && u[i] != '\0')
			i++;
	}
	return i;
}

/* o.key = s capped at max units; o.flag = true only when it was cut. */
static void
add_capped(json_object *o, const char *key, const char *s, size_t max,
    const char *flag)
{
	int cut;
	size_t n = utf16_prefix(s, max, &cut);

	json_object_object_add(o, key, xjson_object_new_string_len(s, n));
	if (cut)
		json_object_object_add(o, flag, xjson_object_new_boolean(1));
}

/*
 * As upstream's pending-prompt extraction: the first non-empty text
 * block, "[image]" for a prompt of images only, else NULL.
 */
static const char *
turn_prompt_text(json_object *content)
{
	json_object *b;
	const char *t, *type;
	int image = 0;

	for (size_t i = 0; content != NULL &&
	    i < json_object_array_length(content); i++) {
		b = json_object_array_get_idx(content, i);
		if ((t = json_get_str(b, "text")) != NULL && t[0] != '\0')
			return t;
		if ((type = json_get_str(b, "type")) != NULL &&
		    strcmp(type, "image") == 0)
			image = 1;
	}
	return image ? "[image]" : NULL;
}

json_object *
turns_new(struct session *s, const struct turn_facts *f)
{
	json_object *o = xjson_object_new_object();
	const char *text = turn_prompt_text(f->content);

	json_object_object_add(o, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(o, "state", xjson_object_new_string(f->state));
	json_object_object_add(o, "promptId",
	    xjson_object_new_string(f->prompt_id));
	if (text != NULL)
		add_capped(o, "promptText", text, SERVE_TURN_TEXT_MAX,
		    "promptTextTruncated");
	if (f->queued_at_ms != 0)
		json_object_object_add(o, "queuedAt",
		    xjson_object_new_int64((int64_t)f->queued_at_ms));
	if (f->started_at_ms != 0)
		json_object_object_add(o, "startedAt",
		    xjson_object_new_int64((int64_t)f->started_at_ms));
	if (f->client_id != NULL && f->client_id[0] != '\0')
		json_object_object_add(o, "originatorClientId",
		    xjson_object_new_string(f->client_id));
	return o;
}

/* The error member of a status in state "error" (caller owns). */
static json_object *
turn_error_obj(const char *message, const char *code)
{
	json_object *e = xjson_object_new_object();

	add_capped(e, "message", message, SERVE_TURN_ERROR_MAX,
	    "messageTruncated");
	if (code != NULL)
		add_capped(e, "code", code, SERVE_TURN_CODE_MAX,
		    "codeTruncated");
	return e;
}

void
turns_settle(struct session *s, json_object *st, const char *stop,
    const char *message, const char *code)
{
	json_object_object_add(st, "endedAt",
	    xjson_object_new_int64((int64_t)clock_wall_ms()));
	if (stop != NULL)
		json_object_object_add(st, "stopReason",
		    xjson_object_new_string(stop));
	if (message != NULL)
		json_object_object_add(st, "error",
		    turn_error_obj(message, code));
	if (s->turns == NULL)
		s->turns = xjson_object_new_array();
	if (json_object_array_length(s->turns) >= SERVE_TURNS_KEPT)
		json_object_array_del_idx(s->turns, 0, 1);
	json_object_array_add(s->turns, st);
}

json_object *
turns_find(struct session *s, const char *prompt_id)
{
	json_object *st;
	const char *id;
	size_t n = s->turns != NULL ? json_object_array_length(s->turns) : 0;

	if (prompt_id == NULL)
		return n > 0 ? json_object_array_get_idx(s->turns, n - 1) : NULL;
	while (n-- > 0) {
		st = json_object_array_get_idx(s->turns, n);
		if ((id = json_get_str(st, "promptId")) != NULL &&
		    strcmp(id, prompt_id) == 0)
			return st;
	}
	return NULL;
}

/* ---- the agent's persisted turn_result, merged as upstream does ------- */

/* A member of a status the persisted record may give. */
static const char *const rec_keys[] = { "promptText", "promptTextTruncated",
	"queuedAt", "startedAt", "endedAt", "stopReason", "error",
	"resultText", "resultTruncated", "resultCode", "originatorClientId",
	NULL };
/* What the record adds to the daemon's own status of the same prompt. */
static const char *const enrich_keys[] = { "resultText", "resultTruncated",
	"resultCode", "promptText", "promptTextTruncated", NULL };

/* dst.k = src.k for each k of keys src has and dst does not. */
static void
copy_missing(json_object *dst, json_object *src, const char *const *keys)
{
	json_object *v;

	for (; *keys != NULL; keys++)
		if (!json_object_object_get_ex(dst, *keys, NULL) &&
		    json_object_object_get_ex(src, *keys, &v) && v != NULL)
			json_object_object_add(dst, *keys, json_object_get(v));
}

/* The status of a turn the agent's transcript alone knows (caller owns). */
static json_object *
turn_from_record(struct session *s, json_object *rec)
{
	json_object *o = xjson_object_new_object();
	const char *state = json_get_str(rec, "state");
	const char *stop = json_get_str(rec, "stopReason");

	if (state == NULL || (strcmp(state, "cancelled") != 0 &&
	    strcmp(state, "error") != 0))
		state = "completed";
	if (stop != NULL && strcmp(stop, "cancelled") == 0)
		state = "cancelled";
	json_object_object_add(o, "sessionId", xjson_object_new_string(s->id));
	json_object_object_add(o, "state", xjson_object_new_string(state));
	json_object_object_add(o, "promptId",
	    xjson_object_new_string(json_get_str(rec, "promptId")));
	copy_missing(o, rec, rec_keys);
	return o;
}

/* endedAt of a status or record, 0 when it has none. */
static int64_t
ended_at(json_object *o)
{
	json_object *v;

	return json_object_object_get_ex(o, "endedAt", &v) ?
	    json_object_get_int64(v) : 0;
}

json_object *
turns_merge(struct session *s, const char *prompt_id, json_object *rec)
{
	json_object *kept = turns_find(s, prompt_id), *st = NULL;
	const char *rid = rec != NULL ? json_get_str(rec, "promptId") : NULL;

	/* Only an answer about the prompt asked for counts. */
	if (rid == NULL || (prompt_id != NULL && strcmp(rid, prompt_id) != 0))
		rec = NULL;
	if (rec == NULL)
		return kept != NULL ? json_object_get(kept) : NULL;
	if (kept != NULL && strcmp(json_get_str(kept, "promptId"), rid) == 0) {
		/* The daemon's outcome stands; the record adds its content. */
		if (json_object_deep_copy(kept, &st, NULL) != 0)
			return json_object_get(kept);
		copy_missing(st, rec, enrich_keys);
		return st;
	}
	/* Two different prompts (current): the one that ended last. */
	if (kept != NULL && ended_at(kept) >= ended_at(rec))
		return json_object_get(kept);
	return turn_from_record(s, rec);
}
