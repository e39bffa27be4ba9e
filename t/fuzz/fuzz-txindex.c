/* SPDX-License-Identifier: ISC */
/*
 * fuzz-txindex.c: libFuzzer harness, the transcript key scanner and the
 * indexer on arbitrary bytes.
 *
 * The input is scanned as one line (txscan_object, and txscan_line, which
 * must agree with it field for field when it answers), then written as a transcript "s.jsonl" and
 * indexed, every record loaded, the chain built and replayed (fast path and
 * json-c), each step must end without a memory error, a leak, a hang or
 * invalid UTF-8 in the replay.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chain.h"
#include "jsonw.h"
#include "replay.h"
#include "transcript.h"
#include "transcript-int.h"
#include "txscan.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char path[256];

/* The scanner on one line: txscan_line agrees with txscan_object. */
static void
scan_line(const char *p, size_t n)
{
	struct txscan a, b;
	const char *end, *nl, *e = p + n;
	enum txscan_result r;
	char *line;
	int i;

	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	if (memchr(p, '\n', n) != NULL)
		return;
	r = txscan_object(p, e, &a);
	if ((line = malloc(n + 1)) == NULL)
		abort();
	memcpy(line, p, n);
	line[n] = '\n';
	if (txscan_line(line, line + n + 1, &b, &end, &nl) == 1) {
		if (r != TXSCAN_OK || nl != line + n)
			abort();
		for (i = 0; i < TXF_N; i++)
			if (a.f[i].kind != b.f[i].kind || a.f[i].len != b.f[i].len ||
			    (a.f[i].len > 0 && memcmp(a.f[i].p, b.f[i].p,
			    a.f[i].len) != 0))
				abort();
		if (a.message != b.message || a.role_user != b.role_user)
			abort();
	}
	free(line);
}

/* The path of a scratch transcript (one per process). */
static int
scratch(void)
{
	const char *dir = getenv("TMPDIR");
	char tmpl[200];

	if (path[0] != '\0')
		return 0;
	snprintf(tmpl, sizeof tmpl, "%s/fuzz-txindex.XXXXXX",
	    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : dir ? dir : "/tmp");
	if (mkdtemp(tmpl) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/s.jsonl", tmpl);
	return 0;
}

/* Index the bytes as a transcript and replay its chain. */
static void
index_file(const uint8_t *data, size_t size)
{
	struct tx_chain c;
	struct replay_result rr;
	struct transcript *t;
	struct jbuf b = { NULL, 0, 0, 0 };
	char *cause = NULL, uuid[64];
	size_t i, n;
	int fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) == -1)
		abort();
	if (write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	if ((t = transcript_open(path, NULL, &cause)) == NULL) {
		free(cause);
		return;
	}
	n = transcript_count(t);
	for (i = 0; i < n; i++) {
		transcript_uuid(t, (uint32_t)i, uuid);
		json_object_put(transcript_load_record(t, (uint32_t)i, &cause));
		free(cause);
		cause = NULL;
	}
	memset(&c, 0, sizeof c);
	if (chain_build(t, &c, &cause) == 0 &&
	    replay_build(t, &c, NULL, &rr, &cause) == 0) {
		replay_result_write(&rr, &b);
		if (!b.oom && !utf8_valid(b.p, b.len))
			abort();
		replay_result_clear(&rr);
	}
	free(cause);
	jbuf_free(&b);
	chain_clear(&c);
	transcript_free(t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 16))
		return 0;
	if (scratch() == -1)
		abort();
	scan_line((const char *)data, size);
	index_file(data, size);
	return 0;
}
