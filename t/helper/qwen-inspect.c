/* SPDX-License-Identifier: ISC */
/*
 * qwen-inspect: test driver for the acp-child transcript loader.
 *
 *   qwen-inspect FILE                      the --inspect summary
 *   qwen-inspect --cache-dir DIR [--cache-max BYTES] [--cache-files N]
 *       [--replay ...] FILE                the summary (or replay) from the
 *                                          index kept in DIR (then kept there),
 *                                          plus index, indexReason, bytesRead
 *   qwen-inspect --replay [--jsonc] [--hide-inherited] [--page-size N]
 *       [--max-bytes N] [--max-updates N] FILE
 *                                          the bulk replay envelope
 *   qwen-inspect --replay-compare FILE     project the whole chain twice, from
 *                                          the raw bytes and through json-c, and
 *                                          compare the updates byte for byte
 *                                          (exit 1 when they differ)
 *   qwen-inspect --chain FILE              the active chain's uuids, oldest first
 *   qwen-inspect --index-layout IDX        where an index cache's sections are
 *                                          (byte offset and length), its block
 *                                          size and record counts, for tests
 *                                          that damage one part of it
 *   qwen-inspect --bench N FILE            median wall ms of N resumes (index +
 *                                          chain + model history) and N loads
 *                                          (resume + default bulk replay), peak RSS
 */
#include "config.h"

#include <sys/resource.h>

#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chain.h"
#include "inspect.h"
#include "jsonw.h"
#include "project.h"
#include "replay.h"
#include "transcript.h"
#include "transcript-int.h"

static void
usage(void)
{
	fprintf(stderr, "usage: %s [--cache-dir DIR [--cache-max BYTES] "
	    "[--cache-files N]] FILE\n"
	    "       %s --replay [--jsonc] [--hide-inherited] [--page-size N]\n"
	    "           [--max-bytes N] [--max-updates N] FILE\n"
	    "       %s --replay-compare FILE\n"
	    "       %s --chain FILE\n"
	    "       %s --index-layout INDEX-FILE\n"
	    "       %s --bench N FILE\n", getprogname(), getprogname(), getprogname(),
	    getprogname(), getprogname(), getprogname());
	exit(2);
}

/* Chain and replay of t (rr and c set even on failure). */
static int
replay_from(struct transcript *t, struct tx_chain *c, const struct replay_opts *opts,
    struct replay_result *rr, char **cause)
{
	memset(rr, 0, sizeof *rr);
	if (chain_build(t, c, cause) == -1)
		return -1;
	return replay_build(t, c, opts, rr, cause);
}

/* Print {records, truncatedRecords, partial, hasMore, bytes, updates}. */
static int
replay_main(const char *path, size_t max_bytes, size_t max_updates, int flags,
    size_t page, const struct inspect_cache *ic)
{
	struct replay_opts opts = { max_bytes, max_updates, flags, page };
	struct replay_result rr;
	struct transcript *t;
	struct tx_chain c;
	json_object *o;
	char *cause = NULL;

	if ((t = transcript_open_cached(path, NULL, ic->dir, &cause)) == NULL)
		errx(1, "%s", cause);
	if (replay_from(t, &c, &opts, &rr, &cause) == -1 &&
	    !transcript_index_damaged(t))
		errx(1, "%s", cause);
	/* A damaged index cache in use: the loader's full pass and again. */
	if (transcript_index_damaged(t)) {
		free(cause);
		cause = NULL;
		replay_result_clear(&rr);
		chain_clear(&c);
		transcript_free(t);
		if ((t = transcript_open_rescan(path, NULL, "checksum", &cause)) == NULL ||
		    replay_from(t, &c, &opts, &rr, &cause) == -1)
			errx(1, "%s", cause);
	}
	o = json_object_new_object();
	if (ic->dir != NULL)
		inspect_index_info(t, o, ic);
	json_object_object_add(o, "records", json_object_new_uint64(rr.records));
	json_object_object_add(o, "truncatedRecords",
	    json_object_new_uint64(rr.truncated_records));
	json_object_object_add(o, "partial", json_object_new_boolean(rr.partial));
	json_object_object_add(o, "hasMore", json_object_new_boolean(rr.has_more));
	json_object_object_add(o, "bytes", json_object_new_uint64(rr.bytes));
	if (rr.anchor >= 0) {
		char u[64];

		transcript_uuid(t, c.rec[rr.anchor], u);
		json_object_object_add(o, "anchorRecordId", json_object_new_string(u));
	}
	json_object_object_add(o, "updates", replay_result_json(&rr));
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	replay_result_clear(&rr);
	chain_clear(&c);
	transcript_free(t);
	return 0;
}

/* The whole chain's replay with the given projection flags. */
static void
replay_all(const char *path, int flags, struct replay_result *rr, struct jbuf *b)
{
	struct replay_opts opts = { SIZE_MAX, SIZE_MAX, flags, 0 };
	struct transcript *t;
	struct tx_chain c;
	char *cause = NULL;

	if ((t = transcript_open(path, NULL, &cause)) == NULL ||
	    chain_build(t, &c, &cause) == -1 ||
	    replay_build(t, &c, &opts, rr, &cause) == -1)
		errx(1, "%s", cause);
	replay_result_write(rr, b);
	chain_clear(&c);
	transcript_free(t);
}

/* Fast and json-c projections must agree byte for byte.  Prints
   {"updates", "bytes", "fastRecords", "jsoncRecords", "same"}. */
static int
compare_main(const char *path)
{
	struct replay_result fast, ref;
	struct jbuf bf = { NULL, 0, 0, 0 }, br = { NULL, 0, 0, 0 };
	size_t i;
	int same;

	replay_all(path, 0, &fast, &bf);
	replay_all(path, PROJECT_JSONC, &ref, &br);
	same = fast.p.n == ref.p.n && bf.len == br.len && memcmp(bf.p, br.p, bf.len) == 0;
	for (i = 0; !same && i < fast.p.n && i < ref.p.n; i++)
		if (fast.p.u[i].len != ref.p.u[i].len || memcmp(fast.p.enc.p +
		    fast.p.u[i].off, ref.p.enc.p + ref.p.u[i].off, ref.p.u[i].len) != 0) {
			fprintf(stderr, "update %zu differs:\n fast  %.*s\n jsonc %.*s\n", i,
			    (int)fast.p.u[i].len, fast.p.enc.p + fast.p.u[i].off,
			    (int)ref.p.u[i].len, ref.p.enc.p + ref.p.u[i].off);
			break;
		}
	printf("{\"updates\":%zu,\"bytes\":%zu,\"fastRecords\":%zu,"
	    "\"jsoncRecords\":%zu,\"same\":%s}\n", ref.p.n, br.len,
	    fast.p.fast_records, fast.p.jsonc_records, same ? "true" : "false");
	replay_result_clear(&fast);
	replay_result_clear(&ref);
	jbuf_free(&bf);
	jbuf_free(&br);
	return same ? 0 : 1;
}

/* Print the chain's uuids, one per line. */
static int
chain_main(const char *path)
{
	struct transcript *t;
	struct tx_chain c;
	char *cause = NULL, u[64];
	size_t i;

	if ((t = transcript_open(path, NULL, &cause)) == NULL)
		errx(1, "%s", cause);
	if (chain_build(t, &c, &cause) == -1)
		errx(1, "%s", cause);
	for (i = 0; i < c.len; i++) {
		transcript_uuid(t, c.rec[i], u);
		printf("%s\n", u);
	}
	chain_clear(&c);
	transcript_free(t);
	return 0;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* CPU ms (user + system) used so far. */
static double
cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* One resume (replay 0) or load (replay 1); wall ms, CPU ms in *cpu. */
static double
bench_once(const char *path, int replay, double *cpu)
{
	struct replay_result rr;
	struct transcript *t;
	struct tx_chain c;
	char *cause = NULL;
	double t0 = now_ms(), c0 = cpu_ms();

	if ((t = transcript_open(path, NULL, &cause)) == NULL ||
	    chain_build(t, &c, &cause) == -1 ||
	    chain_model_history(t, &c, &cause) < 0)
		errx(1, "%s", cause);
	if (replay) {
		if (replay_build(t, &c, NULL, &rr, &cause) == -1)
			errx(1, "%s", cause);
		replay_result_clear(&rr);
	}
	chain_clear(&c);
	transcript_free(t);
	*cpu = cpu_ms() - c0;
	return now_ms() - t0;
}

/* Print {"resumeMs", "loadMs", "resumeCpuMs", "loadCpuMs" (medians), "maxRssKiB"}. */
static int
bench_main(const char *path, size_t n)
{
	double *v = calloc(4 * n, sizeof *v);
	struct rusage ru;
	size_t i;

	if (v == NULL)
		err(1, "calloc");
	for (i = 0; i < n; i++) {
		v[i] = bench_once(path, 0, &v[2 * n + i]);
		v[n + i] = bench_once(path, 1, &v[3 * n + i]);
	}
	for (i = 0; i < 4; i++)
		qsort(v + i * n, n, sizeof *v, cmp_double);
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"resumeMs\":%.1f,\"loadMs\":%.1f,\"resumeCpuMs\":%.1f,"
	    "\"loadCpuMs\":%.1f,\"maxRssKiB\":%ld}\n", v[n / 2], v[n + n / 2],
	    v[2 * n + n / 2], v[3 * n + n / 2], ru.ru_maxrss);
	free(v);
	return 0;
}

/* {"block", "size", "records", "recordSize", "chain", "sections": {NAME: [off, len]}}
   of an index cache (its header unchecked: it is what a test damages). */
static int
layout_main(const char *file)
{
	static const char *const name[TX_CACHE_NSEC] = { "path", "sessionId",
	    "subtypes", "records", "fragments", "pool", "hash", "chain" };
	uint64_t off[TX_CACHE_NSEC + 1], len[TX_CACHE_NSEC], size;
	struct tx_cache_head h;
	FILE *f;
	int i;

	if ((f = fopen(file, "rb")) == NULL || fread(&h, sizeof h, 1, f) != 1)
		err(1, "%s", file);
	fclose(f);
	size = transcript_cache_plan(&h, off);
	transcript_cache_lens(&h, len);
	printf("{\"block\":%u,\"size\":%llu,\"records\":%llu,\"recordSize\":%zu,"
	    "\"chain\":%llu,\"sections\":{", TX_CACHE_BLOCK, (unsigned long long)size,
	    (unsigned long long)h.nrec, sizeof(struct tx_rec),
	    (unsigned long long)h.chainlen);
	for (i = 0; i < TX_CACHE_NSEC; i++)
		printf("%s\"%s\":[%llu,%llu]", i ? "," : "", name[i],
		    (unsigned long long)off[i], (unsigned long long)len[i]);
	printf("}}\n");
	return 0;
}

int
main(int argc, char **argv)
{
	size_t max_bytes = 0, max_updates = 0, page = 0;
	const char *e;
	size_t bench = 0;
	struct inspect_cache ic = { NULL, TX_CACHE_MAX_BYTES, TX_CACHE_MAX_FILES };
	int i, replay = 0, chain = 0, compare = 0, flags = 0;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (strcmp(argv[i], "--replay") == 0) {
			replay = 1;
		} else if (strcmp(argv[i], "--replay-compare") == 0) {
			compare = 1;
		} else if (strcmp(argv[i], "--jsonc") == 0) {
			flags |= PROJECT_JSONC;
		} else if (strcmp(argv[i], "--hide-inherited") == 0) {
			flags |= PROJECT_HIDE_INHERITED;
		} else if (strcmp(argv[i], "--page-size") == 0 && i + 1 < argc) {
			page = strtonum(argv[++i], 1, 500, &e);
			if (e != NULL)
				errx(2, "--page-size: %s", e);
		} else if (strcmp(argv[i], "--cache-dir") == 0 && i + 1 < argc) {
			ic.dir = argv[++i];
		} else if (strcmp(argv[i], "--cache-max") == 0 && i + 1 < argc) {
			ic.max_bytes = strtonum(argv[++i], 0, INT64_MAX, &e);
			if (e != NULL)
				errx(2, "--cache-max: %s", e);
		} else if (strcmp(argv[i], "--cache-files") == 0 && i + 1 < argc) {
			ic.max_files = strtonum(argv[++i], 0, INT32_MAX, &e);
			if (e != NULL)
				errx(2, "--cache-files: %s", e);
		} else if (strcmp(argv[i], "--index-layout") == 0 && i + 1 < argc) {
			return layout_main(argv[i + 1]);
		} else if (strcmp(argv[i], "--chain") == 0) {
			chain = 1;
		} else if (strcmp(argv[i], "--bench") == 0 && i + 1 < argc) {
			bench = strtonum(argv[++i], 1, 1000, &e);
			if (e != NULL)
				errx(2, "--bench: %s", e);
		} else if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc) {
			max_bytes = strtonum(argv[++i], 1, INT64_MAX, &e);
			if (e != NULL)
				errx(2, "--max-bytes: %s", e);
		} else if (strcmp(argv[i], "--max-updates") == 0 && i + 1 < argc) {
			max_updates = strtonum(argv[++i], 1, INT64_MAX, &e);
			if (e != NULL)
				errx(2, "--max-updates: %s", e);
		} else {
			usage();
		}
	}
	if (i != argc - 1)
		usage();
	if (bench)
		return bench_main(argv[i], bench);
	if (chain)
		return chain_main(argv[i]);
	if (compare)
		return compare_main(argv[i]);
	if (replay)
		return replay_main(argv[i], max_bytes, max_updates, flags, page, &ic);
	return inspect_main(argv[i], ic.dir != NULL ? &ic : NULL);
}
