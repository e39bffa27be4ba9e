/* SPDX-License-Identifier: ISC */
/* inspect.h: `qwen-acp-child --inspect FILE`. */
#ifndef QWEN_ACP_INSPECT_H
#define QWEN_ACP_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* Print one JSON summary of the transcript at path on stdout (keys bytes,
   records, malformedLines, recoveredRecords, leafUuid, activeChainLength, gaps,
   cycles, compressions, lastActiveCompressionUuid, activeChainSha256,
   modelHistoryEntries, turnStarts, deadRecords, duplicates, tornTailBytes).
   Errors go to stderr prefixed with getprogname().  Returns the exit code:
   0 ok, 1 unreadable or unusable file, 2 usage (path NULL).
   With a cache (tests), the index is opened from and kept in ic->dir and
   the summary also says index (cold, warm, rescan), indexReason and
   bytesRead (transcript bytes read). */
struct inspect_cache {
	const char	*dir;
	uint64_t	 max_bytes;
	size_t		 max_files;
};
int inspect_main(const char *path, const struct inspect_cache *ic);
struct transcript;
/* Add index, indexReason and bytesRead to o (borrowed), then keep t's index
   in ic->dir when it changed (a failure is reported on stderr). */
void inspect_index_info(struct transcript *, json_object *o,
    const struct inspect_cache *ic);

#endif
