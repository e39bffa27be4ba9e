/* SPDX-License-Identifier: ISC */
/*
 * qwen-test-tool: exposes libqwen to the shell tests, as git's test-tool
 * does.  Each subcommand lives in its own t/helper/tool-*.c file.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tool.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *usage;
} tools[] = {
	{ "frame", tool_frame, "frame [--max-frame N] [--chunk N] < ndjson" },
	{ "errors", tool_errors, "errors table|rest CODE [k=v ...]|jsonrpc CODE [k=v ...]|classify STATUS BODY" },
	{ "budget", tool_budget, "budget restore|client|watchdog|parse ARGS" },
	{ "trace", tool_trace, "trace new|parse TP|span FILE NAME [k=v ...]" },
};

int
main(int argc, char **argv)
{
	size_t i;

	if (argc >= 2) {
		for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
			if (strcmp(argv[1], tools[i].name) == 0)
				return tools[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "usage:\n");
	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		fprintf(stderr, "  qwen-test-tool %s\n", tools[i].usage);
	return 2;
}
