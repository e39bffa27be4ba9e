/* SPDX-License-Identifier: ISC */
/*
 * test-transcript.c: the acp-child transcript loader (index, recovery,
 * validation, fragments, chain, checkpoint, model history, refresh, replay)
 * over the fixtures in t/data/transcripts/ and generated files.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cachedir.h"
#include "chain.h"
#include "jtape.h"
#include "project-int.h"
#include "replay.h"
#include "tap.h"
#include "transcript.h"
#include "transcript-int.h"

#define U(n) "00000000-0000-4000-8000-00000000000" #n

static char tmpdir[256];

/* Open fixture NAME (sessionId = NAME). */
static struct transcript *
fixture(const char *name)
{
	const char *dir = getenv("TESTDATA");
	struct transcript *t;
	char path[1024], *cause = NULL;

	snprintf(path, sizeof path, "%s/transcripts/%s.jsonl", dir ? dir : "t/data", name);
	t = transcript_open(path, NULL, &cause);
	if (!ok(t != NULL, "open %s", name))
		diag("%s", cause ? cause : "?");
	free(cause);
	return t;
}

/* The uuid of chain element i. */
static const char *
chain_uuid(const struct transcript *t, const struct tx_chain *c, size_t i, char out[64])
{
	transcript_uuid(t, c->rec[i], out);
	return out;
}

static void
test_linear(void)
{
	struct transcript *t = fixture("linear");
	struct tx_chain c;
	char u[64], *cause = NULL;

	if (t == NULL)
		return;
	is_int(transcript_stats(t)->records, 5, "linear: 5 records");
	is_int(transcript_stats(t)->malformed_lines, 0, "linear: no malformed line");
	is_int(transcript_count(t), 5, "linear: 5 logical records");
	is_int(transcript_find(t, U(3)), 2, "linear: find by uuid");
	is_int(transcript_find(t, U(9)), -1, "linear: unknown uuid");
	is_int(transcript_type(t, 1), TX_ASSISTANT, "linear: type");
	is_str(transcript_subtype(t, 3), "ui_telemetry", "linear: subtype interned");
	is_str(transcript_subtype(t, 0), "", "linear: no subtype");
	ok(chain_build(t, &c, &cause) == 0, "linear: chain");
	is_int(c.len, 5, "linear: chain of 5");
	is_str(chain_uuid(t, &c, 0, u), U(1), "linear: oldest first");
	is_str(chain_uuid(t, &c, 4, u), U(5), "linear: leaf last");
	is_int(c.turn_starts, 1, "linear: one turn");
	is_int(c.last_compression, -1, "linear: no checkpoint");
	is_int(chain_model_history(t, &c, &cause), 4, "linear: model history skips system");
	chain_clear(&c);
	transcript_free(t);
}

static void
test_branched(void)
{
	static const char *const want[] = { "u1", "a1", "rw", "u3", "a3", "u4", "A4-UPPER" };
	struct transcript *t = fixture("branched");
	struct tx_chain c;
	char u[64], *cause = NULL;
	size_t i;
	int same = 1;

	if (t == NULL)
		return;
	ok(chain_build(t, &c, &cause) == 0, "branched: chain");
	is_int(c.len, 7, "branched: rewound turn and title re-anchor are dead");
	for (i = 0; i < c.len && i < 7; i++)
		same &= strcmp(chain_uuid(t, &c, i, u), want[i]) == 0;
	ok(same, "branched: chain follows the rewind");
	is_int(c.turn_starts, 3, "branched: three turn starts");
	is_int(transcript_find(t, "A4-UPPER"), 9, "branched: non-canonical uuid found");
	is_int(transcript_find(t, "a4-upper"), -1, "branched: uuids are case-sensitive");
	chain_clear(&c);
	transcript_free(t);
}

static void
test_gap_cycle(void)
{
	struct transcript *t = fixture("gap");
	struct replay_result rr;
	struct tx_chain c;
	json_object *u0, *v, *ups;
	char u[64], *cause = NULL;

	if (t != NULL) {
		ok(chain_build(t, &c, &cause) == 0, "gap: chain");
		is_int(c.len, 2, "gap: the walk stops at the missing parent");
		is_int(c.gaps, 1, "gap: one gap");
		is_str(chain_uuid(t, &c, 0, u), U(3), "gap: never reconnects older records");
		ok(replay_build(t, &c, NULL, &rr, &cause) == 0, "gap: replay");
		ups = replay_result_json(&rr);
		u0 = json_object_array_get_idx(ups, 0);
		ok(json_object_object_get_ex(u0, "_meta", &v) &&
		    json_object_object_get_ex(v, "qwenDiscreteMessage", &v),
		    "gap: replay starts with a gap notice");
		ok(rr.has_more, "gap: older history exists");
		json_object_put(ups);
		replay_result_clear(&rr);
		chain_clear(&c);
		transcript_free(t);
	}
	if ((t = fixture("cycle")) != NULL) {
		ok(chain_build(t, &c, &cause) == 0, "cycle: chain");
		is_int(c.len, 2, "cycle: each record once");
		is_int(c.cycles, 1, "cycle: detected");
		is_int(c.gaps, 0, "cycle: no gap");
		chain_clear(&c);
		transcript_free(t);
	}
}

static void
test_glued(void)
{
	struct transcript *t = fixture("glued");
	const struct tx_stats *st;
	json_object *r, *v;
	char *cause = NULL;

	if (t == NULL)
		return;
	st = transcript_stats(t);
	is_int(st->records, 4, "glued: 4 valid records");
	is_int(st->malformed_lines, 3, "glued: glued, junk and trailing-garbage lines");
	is_int(st->recovered_records, 3, "glued: 3 records recovered");
	r = transcript_load_record(t, 1, &cause);
	ok(r != NULL && json_object_object_get_ex(r, "message", &v) &&
	    strstr(json_object_to_json_string(v), "has } and {") != NULL,
	    "glued: the second glued record loads on its own");
	json_object_put(r);
	is_int(transcript_leaf(t), 3, "glued: leaf from the recovered line");
	transcript_free(t);
}

static void
test_torn_crlf_session(void)
{
	struct transcript *t = fixture("torn");
	json_object *r;
	char *cause = NULL;

	if (t != NULL) {
		is_int(transcript_stats(t)->records, 2, "torn: the torn line is not yet written");
		is_int(transcript_stats(t)->malformed_lines, 0, "torn: not malformed either");
		is_int(transcript_pending_bytes(t), 40, "torn: 40 pending bytes");
		is_int(transcript_size(t), 582, "torn: size counts whole lines");
		transcript_free(t);
	}
	if ((t = fixture("crlf")) != NULL) {
		is_int(transcript_stats(t)->records, 3, "crlf: 3 records");
		r = transcript_load_record(t, 2, &cause);
		ok(r != NULL, "crlf: record loads without the CR");
		json_object_put(r);
		transcript_free(t);
	}
	if ((t = fixture("bad-session")) != NULL) {
		is_int(transcript_stats(t)->records, 2,
		    "bad-session: wrong session, type, uuid, parent dropped");
		is_int(transcript_stats(t)->malformed_lines, 0, "bad-session: lines are JSON");
		transcript_free(t);
	}
}

static void
test_fragments(void)
{
	struct transcript *t = fixture("duplicates");
	json_object *r, *v, *parts;
	char *cause = NULL;

	if (t == NULL)
		return;
	is_int(transcript_stats(t)->duplicates, 1, "duplicates: one fragment");
	is_int(transcript_count(t), 3, "duplicates: merged into 3 logical records");
	ok(transcript_raw_len(t, 1) > 700, "duplicates: raw length sums fragments");
	r = transcript_load_record(t, 1, &cause);
	ok(r != NULL, "duplicates: merged record loads");
	ok(json_object_object_get_ex(r, "message", &v) &&
	    json_object_object_get_ex(v, "parts", &parts) &&
	    json_object_array_length(parts) == 2, "duplicates: parts concatenated");
	ok(json_object_object_get_ex(r, "usageMetadata", &v) &&
	    json_object_object_get_ex(v, "candidatesTokenCount", &v) &&
	    json_object_get_int(v) == 9, "duplicates: usageMetadata last wins");
	ok(json_object_object_get_ex(r, "timestamp", &v) &&
	    strcmp(json_object_get_string(v), "2026-08-01T08:00:05.000Z") == 0,
	    "duplicates: timestamp is the max");
	ok(json_object_object_get_ex(r, "parentUuid", &v) &&
	    strcmp(json_object_get_string(v), U(1)) == 0, "duplicates: first parent wins");
	json_object_put(r);
	transcript_free(t);
}

static void
test_escaped_nonconv(void)
{
	struct transcript *t = fixture("escaped");
	struct tx_chain c;
	char *cause = NULL;

	if (t != NULL) {
		is_int(transcript_stats(t)->records, 3, "escaped: json-c fallback indexes all");
		is_int(transcript_type(t, 1), TX_ASSISTANT, "escaped: escaped value decoded");
		ok(chain_build(t, &c, &cause) == 0 && c.len == 3, "escaped: chain of 3");
		chain_clear(&c);
		transcript_free(t);
	}
	if ((t = fixture("nonconv")) != NULL) {
		is_int(transcript_count(t), 5, "nonconv: all records indexed");
		is_int(transcript_leaf(t), 2, "nonconv: artifacts and snapshots are not the leaf");
		ok(chain_build(t, &c, &cause) == 0 && c.len == 2, "nonconv: chain of 2");
		chain_clear(&c);
		transcript_free(t);
	}
}

static void
test_compression(void)
{
	struct transcript *t = fixture("compression");
	struct tx_chain c;
	char *cause = NULL;

	if (t == NULL)
		return;
	ok(chain_build(t, &c, &cause) == 0, "compression: chain");
	is_int(c.last_compression, 2, "compression: the falsy later one is ignored");
	is_int(chain_is_checkpoint(t, c.rec[8], &cause), 0, "compression: [] is no checkpoint");
	is_int(chain_is_checkpoint(t, c.rec[2], &cause), 1, "compression: checkpoint");
	is_int(chain_model_history(t, &c, &cause), 6,
	    "compression: 2 checkpoint entries + 4, mid-turn merged");
	is_int(c.turn_starts, 2, "compression: mid-turn message is no turn start");
	chain_clear(&c);
	transcript_free(t);
}

/* Append (or, with trunc, write) data to path. */
static void
put_file(const char *path, const char *data, size_t n, int trunc)
{
	int fd = open(path, O_WRONLY | O_CREAT | (trunc ? O_TRUNC : O_APPEND), 0644);

	if (fd == -1 || write(fd, data, n) != (ssize_t)n)
		diag("write %s failed", path);
	if (fd != -1)
		close(fd);
}

/* One record line (caller frees); text_len bytes of 'x' as the message text. */
static char *
line(const char *sid, const char *uuid, const char *parent, const char *type,
    size_t text_len)
{
	char *text = malloc(text_len + 1), *out = NULL;

	memset(text, 'x', text_len);
	text[text_len] = '\0';
	if (asprintf(&out, "{\"uuid\":\"%s\",\"parentUuid\":%s%s%s,\"sessionId\":\"%s\","
	    "\"timestamp\":\"2026-08-01T08:00:00.000Z\",\"type\":\"%s\",\"message\":"
	    "{\"role\":\"%s\",\"parts\":[{\"text\":\"%s\"}]}}\n", uuid,
	    parent ? "\"" : "", parent ? parent : "null", parent ? "\"" : "", sid, type,
	    strcmp(type, "user") == 0 ? "user" : "model", text) == -1)
		out = NULL;
	free(text);
	return out;
}

static void
test_refresh(void)
{
	struct transcript *t;
	struct tx_chain c;
	char path[512], path2[512], *l1, *l2, *l3, *cause = NULL;
	size_t half;

	snprintf(path, sizeof path, "%s/s1.jsonl", tmpdir);
	l1 = line("s1", U(1), NULL, "user", 10);
	l2 = line("s1", U(2), U(1), "assistant", 10);
	l3 = line("s1", U(3), U(2), "user", 10);
	half = strlen(l2) / 2;
	put_file(path, l1, strlen(l1), 1);
	put_file(path, l2, half, 0);
	t = transcript_open(path, NULL, &cause);
	if (!ok(t != NULL, "refresh: open"))
		return;
	is_int(transcript_stats(t)->records, 1, "refresh: torn second line not indexed");
	is_int(transcript_refresh(t, &cause), 0, "refresh: nothing new");
	is_int(transcript_stats(t)->records, 1, "refresh: still one record");
	put_file(path, l2 + half, strlen(l2) - half, 0);
	is_int(transcript_refresh(t, &cause), 0, "refresh: after completing the line");
	is_int(transcript_stats(t)->records, 2, "refresh: completed line indexed once");
	is_int(transcript_stats(t)->malformed_lines, 0, "refresh: the torn part was never malformed");
	put_file(path, l3, strlen(l3), 0);
	is_int(transcript_refresh(t, &cause), 0, "refresh: appended line");
	is_int(transcript_size(t), strlen(l1) + strlen(l2) + strlen(l3), "refresh: size");
	ok(chain_build(t, &c, &cause) == 0 && c.len == 3 && c.leaf == 2,
	    "refresh: chain extends to the new leaf");
	chain_clear(&c);
	/* A writer truncating its own torn tail away is not a truncation. */
	put_file(path, "{\"uuid\":\"torn", 13, 0);
	ok(transcript_refresh(t, &cause) == 0 && transcript_pending_bytes(t) == 13,
	    "refresh: torn tail pending");
	if (truncate(path, (off_t)transcript_size(t)) == 0)
		ok(transcript_refresh(t, &cause) == 0 && transcript_pending_bytes(t) == 0 &&
		    transcript_stats(t)->records == 3, "refresh: torn tail truncated back is fine");
	if (truncate(path, (off_t)strlen(l1)) == 0)
		ok(transcript_refresh(t, &cause) == -1 && cause != NULL,
		    "refresh: truncation below the index is an error");
	free(cause);
	cause = NULL;
	transcript_free(t);
	/* Replacement by rename. */
	put_file(path, l1, strlen(l1), 1);
	t = transcript_open(path, NULL, &cause);
	snprintf(path2, sizeof path2, "%s/s1.new", tmpdir);
	put_file(path2, l1, strlen(l1), 1);
	put_file(path2, l2, strlen(l2), 0);
	if (t != NULL && rename(path2, path) == 0)
		ok(transcript_refresh(t, &cause) == -1, "refresh: replaced file is an error");
	free(cause);
	transcript_free(t);
	unlink(path);
	free(l1);
	free(l2);
	free(l3);
}

/* An empty transcript: no records, no leaf, empty chain and replay. */
/* A uuid repeated many times: every fragment kept, in file order (the
   index appends after the last fragment without walking the list). */
static void
test_many_duplicates(void)
{
	struct transcript *t;
	json_object *r, *v, *parts;
	char path[512], *cause = NULL, *l;
	size_t i, n = 1000, ordered = 1;

	snprintf(path, sizeof path, "%s/dups.jsonl", tmpdir);
	put_file(path, "", 0, 1);
	for (i = 0; i < n; i++) {
		l = line("dups", U(1), NULL, "user", i % 7 + 1);
		put_file(path, l, strlen(l), 0);
		free(l);
	}
	if ((t = transcript_open(path, NULL, &cause)) == NULL) {
		ok(0, "many duplicates: open (%s)", cause ? cause : "?");
		free(cause);
		return;
	}
	is_int(transcript_count(t), 1, "many duplicates: one logical record");
	is_int(transcript_stats(t)->duplicates, n - 1, "many duplicates: all counted");
	r = transcript_load_record(t, 0, &cause);
	ok(r != NULL && json_object_object_get_ex(r, "message", &v) &&
	    json_object_object_get_ex(v, "parts", &parts) &&
	    json_object_array_length(parts) == n, "many duplicates: all parts merged");
	for (i = 0; r != NULL && i < n && ordered; i++)
		ordered = json_object_get_string_len(json_object_object_get(
		    json_object_array_get_idx(parts, i), "text")) == (int)(i % 7 + 1);
	ok(ordered, "many duplicates: parts in file order");
	json_object_put(r);
	transcript_free(t);
}

static void
test_empty(void)
{
	struct replay_result rr;
	struct transcript *t;
	struct tx_chain c;
	char path[512], *cause = NULL;

	snprintf(path, sizeof path, "%s/empty.jsonl", tmpdir);
	put_file(path, "", 0, 1);
	if ((t = transcript_open(path, NULL, &cause)) == NULL) {
		ok(0, "empty: open: %s", cause);
		free(cause);
		return;
	}
	is_int(transcript_count(t), 0, "empty: no records");
	ok(chain_build(t, &c, &cause) == 0 && c.len == 0 && c.leaf == -1, "empty: no chain");
	is_int(chain_model_history(t, &c, &cause), 0, "empty: no model history");
	ok(replay_build(t, &c, NULL, &rr, &cause) == 0 &&
	    rr.p.n == 0 && rr.bytes == 2 && !rr.has_more, "empty: empty replay");
	replay_result_clear(&rr);
	chain_clear(&c);
	transcript_free(t);
	unlink(path);
}

static void
test_io(void)
{
	struct transcript *t;
	json_object *r, *v;
	char path[512], *l1, *l2, *cause = NULL;

	snprintf(path, sizeof path, "%s/missing.jsonl", tmpdir);
	errno = 0;
	t = transcript_open(path, NULL, &cause);
	ok(t == NULL && errno == ENOENT && cause != NULL, "open: ENOENT kept with a cause");
	free(cause);
	cause = NULL;
	ok(transcript_open(tmpdir, NULL, &cause) == NULL, "open: a directory is refused");
	free(cause);
	cause = NULL;
	test_refresh();
	test_empty();
	/* A 3 MiB line spans several 1 MiB reads. */
	snprintf(path, sizeof path, "%s/big.jsonl", tmpdir);
	l1 = line("big", U(1), NULL, "user", 10);
	l2 = line("big", U(2), U(1), "assistant", 3 << 20);
	put_file(path, l1, strlen(l1), 1);
	put_file(path, l2, strlen(l2), 0);
	put_file(path, l1, strlen(l1), 0);
	if ((t = transcript_open(path, "big", &cause)) != NULL) {
		is_int(transcript_stats(t)->records, 3, "big: records around a 3 MiB line");
		is_int(transcript_stats(t)->duplicates, 1, "big: repeated uuid is a fragment");
		is_int(transcript_raw_len(t, 1), strlen(l2) - 1, "big: raw length of the line");
		r = transcript_load_record(t, 1, &cause);
		ok(r != NULL && json_object_object_get_ex(r, "message", &v),
		    "big: 3 MiB record loads");
		json_object_put(r);
		transcript_free(t);
	} else {
		ok(0, "big: open: %s", cause);
	}
	free(cause);
	unlink(path);
	free(l1);
	free(l2);
}

static void
test_replay_fixture(void)
{
	static const char *const want[] = { "user_message_chunk", "agent_thought_chunk",
	    "agent_message_chunk", "tool_call", "plan", "tool_call_update", "tool_call",
	    "tool_call", "tool_call_update", "user_message_chunk", "agent_message_chunk",
	    "agent_message_chunk", "tool_call_update" };
	struct transcript *t = fixture("replay");
	struct replay_result rr;
	struct tx_chain c;
	json_object *u, *v, *ups;
	char *cause = NULL;
	size_t i, n;
	int same = 1;

	if (t == NULL || chain_build(t, &c, &cause) == -1)
		return;
	ok(replay_build(t, &c, NULL, &rr, &cause) == 0, "replay: built");
	ups = replay_result_json(&rr);
	n = json_object_array_length(ups);
	is_int(n, 13, "replay: 13 updates");
	for (i = 0; i < n && i < 13; i++) {
		u = json_object_array_get_idx(ups, i);
		json_object_object_get_ex(u, "sessionUpdate", &v);
		if (strcmp(json_object_get_string(v), want[i]) != 0) {
			diag("update %zu: %s, want %s", i, json_object_get_string(v), want[i]);
			same = 0;
		}
	}
	ok(same, "replay: kinds in order (todo_write -> plan, missing result last)");
	u = json_object_array_get_idx(ups, 0);
	ok(json_object_object_get_ex(u, "_meta", &v) &&
	    json_object_object_get_ex(v, "timestamp", &v) &&
	    json_object_get_int64(v) == 1785571201000LL, "replay: _meta.timestamp in ms");
	ok(json_object_object_get_ex(u, "_meta", &v) &&
	    json_object_object_get_ex(v, "qwenTranscript", &v) &&
	    json_object_object_get_ex(v, "sourceRecordIds", &v) &&
	    strcmp(json_object_get_string(json_object_array_get_idx(v, 0)), U(1)) == 0,
	    "replay: sourceRecordIds");
	u = json_object_array_get_idx(ups, 5);
	ok(strstr(json_object_to_json_string(u), "\"diff\"") != NULL &&
	    strstr(json_object_to_json_string(u), "completed") != NULL,
	    "replay: edit result is a completed diff");
	u = json_object_array_get_idx(ups, 8);
	ok(strstr(json_object_to_json_string(u), "failed") != NULL, "replay: error result failed");
	u = json_object_array_get_idx(ups, 12);
	ok(strstr(json_object_to_json_string(u), "\"m1\"") != NULL &&
	    strstr(json_object_to_json_string(u), "failed") != NULL,
	    "replay: call without result fails at the end");
	is_int(rr.records, 9, "replay: all records");
	ok(!rr.partial && !rr.has_more && rr.truncated_records == 0, "replay: nothing dropped");
	ok(rr.bytes == strlen(json_object_to_json_string_ext(ups,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)), "replay: bytes exact");
	json_object_put(ups);
	replay_result_clear(&rr);
	chain_clear(&c);
	transcript_free(t);
}

/* First update kind of a replay. */
static const char *
first_kind(const struct replay_result *rr)
{
	static char kind[64];
	json_object *ups = replay_result_json(rr), *v;

	kind[0] = '\0';
	if (json_object_array_length(ups) > 0 && json_object_object_get_ex(
	    json_object_array_get_idx(ups, 0), "sessionUpdate", &v))
		snprintf(kind, sizeof kind, "%s", json_object_get_string(v));
	json_object_put(ups);
	return kind;
}

static void
test_replay(void)
{
	struct replay_opts opts = { 10000, 0, 0, 0 };
	struct replay_result rr;
	struct transcript *t;
	struct tx_chain c;
	char path[512], uuid[64], parent[64], *l, *cause = NULL;
	int i;

	test_replay_fixture();
	snprintf(path, sizeof path, "%s/many.jsonl", tmpdir);
	put_file(path, "", 0, 1);
	for (i = 0; i < 100; i++) {
		snprintf(uuid, sizeof uuid, "00000000-0000-4000-8000-%012d", i + 1);
		snprintf(parent, sizeof parent, "00000000-0000-4000-8000-%012d", i);
		l = line("many", uuid, i ? parent : NULL, i % 2 ? "assistant" : "user", 1000);
		put_file(path, l, strlen(l), 0);
		free(l);
	}
	if ((t = transcript_open(path, NULL, &cause)) == NULL ||
	    chain_build(t, &c, &cause) == -1) {
		ok(0, "many: %s", cause);
		free(cause);
		return;
	}
	ok(replay_build(t, &c, &opts, &rr, &cause) == 0, "bounded: built");
	ok(rr.bytes <= 10000, "bounded: within max_bytes (%llu)", (unsigned long long)rr.bytes);
	ok(rr.records > 0 && rr.records % 2 == 0, "bounded: whole turns (%zu records)", rr.records);
	is_str(first_kind(&rr), "user_message_chunk", "bounded: starts at a turn start");
	is_int(rr.truncated_records + rr.records, 100, "bounded: dropped + kept = chain");
	ok(rr.partial && rr.has_more, "bounded: partial, has more");
	replay_result_clear(&rr);
	opts.max_bytes = 0;
	opts.max_updates = 7;
	ok(replay_build(t, &c, &opts, &rr, &cause) == 0, "bounded by updates: built");
	is_int(rr.p.n, 6, "bounded by updates: 3 whole turns");
	is_str(first_kind(&rr), "user_message_chunk", "bounded by updates: turn aligned");
	replay_result_clear(&rr);
	chain_clear(&c);
	transcript_free(t);
	unlink(path);
}

/* A record damaged after indexing is skipped by the replay, not fatal. */
static void
test_damaged(void)
{
	struct replay_result rr;
	struct transcript *t;
	struct tx_chain c;
	char path[512], *l1, *l2, *cause = NULL;
	int fd;

	snprintf(path, sizeof path, "%s/dmg.jsonl", tmpdir);
	l1 = line("dmg", U(1), NULL, "user", 10);
	l2 = line("dmg", U(2), U(1), "assistant", 10);
	put_file(path, l1, strlen(l1), 1);
	put_file(path, l2, strlen(l2), 0);
	t = transcript_open(path, NULL, &cause);
	if (t == NULL || chain_build(t, &c, &cause) == -1) {
		ok(0, "damaged: open: %s", cause);
		free(cause);
		transcript_free(t);
		return;
	}
	fd = open(path, O_WRONLY);
	if (fd == -1 || pwrite(fd, "X", 1, (off_t)strlen(l1)) != 1)
		diag("pwrite failed");
	close(fd);
	errno = 0;
	ok(transcript_load_record(t, 1, &cause) == NULL && errno == EBADMSG,
	    "damaged: load_record says EBADMSG");
	ok(replay_build(t, &c, NULL, &rr, &cause) == 0, "damaged: replay still builds");
	is_int(rr.p.n, 1, "damaged: the damaged record is skipped");
	replay_result_clear(&rr);
	chain_clear(&c);
	transcript_free(t);
	free(cause);
	free(l1);
	free(l2);
	unlink(path);
}

/* Compare two indexes of the same file record by record. */
static int
same_index(struct transcript *a, struct transcript *b)
{
	char ua[64], ub[64];
	uint32_t i, pa = 0, pb = 0;
	int same = transcript_count(a) == transcript_count(b) &&
	    transcript_leaf(a) == transcript_leaf(b) &&
	    memcmp(transcript_stats(a), transcript_stats(b), sizeof(struct tx_stats)) == 0 &&
	    transcript_size(a) == transcript_size(b) &&
	    transcript_pending_bytes(a) == transcript_pending_bytes(b);

	for (i = 0; same && i < transcript_count(a); i++) {
		transcript_uuid(a, i, ua);
		transcript_uuid(b, i, ub);
		same = strcmp(ua, ub) == 0 && transcript_type(a, i) == transcript_type(b, i) &&
		    strcmp(transcript_subtype(a, i), transcript_subtype(b, i)) == 0 &&
		    transcript_flags(a, i) == transcript_flags(b, i) &&
		    transcript_raw_len(a, i) == transcript_raw_len(b, i) &&
		    transcript_parent(a, i, &pa) == transcript_parent(b, i, &pb) && pa == pb;
		if (!same)
			diag("record %u differs", i);
	}
	return same;
}

/* The first pass on several threads, in chunks (an eighth of this file
   each), gives the same index as one sequential pass. */
static void
test_split(void)
{
	struct transcript *one, *two;
	char path[512], cache[512], idx[1024], name[64], uuid[64], parent[64];
	char *l, *cause = NULL;
	const char *sub;
	int i;

	snprintf(path, sizeof path, "%s/split.jsonl", tmpdir);
	put_file(path, "", 0, 1);
	for (i = 0; i < 400; i++) {
		/* string ids, canonical ids, a uuid repeated across the halves,
		   a subtype first seen late, glued records, non-conversation tail */
		if (i % 3 == 0)
			snprintf(uuid, sizeof uuid, "id-%d", i);
		else
			snprintf(uuid, sizeof uuid, "00000000-0000-4000-8000-%012d", i);
		if (i == 350)
			snprintf(uuid, sizeof uuid, "00000000-0000-4000-8000-%012d", 10);
		if (i == 250)		/* a duplicate between two middle chunks */
			snprintf(uuid, sizeof uuid, "00000000-0000-4000-8000-%012d", 151);
		snprintf(parent, sizeof parent, "%s", i ? "id-0" : "");
		sub = i > 300 && i % 7 == 0 ? "late_subtype" : NULL;
		l = line("split", uuid, i ? parent : NULL, i % 2 ? "assistant" : "user", 50 + i % 40);
		if (sub != NULL) {
			char *m = NULL;
			if (asprintf(&m, "{\"subtype\":\"%s\",%s", sub, l + 1) > 0) {
				free(l);
				l = m;
			}
		}
		if (i == 200 || i == 201)
			l[strlen(l) - 1] = '\0';	/* glue to the next record */
		put_file(path, l, strlen(l), 0);
		free(l);
	}
	put_file(path, "{\"uuid\":\"art\",\"parentUuid\":null,\"sessionId\":\"split\","
	    "\"type\":\"system\",\"subtype\":\"session_artifact_event\"}\n", 103, 0);
	put_file(path, "{\"uuid\":\"torn", 13, 0);
	setenv("QWEN_TX_SPLIT_MIN", "1099511627776", 1);
	one = transcript_open(path, NULL, &cause);
	setenv("QWEN_TX_SPLIT_MIN", "1", 1);
	two = transcript_open(path, NULL, &cause);
	unsetenv("QWEN_TX_SPLIT_MIN");
	if (ok(one != NULL && two != NULL, "split: both indexes open")) {
		ok(transcript_stats(one)->duplicates == 2, "split: cross-chunk duplicates exist");
		ok(transcript_stats(one)->recovered_records >= 2, "split: glued records exist");
		ok(same_index(one, two), "split: the chunked index equals the sequential one");
	}
	transcript_free(one);
	transcript_free(two);
	free(cause);
	cause = NULL;
	/* The chunked index is kept and read back whole. */
	snprintf(cache, sizeof cache, "%s/split-cache", tmpdir);
	mkdir(cache, 0700);
	setenv("QWEN_TX_SPLIT_MIN", "1", 1);
	two = transcript_open_cached(path, NULL, cache, &cause);
	unsetenv("QWEN_TX_SPLIT_MIN");
	ok(two != NULL && transcript_save(two, cache, 1u << 30, 16, &cause) == 0,
	    "split: the chunked index is kept (%s)", cause ? cause : "ok");
	transcript_free(two);
	free(cause);
	cause = NULL;
	two = transcript_open_cached(path, NULL, cache, &cause);
	ok(two != NULL && transcript_index_state(two) == TX_INDEX_WARM &&
	    transcript_index_check_all(two) == 0,
	    "split: the kept chunked index is read back whole (%s)",
	    two != NULL ? transcript_index_reason(two) : cause);
	transcript_free(two);
	free(cause);
	cachedir_index_name(path, name, sizeof name);
	snprintf(idx, sizeof idx, "%s/%s", cache, name);
	unlink(idx);
	rmdir(cache);
	unlink(path);
}

/* The bytes of record r read alone (a copy, caller frees; NULL when it is
   in several fragments or the read failed). */
static char *
record_copy(struct transcript *t, uint32_t r, size_t *n)
{
	const char *b;
	char *out, *cause = NULL;

	if (transcript_record_bytes(t, r, &b, n, &cause) != 1 ||
	    (out = malloc(*n)) == NULL) {
		free(cause);
		return NULL;
	}
	memcpy(out, b, *n);
	return out;
}

/* Records announced with transcript_read_ahead come out exactly as read one
   by one: runs broken by fragments, wide gaps, an order that goes back and
   a record too big for a run; an unannounced record still reads; a file
   cut under a run is an error. */
static void
test_read_ahead(void)
{
	static const uint32_t order[] = { 0, 1, 2, 3, 4, 5, 6, 7, 2, 8, 9 };
	struct transcript *t;
	char path[512], uuid[64], *l, *want[10], *cause = NULL;
	const char *b;
	size_t n, wn[10];
	uint32_t i;
	int same = 1, rc;

	snprintf(path, sizeof path, "%s/ahead.jsonl", tmpdir);
	put_file(path, "", 0, 1);
	for (i = 0; i < 10; i++) {
		snprintf(uuid, sizeof uuid, "00000000-0000-4000-8000-%012u", i == 9 ? 3 : i);
		l = line("ahead", uuid, NULL, i % 2 ? "assistant" : "user",
		    i == 6 ? (1u << 20) + 10 : 40 + i);
		put_file(path, l, strlen(l), 0);
		free(l);
		if (i == 4)		/* a gap wider than a run may span */
			put_file(path, "\n                                        "
			    "                                                    \n", 94, 0);
	}
	l = line("ahead", "00000000-0000-4000-8000-000000000010", NULL, "user", 5);
	put_file(path, l, strlen(l), 0);
	free(l);
	if ((t = transcript_open(path, NULL, &cause)) == NULL) {
		ok(0, "read-ahead: open");
		diag("%s", cause ? cause : "?");
		free(cause);
		return;
	}
	is_int(transcript_count(t), 10, "read-ahead: 9 records and one in two fragments");
	for (i = 0; i < 10; i++)
		want[i] = record_copy(t, i, &wn[i]);
	ok(want[3] == NULL && want[6] != NULL && wn[6] > (1u << 20),
	    "read-ahead: record 3 has fragments, record 6 is over 1 MiB");
	transcript_read_ahead(t, order, sizeof order / sizeof order[0]);
	for (i = 0; i < sizeof order / sizeof order[0]; i++) {
		rc = transcript_record_bytes(t, order[i], &b, &n, &cause);
		if (want[order[i]] == NULL ? rc != 0 : rc != 1 || n != wn[order[i]] ||
		    memcmp(b, want[order[i]], n) != 0) {
			diag("record %u differs", order[i]);
			same = 0;
		}
	}
	ok(same, "read-ahead: every announced record as read alone");
	rc = transcript_record_bytes(t, 9, &b, &n, &cause);
	ok(rc == 1 && n == wn[9] && memcmp(b, want[9], n) == 0,
	    "read-ahead: a record not announced reads too");
	transcript_read_ahead(t, order, sizeof order / sizeof order[0]);
	if (truncate(path, 200) == -1)
		diag("truncate failed");
	rc = transcript_record_bytes(t, 0, &b, &n, &cause);
	ok(rc == -1 && cause != NULL && strstr(cause, "shrank") != NULL,
	    "read-ahead: a file cut under a run is an error");
	transcript_read_ahead(t, NULL, 0);
	for (i = 0; i < 10; i++)
		free(want[i]);
	free(cause);
	transcript_free(t);
	unlink(path);
}

/* Hostile lines: deep nesting, NULs, stray quotes and braces, mutated records. */
static void
test_hostile(void)
{
	struct replay_result rr;
	struct transcript *t;
	struct tx_chain c;
	char path[512], *l, *cause = NULL, *m;
	size_t n, i, k;
	unsigned seed = 7;
	int iter, crashes = 0;

	snprintf(path, sizeof path, "%s/h.jsonl", tmpdir);
	put_file(path, "", 0, 1);
	for (i = 0; i < 2000; i++)
		put_file(path, "[", 1, 0);
	put_file(path, "\n{\"uuid\":\"x\",\"a\":", 17, 0);
	for (i = 0; i < 100; i++)
		put_file(path, "[", 1, 0);
	for (i = 0; i < 100; i++)
		put_file(path, "]", 1, 0);
	put_file(path, ",\"sessionId\":\"h\",\"type\":\"user\"}\n", 32, 0);
	put_file(path, "}}}{{{\"\\\n\"abc\\\n\0\0{\"a\n{\"uuid\":\"y\"}{\"uuid\n", 40, 0);
	l = line("h", U(1), NULL, "user", 200);
	n = strlen(l);
	m = malloc(n);
	for (iter = 0; iter < 3000; iter++) {
		memcpy(m, l, n);
		for (k = 0; k < 1 + (unsigned)iter % 4; k++) {
			seed = seed * 1103515245 + 12345;
			m[seed % (n - 1)] = "{}[]\":,\\x\n\0 "[(seed >> 16) % 13];
		}
		put_file(path, m, n, 0);
	}
	free(m);
	free(l);
	if ((t = transcript_open(path, NULL, &cause)) != NULL &&
	    chain_build(t, &c, &cause) == 0) {
		ok(transcript_stats(t)->records >= 2, "hostile: deep but valid records kept");
		ok(transcript_stats(t)->malformed_lines > 2, "hostile: junk counted");
		if (replay_build(t, &c, NULL, &rr, &cause) == 0)
			replay_result_clear(&rr);
		chain_clear(&c);
	} else {
		crashes++;
	}
	ok(crashes == 0, "hostile: loads without crashing (%s)", cause ? cause : "ok");
	free(cause);
	transcript_free(t);
	unlink(path);
}

/* Reseal an index cache after an edit: block sums, then the header's sum,
   as a hostile writer can (the sums find damage, not forgery). */
static void
reseal(char *map, struct tx_cache_head *h, const uint64_t off[TX_CACHE_NSEC + 1])
{
	uint64_t *bsum = (uint64_t *)(map + off[TX_CACHE_NSEC]);
	uint64_t i, end = off[TX_CACHE_NSEC] - off[0], n;

	for (i = 0; i < h->nblock; i++) {
		n = end - i * TX_CACHE_BLOCK;
		if (n > TX_CACHE_BLOCK)
			n = TX_CACHE_BLOCK;
		bsum[i] = transcript_cache_block_sum(h->seed, i,
		    map + off[0] + i * TX_CACHE_BLOCK, (size_t)n);
	}
	h->sum = transcript_cache_sum(h, bsum);
	memcpy(map, h, sizeof *h);
}

/* An index cache whose uuid hash has no empty slot (its header still says
   it is half empty): a lookup of a uuid not in it must end, and copying
   it to add to it must refuse it, not probe forever. */
static void
test_kept_full_table(void)
{
	struct transcript *t;
	struct tx_cache_head h;
	struct tx_slot *ht;
	uint64_t off[TX_CACHE_NSEC + 1], i;
	char path[512], cache[512], idx[1024], name[CACHEDIR_NAME_MAX];
	char *l1, *l2, *cause = NULL, *map;
	struct stat st;
	int fd;

	snprintf(path, sizeof path, "%s/full.jsonl", tmpdir);
	snprintf(cache, sizeof cache, "%s/cache", tmpdir);
	mkdir(cache, 0700);
	l1 = line("full", U(1), NULL, "user", 10);
	l2 = line("full", U(2), U(1), "assistant", 10);
	put_file(path, l1, strlen(l1), 1);
	put_file(path, l2, strlen(l2), 0);
	free(l1);
	free(l2);
	t = transcript_open_cached(path, NULL, cache, &cause);
	ok(t != NULL && transcript_save(t, cache, 1u << 30, 16, &cause) == 0,
	    "full table: index kept (%s)", cause ? cause : "ok");
	transcript_free(t);
	free(cause);
	cause = NULL;

	cachedir_index_name(path, name, sizeof name);
	snprintf(idx, sizeof idx, "%s/%s", cache, name);
	if ((fd = open(idx, O_RDWR)) == -1 || fstat(fd, &st) == -1 ||
	    (map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0)) == MAP_FAILED) {
		ok(0, "full table: index mapped");
		if (fd != -1)
			close(fd);
		return;
	}
	memcpy(&h, map, sizeof h);
	transcript_cache_plan(&h, off);
	ht = (struct tx_slot *)(map + off[6]);
	for (i = 0; i < h.htslots; i++) {
		ht[i].rec = 1;			/* in bounds, never the key asked */
		ht[i].tag = 0;
	}
	reseal(map, &h, off);
	munmap(map, (size_t)st.st_size);
	close(fd);

	alarm(20);			/* a probe that never ends fails here */
	t = transcript_open_cached(path, NULL, cache, &cause);
	ok(t != NULL && transcript_index_state(t) == TX_INDEX_WARM,
	    "full table: the resealed index is used (%s)", cause ? cause : "ok");
	if (t != NULL) {
		ok(transcript_find(t, U(9)) == -1, "full table: a missing uuid ends");
		ok(transcript_index_damaged(t), "full table: the index is marked damaged");
		transcript_free(t);
	}
	free(cause);
	cause = NULL;
	t = transcript_open_cached(path, NULL, cache, &cause);
	ok(t != NULL && transcript_index_check_all(t) == -1,
	    "full table: checking it all refuses it (htused disagrees)");
	transcript_free(t);
	free(cause);
	alarm(0);
	unlink(idx);
	rmdir(cache);
	unlink(path);
}

static void
cleanup(void)
{
	char path[512];

	snprintf(path, sizeof path, "%s/s1.new", tmpdir);
	unlink(path);
	rmdir(tmpdir);
}

/* The replay timestamp parser against sscanf + timegm, over many dates
   (out-of-range days and leap seconds normalise like timegm). */
static void
test_parse_ts(void)
{
	static const char *const odd[] = { "2026-08-01T10:00:00.5Z",
	    " 2026-08-01T10:00:00Z", "2026-08-01T10:00:00.000", "2026-8-01T10:00:00Z",
	    "2026-08-01T10:00:00.000Zx", "1969-12-31T23:59:59Z",
	    "2026-00-01T00:00:00Z", "2026-08-32T00:00:00Z", "", NULL };
	struct tm tm;
	char s[64];
	int64_t want;
	time_t tt;
	int i, bad = 0, y, mo, d, sec;

	for (i = 0; i < 20000 && bad < 5; i++) {
		y = 1900 + (int)arc4random_uniform(300);
		mo = 1 + (int)arc4random_uniform(12);
		d = 1 + (int)arc4random_uniform(31);
		sec = (int)arc4random_uniform(61);
		snprintf(s, sizeof s, "%04d-%02d-%02dT%02u:%02u:%02d.%03uZ", y, mo, d,
		    arc4random_uniform(24), arc4random_uniform(60), sec,
		    arc4random_uniform(1000));
		memset(&tm, 0, sizeof tm);
		sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		    &tm.tm_hour, &tm.tm_min, &tm.tm_sec);
		tm.tm_year -= 1900;
		tm.tm_mon--;
		tt = timegm(&tm);
		want = tt == (time_t)-1 ? -1 : (int64_t)tt * 1000 + atoi(s + 20);
		if (project_parse_ts(s) != want && bad++ < 5)
			diag("%s: %lld, want %lld", s, (long long)project_parse_ts(s), (long long)want);
	}
	ok(bad == 0, "timestamps: the fast parser agrees with timegm");
	for (i = 0, bad = 0; odd[i] != NULL; i++)
		if (project_parse_ts(odd[i]) != -1 && bad++ < 5)
			diag("%s: %lld, want -1", odd[i], (long long)project_parse_ts(odd[i]));
	ok(bad == 0, "timestamps: other shapes are invalid");
	is_int(project_parse_ts("2024-02-31T00:00:00.000Z"), 1709337600000LL,
	    "timestamps: Feb 31 is Mar 2 as timegm says");
}

/* Whether jt_parse takes rec and writes what json-c's parse of it writes
   through jsonw_value(); a and b are scratch. */
static int
jt_as_jsonc(struct jtape *t, const char *rec, size_t n, struct jbuf *a,
    struct jbuf *b)
{
	json_object *o = json_tokener_parse(rec);
	int same;

	a->len = b->len = 0;
	if (o == NULL || jt_parse(t, rec, n) != JT_OK) {
		json_object_put(o);
		return 0;
	}
	jt_write(a, t, 0);
	jsonw_value(b, o);
	json_object_put(o);
	same = a->len == b->len && memcmp(a->p, b->p, a->len) == 0;
	return same;
}

/* The fast reader: what it refuses, and what it writes equals json-c's
   parse written by jsonw_value(). */
static void
test_jtape(void)
{
	static const char *const good[] = {
	    "{\"a\":1,\"b\":[true,false,null,-5,0,1.50,1E5,-0.0,1.0e+2],\"c\":{}}",
	    " {\"s\":\"tab\\t nl\\n q\\\" bs\\\\ sl\\/ u\\u00e9\\u20ac\\u0041\\u001f\\u007f\"} ",
	    "{\"raw\":\"\x01\x1f\t\x7f\xc3\xa9\",\"\":[],\"n\":123456789012345678}",
	    "{ \"a\" : [ 1 , { \"b\" : \"c\" } ] }\r\n",
	    /* escapes written back as they are (one copy), then one that is not
	       past the first 32 bytes */
	    "{\"c\":\"one\\ntwo \\\"q\\\" b\\\\s\\tt\\r\\b\\f and past 32 bytes\"}",
	    "{\"d\":\"canonical for forty bytes and more\\n, then\\/ a slash\"}",
	    "{\"e\":\"canonical for forty bytes and more\\n, then \\u00e9\"}",
	    "{\"f\":\"canonical for forty bytes and more\\n, then raw \x01\"}", NULL };
	static const char *const bail[] = { "{\"a\":NaN}", "{\"a\":-0}",
	    "{\"a\":1234567890123456789}", "{\"a\":1,\"a\":2}", "{\"\\u0061\":1}",
	    "{\"a\":\"\\u0000\"}", "{\"a\":\"\\ud83d\\ude00\"}", "{\"a\":01}",
	    "{\"a\":1,}", "{\"a\":1}x", "{\"a\":\f1}", "{\"a\":tRue}", "{\"a\":\"\\x\"}",
	    "{\"a\":\"open}", "[1", "{\"a\":\"\xff\"}", "{\"a\":\"\xe2\x82\"}",
	    "{\"\xc0\xaf\":1}", NULL };
	struct jtape t;
	struct jbuf a = { NULL, 0, 0, 0 }, b = { NULL, 0, 0, 0 };
	char deep[200];
	int i, same = 1, bailed = 1;

	memset(&t, 0, sizeof t);
	for (i = 0; good[i] != NULL; i++)
		if (!jt_as_jsonc(&t, good[i], strlen(good[i]), &a, &b)) {
			diag("%s: %.*s vs %.*s", good[i], (int)a.len, a.p,
			    (int)b.len, b.p);
			same = 0;
		}
	ok(same, "jtape: writes what json-c + jsonw write");
	for (i = 0; bail[i] != NULL; i++)
		if (jt_parse(&t, bail[i], strlen(bail[i])) != JT_BAIL) {
			diag("taken: %s", bail[i]);
			bailed = 0;
		}
	memset(deep, '[', 40);
	strlcpy(deep + 40, "1", sizeof deep - 40);
	memset(deep + 41, ']', 40);
	deep[81] = '\0';
	ok(bailed && jt_parse(&t, deep, strlen(deep)) == JT_BAIL,
	    "jtape: leaves odd input to json-c");
	jt_parse(&t, good[0], strlen(good[0]));
	is_int(jt_get_typed(&t, 0, "b", JT_ARR), 4, "jtape: member lookup");
	ok(jt_get(&t, 0, "nope") == -1 && jt_get_typed(&t, 0, "a", JT_STR) == -1,
	    "jtape: absent or mistyped members");
	jt_free(&t);
	jbuf_free(&a);
	jbuf_free(&b);
}

/* One piece at every offset of a long string, and a second one after it,
   so that escapes and backslash runs straddle the reader's 32- and
   64-byte steps: what it writes (one copy when the bytes are canonical)
   must be json-c's, and what json-c decides it must leave to json-c. */
static void
test_jtape_long(void)
{
	static const char *const piece[] = {
	    "\\n", "\\\"", "\\\\", "\\\\\\\\", "\\\\\\\"", "\\/", "\\u00e9",
	    "\\u0041", "\\u001f", "\x01", "\t", "\x7f", "\xc3\xa9", "\\t\\r",
	    "\\b\\f", "plain", NULL };
	static const char *const bad[] = { "\\x", "\\u0000", "\\ud83d",
	    "\\u12", "\\\x01", NULL };
	struct jtape t;
	struct jbuf a = { NULL, 0, 0, 0 }, b = { NULL, 0, 0, 0 };
	char rec[400];
	size_t at, len, runs = 0, differ = 0, taken = 0, nul = 0;
	int i, j, k, n;

	memset(&t, 0, sizeof t);
	for (i = 0; piece[i] != NULL; i++)
		for (j = 0; j < (int)(sizeof(piece) / sizeof(piece[0])) - 1; j += 3)
			for (len = 70; len < 200; len += 61)
				for (at = 0; at < len; at++) {
					n = snprintf(rec, sizeof rec, "{\"s\":\"%.*s%s%.*s%s tail\"}",
					    (int)at, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
					    piece[i], (int)(len - at), "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789",
					    piece[j]);
					runs++;
					if (!jt_as_jsonc(&t, rec, (size_t)n, &a, &b) &&
					    differ++ == 0)
						diag("%s: %.*s", rec, (int)a.len, a.p);
				}
	ok(differ == 0, "jtape: long strings, escapes at every offset, as "
	    "json-c writes them (%zu of %zu differ)", differ, runs);
	for (i = 0; bad[i] != NULL; i++)
		for (at = 0; at < 150; at++) {
			n = snprintf(rec, sizeof rec, "{\"s\":\"%.*s%s and on past sixty-four bytes of text\"}",
			    (int)at, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
			    bad[i]);
			taken += jt_parse(&t, rec, (size_t)n) != JT_BAIL;
		}
	for (at = 0; at < 150; at++) {
		n = snprintf(rec, sizeof rec, "{\"s\":\"%.*sX and on past sixty-four bytes of text\"}",
		    (int)at, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
		k = n - (int)strlen("X and on past sixty-four bytes of text\"}");
		rec[k] = '\0';		/* a raw NUL: json-c may stop there */
		nul += jt_parse(&t, rec, (size_t)n) != JT_BAIL;
	}
	ok(taken == 0 && nul == 0, "jtape: a bad escape or a raw NUL anywhere in a "
	    "long string is json-c's (%zu, %zu taken)", taken, nul);
	jt_free(&t);
	jbuf_free(&a);
	jbuf_free(&b);
}

/* Bytes that are not UTF-8 become U+FFFD; a failed parse leaves json-c's
   tokener no half surrogate for the next record (fuzz-jtape found that). */
static void
test_bad_utf8(void)
{
	struct jbuf b = { NULL, 0, 0, 0 };
	struct transcript *t;
	json_object *o, *x = NULL;
	const char *bad = "{\"a\":\"\\ud800\\u", *next = "{\"x\":\"\\u00e9\"}";
	int valid;

	jsonw_string(&b, "a\xff\xc3\xa9\xe2\x82", 6);
	is_str(b.p, "\"a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\"",
	    "jsonw: invalid UTF-8 as U+FFFD");
	jbuf_free(&b);
	if ((t = calloc(1, sizeof *t)) == NULL)
		return;
	o = transcript_json_parse(t, bad, strlen(bad), &valid);
	ok(o == NULL && !valid, "transcript_json_parse: a torn surrogate fails");
	o = transcript_json_parse(t, next, strlen(next), &valid);
	json_object_object_get_ex(o, "x", &x);
	is_str(x != NULL ? json_object_get_string(x) : "(none)", "\xc3\xa9",
	    "transcript_json_parse: the next record's \\u escape decodes alone");
	json_object_put(o);
	json_tokener_free(t->tok);
	free(t);
}

int
main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/test-transcript.XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
		return 1;
	test_linear();
	test_branched();
	test_gap_cycle();
	test_glued();
	test_torn_crlf_session();
	test_fragments();
	test_many_duplicates();
	test_escaped_nonconv();
	test_compression();
	test_io();
	test_replay();
	test_parse_ts();
	test_jtape();
	test_jtape_long();
	test_bad_utf8();
	test_hostile();
	test_damaged();
	test_split();
	test_read_ahead();
	test_kept_full_table();
	cleanup();
	return done_testing();
}
