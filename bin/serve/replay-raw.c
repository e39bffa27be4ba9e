/* SPDX-License-Identifier: ISC */
/*
 * replay-raw.c: load's compactedReplay straight from the child's bytes.
 *
 * The child's bulk replay answer carries its updates already encoded;
 * the channel's reader keeps that array as bytes (rpc_reader_splice), and
 * each bus envelope here is written around an update's bytes when the
 * answer is sent, instead of parsing every update into json-c objects and
 * encoding it again.  The envelope is the one bus_seed() makes, key for
 * key.  A transcript page's events are kept as bytes the same way and
 * written as they came (replay_raw_array).  QWEN_SERVE_REPLAY_REENCODE=1
 * turns both off (tests compare both).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include <json-c/printbuf.h>

#include "clock.h"
#include "serve.h"
#include "rpc-frame.h"
#include "xmalloc.h"

/* Where the child's answer holds the updates (bin/acp-child/answer.c). */
static const char marker[] = "\"qwen.session.loadReplay\":{\"v\":1,\"updates\":[";
static const char *const path[] = {
	"result", "_meta", "qwen.session.loadReplay", "updates", NULL
};

/* One envelope: the update's bytes and what goes around them. */
#define RAW_ENV_MAGIC	0x7261770a

struct raw_env {
	uint32_t	 magic;
	struct rpc_raw	*raw;
	size_t		 i;
	char		 tail[64];	/* },"_meta":{..}} */
	int		 nhead, ntail;
	char		 head[];	/* {"id":..,"data":{"sessionId":..,"update": */
};

/* The envelope's fixed text around its id, session id and time. */
static const char env_id[] = "{\"id\":";
static const char env_sid[] = ",\"v\":1,\"type\":\"session_update\",\"data\":"
    "{\"sessionId\":";
static const char env_update[] = ",\"update\":";
static const char env_meta[] = "},\"_meta\":{\"serverTimestamp\":";

/* Where a page's answer holds its events (bin/acp-child/txpage.c). */
static const char page_marker[] = "\"result\":{\"events\":[";
static const char *const page_path[] = { "result", "events", NULL };

void
replay_raw_setup(struct rpc_reader *rd)
{
	const char *v = getenv("QWEN_SERVE_REPLAY_REENCODE");

	if (v != NULL && strcmp(v, "1") == 0)
		return;
	rpc_reader_splice(rd, marker, path);
	rpc_reader_splice_also(rd, page_marker, page_path);
}

static int
array_to_string(json_object *o, struct printbuf *pb, int level, int flags)
{
	struct rpc_raw *raw = json_object_get_userdata(o);

	(void)level;
	(void)flags;
	printbuf_memappend(pb, "[", 1);
	printbuf_memappend(pb, raw->bytes, (int)raw->len);
	printbuf_memappend(pb, "]", 1);
	return 0;
}

static void
array_delete(json_object *o, void *arg)
{
	(void)o;
	rpc_raw_unref(arg);
}

json_object *
replay_raw_array(struct rpc_raw *raw)
{
	json_object *o = xjson_object_new_array();

	json_object_set_serializer(o, array_to_string, rpc_raw_ref(raw),
	    array_delete);
	return o;
}

static int
env_to_string(json_object *o, struct printbuf *pb, int level, int flags)
{
	struct raw_env *e = json_object_get_userdata(o);
	const struct rpc_raw_el *el = &e->raw->el[e->i];

	(void)level;
	(void)flags;
	printbuf_memappend(pb, e->head, e->nhead);
	printbuf_memappend(pb, e->raw->bytes + el->off, (int)el->len);
	printbuf_memappend(pb, e->tail, e->ntail);
	return 0;
}

static void
env_delete(json_object *o, void *arg)
{
	struct raw_env *e = arg;

	(void)o;
	rpc_raw_unref(e->raw);
	free(e);
}

char *
replay_raw_sid(const char *session_id)
{
	json_object *sid = xjson_object_new_string(session_id);
	char *s;

	s = xstrdup(json_object_to_json_string_ext(sid, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(sid);
	return s;
}

/* v in decimal at p (room for 20 digits); its length. */
static size_t
put_u64(char *p, uint64_t v)
{
	char d[20];
	size_t n = 0, i;

	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	for (i = 0; i < n; i++)
		p[i] = d[n - 1 - i];
	return n;
}

/* s (of n bytes) at p; p after it. */
static char *
put(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

/*
 * An envelope per update, a few thousand per load: its text is put
 * together here, in the one allocation that holds it, rather than by a
 * printf each (the daemon's loop spent more in vasprintf than in
 * handing the updates on).  The bytes are those of bus_seed()'s
 * encoding.
 */
json_object *
replay_raw_envelope(struct rpc_raw *raw, size_t i, uint64_t id,
    const char *sid_json, uint64_t wall_ms)
{
	size_t nsid = strlen(sid_json);
	json_object *o;
	struct raw_env *e;
	char *p;

	e = xcalloc(1, sizeof *e + sizeof env_id + 20 + sizeof env_sid + nsid +
	    sizeof env_update);
	p = put(e->head, env_id, sizeof env_id - 1);
	p += put_u64(p, id);
	p = put(p, env_sid, sizeof env_sid - 1);
	p = put(p, sid_json, nsid);
	p = put(p, env_update, sizeof env_update - 1);
	e->nhead = (int)(p - e->head);
	p = put(e->tail, env_meta, sizeof env_meta - 1);
	p += put_u64(p, wall_ms);
	p = put(p, "}}", 2);
	e->ntail = (int)(p - e->tail);
	o = xjson_object_new_object();
	e->magic = RAW_ENV_MAGIC;
	e->raw = rpc_raw_ref(raw);
	e->i = i;
	json_object_set_serializer(o, env_to_string, e, env_delete);
	return o;
}

/* The envelope made here that o is, or NULL. */
static struct raw_env *
env_of(json_object *o)
{
	struct raw_env *e;

	if (!json_object_is_type(o, json_type_object) ||
	    (e = json_object_get_userdata(o)) == NULL || e->magic != RAW_ENV_MAGIC)
		return NULL;
	return e;
}

size_t
replay_raw_len(json_object *env)
{
	struct raw_env *e = env_of(env);

	if (e == NULL)
		return 0;
	return (size_t)e->nhead + e->raw->el[e->i].len + (size_t)e->ntail;
}

int
replay_raw_add(json_object *env, struct evbuffer *out)
{
	struct raw_env *e = env_of(env);
	const struct rpc_raw_el *el;

	if (e == NULL)
		return -1;
	el = &e->raw->el[e->i];
	evbuffer_add(out, e->head, (size_t)e->nhead);
	evbuffer_add(out, e->raw->bytes + el->off, el->len);
	evbuffer_add(out, e->tail, (size_t)e->ntail);
	return 0;
}

json_object *
replay_raw_expand(json_object *env)
{
	const char *js;

	if (env_of(env) == NULL)
		return json_object_get(env);
	/* The bytes were checked to be json-c's own encoding: this parses. */
	js = json_object_to_json_string_ext(env, JSON_C_TO_STRING_PLAIN);
	return json_tokener_parse(js);
}
