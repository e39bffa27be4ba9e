/* SPDX-License-Identifier: ISC */
/*
 * tool-frame.c: qwen-test-tool frame [--max-frame N] [--chunk N]
 *
 * Feeds stdin to an rpc_reader in pieces of exactly N bytes (the last one
 * shorter) and prints one line per event:
 *	MSG <request|notification|result|error> <line_no> <compact json>
 *	BAD <code> <line_no> <id json or null>
 * At end of input it runs rpc_reader_finish.
 */
#include "config.h"

#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc-frame.h"
#include "tool.h"

#define PLAIN	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static const char *const kind_names[] = {
	[RPC_REQUEST] = "request",
	[RPC_NOTIFICATION] = "notification",
	[RPC_RESULT] = "result",
	[RPC_ERROR] = "error",
};

/* Print one event and release it. */
static void
frame_print(enum rpc_read_status st, struct rpc_msg *msg, struct rpc_bad *bad)
{
	if (st == RPC_READ_MSG) {
		printf("MSG %s %zu %s\n", kind_names[msg->kind], msg->line_no,
		    json_object_to_json_string_ext(msg->root, PLAIN));
		rpc_msg_clear(msg);
	} else {
		printf("BAD %d %zu %s\n", bad->code, bad->line_no,
		    bad->id != NULL ?
		    json_object_to_json_string_ext(bad->id, PLAIN) : "null");
		rpc_bad_clear(bad);
	}
}

/* Read up to len bytes, stopping short only at end of input. */
static size_t
read_full(int fd, char *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		if ((n = read(fd, buf + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "read");
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	return off;
}

/* Parse a size argument. */
static size_t
frame_size_arg(const char *name, const char *s)
{
	const char *errstr;
	long long v;

	v = strtonum(s, 1, 1LL << 40, &errstr);
	if (errstr != NULL)
		errx(2, "%s %s: %s", name, s, errstr);
	return (size_t)v;
}

/* The frame subcommand: stdin through a reader, one line per event. */
int
tool_frame(int argc, char **argv)
{
	size_t max_frame = 0, chunk = 4096, n;
	struct rpc_reader *r;
	enum rpc_read_status st;
	struct rpc_msg msg;
	struct rpc_bad bad;
	char *buf;
	int i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--max-frame") == 0)
			max_frame = frame_size_arg(argv[i], argv[i + 1]);
		else if (strcmp(argv[i], "--chunk") == 0)
			chunk = frame_size_arg(argv[i], argv[i + 1]);
		else
			break;
	}
	if (i != argc)
		errx(2, "usage: frame [--max-frame N] [--chunk N]");
	if ((r = rpc_reader_new(max_frame)) == NULL)
		err(1, "rpc_reader_new");
	if ((buf = malloc(chunk)) == NULL)
		err(1, "malloc");
	while ((n = read_full(STDIN_FILENO, buf, chunk)) > 0) {
		if (rpc_reader_feed(r, buf, n) == -1)
			err(1, "rpc_reader_feed");
		while ((st = rpc_reader_next(r, &msg, &bad)) != RPC_READ_MORE)
			frame_print(st, &msg, &bad);
		if (n < chunk)
			break;
	}
	while ((st = rpc_reader_finish(r, &msg, &bad)) != RPC_READ_MORE)
		frame_print(st, &msg, &bad);
	free(buf);
	rpc_reader_free(r);
	if (fflush(stdout) == EOF)
		err(1, "stdout");
	return 0;
}
