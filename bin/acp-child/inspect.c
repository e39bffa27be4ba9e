/* SPDX-License-Identifier: ISC */
/*
 * inspect.c: `qwen-acp-child --inspect FILE`, a JSON summary of what the
 * loader makes of a transcript (the same figures as the shared generator's
 * manifest, so the two can be compared).
 */
#include "config.h"

#include <errno.h>
#include <sys/types.h>
#include <sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "inspect.h"
#include "transcript.h"
#include "xmalloc.h"

/* A json string of rec's uuid. */
static json_object *
uuid_json(const struct transcript *t, uint32_t rec)
{
	char buf[37];
	const char *s;
	size_t n;

	s = transcript_uuid_ref(t, rec, buf, &n);
	return xjson_object_new_string_len(s, (int)n);
}

/* sha256 of the chain uuids joined by "\n", in hex. */
static json_object *
chain_digest(const struct transcript *t, const struct tx_chain *c)
{
	char buf[37], hex[SHA256_DIGEST_STRING_LENGTH];
	SHA2_CTX ctx;
	const char *s;
	size_t i, n;

	SHA256Init(&ctx);
	for (i = 0; i < c->len; i++) {
		if (i > 0)
			SHA256Update(&ctx, (const uint8_t *)"\n", 1);
		s = transcript_uuid_ref(t, c->rec[i], buf, &n);
		SHA256Update(&ctx, (const uint8_t *)s, n);
	}
	SHA256End(&ctx, hex);
	return xjson_object_new_string(hex);
}

/* Uuids of the checkpoints (truthy compressedHistory) on the chain, oldest first. */
static json_object *
checkpoints(struct transcript *t, const struct tx_chain *c, char **cause)
{
	json_object *arr = xjson_object_new_array();
	size_t i;
	int yes;

	for (i = 0; i < c->len; i++) {
		if ((yes = chain_is_checkpoint(t, c->rec[i], cause)) == -1) {
			json_object_put(arr);
			return NULL;
		}
		if (yes)
			json_object_array_add(arr, uuid_json(t, c->rec[i]));
	}
	return arr;
}

/* Build the summary object (caller puts); NULL + cause on failure. */
static json_object *
summary(struct transcript *t, char **cause)
{
	const struct tx_stats *st = transcript_stats(t);
	struct tx_chain c;
	json_object *o, *comp;
	int64_t hist;

	if (chain_build(t, &c, cause) == -1)
		return NULL;
	if ((hist = chain_model_history(t, &c, cause)) < 0 ||
	    (comp = checkpoints(t, &c, cause)) == NULL) {
		chain_clear(&c);
		return NULL;
	}
	o = xjson_object_new_object();
	json_object_object_add(o, "bytes", xjson_object_new_uint64(st->bytes));
	json_object_object_add(o, "records", xjson_object_new_uint64(st->records));
	json_object_object_add(o, "malformedLines",
	    xjson_object_new_uint64(st->malformed_lines));
	json_object_object_add(o, "recoveredRecords",
	    xjson_object_new_uint64(st->recovered_records));
	json_object_object_add(o, "leafUuid",
	    c.leaf >= 0 ? uuid_json(t, (uint32_t)c.leaf) : NULL);
	json_object_object_add(o, "activeChainLength", xjson_object_new_uint64(c.len));
	json_object_object_add(o, "gaps", xjson_object_new_uint64(c.gaps));
	json_object_object_add(o, "cycles", xjson_object_new_uint64(c.cycles));
	json_object_object_add(o, "compressions", comp);
	json_object_object_add(o, "lastActiveCompressionUuid", c.last_compression >= 0 ?
	    uuid_json(t, c.rec[c.last_compression]) : NULL);
	json_object_object_add(o, "activeChainSha256", chain_digest(t, &c));
	json_object_object_add(o, "modelHistoryEntries", xjson_object_new_int64(hist));
	json_object_object_add(o, "turnStarts", xjson_object_new_uint64(c.turn_starts));
	json_object_object_add(o, "deadRecords",
	    xjson_object_new_uint64(st->records - c.len));
	json_object_object_add(o, "duplicates", xjson_object_new_uint64(st->duplicates));
	json_object_object_add(o, "tornTailBytes",
	    xjson_object_new_uint64(transcript_pending_bytes(t)));
	chain_clear(&c);
	return o;
}

/* The summary, from a full pass when the index cache turns out damaged in
   a part it used (what it derived from there is thrown away). */
static json_object *
summary_checked(struct transcript **t, const char *path, char **cause)
{
	json_object *o = summary(*t, cause);

	if (!transcript_index_damaged(*t))
		return o;
	json_object_put(o);
	free(*cause);
	*cause = NULL;
	transcript_free(*t);
	if ((*t = transcript_open_rescan(path, NULL, "checksum", cause)) == NULL)
		return NULL;
	return summary(*t, cause);
}

void
inspect_index_info(struct transcript *t, json_object *o, const struct inspect_cache *ic)
{
	const char *why = transcript_index_reason(t);
	char *cause = NULL;

	json_object_object_add(o, "index", json_object_new_string(
	    transcript_index_state_name(transcript_index_state(t))));
	json_object_object_add(o, "indexReason",
	    why != NULL ? json_object_new_string(why) : NULL);
	json_object_object_add(o, "bytesRead",
	    json_object_new_uint64(transcript_bytes_read(t)));
	json_object_object_add(o, "indexBytesChecked",
	    json_object_new_uint64(transcript_index_checked(t)));
	if (transcript_index_dirty(t) &&
	    transcript_save(t, ic->dir, ic->max_bytes, ic->max_files, &cause) == -1) {
		fprintf(stderr, "%s: %s\n", getprogname(), cause);
		free(cause);
	}
}

int
inspect_main(const char *path, const struct inspect_cache *ic)
{
	struct transcript *t;
	json_object *o;
	char *cause = NULL;

	if (path == NULL || *path == '\0') {
		fprintf(stderr, "usage: %s --inspect FILE\n", getprogname());
		return 2;
	}
	if ((t = transcript_open_cached(path, NULL, ic != NULL ? ic->dir : NULL,
	    &cause)) == NULL || (o = summary_checked(&t, path, &cause)) == NULL) {
		fprintf(stderr, "%s: cannot inspect %s: %s\n", getprogname(), path,
		    cause ? cause : "unknown error");
		free(cause);
		transcript_free(t);
		return 1;
	}
	if (ic != NULL)
		inspect_index_info(t, o, ic);
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	transcript_free(t);
	return fflush(stdout) == 0 ? 0 : 1;
}
