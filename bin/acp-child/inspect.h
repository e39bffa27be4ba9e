/* inspect.h: `qwen-acp-child --inspect FILE`. */
#ifndef QWEN_ACP_INSPECT_H
#define QWEN_ACP_INSPECT_H

/* Print one JSON summary of the transcript at path on stdout (keys bytes,
   records, malformedLines, recoveredRecords, leafUuid, activeChainLength, gaps,
   cycles, compressions, lastActiveCompressionUuid, activeChainSha256,
   modelHistoryEntries, turnStarts, deadRecords, duplicates, tornTailBytes).
   Errors go to stderr prefixed with getprogname().  Returns the exit code:
   0 ok, 1 unreadable or unusable file, 2 usage (path NULL). */
int inspect_main(const char *path);

#endif
